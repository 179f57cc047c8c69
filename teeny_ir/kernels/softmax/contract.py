"""The ``softmax`` family's contract: softmax or log-softmax along one axis.

The kernel sees ``x`` and ``y`` (one shape) in the row view of
`teeny_ir.kernels.softmax.rows`: an axis ``a >= 1`` is the run ``[a, a + 1)``,
axis 0 the batch (``RB``, with the empty run), so ``N * OUTER * INNER`` rows of
``RB * R`` elements. Each image of either tensor is contiguous and starts
``batch_stride`` elements after the one before, so both may be batch-strided
views, whatever the axis. Every load and store is masked to its row.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily
from teeny_ir.kernels.softmax.rows import X_REACH, row_dims


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """From ``x`` and ``y`` of one shape: ``N``, ``RB``, ``OUTER``, ``R``, ``INNER``,
    one alternative per axis the softmax may run along (the batch strides are
    the validator's)."""
    x, y = shapes["x"], shapes["y"]
    if x != y or not x:
        return []
    alternatives: list[dict[str, int | None]] = []
    for axis in range(len(x)):
        run = (axis, axis + 1) if axis else (len(x), len(x))
        dims = row_dims(x, axis == 0, *run)
        if dims is not None and dims not in alternatives:
            alternatives.append(dict(dims))
    return alternatives


_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="softmax",
    summary=(
        "softmax or (LOG) log-softmax of each row of x [N, RB, OUTER, R, INNER] along RB x R "
        "(one axis of any length; the batch when RB > 1): a blocked pass of online "
        "max and sum in fp32 and a write pass, NaN/inf as the reference; images of x and "
        "y at their batch strides"
    ),
    args=(
        KernelArg("x", "input", _PTR),
        KernelArg("y", "output", _PTR),
        KernelArg("N", "dim", _I32),
        KernelArg("RB", "dim", _I32),
        KernelArg("OUTER", "dim", _I32),
        KernelArg("R", "dim", _I32),
        KernelArg("INNER", "dim", _I32),
        KernelArg("x_batch_stride", "dim", _I32),
        KernelArg("y_batch_stride", "dim", _I32),
    ),
    constexprs=(
        Constexpr("LOG", "bool"),
        Constexpr("BLOCK_ROWS", "int", power_of_two=True, minimum=1),
        Constexpr("BLOCK_R", "int", power_of_two=True, minimum=1),
    ),
    grid=(GridAxis((("N * OUTER * INNER", "BLOCK_ROWS"),)),),
    package=Path(__file__).parent,
    kernel_function="softmax",
    footprints={
        "x": X_REACH,
        "y": X_REACH.replace("x_batch_stride", "y_batch_stride"),
    },
    implied=implied,
    blocks=(("BLOCK_ROWS", "BLOCK_R"),),
    batch_strides={"x": "x_batch_stride", "y": "y_batch_stride"},
)
