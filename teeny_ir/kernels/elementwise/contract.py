"""The ``elementwise`` family's contract: ``out = op(x)`` or ``op(x, y)``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily

RANK = 6
"""The family views every tensor as rank 6, left-padded with 1s."""


def padded(shape: Sequence[int]) -> tuple[int, ...]:
    return (1,) * (RANK - len(shape)) + tuple(shape)


def _contiguous(shape: Sequence[int]) -> list[int]:
    return [math.prod(shape[k + 1 :]) for k in range(len(shape))]


def _broadcast(operand: Sequence[int], output: Sequence[int]) -> list[int]:
    """Numpy broadcasting of a contiguous ``operand`` against ``output`` (rank 6)."""
    strides = _contiguous(padded(operand))
    pairs = zip(padded(operand), output, strides, strict=True)
    return [0 if o == 1 and n != 1 else s for o, n, s in pairs]


def _channel(operand: Sequence[int], output: Sequence[int]) -> list[int] | None:
    """A per-channel vector [C] read along dimension 1 of ``output`` (bias_add)."""
    rank = len(output)
    if len(operand) != 1 or rank < 2 or operand[0] != output[1]:
        return None
    return [1 if k == RANK - rank + 1 else 0 for k in range(RANK)]


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """``numel`` and ``size1..5`` from the output; the operands' strides broadcast
    them numpy's way, or (``y`` only) as a per-channel vector. A stride of an
    axis of extent 1 is free: its index is always 0. No tensor may have a rank
    above `RANK`."""
    out = shapes["out"]
    if any(len(shape) > RANK for shape in shapes.values()):
        return []
    sizes = padded(out)
    dims: dict[str, int | None] = {"numel": math.prod(out)}
    dims |= {f"size{k}": sizes[k] for k in range(1, RANK)}

    def strides(name: str, values: list[int]) -> dict[str, int | None]:
        return {f"{name}_stride{k}": None if sizes[k] == 1 else values[k] for k in range(RANK)}

    x = strides("x", _broadcast(shapes["x"], sizes))
    choices = [_broadcast(shapes["y"], sizes)]
    channel = _channel(shapes["y"], out)
    if channel is not None:
        choices.append(channel)
    return [dims | x | strides("y", y) for y in choices]


def _reach(name: str) -> str:
    """Elements an operand's strides reach over the rank-6 index space, plus one:
    the largest index of dimension 0 is ``(numel - 1) // (size1 * ... * size5)``,
    that of dimension k >= 1 is ``size<k> - 1``."""
    inner = " * ".join(f"size{k}" for k in range(1, RANK))
    terms = [f"floordiv(numel - 1, {inner}) * {name}_stride0"]
    terms += [f"(size{k} - 1) * {name}_stride{k}" for k in range(1, RANK)]
    return " + ".join(terms) + " + 1"


_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="elementwise",
    summary=(
        f"out = op(x) or op(x, y) for any entry of the pointwise table, over a rank-{RANK} "
        "(left-padded) output, with numpy broadcasting through per-operand strides "
        "(0 on broadcast dims)"
    ),
    args=(
        KernelArg("x", "input", _PTR),
        KernelArg("y", "input", _PTR),
        KernelArg("out", "output", _PTR),
        KernelArg("numel", "dim", _I32),
        *(KernelArg(f"size{k}", "dim", _I32) for k in range(1, RANK)),
        *(KernelArg(f"x_stride{k}", "dim", _I32) for k in range(RANK)),
        *(KernelArg(f"y_stride{k}", "dim", _I32) for k in range(RANK)),
    ),
    constexprs=(
        Constexpr("OP", "pointwise", slot="pointwise"),
        Constexpr("BLOCK", "int", power_of_two=True, minimum=1),
    ),
    grid=(GridAxis((("numel", "BLOCK"),)),),
    package=Path(__file__).parent,
    kernel_function="elementwise",
    footprints={"x": _reach("x"), "y": _reach("y"), "out": "numel"},
    implied=implied,
    blocks=(("BLOCK",),),
)
