"""Shape-only computation, folded at import: sizes read from a tensor
(``sym_size``), integer arithmetic on them (``operator.mul``, ``torch.sym_float``),
factories of a static shape read from a graph tensor (``new_full``,
``zeros_like``), and ``stack``.

A size is the number the export recorded for the node (its ``meta["val"]``), or,
where it depends on the dynamic batch, a `Sym` naming its expression; a `Sym` is
refused wherever a handler needs a number. Any ATen op whose inputs are all known
at import time (``arange``, ``full``, ``meshgrid``, ``item`` of a constant) is
folded by the importer itself, by running the op in PyTorch.
"""

from __future__ import annotations

import numpy as np
import torch
from xdsl.ir import SSAValue

from teeny_ir.frontend.torch.context import Call, Sym, Value, aten_op, axis, dims, rank_of

_SIZE_OPS = (
    "aten.sym_size",
    "aten.sym_numel",
    "aten.sym_stride",
    "aten.sym_storage_offset",
    "operator.add",
    "operator.sub",
    "operator.mul",
    "operator.floordiv",
    "operator.truediv",
    "operator.mod",
    "operator.neg",
    "operator.pow",
    "operator.eq",
    "operator.ne",
    "operator.lt",
    "operator.le",
    "operator.gt",
    "operator.ge",
    "torch.sym_float",
    "torch.sym_int",
    "torch.sym_max",
    "torch.sym_min",
    "torch.sym_not",
    "math.ceil",
    "math.floor",
    "math.trunc",
)


def recorded(value: object, batch: str) -> Value:
    """A size the export recorded (an int, a float, a SymInt...) as a number, or
    as a `Sym` when it depends on the dynamic batch (or on data)."""
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        expr = value.node.expr
        if expr.is_number:
            if isinstance(value, torch.SymBool):
                return bool(expr)
            return int(expr) if isinstance(value, torch.SymInt) else float(expr)
        return Sym(str(expr), str(expr) == batch)
    raise TypeError(f"not a size: {type(value).__name__}")


@aten_op(*_SIZE_OPS)
def _size(call: Call) -> Value:
    try:
        return recorded(call.node.meta.get("val"), call.batch)
    except TypeError:
        raise call.refuse("the export recorded no size for this node") from None


def _static(call: Call) -> list[int]:
    shape = call.out_shape()
    if any(d < 0 for d in shape):
        raise call.refuse("a tensor of the dynamic batch's size cannot be folded")
    return shape


def _dtype(call: Call) -> np.dtype[np.generic]:
    val = call.node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        raise call.refuse("the export recorded no type for the result")
    return torch.empty((), dtype=val.dtype).numpy().dtype


@aten_op("aten.new_full", "aten.full_like")
def _full(call: Call) -> Value:
    return np.full(_static(call), call.number("fill_value"), dtype=_dtype(call))


@aten_op("aten.new_zeros", "aten.zeros_like")
def _zeros(call: Call) -> Value:
    return np.zeros(_static(call), dtype=_dtype(call))


@aten_op("aten.new_ones", "aten.ones_like")
def _ones(call: Call) -> Value:
    return np.ones(_static(call), dtype=_dtype(call))


@aten_op("aten.stack")
def _stack(call: Call) -> Value:
    tensors = call.arg("tensors")
    if not isinstance(tensors, (list, tuple)) or not tensors:
        raise call.refuse("expected a list of tensors")
    inputs = [t if isinstance(t, SSAValue) else call.materialise(t, "tensors") for t in tensors]
    rank = rank_of(inputs[0]) + 1
    dim = axis(call, call.integer("dim"), rank)
    if dim == 0 and dims(inputs[0])[0] < 0:
        raise call.refuse("stacking along the dynamic batch is not supported")
    pieces = []
    for x in inputs:
        shape = [0 if d < 0 else d for d in dims(x)]
        pieces.append(call.b.reshape(x, [*shape[:dim], 1, *shape[dim:]]))
    return pieces[0] if len(pieces) == 1 else call.b.concat(pieces, dim)
