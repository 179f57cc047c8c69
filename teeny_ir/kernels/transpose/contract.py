"""The ``transpose`` family's contract: ``y = permute(x, perm)``, rank 1 to `MAX_RANK`.

The output ``y`` is contiguous; the kernel walks its flat index, splits it into
the output's indices ``i_0 .. i_5`` (the output's rank padded with trailing
size-1 dimensions to `MAX_RANK`; ``size1 .. size5`` are its sizes, dimension 0
takes the rest) and reads the input at the *logical* index
``sum_k i_k * x_stride<k>``: ``x_stride<k>`` is the row-major stride, in the
contiguous input, of the input dimension that output dimension ``k`` reads
(``perm[k]``). The input may be batch-strided (a channel slice of a larger
buffer): its images of ``IMAGE_IN`` elements lie ``x_batch_stride`` apart, and
the logical index ``f`` is at ``(f // IMAGE_IN) * x_batch_stride + f % IMAGE_IN``,
as in `teeny_ir.kernels.concat.rows`. The strides stay image-relative, so
views.py rebinding ``x_batch_stride`` is the only change a view needs.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily

MAX_RANK = 6
"""The family views every tensor as rank 6, right-padded with 1s."""

DIMS = tuple(range(MAX_RANK))


def contiguous_strides(shape: Sequence[int]) -> list[int]:
    """The row-major strides of a contiguous ``shape``."""
    return [math.prod(shape[k + 1 :]) for k in range(len(shape))]


def padded(shape: Sequence[int]) -> tuple[int, ...]:
    """``shape`` right-padded with 1s to `MAX_RANK`."""
    return tuple(shape) + (1,) * (MAX_RANK - len(shape))


def dims_for(source: Sequence[int], perm: Sequence[int]) -> dict[str, int | None]:
    """The dims of a transpose of a contiguous ``source`` by ``perm`` (None: a
    stride of an output axis of extent 1, whose index is always 0)."""
    strides = contiguous_strides(source)
    out = padded([source[p] for p in perm])
    dims: dict[str, int | None] = {
        "numel": math.prod(source),
        "IMAGE_IN": math.prod(source[1:]),
    }
    dims |= {f"size{k}": out[k] for k in DIMS[1:]}
    dims |= {
        f"x_stride{k}": strides[perm[k]] if k < len(perm) and out[k] != 1 else None for k in DIMS
    }
    return dims


@functools.lru_cache(maxsize=1024)
def _implied(
    x: tuple[int, ...], y: tuple[int, ...]
) -> tuple[tuple[tuple[str, int | None], ...], ...]:
    if len(x) != len(y) or not 1 <= len(x) <= MAX_RANK or sorted(x) != sorted(y):
        return ()
    found: list[tuple[tuple[str, int | None], ...]] = []
    for perm in itertools.permutations(range(len(x))):
        if all(x[p] == y[k] for k, p in enumerate(perm)):
            dims = tuple(dims_for(x, perm).items())
            if dims not in found:
                found.append(dims)
    return tuple(found)


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """``numel``, ``IMAGE_IN`` and the strides of ``x``, ``size1..5`` from ``y``:
    one alternative per permutation that takes ``x``'s shape to ``y``'s (sizes
    that repeat allow several). Shapes that no permutation relates imply nothing
    (the validator then refuses the launch). The batch stride is the validator's."""
    return [dict(dims) for dims in _implied(tuple(shapes["x"]), tuple(shapes["y"]))]


_I32 = "i32"
_PTR = "*fp32"

STRIDES = {"x": "x_batch_stride"}
"""The input's batch-stride dim; the output is contiguous."""


def _reach_x() -> str:
    """Elements the input may be touched at: logical indices below ``numel``."""
    return "floordiv(numel - 1, IMAGE_IN) * x_batch_stride + IMAGE_IN"


FAMILY = KernelFamily(
    name="transpose",
    summary=(
        "y = permute(x, perm) for a rank of up to 6 (right-padded with 1s): the grid "
        "walks the contiguous output, each element read through the permuted strides "
        "of x; x's images at its batch stride"
    ),
    args=(
        KernelArg("x", "input", _PTR),
        KernelArg("y", "output", _PTR),
        KernelArg("numel", "dim", _I32),
        KernelArg("IMAGE_IN", "dim", _I32),
        *(KernelArg(f"size{k}", "dim", _I32) for k in DIMS[1:]),
        *(KernelArg(f"x_stride{k}", "dim", _I32) for k in DIMS),
        KernelArg(STRIDES["x"], "dim", _I32),
    ),
    constexprs=(Constexpr("BLOCK", "int", power_of_two=True, minimum=1),),
    grid=(GridAxis((("numel", "BLOCK"),)),),
    package=Path(__file__).parent,
    kernel_function="transpose",
    footprints={"x": _reach_x(), "y": "numel"},
    implied=implied,
    blocks=(("BLOCK",),),
    batch_strides=STRIDES,
)
