"""The ``depthwise_conv_backward_data`` family's contract: ``dx =
conv2d_input(dy, w)`` for a depthwise convolution (``groups == C_IN == C_OUT
= C``), as a direct gather.

Each input channel is fed by one output channel through its own ``KH x KW``
filter, so ``dx[b, c, h, w] = sum_{p, q} dy[b, c, i, j] * w[c, 0, p, q]`` over
the taps where ``i * STRIDE_H = h + PAD_T - p * DIL_H`` and ``j * STRIDE_W = w
+ PAD_L - q * DIL_W`` are exact quotients in ``[0, OH) x [0, OW)``: no
reduction over channels, no ``tl.dot`` and none of the grouped implicit GEMM's
16-wide padding of a per-group extent of 1. The grid is ``(cdiv(B * H * W,
BLOCK_P), cdiv(C, BLOCK_C), 1)``: input positions of the whole batch on axis
0, channels on axis 1 (`depthwise_conv`'s, with ``dx`` in the output's place).

The geometry is dim arguments (``STRIDE_H``, ``STRIDE_W``, ``PAD_T``,
``PAD_L``, ``DIL_H``, ``DIL_W``; bottom and right padding only shape ``H``,
``W`` against ``OH``, ``OW``): every gathered address is masked to ``[0, OH)
x [0, OW)`` after the division, so any value is memory-safe and the validator
leaves them free. ``C``, ``KH`` and ``KW`` are implied by the shapes, which
must be depthwise (``w`` [C, 1, KH, KW]). ``dy`` and ``dx`` may be
batch-strided (a channel slice of a larger NCHW buffer); ``w`` is contiguous.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily
from teeny_ir.kernels.depthwise_conv import contract as forward

__all__ = ["FAMILY", "GEOMETRY", "depthwise_dims", "implied"]

GEOMETRY = forward.GEOMETRY
"""The dim arguments that any value keeps memory-safe (taps are masked)."""


def depthwise_dims(
    x: tuple[int, ...], w: tuple[int, ...], y: tuple[int, ...]
) -> list[dict[str, int | None]]:
    """The dims of a depthwise convolution's tensors, shared by both backward
    families: from NCHW ``x`` [B, C, H, W] (the input, or its gradient), ``w``
    [C, 1, KH, KW] (the weight, or its gradient) and ``y`` [B, C, OH, OW] (the
    output's gradient): `depthwise_conv`'s rule (one image of ``x`` and of
    ``y``, and the weight, within i32 offsets; the geometry free)."""
    return forward.implied({"x": x, "w": w, "y": y, "r": y})


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """`depthwise_dims`: ``dx`` in the input's place, ``w`` in the weight's,
    ``dy`` in the output's."""
    return depthwise_dims(shapes["dx"], shapes["w"], shapes["dy"])


_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="depthwise_conv_backward_data",
    summary=(
        "the input gradient of a depthwise conv2d (groups == C_IN == C_OUT; any kernel "
        "size, stride, four-sided padding, dilation) as a direct gather without tl.dot: "
        "each program a [BLOCK_P input positions x BLOCK_C channels] tile, BLOCK_T taps of "
        "dy gathered per step where (h + pad - tap) divides by the stride, times the "
        "channel's weight, summed over the taps in a fixed order; dy and dx may be "
        "batch-strided views"
    ),
    args=(
        KernelArg("dy", "input", _PTR),
        KernelArg("w", "input", _PTR),
        KernelArg("dx", "output", _PTR),
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
        KernelArg("dy_batch_stride", "dim", _I32),
        KernelArg("dx_batch_stride", "dim", _I32),
    ),
    constexprs=(
        Constexpr("BLOCK_P", "int", power_of_two=True, minimum=1),
        Constexpr("BLOCK_C", "int", power_of_two=True, minimum=1),
        Constexpr("BLOCK_T", "int", power_of_two=True, minimum=1),
        Constexpr("UNIT_STRIDE", "bool"),
    ),
    grid=(
        GridAxis((("B * H * W", "BLOCK_P"),)),
        GridAxis((("C", "BLOCK_C"),)),
    ),
    package=Path(__file__).parent,
    kernel_function="depthwise_conv_backward_data",
    footprints={
        "dy": "(B - 1) * dy_batch_stride + C * OH * OW",
        "w": "C * KH * KW",
        "dx": "(B - 1) * dx_batch_stride + C * H * W",
    },
    batch_strides={"dy": "dy_batch_stride", "dx": "dx_batch_stride"},
    implied=implied,
    blocks=(("BLOCK_P", "BLOCK_C"), ("BLOCK_P", "BLOCK_T", "BLOCK_C"), ("BLOCK_T", "BLOCK_C")),
)
