"""The ``broadcast`` family's contract: ``out[i] = x[j]`` with numpy broadcasting.

The output (contiguous) is viewed as rank 6, left-padded with 1s, and walked by
its flat index; the input (contiguous) is addressed through its own rank-6
strides, 0 on each dimension it is broadcast along, as the ``elementwise``
family addresses its operands.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily

RANK = 6
"""The family views every tensor as rank 6, left-padded with 1s."""


def padded(shape: Sequence[int]) -> tuple[int, ...]:
    return (1,) * (RANK - len(shape)) + tuple(shape)


def _strides(operand: Sequence[int], output: Sequence[int]) -> list[int]:
    """Numpy broadcasting of a contiguous ``operand`` against ``output`` (rank 6)."""
    shape = padded(operand)
    contiguous = [math.prod(shape[k + 1 :]) for k in range(RANK)]
    return [
        0 if o == 1 and n != 1 else s for o, n, s in zip(shape, output, contiguous, strict=True)
    ]


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """``numel`` and ``size1..5`` from the output, ``x``'s strides broadcast numpy's
    way (free on an output axis of extent 1); nothing when ``x`` does not
    broadcast to ``out`` or a rank exceeds `RANK`."""
    x, out = shapes["x"], shapes["out"]
    if len(x) > RANK or len(out) > RANK:
        return []
    sizes = padded(out)
    if any(o not in (1, n) for o, n in zip(padded(x), sizes, strict=True)):
        return []
    dims: dict[str, int | None] = {"numel": math.prod(out)}
    dims |= {f"size{k}": sizes[k] for k in range(1, RANK)}
    strides = _strides(x, sizes)
    dims |= {f"x_stride{k}": None if sizes[k] == 1 else strides[k] for k in range(RANK)}
    return [dims]


def _reach() -> str:
    """Elements the input's strides reach over the rank-6 index space, plus one."""
    inner = " * ".join(f"size{k}" for k in range(1, RANK))
    terms = [f"floordiv(numel - 1, {inner}) * x_stride0"]
    terms += [f"(size{k} - 1) * x_stride{k}" for k in range(1, RANK)]
    return " + ".join(terms) + " + 1"


_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="broadcast",
    summary=(
        f"out = x stretched by numpy broadcasting to a rank-{RANK} (left-padded) output, "
        "through x's strides (0 on broadcast dims); both contiguous, masked 1-D blocks"
    ),
    args=(
        KernelArg("x", "input", _PTR),
        KernelArg("out", "output", _PTR),
        KernelArg("numel", "dim", _I32),
        *(KernelArg(f"size{k}", "dim", _I32) for k in range(1, RANK)),
        *(KernelArg(f"x_stride{k}", "dim", _I32) for k in range(RANK)),
    ),
    constexprs=(Constexpr("BLOCK", "int", power_of_two=True, minimum=1),),
    grid=(GridAxis((("numel", "BLOCK"),)),),
    package=Path(__file__).parent,
    kernel_function="broadcast",
    footprints={"x": _reach(), "out": "numel"},
    implied=implied,
    blocks=(("BLOCK",),),
)
