"""The ``conv1x1_gemm`` family's contract: ``Y_b = act(scale * (W @ X_b) + shift)``."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """From NCHW ``x`` and ``y``: ``B``, ``C_IN``, ``C_OUT``, ``M = H * W`` and a
    contiguous output (``y_row_stride = M``); the output's H * W must be ``M``."""
    x, y = shapes["x"], shapes["y"]
    if len(x) != 4 or len(y) != 4:
        return []
    spatial = math.prod(x[2:])
    dims: dict[str, int | None] = {"B": x[0], "C_IN": x[1], "C_OUT": y[1], "M": spatial}
    if y[0] != x[0] or math.prod(y[2:]) != spatial:
        return []
    return [dims | {"y_row_stride": spatial}]

_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="conv1x1_gemm",
    summary=(
        "per batch Y_b[C_OUT, M] = W[C_OUT, C_IN] @ X_b[C_IN, M] with tl.dot, batch "
        "folded into the grid, GROUP_M swizzle, epilogue act(scale * acc + shift) "
        "with any epilogue entry of the pointwise table"
    ),
    args=(
        KernelArg("x", "input", _PTR),
        KernelArg("w", "param", _PTR),
        KernelArg("scale", "param", _PTR),
        KernelArg("shift", "param", _PTR),
        KernelArg("y", "output", _PTR),
        KernelArg("B", "dim", _I32),
        KernelArg("C_IN", "dim", _I32),
        KernelArg("C_OUT", "dim", _I32),
        KernelArg("M", "dim", _I32),
        KernelArg("y_row_stride", "dim", _I32),
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
        "x": "B * C_IN * M",
        "w": "C_OUT * C_IN",
        "scale": "C_OUT",
        "shift": "C_OUT",
        "y": "(B * C_OUT - 1) * y_row_stride + M",
    },
    implied=implied,
    blocks=(("BLOCK_M", "BLOCK_N"), ("BLOCK_M", "BLOCK_K"), ("BLOCK_K", "BLOCK_N")),
)
