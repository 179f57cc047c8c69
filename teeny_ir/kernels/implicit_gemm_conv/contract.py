"""The ``implicit_gemm_conv`` family's contract:
``y = act(scale * conv2d(x, w) + shift)``, plus ``r`` when the dim
``HAS_RESIDUAL`` is 1, as an implicit GEMM per group.

GEMM view, per group ``g``: ``M = B * OH * OW`` output positions, ``N = C_OUT /
GROUPS`` output channels, ``K = C_IN / GROUPS * KH * KW`` taps. The grid is
``(cdiv(B * OH * OW, BLOCK_M), cdiv(C_OUT / GROUPS, BLOCK_N), GROUPS)``.

The kernel geometry is dim arguments, not constexprs, so one compiled variant
serves every layer with the same tiles and activation: ``KH``, ``KW`` (implied
by the weight's shape), ``STRIDE_H``, ``STRIDE_W``, ``PAD_T``, ``PAD_L`` (top
and left padding; bottom and right padding only shape ``OH``/``OW``),
``DIL_H``, ``DIL_W`` and ``GROUPS`` (implied: ``C_IN / w.shape[1]``). Any
stride, padding and dilation is memory-safe: every input tap is masked to the
image and every output to ``OH * OW``, so the validator leaves them free.

``x``, ``r`` and ``y`` may each be batch-strided (a channel slice of a larger
NCHW buffer): their ``*_batch_stride`` dims are the elements between images,
which the validator matches against the bound tensors.

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


def conv_dims(
    x: tuple[int, ...], w: tuple[int, ...], y: tuple[int, ...]
) -> list[dict[str, int | None]]:
    """The dims of a convolution's tensors, shared by the forward and backward
    convolution families: from NCHW ``x`` [B, C_IN, H, W] (the input, or its
    gradient), ``w`` [C_OUT, C_IN / GROUPS, KH, KW] (the weight, or its
    gradient) and ``y`` [B, C_OUT, OH, OW] (the output, or its gradient): those
    dims, ``GROUPS = C_IN / w.shape[1]`` (which must divide ``C_IN`` and
    ``C_OUT``), and the geometry left free. One image of ``x`` and of ``y``, and
    the weight, must fit in i32 offsets."""
    if len(x) != 4 or len(w) != 4 or len(y) != 4:
        return []
    batch, c_in, height, width = x
    c_out, group_in, kernel_h, kernel_w = w
    if y[0] != batch or y[1] != c_out or c_in % group_in:
        return []
    groups = c_in // group_in
    if c_out % groups:
        return []
    if (
        max(c_in * height * width, c_out * y[2] * y[3], c_out * group_in * kernel_h * kernel_w)
        > MAX_I32
    ):
        return []
    dims: dict[str, int | None] = {
        "B": batch,
        "C_IN": c_in,
        "H": height,
        "W": width,
        "C_OUT": c_out,
        "OH": y[2],
        "OW": y[3],
        "KH": kernel_h,
        "KW": kernel_w,
        "GROUPS": groups,
    }
    return [dims | dict.fromkeys(GEOMETRY)]


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """`conv_dims` of ``x``, ``w`` and ``y``."""
    return conv_dims(shapes["x"], shapes["w"], shapes["y"])


_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="implicit_gemm_conv",
    summary=(
        "any conv2d (kernel size, stride, four-sided padding, dilation, groups) as an "
        "implicit GEMM with tl.dot: M = B*OH*OW, N = C_OUT/GROUPS, K = C_IN/GROUPS*KH*KW, "
        "input patches gathered with masks in the K loop, groups on grid axis 2, "
        "epilogue act(scale * acc + shift) with any epilogue entry of the pointwise table, "
        "then an optional residual added; x, r and y may be batch-strided views"
    ),
    args=(
        KernelArg("x", "input", _PTR),
        KernelArg("w", "param", _PTR),
        KernelArg("scale", "param", _PTR),
        KernelArg("shift", "param", _PTR),
        KernelArg("r", "input", _PTR),
        KernelArg("y", "output", _PTR),
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
        KernelArg("r_batch_stride", "dim", _I32),
        KernelArg("y_batch_stride", "dim", _I32),
        KernelArg("HAS_RESIDUAL", "dim", _I32),
    ),
    constexprs=(
        Constexpr("BLOCK_M", "int", power_of_two=True, minimum=16),
        Constexpr("BLOCK_N", "int", power_of_two=True, minimum=16),
        Constexpr("BLOCK_K", "int", power_of_two=True, minimum=16),
        Constexpr("ACTIVATION", "pointwise", slot="activation", epilogue=True),
    ),
    grid=(
        GridAxis((("B * OH * OW", "BLOCK_M"),)),
        GridAxis((("floordiv(C_OUT, GROUPS)", "BLOCK_N"),)),
        GridAxis((("GROUPS", "1"),)),
    ),
    package=Path(__file__).parent,
    kernel_function="implicit_gemm_conv",
    footprints={
        "x": "(B - 1) * x_batch_stride + C_IN * H * W",
        "w": "C_OUT * floordiv(C_IN, GROUPS) * KH * KW",
        "scale": "C_OUT",
        "shift": "C_OUT",
        "r": "HAS_RESIDUAL * ((B - 1) * r_batch_stride + C_OUT * OH * OW)",
        "y": "(B - 1) * y_batch_stride + C_OUT * OH * OW",
    },
    batch_strides={"x": "x_batch_stride", "r": "r_batch_stride", "y": "y_batch_stride"},
    implied=implied,
    blocks=(("BLOCK_M", "BLOCK_N"), ("BLOCK_M", "BLOCK_K"), ("BLOCK_K", "BLOCK_N")),
)
