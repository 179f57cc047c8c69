"""The ``pad`` family's contract: ``y = pad(x)`` in ``MODE``, rank 1 to `MAX_RANK`.

The output ``y`` is contiguous; the kernel walks its flat index and splits it
into the output's indices ``o_0 .. o_5`` (the rank right-padded with size-1
dimensions; ``size1 .. size5`` are the output's sizes, dimension 0 takes the
rest). On dimension ``k`` of the input's ``n<k>`` elements the raw source index
is ``r = o_k + crop<k> - before<k>`` (the op's begin pad, split into its
non-negative parts: dims are never negative), and ``MODES[MODE]`` maps it:

- ``constant``: ``r / step<k>`` when ``r >= 0``, ``step<k>`` divides it and the
  quotient is below ``n<k>`` (``step = interior + 1``), else the element is
  ``value[0]``, the one element of the ``value`` parameter slot;
- ``reflect``: ``r`` folded into ``[0, n)`` about both edges, as often as
  needed (period ``2 * (n - 1)``);
- ``edge``: ``r`` clamped to ``[0, n - 1]``.

Every index read therefore lies in the input, whatever the pads: the input's
footprint is its whole span. The input's logical index is row-major over
``n0 .. n5``; its images (``IMAGE_IN`` elements) lie ``x_batch_stride`` apart.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily

MAX_RANK = 6
"""The family views every tensor as rank 6, right-padded with 1s."""

DIMS = tuple(range(MAX_RANK))
MAX_I32 = 2**31 - 1
MODES = ("constant", "reflect", "edge")
"""``MODE`` is an index into this tuple (the kernel's ``MODE == 1`` is reflect)."""


def padded(shape: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` right-padded with 1s to `MAX_RANK`."""
    return shape + (1,) * (MAX_RANK - len(shape))


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """``numel`` and ``size1..5`` from ``y``, ``n0..n5`` and ``IMAGE_IN`` from
    ``x`` (equal ranks up to `MAX_RANK`), ``value`` of one element. The pads are
    the op's: any value is safe, every read is clamped or masked into ``x``."""
    x, y = tuple(shapes["x"]), tuple(shapes["y"])
    if len(x) != len(y) or not 1 <= len(x) <= MAX_RANK or shapes["value"] != (1,):
        return []
    if math.prod(y) > MAX_I32:
        return []
    dims: dict[str, int | None] = {"numel": math.prod(y), "IMAGE_IN": math.prod(x[1:])}
    dims |= {f"size{k}": size for k, size in enumerate(padded(y)) if k}
    dims |= {f"n{k}": size for k, size in enumerate(padded(x))}
    return [dims]


_I32 = "i32"
_PTR = "*fp32"

STRIDES = {"x": "x_batch_stride"}
"""The input's batch-stride dim; the output is contiguous."""

FAMILY = KernelFamily(
    name="pad",
    summary=(
        "y = pad(x) for a rank of up to 6 (right-padded with 1s), MODE constant "
        "(value from a [1] slot; interior steps), reflect or edge: the grid walks the "
        "contiguous output, each element reading x at its source index o + crop - "
        "before mapped into x by the mode; x's images at its batch stride"
    ),
    args=(
        KernelArg("x", "input", _PTR),
        KernelArg("value", "param", _PTR),
        KernelArg("y", "output", _PTR),
        KernelArg("numel", "dim", _I32),
        KernelArg("IMAGE_IN", "dim", _I32),
        *(KernelArg(f"size{k}", "dim", _I32) for k in DIMS[1:]),
        *(KernelArg(f"n{k}", "dim", _I32) for k in DIMS),
        *(KernelArg(f"before{k}", "dim", _I32) for k in DIMS),
        *(KernelArg(f"crop{k}", "dim", _I32) for k in DIMS),
        *(KernelArg(f"step{k}", "dim", _I32) for k in DIMS),
        KernelArg(STRIDES["x"], "dim", _I32),
    ),
    constexprs=(
        Constexpr("MODE", "int", choices=tuple(range(len(MODES)))),
        Constexpr("BLOCK", "int", power_of_two=True, minimum=1),
    ),
    grid=(GridAxis((("numel", "BLOCK"),)),),
    package=Path(__file__).parent,
    kernel_function="pad",
    footprints={"x": f"(n0 - 1) * {STRIDES['x']} + IMAGE_IN", "value": "1", "y": "numel"},
    implied=implied,
    blocks=(("BLOCK",),),
    batch_strides=STRIDES,
)
