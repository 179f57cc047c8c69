"""The ``depthwise_conv_backward_weight`` family's contract: ``dw =
conv2d_weight(x, dy)`` for a depthwise convolution (``groups == C_IN == C_OUT
= C``), reduced over the batch without ``tl.dot``.

``dw[c, 0, p, q] = sum_{b, i, j} dy[b, c, i, j] * x[b, c, i * STRIDE_H - PAD_T
+ p * DIL_H, j * STRIDE_W - PAD_L + q * DIL_W]`` (0 where the tap falls in the
padding): one reduction of length ``B * OH * OW`` per (channel, tap), with no
reduction over channels and none of the grouped GEMM's 16-wide padding of a
per-group extent of 1. ``dw`` [C, 1, KH, KW] is static: the grid,
``(cdiv(C, BLOCK_C), cdiv(KH * KW, BLOCK_T), 1)``, does not depend on the
batch; each program walks all ``B * OH * OW`` positions in ``BLOCK_P`` chunks
in a fixed order and stores its ``[BLOCK_T, BLOCK_C]`` block once (no
split-K, no atomics: deterministic).

The geometry is dim arguments (``STRIDE_H``, ``STRIDE_W``, ``PAD_T``,
``PAD_L``, ``DIL_H``, ``DIL_W``): every input tap is masked to the image, so
any value is memory-safe and the validator leaves them free. ``C``, ``KH``
and ``KW`` are implied by the shapes, which must be depthwise (``dw`` [C, 1,
KH, KW]). ``x`` and ``dy`` may be batch-strided (a channel slice of a larger
NCHW buffer).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily
from teeny_ir.kernels.depthwise_conv_backward_data.contract import GEOMETRY, depthwise_dims

__all__ = ["FAMILY", "GEOMETRY", "implied"]


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """`depthwise_dims`: ``x`` in the input's place, ``dw`` in the weight's,
    ``dy`` in the output's."""
    return depthwise_dims(shapes["x"], shapes["dw"], shapes["dy"])


_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="depthwise_conv_backward_weight",
    summary=(
        "the weight gradient of a depthwise conv2d (groups == C_IN == C_OUT; any kernel "
        "size, stride, four-sided padding, dilation) without tl.dot: one program per "
        "[BLOCK_T taps x BLOCK_C channels] block of dw, reducing dy times the input taps "
        "(gathered with masks) over B*OH*OW in BLOCK_P chunks inside the program "
        "(deterministic: no atomics, no split-K); a grid independent of the batch; x and "
        "dy may be batch-strided views"
    ),
    args=(
        KernelArg("x", "input", _PTR),
        KernelArg("dy", "input", _PTR),
        KernelArg("dw", "output", _PTR),
        KernelArg("B", "dim", _I32),
        KernelArg("C", "dim", _I32),
        KernelArg("H", "dim", _I32),
        KernelArg("W", "dim", _I32),
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
        KernelArg("x_batch_stride", "dim", _I32),
        KernelArg("dy_batch_stride", "dim", _I32),
    ),
    constexprs=(
        Constexpr("BLOCK_P", "int", power_of_two=True, minimum=1),
        Constexpr("BLOCK_C", "int", power_of_two=True, minimum=1),
        Constexpr("BLOCK_T", "int", power_of_two=True, minimum=1),
    ),
    grid=(
        GridAxis((("C", "BLOCK_C"),)),
        GridAxis((("KH * KW", "BLOCK_T"),)),
    ),
    package=Path(__file__).parent,
    kernel_function="depthwise_conv_backward_weight",
    footprints={
        "x": "(B - 1) * x_batch_stride + C * H * W",
        "dy": "(B - 1) * dy_batch_stride + C * OH * OW",
        "dw": "C * KH * KW",
    },
    batch_strides={"x": "x_batch_stride", "dy": "dy_batch_stride"},
    implied=implied,
    blocks=(("BLOCK_P", "BLOCK_C"), ("BLOCK_P", "BLOCK_T", "BLOCK_C"), ("BLOCK_T", "BLOCK_C")),
)
