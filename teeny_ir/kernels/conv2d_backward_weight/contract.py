"""The ``conv2d_backward_weight`` family's contract: ``dw = conv2d_weight(x, dy)``,
the weight gradient of a convolution, as a GEMM per group.

GEMM view, per group ``g``: ``M = C_OUT / GROUPS`` output channels, ``N =
C_IN / GROUPS * KH * KW`` weight columns (input channel, tap) in the weight's
order, ``K = B * OH * OW`` (image, output position) pairs. ``dw`` [C_OUT, C_IN
/ GROUPS, KH, KW] is static: the grid, one axis of ``cdiv(C_OUT / GROUPS,
BLOCK_M) * cdiv(C_IN / GROUPS * KH * KW, BLOCK_N) * GROUPS`` programs, does not
depend on the batch; each program loops over the whole of ``K`` in
``BLOCK_K`` chunks (no split-K, no atomics: deterministic).

The geometry is dim arguments (``STRIDE_H``, ``STRIDE_W``, ``PAD_T``,
``PAD_L``, ``DIL_H``, ``DIL_W``): every input tap is masked to the image, so
any value is memory-safe and the validator leaves them free. ``KH``, ``KW``
and ``GROUPS = C_IN / dw.shape[1]`` are implied by the shapes. ``x`` and
``dy`` may be batch-strided (a channel slice of a larger NCHW buffer).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily
from teeny_ir.kernels.implicit_gemm_conv.contract import GEOMETRY, MAX_I32, conv_dims

__all__ = ["FAMILY", "GEOMETRY", "MAX_I32", "implied"]


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """The forward convolution's dims (`conv_dims`): ``x`` in the input's
    place, ``dw`` in the weight's, ``dy`` in the output's."""
    return conv_dims(shapes["x"], shapes["dw"], shapes["dy"])


_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="conv2d_backward_weight",
    summary=(
        "the weight gradient of any conv2d (kernel size, stride, four-sided padding, "
        "dilation, groups) as a GEMM with tl.dot: M = C_OUT/GROUPS, N = C_IN/GROUPS*KH*KW, "
        "K = B*OH*OW looped in BLOCK_K chunks inside each program (deterministic, no "
        "atomics, no split-K), input taps gathered with masks; one grid axis over row "
        "tiles x column tiles x groups, independent of the batch; x and dy may be "
        "batch-strided views"
    ),
    args=(
        KernelArg("x", "input", _PTR),
        KernelArg("dy", "input", _PTR),
        KernelArg("dw", "output", _PTR),
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
        KernelArg("x_batch_stride", "dim", _I32),
        KernelArg("dy_batch_stride", "dim", _I32),
    ),
    constexprs=(
        Constexpr("BLOCK_M", "int", power_of_two=True, minimum=16),
        Constexpr("BLOCK_N", "int", power_of_two=True, minimum=16),
        Constexpr("BLOCK_K", "int", power_of_two=True, minimum=16),
    ),
    grid=(
        GridAxis(
            (
                ("floordiv(C_OUT, GROUPS)", "BLOCK_M"),
                ("floordiv(C_IN, GROUPS) * KH * KW", "BLOCK_N"),
                ("GROUPS", "1"),
            )
        ),
    ),
    package=Path(__file__).parent,
    kernel_function="conv2d_backward_weight",
    footprints={
        "x": "(B - 1) * x_batch_stride + C_IN * H * W",
        "dy": "(B - 1) * dy_batch_stride + C_OUT * OH * OW",
        "dw": "C_OUT * floordiv(C_IN, GROUPS) * KH * KW",
    },
    batch_strides={"x": "x_batch_stride", "dy": "dy_batch_stride"},
    implied=implied,
    blocks=(("BLOCK_M", "BLOCK_N"), ("BLOCK_M", "BLOCK_K"), ("BLOCK_K", "BLOCK_N")),
)
