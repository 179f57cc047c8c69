"""The ``activation_grad`` family's contract: ``dx = activation'(x) * dy``.

``x``, ``dy`` and ``dx`` are contiguous tensors of one shape, walked as one flat
index of ``numel`` elements in masked 1-D blocks. ``ACTIVATION`` names a unary
entry of the pointwise table; rendering fills the kernel's ``derivative`` slot
with the entry's ``derivative_triton``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily

MAX_I32 = 2**31 - 1


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """``numel`` of ``x``, ``dy`` and ``dx``, which have one shape."""
    x = shapes["x"]
    if shapes["dy"] != x or shapes["dx"] != x or math.prod(x) > MAX_I32:
        return []
    return [{"numel": math.prod(x)}]


_PTR = "*fp32"

FAMILY = KernelFamily(
    name="activation_grad",
    summary=(
        "dx = activation'(x) * dy for a unary entry of the pointwise table (its "
        "derivative_triton, PyTorch's backward formula), x, dy and dx contiguous of one "
        "shape, in masked 1-D blocks"
    ),
    args=(
        KernelArg("x", "input", _PTR),
        KernelArg("dy", "input", _PTR),
        KernelArg("dx", "output", _PTR),
        KernelArg("numel", "dim", "i32"),
    ),
    constexprs=(
        Constexpr("ACTIVATION", "pointwise", slot="derivative"),
        Constexpr("BLOCK", "int", power_of_two=True, minimum=1),
    ),
    grid=(GridAxis((("numel", "BLOCK"),)),),
    package=Path(__file__).parent,
    kernel_function="activation_grad",
    footprints={"x": "numel", "dy": "numel", "dx": "numel"},
    implied=implied,
    blocks=(("BLOCK",),),
)
