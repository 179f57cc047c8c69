"""The ``linear`` family's contract: ``y[r, n] = act(scale[n] * sum_k x[r, k] *
w[n, k] + shift[n])`` over every row ``r`` of the input (``graph.linear``).

The input ``x`` is [B, ..., K] and the output ``y`` [B, ..., N]: each image
(one batch item) holds ``ROWS = prod(shape[1:-1])`` contiguous rows (1 for a
rank-2 input), and images lie ``x_batch_stride`` / ``y_batch_stride``
elements apart, so either may be a batch-strided view. ``w`` is the weight
[N, K] as it is (``identity``), ``scale`` and ``shift`` per output column (a
bias is the shift, with a scale of ones)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """From ``x`` [B, ..., K] and ``y`` [B, ..., N] of the same leading dims:
    ``B``, ``ROWS``, ``K`` and ``N``; ``w`` must be [N, K]."""
    x, y, w = shapes["x"], shapes["y"], shapes["w"]
    if len(x) < 2 or len(y) != len(x) or x[:-1] != y[:-1] or w != (y[-1], x[-1]):
        return []
    return [{"B": x[0], "ROWS": math.prod(x[1:-1]), "K": x[-1], "N": y[-1]}]


_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="linear",
    summary=(
        "y[r, :] = act(scale * (x[r, :] @ W^T) + shift) for every row r of the input "
        "(B images of ROWS rows) with tl.dot, GROUP_M swizzle, epilogue with any "
        "epilogue entry of the pointwise table; x and y may be batch-strided views"
    ),
    args=(
        KernelArg("x", "input", _PTR),
        KernelArg("w", "param", _PTR),
        KernelArg("scale", "param", _PTR),
        KernelArg("shift", "param", _PTR),
        KernelArg("y", "output", _PTR),
        KernelArg("B", "dim", _I32),
        KernelArg("ROWS", "dim", _I32),
        KernelArg("K", "dim", _I32),
        KernelArg("N", "dim", _I32),
        KernelArg("x_batch_stride", "dim", _I32),
        KernelArg("y_batch_stride", "dim", _I32),
    ),
    constexprs=(
        Constexpr("BLOCK_M", "int", power_of_two=True, minimum=16),
        Constexpr("BLOCK_N", "int", power_of_two=True, minimum=16),
        Constexpr("BLOCK_K", "int", power_of_two=True, minimum=16),
        Constexpr("GROUP_M", "int", minimum=1),
        Constexpr("ACTIVATION", "pointwise", slot="activation", epilogue=True),
    ),
    grid=(GridAxis((("B * ROWS", "BLOCK_M"), ("N", "BLOCK_N"))),),
    package=Path(__file__).parent,
    kernel_function="linear",
    footprints={
        "x": "(B - 1) * x_batch_stride + ROWS * K",
        "w": "N * K",
        "scale": "N",
        "shift": "N",
        "y": "(B - 1) * y_batch_stride + ROWS * N",
    },
    batch_strides={"x": "x_batch_stride", "y": "y_batch_stride"},
    implied=implied,
    blocks=(("BLOCK_M", "BLOCK_N"), ("BLOCK_M", "BLOCK_K"), ("BLOCK_K", "BLOCK_N")),
)
