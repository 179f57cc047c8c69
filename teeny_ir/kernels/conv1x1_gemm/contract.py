"""The ``conv1x1_gemm`` family's contract: ``Y_b = act(scale * (W @ X_b) + shift)``,
plus ``R_b`` when the dim ``HAS_RESIDUAL`` is 1.

``x``, ``r`` and ``y`` may each be batch-strided (a channel slice of a larger
NCHW buffer): their ``*_batch_stride`` dims are the elements between images,
which the validator matches against the bound tensors.

The residual flag ``HAS_RESIDUAL`` is the last dim argument, not a constexpr:
a runtime i32 the kernel's epilogue branches on once, so a tile's launches
with and without a residual share one compiled variant. No shape implies it
(the validator leaves it free, in [0, 2**31 - 1] like every i32 dim); ``r``'s
footprint ``HAS_RESIDUAL * (...)`` is 0 without a residual, where ``r`` is
bound to the input and never read, and with one must fit the bound tensor."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """From NCHW ``x`` and ``y``: ``B``, ``C_IN``, ``C_OUT`` and ``M = H * W``; the
    output's H * W must be ``M``. (The batch strides are the validator's.)"""
    x, y = shapes["x"], shapes["y"]
    if len(x) != 4 or len(y) != 4:
        return []
    spatial = math.prod(x[2:])
    dims: dict[str, int | None] = {"B": x[0], "C_IN": x[1], "C_OUT": y[1], "M": spatial}
    if y[0] != x[0] or math.prod(y[2:]) != spatial:
        return []
    return [dims]


_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="conv1x1_gemm",
    summary=(
        "per batch Y_b[C_OUT, M] = W[C_OUT, C_IN] @ X_b[C_IN, M] with tl.dot, batch "
        "folded into the grid, GROUP_M swizzle, epilogue act(scale * acc + shift) "
        "with any epilogue entry of the pointwise table, then an optional residual added; "
        "x, r and y may be batch-strided views"
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
        KernelArg("C_OUT", "dim", _I32),
        KernelArg("M", "dim", _I32),
        KernelArg("x_batch_stride", "dim", _I32),
        KernelArg("r_batch_stride", "dim", _I32),
        KernelArg("y_batch_stride", "dim", _I32),
        KernelArg("HAS_RESIDUAL", "dim", _I32),
    ),
    constexprs=(
        Constexpr("BLOCK_M", "int", power_of_two=True, minimum=16),
        Constexpr("BLOCK_N", "int", power_of_two=True, minimum=16),
        Constexpr("BLOCK_K", "int", power_of_two=True, minimum=8),
        Constexpr("GROUP_M", "int", minimum=1),
        Constexpr("ACTIVATION", "pointwise", slot="activation", epilogue=True),
    ),
    grid=(GridAxis((("B", "1"), ("M", "BLOCK_M"), ("C_OUT", "BLOCK_N"))),),
    package=Path(__file__).parent,
    kernel_function="conv1x1_gemm",
    footprints={
        "x": "(B - 1) * x_batch_stride + C_IN * M",
        "w": "C_OUT * C_IN",
        "scale": "C_OUT",
        "shift": "C_OUT",
        "r": "HAS_RESIDUAL * ((B - 1) * r_batch_stride + C_OUT * M)",
        "y": "(B - 1) * y_batch_stride + C_OUT * M",
    },
    batch_strides={"x": "x_batch_stride", "r": "r_batch_stride", "y": "y_batch_stride"},
    implied=implied,
    blocks=(("BLOCK_M", "BLOCK_N"), ("BLOCK_M", "BLOCK_K"), ("BLOCK_K", "BLOCK_N")),
)
