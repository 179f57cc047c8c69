"""The row view that the ``softmax`` and ``reduce`` families share (standard
library only).

A tensor reduced over some axes is seen as ``[N, RB, OUTER, R, INNER]``. The
batch (dimension 0) is either kept (``N`` images, ``RB = 1``) or reduced (``RB``
images folded into the reduction, ``N = 1``); within an image the reduced axes
are one contiguous run ``[first, last)`` (``1 <= first <= last``; the empty run
is ``[rank, rank)``) of ``R`` elements, with ``OUTER`` elements' worth of axes
before it and ``INNER`` after it. A row is one ``(n, o, inner)``; there are
``N * OUTER * INNER`` of them, each of ``RB * R`` elements, and row element
``(rb, r)`` lies at ``(n + rb) * batch_stride + (o * R + r) * INNER + inner``:
every tensor may be batch-strided (its images ``batch_stride`` apart, each
contiguous), whatever the axes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

MAX_I32 = 2**31 - 1
MAX_EXTENT = MAX_I32 - 2**20
"""The largest ``R``: the kernels step ``start + BLOCK_R`` in 32 bits."""

X_REACH = "(N - 1 + RB - 1) * x_batch_stride + OUTER * R * INNER"
"""Elements the input may be touched at: the last row's last element, plus one."""


def row_dims(shape: Sequence[int], batch: bool, first: int, last: int) -> dict[str, int] | None:
    """``N``, ``RB``, ``OUTER``, ``R``, ``INNER`` of ``shape`` (rank >= 1) reduced
    over the batch (if ``batch``) and the axes ``[first, last)``; None when a dim
    leaves i32, ``R`` exceeds `MAX_EXTENT` or an image holds 2**31 elements or more."""
    dims = {
        "N": 1 if batch else shape[0],
        "RB": shape[0] if batch else 1,
        "OUTER": math.prod(shape[1:first]),
        "R": math.prod(shape[first:last]),
        "INNER": math.prod(shape[last:]),
    }
    if math.prod(shape[1:]) > MAX_I32 or dims["R"] > MAX_EXTENT:
        return None
    if any(v > MAX_I32 for v in dims.values()):
        return None
    return dims


def runs(rank: int) -> list[tuple[int, int]]:
    """Every run ``[first, last)`` of axes within an image, the empty one last."""
    found = [(a, b) for a in range(1, rank) for b in range(a + 1, rank + 1)]
    return [*found, (rank, rank)]
