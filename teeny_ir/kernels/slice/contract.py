"""The ``slice`` family's contract: ``y = x[s_0::t_0, ..., s_5::t_5]``, rank 1 to `MAX_RANK`.

The output ``y`` is contiguous; the kernel walks its flat index, splits it into
the output's indices ``i_0 .. i_5`` (the rank right-padded with size-1
dimensions; ``size1 .. size5`` are the output's sizes, dimension 0 takes the
rest) and reads the input at the *logical* index ``x_offset + sum_k j_k *
x_stride<k>``, where ``j_k = i_k``, or ``size_k - 1 - i_k`` for a dimension
whose bit ``k`` is set in the constexpr ``FLIP`` (a negative step). So
``x_offset`` is the logical index of the lowest-addressed element read and
``x_stride<k>`` is ``|step_k|`` times the row-major stride of dimension ``k`` in
the contiguous input (dimension 0's is one image, ``IMAGE_IN``); every term is
non-negative, whatever the signs of the steps. The input may be batch-strided
(`teeny_ir.kernels.transpose.contract`): its logical index ``f`` is at ``(f //
IMAGE_IN) * x_batch_stride + f % IMAGE_IN``.
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


def padded(shape: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` right-padded with 1s to `MAX_RANK`."""
    return shape + (1,) * (MAX_RANK - len(shape))


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """``numel`` and ``size1..5`` from ``y``, ``IMAGE_IN`` from ``x``, of equal
    ranks up to `MAX_RANK`. The offset and strides are the op's, which the
    shapes do not imply: the footprint bounds every read inside ``x``."""
    x, y = tuple(shapes["x"]), tuple(shapes["y"])
    if len(x) != len(y) or not 1 <= len(x) <= MAX_RANK or math.prod(y) > MAX_I32:
        return []
    out = padded(y)
    dims: dict[str, int | None] = {"numel": math.prod(y), "IMAGE_IN": math.prod(x[1:])}
    dims |= {f"size{k}": out[k] for k in DIMS[1:]}
    return [dims]


_I32 = "i32"
_PTR = "*fp32"

STRIDES = {"x": "x_batch_stride"}
"""The input's batch-stride dim; the output is contiguous."""


def _reach_x() -> str:
    """Elements the input may be touched at: the largest logical index read is
    the offset plus every dimension's last index times its stride."""
    inner = " * ".join(f"size{k}" for k in DIMS[1:])
    last = " + ".join(
        ["x_offset", f"(floordiv(numel, {inner}) - 1) * x_stride0"]
        + [f"(size{k} - 1) * x_stride{k}" for k in DIMS[1:]]
    )
    return f"floordiv({last}, IMAGE_IN) * {STRIDES['x']} + IMAGE_IN"


FAMILY = KernelFamily(
    name="slice",
    summary=(
        "y = x[s_0::t_0, ..., s_5::t_5] for a rank of up to 6 (right-padded with 1s), "
        "steps of either sign: the grid walks the contiguous output, each element "
        "read at x_offset + sum_k j_k * x_stride_k, j_k the index or (FLIP bit k) "
        "its mirror; x's images at its batch stride"
    ),
    args=(
        KernelArg("x", "input", _PTR),
        KernelArg("y", "output", _PTR),
        KernelArg("numel", "dim", _I32),
        KernelArg("IMAGE_IN", "dim", _I32),
        *(KernelArg(f"size{k}", "dim", _I32) for k in DIMS[1:]),
        KernelArg("x_offset", "dim", _I32),
        *(KernelArg(f"x_stride{k}", "dim", _I32) for k in DIMS),
        KernelArg(STRIDES["x"], "dim", _I32),
    ),
    constexprs=(
        Constexpr("FLIP", "int", choices=tuple(range(2**MAX_RANK))),
        Constexpr("BLOCK", "int", power_of_two=True, minimum=1),
    ),
    grid=(GridAxis((("numel", "BLOCK"),)),),
    package=Path(__file__).parent,
    kernel_function="slice_copy",
    footprints={"x": _reach_x(), "y": "numel"},
    implied=implied,
    blocks=(("BLOCK",),),
    batch_strides=STRIDES,
)
