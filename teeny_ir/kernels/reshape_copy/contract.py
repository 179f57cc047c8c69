"""The ``reshape_copy`` family's contract: ``y = reshape(x)``, the same ``numel``
elements in row-major order under another static shape.

The output ``y`` is contiguous and walked by its flat index ``f``; element
``f`` of the input is its logical index ``f`` in row-major order. The input
may be batch-strided (`teeny_ir.kernels.transpose.contract`): its images of
``X_IMAGE`` elements (``prod(shape[1:])``, one element for a rank-1 input) lie
``x_batch_stride`` elements apart, so ``f`` is at ``(f // X_IMAGE) *
x_batch_stride + f % X_IMAGE``. Every shape is static: the launch's dims are
constants, and the element count must fit an i32.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily

MAX_I32 = 2**31 - 1

STRIDES = {"x": "x_batch_stride"}
"""The input's batch-stride dim; the output is contiguous."""


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """``numel`` (the element count both tensors hold) and ``X_IMAGE`` from
    ``x``; nothing when the counts differ or exceed an i32."""
    x, y = tuple(shapes["x"]), tuple(shapes["y"])
    numel = math.prod(x)
    if math.prod(y) != numel or numel > MAX_I32:
        return []
    return [{"numel": numel, "X_IMAGE": math.prod(x[1:])}]


_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="reshape_copy",
    summary=(
        "y = reshape(x): the numel elements of a static x in row-major order into a "
        "contiguous y of another static shape (a reshape that changes dimension 0); "
        "masked 1-D blocks, x's images of X_IMAGE elements at its batch stride"
    ),
    args=(
        KernelArg("x", "input", _PTR),
        KernelArg("y", "output", _PTR),
        KernelArg("numel", "dim", _I32),
        KernelArg("X_IMAGE", "dim", _I32),
        KernelArg(STRIDES["x"], "dim", _I32),
    ),
    constexprs=(Constexpr("BLOCK", "int", power_of_two=True, minimum=1),),
    grid=(GridAxis((("numel", "BLOCK"),)),),
    package=Path(__file__).parent,
    kernel_function="reshape_copy",
    # The last element read is image numel // X_IMAGE - 1 at its last offset.
    footprints={
        "x": f"floordiv(numel - 1, X_IMAGE) * {STRIDES['x']} + X_IMAGE",
        "y": "numel",
    },
    implied=implied,
    blocks=(("BLOCK",),),
    batch_strides=STRIDES,
)
