"""The ``softmax_backward`` family's contract: the gradient of softmax (``LOG``
0: ``dx = y * (dy - sum(dy * y))``) or log-softmax (``LOG`` 1: ``dx = dy -
exp(y) * sum(dy)``) along one axis, from the forward output ``y`` and the
gradient ``dy``.

The kernel sees ``y``, ``dy`` and ``dx`` (one shape) in the row view of
`teeny_ir.kernels.softmax.rows`, as the softmax family does: ``N * OUTER *
INNER`` rows of ``RB * R`` elements (axis 0 is the batch, ``RB``). Each image
of every tensor is contiguous and starts ``batch_stride`` elements after the one
before, so all three may be batch-strided views. Every load and store is masked
to its row.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily
from teeny_ir.kernels.softmax.rows import X_REACH, row_dims


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """From ``y``, ``dy`` and ``dx`` of one shape: ``N``, ``RB``, ``OUTER``, ``R``,
    ``INNER``, one alternative per axis (the batch strides are the validator's)."""
    y = shapes["y"]
    if shapes["dy"] != y or shapes["dx"] != y or not y:
        return []
    alternatives: list[dict[str, int | None]] = []
    for axis in range(len(y)):
        run = (axis, axis + 1) if axis else (len(y), len(y))
        dims = row_dims(y, axis == 0, *run)
        if dims is not None and dims not in alternatives:
            alternatives.append(dict(dims))
    return alternatives


_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="softmax_backward",
    summary=(
        "the gradient of softmax (y * (dy - sum(dy * y))) or (LOG) log-softmax "
        "(dy - exp(y) * sum(dy)) along RB x R of rows [N, RB, OUTER, R, INNER] (one axis "
        "of any length; the batch when RB > 1): a blocked fp32 sum pass and a write pass, "
        "NaN/inf as the reference; images of y, dy and dx at their batch strides"
    ),
    args=(
        KernelArg("y", "input", _PTR),
        KernelArg("dy", "input", _PTR),
        KernelArg("dx", "output", _PTR),
        KernelArg("N", "dim", _I32),
        KernelArg("RB", "dim", _I32),
        KernelArg("OUTER", "dim", _I32),
        KernelArg("R", "dim", _I32),
        KernelArg("INNER", "dim", _I32),
        KernelArg("y_batch_stride", "dim", _I32),
        KernelArg("dy_batch_stride", "dim", _I32),
        KernelArg("dx_batch_stride", "dim", _I32),
    ),
    constexprs=(
        Constexpr("LOG", "bool"),
        Constexpr("BLOCK_ROWS", "int", power_of_two=True, minimum=1),
        Constexpr("BLOCK_R", "int", power_of_two=True, minimum=1),
    ),
    grid=(GridAxis((("N * OUTER * INNER", "BLOCK_ROWS"),)),),
    package=Path(__file__).parent,
    kernel_function="softmax_backward",
    footprints={
        name: X_REACH.replace("x_batch_stride", f"{name}_batch_stride")
        for name in ("y", "dy", "dx")
    },
    implied=implied,
    blocks=(("BLOCK_ROWS", "BLOCK_R"),),
    batch_strides={name: f"{name}_batch_stride" for name in ("y", "dy", "dx")},
)
