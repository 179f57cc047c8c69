"""The ``conv2d_backward_data`` family's contract: ``dx = conv2d_input(dy, w)``,
the input gradient of a convolution, as an implicit GEMM per group.

GEMM view, per group ``g``: ``M = B * H * W`` input positions, ``N = C_IN /
GROUPS`` input channels, ``K = C_OUT / GROUPS * KH * KW`` (output channel,
tap) pairs. Row ``m`` and tap ``(p, q)`` gather ``dy[b, g * C_OUT / GROUPS + o,
i, j]`` where ``i = (h + PAD_T - p * DIL_H) / STRIDE_H`` and ``j`` alike are
exact quotients in ``[0, OH)`` and ``[0, OW)``; the other taps read 0. One
grid axis of ``cdiv(B * H * W, BLOCK_M) * cdiv(C_IN / GROUPS, BLOCK_N) *
GROUPS`` programs, decomposed in the kernel (programs past the last row tile
write nothing).

The geometry is dim arguments (``STRIDE_H``, ``STRIDE_W``, ``PAD_T``,
``PAD_L``, ``DIL_H``, ``DIL_W``; bottom and right padding only shape ``H``,
``W`` against ``OH``, ``OW``): every gathered address is masked to ``[0, OH) x
[0, OW)`` after the division, so any value is memory-safe and the validator
leaves them free. ``KH``, ``KW`` and ``GROUPS = C_IN / w.shape[1]`` are
implied by the shapes. ``dy`` and ``dx`` may be batch-strided (a channel slice
of a larger NCHW buffer); ``w`` [C_OUT, C_IN / GROUPS, KH, KW] is contiguous.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily
from teeny_ir.kernels.implicit_gemm_conv.contract import GEOMETRY, MAX_I32, conv_dims

__all__ = ["FAMILY", "GEOMETRY", "MAX_I32", "implied"]


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """The forward convolution's dims (`conv_dims`): ``dx`` in the input's
    place, ``w`` in the weight's, ``dy`` in the output's."""
    return conv_dims(shapes["dx"], shapes["w"], shapes["dy"])


_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="conv2d_backward_data",
    summary=(
        "the input gradient of any conv2d (kernel size, stride, four-sided padding, "
        "dilation, groups) as an implicit GEMM with tl.dot: M = B*H*W input positions, "
        "N = C_IN/GROUPS, K = C_OUT/GROUPS*KH*KW, dy gathered where (h + pad - tap) "
        "divides by the stride, masked elsewhere; one grid axis over row tiles x "
        "column tiles x groups; dy and dx may be batch-strided views"
    ),
    args=(
        KernelArg("dy", "input", _PTR),
        KernelArg("w", "input", _PTR),
        KernelArg("dx", "output", _PTR),
        KernelArg("B", "dim", _I32),
        KernelArg("C_IN", "dim", _I32),
        KernelArg("H", "dim", _I32),
        KernelArg("W", "dim", _I32),
        KernelArg("C_OUT", "dim", _I32),
        KernelArg("OH", "dim", _I32),
        KernelArg("OW", "dim", _I32),
        KernelArg("KH", "dim", _I32),
        KernelArg("KW", "dim", _I32),
        KernelArg("STRIDE_H", "dim", _I32),
        KernelArg("STRIDE_W", "dim", _I32),
        KernelArg("PAD_T", "dim", _I32),
        KernelArg("PAD_L", "dim", _I32),
        KernelArg("DIL_H", "dim", _I32),
        KernelArg("DIL_W", "dim", _I32),
        KernelArg("GROUPS", "dim", _I32),
        KernelArg("dy_batch_stride", "dim", _I32),
        KernelArg("dx_batch_stride", "dim", _I32),
    ),
    constexprs=(
        Constexpr("BLOCK_M", "int", power_of_two=True, minimum=16),
        Constexpr("BLOCK_N", "int", power_of_two=True, minimum=16),
        Constexpr("BLOCK_K", "int", power_of_two=True, minimum=16),
        Constexpr("UNIT_STRIDE", "bool"),
    ),
    grid=(
        GridAxis(
            (
                ("B * H * W", "BLOCK_M"),
                ("floordiv(C_IN, GROUPS)", "BLOCK_N"),
                ("GROUPS", "1"),
            )
        ),
    ),
    package=Path(__file__).parent,
    kernel_function="conv2d_backward_data",
    footprints={
        "dy": "(B - 1) * dy_batch_stride + C_OUT * OH * OW",
        "w": "C_OUT * floordiv(C_IN, GROUPS) * KH * KW",
        "dx": "(B - 1) * dx_batch_stride + C_IN * H * W",
    },
    batch_strides={"dy": "dy_batch_stride", "dx": "dx_batch_stride"},
    implied=implied,
    blocks=(("BLOCK_M", "BLOCK_N"), ("BLOCK_M", "BLOCK_K"), ("BLOCK_K", "BLOCK_N")),
)
