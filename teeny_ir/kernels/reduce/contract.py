"""The ``reduce`` family's contract: the sum or mean of ``x`` over a run of axes.

The kernel sees ``x`` in the row view of `teeny_ir.kernels.softmax.rows`
(``[N, RB, OUTER, R, INNER]``: the batch, if reduced, is ``RB``, the other
reduced axes, one contiguous run, merge into ``R``) and writes
row ``q`` (of ``N * OUTER * INNER``) to ``y``'s logical element ``q``: image
``q // Y_IMAGE`` of ``y`` at ``y_batch_stride``, element ``q % Y_IMAGE`` in it.
Both tensors may be batch-strided views, whatever the axes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily
from teeny_ir.kernels.softmax.rows import MAX_I32, X_REACH, row_dims, runs


def _squeezed(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(d for d in shape if d != 1)


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """From ``x`` and ``y``: ``N``, ``RB``, ``OUTER``, ``R``, ``INNER`` and ``Y_IMAGE``,
    one alternative per reduction of ``x`` over the batch or not and a run of axes
    within the image (see `teeny_ir.kernels.softmax.rows`) whose removal leaves
    ``y``'s shape but for sizes of 1 (with or without ``keepdims``), ``y``'s
    elements being the rows."""
    x, y = shapes["x"], shapes["y"]
    if not x or math.prod(y[1:]) > MAX_I32:
        return []
    alternatives: list[dict[str, int | None]] = []
    for batch in (False, True):
        for first, last in runs(len(x)):
            kept = x[1:first] + x[last:] if batch else x[:first] + x[last:]
            if _squeezed(kept) != _squeezed(y):
                continue
            dims = row_dims(x, batch, first, last)
            if dims is None or dims["N"] * dims["OUTER"] * dims["INNER"] != math.prod(y):
                continue
            found: dict[str, int | None] = {**dims, "Y_IMAGE": math.prod(y[1:])}
            if found not in alternatives:
                alternatives.append(found)
    return alternatives


_I32 = "i32"
_PTR = "*fp32"

ARGS = (
    KernelArg("x", "input", _PTR),
    KernelArg("y", "output", _PTR),
    KernelArg("N", "dim", _I32),
    KernelArg("RB", "dim", _I32),
    KernelArg("OUTER", "dim", _I32),
    KernelArg("R", "dim", _I32),
    KernelArg("INNER", "dim", _I32),
    KernelArg("Y_IMAGE", "dim", _I32),
    KernelArg("x_batch_stride", "dim", _I32),
    KernelArg("y_batch_stride", "dim", _I32),
)
"""The arguments of the row reductions (this family and ``reduce_extremum``)."""
GRID = (GridAxis((("N * OUTER * INNER", "BLOCK_ROWS"),)),)
FOOTPRINTS = {
    "x": X_REACH,
    "y": "floordiv(N * OUTER * INNER - 1, Y_IMAGE) * y_batch_stride + Y_IMAGE",
}

FAMILY = KernelFamily(
    name="reduce",
    summary=(
        "the sum or (MEAN) mean of each row of x [N, RB, OUTER, R, INNER] over RB x R (a run "
        "of axes of any extent; the batch too when RB > 1), in BLOCK_R chunks with an fp32 "
        "accumulator, NaN/inf as numpy; y's row q at image q // Y_IMAGE; images of x and "
        "y at their batch strides"
    ),
    args=ARGS,
    constexprs=(
        Constexpr("MEAN", "bool"),
        Constexpr("BLOCK_ROWS", "int", power_of_two=True, minimum=1),
        Constexpr("BLOCK_R", "int", power_of_two=True, minimum=1),
    ),
    grid=GRID,
    package=Path(__file__).parent,
    kernel_function="reduce",
    footprints=FOOTPRINTS,
    implied=implied,
    blocks=(("BLOCK_ROWS", "BLOCK_R"),),
    batch_strides={"x": "x_batch_stride", "y": "y_batch_stride"},
)
