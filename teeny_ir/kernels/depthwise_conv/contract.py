"""The ``depthwise_conv`` family's contract:
``y = act(scale * depthwise_conv2d(x, w) + shift) (+ r)``.

Depthwise: one group per channel and one output channel per input channel
(``groups == C_IN == C_OUT = C``), NCHW, weight ``[C, 1, KH, KW]``. The grid is
``(cdiv(B * OH * OW, BLOCK_P), cdiv(C, BLOCK_C), 1)``: output positions of the
whole batch on axis 0, channels on axis 1.

As in ``implicit_gemm_conv``, the geometry is dim arguments, so one compiled
variant serves every layer with the same tiles and epilogue: ``KH`` and ``KW``
(implied by the weight), ``STRIDE_H``, ``STRIDE_W``, ``PAD_T``, ``PAD_L``
(bottom and right padding only shape ``OH``/``OW``), ``DIL_H`` and ``DIL_W``,
which any value keeps memory-safe (every tap is masked to the image, every
output to ``OH * OW``). ``x``, ``r`` and ``y`` may each be batch-strided (a
channel slice of a larger NCHW buffer): their ``*_batch_stride`` dims are the
elements between images, which the validator matches against the bound
tensors.

The residual flag ``HAS_RESIDUAL`` is the last dim argument, not a constexpr:
a runtime i32 the kernel's epilogue branches on once, so a tile's launches
with and without a residual share one compiled variant. No shape implies it
(the validator leaves it free, in [0, 2**31 - 1] like every i32 dim); ``r``'s
footprint ``HAS_RESIDUAL * (...)`` is 0 without a residual, where ``r`` is
bound to the input and never read, and with one must fit the bound tensor.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily

MAX_I32 = 2**31 - 1

GEOMETRY = ("STRIDE_H", "STRIDE_W", "PAD_T", "PAD_L", "DIL_H", "DIL_W")
"""The dim arguments that any value keeps memory-safe (taps are masked)."""


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """From NCHW ``x`` [B, C, H, W], ``w`` [C, 1, KH, KW] and ``y`` [B, C, OH,
    OW]: those dims, with the geometry left free. ``r`` is the residual, shaped
    like ``y``, or (without one) the input itself. One image of ``x`` and of
    ``y``, and the weight, must fit in i32 offsets. (The batch strides are the
    validator's.)"""
    x, w, y, r = shapes["x"], shapes["w"], shapes["y"], shapes["r"]
    if len(x) != 4 or len(w) != 4 or len(y) != 4:
        return []
    batch, channels, height, width = x
    if tuple(w[:2]) != (channels, 1) or tuple(y[:2]) != (batch, channels):
        return []
    if tuple(r) not in (tuple(y), tuple(x)):
        return []
    if max(channels * height * width, channels * y[2] * y[3], channels * w[2] * w[3]) > MAX_I32:
        return []
    dims: dict[str, int | None] = {
        "B": batch,
        "C": channels,
        "H": height,
        "W": width,
        "OH": y[2],
        "OW": y[3],
        "KH": w[2],
        "KW": w[3],
    }
    return [dims | dict.fromkeys(GEOMETRY)]


_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="depthwise_conv",
    summary=(
        "depthwise conv2d (groups == C_IN == C_OUT; any kernel size, stride, four-sided "
        "padding, dilation) as a direct convolution without tl.dot: each program a "
        "[BLOCK_P positions x BLOCK_C channels] tile, BLOCK_T taps gathered with masks per "
        "step; epilogue act(scale * acc + shift) with any epilogue entry of the pointwise "
        "table, then an optional residual added; x, r and y may be batch-strided views"
    ),
    args=(
        KernelArg("x", "input", _PTR),
        KernelArg("w", "param", _PTR),
        KernelArg("scale", "param", _PTR),
        KernelArg("shift", "param", _PTR),
        KernelArg("r", "input", _PTR),
        KernelArg("y", "output", _PTR),
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
        KernelArg("r_batch_stride", "dim", _I32),
        KernelArg("y_batch_stride", "dim", _I32),
        KernelArg("HAS_RESIDUAL", "dim", _I32),
    ),
    constexprs=(
        Constexpr("BLOCK_P", "int", power_of_two=True, minimum=1),
        Constexpr("BLOCK_C", "int", power_of_two=True, minimum=1),
        Constexpr("BLOCK_T", "int", power_of_two=True, minimum=1),
        Constexpr("ACTIVATION", "pointwise", slot="activation", epilogue=True),
    ),
    grid=(
        GridAxis((("B * OH * OW", "BLOCK_P"),)),
        GridAxis((("C", "BLOCK_C"),)),
    ),
    package=Path(__file__).parent,
    kernel_function="depthwise_conv",
    footprints={
        "x": "(B - 1) * x_batch_stride + C * H * W",
        "w": "C * KH * KW",
        "scale": "C",
        "shift": "C",
        "r": "HAS_RESIDUAL * ((B - 1) * r_batch_stride + C * OH * OW)",
        "y": "(B - 1) * y_batch_stride + C * OH * OW",
    },
    batch_strides={"x": "x_batch_stride", "r": "r_batch_stride", "y": "y_batch_stride"},
    implied=implied,
    blocks=(("BLOCK_P", "BLOCK_C"), ("BLOCK_P", "BLOCK_T", "BLOCK_C"), ("BLOCK_T", "BLOCK_C")),
)
