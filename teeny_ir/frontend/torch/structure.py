"""Layout and structure: ``cat``, ``chunk``/``split``/``split_with_sizes``
(`graph.split`), ``view``/``reshape``/``flatten``/``permute``/``transpose``/``t``/
``unsqueeze``/``squeeze``/``expand``, ``getitem`` of a node's results, and the
identities (``clone``, ``contiguous``, ``detach``, ``alias``, inference
``dropout``, a float32 ``_to_copy``, ``to`` or ``type_as``).

Shapes come from the export's own record of the result (`Call.out_shape`), so a
``view`` whose target is built from ``x.shape[0]`` keeps the dynamic batch."""

from __future__ import annotations

import numpy as np
import torch
from xdsl.dialects.builtin import DYNAMIC_INDEX
from xdsl.ir import SSAValue

from teeny_ir.frontend.torch.context import Call, Value, aten_op, axis, dims, rank_of


@aten_op("aten.cat")
def _cat(call: Call) -> Value:
    tensors = call.arg("tensors")
    if not isinstance(tensors, (list, tuple)) or not tensors:
        raise call.refuse("expected a list of tensors")
    inputs = [t if isinstance(t, SSAValue) else call.materialise(t, "tensors") for t in tensors]
    dim = axis(call, call.integer("dim"), rank_of(inputs[0]))
    if len(inputs) == 1:
        return inputs[0]
    return call.b.concat(inputs, dim)


def _pieces(call: Call, x: SSAValue, sizes: list[int], dim: int) -> Value:
    if dims(x)[dim] == DYNAMIC_INDEX:
        raise call.refuse("splitting the dynamic batch is not supported")
    if len(sizes) == 1:
        return [x]
    return call.b.split(x, sizes, dim)


@aten_op("aten.chunk")
def _chunk(call: Call) -> Value:
    x = call.tensor("self")
    dim = axis(call, call.integer("dim"), rank_of(x))
    size, chunks = dims(x)[dim], call.integer("chunks")
    if chunks < 1:
        raise call.refuse(f"chunks must be positive, not {chunks}")
    step = -(-size // chunks)  # torch's chunk: equal pieces of ceil(size / chunks)
    return _pieces(call, x, _runs(size, step), dim)


def _runs(size: int, step: int) -> list[int]:
    """Pieces of ``step`` (the last one shorter) covering ``size``."""
    return [min(step, size - start) for start in range(0, size, step)]


@aten_op("aten.split", "aten.split_with_sizes")
def _split(call: Call) -> Value:
    x = call.tensor("self")
    dim = axis(call, call.integer("dim"), rank_of(x))
    size = dims(x)[dim]
    if call.name.startswith("aten.split_with_sizes") or call.overload == "sizes":
        sizes = call.ints("split_sizes" if call.overload != "sizes" else "split_size")
        if sum(sizes) != size or min(sizes) < 1:
            raise call.refuse(f"split sizes {sizes} do not cover dimension {dim} ({size})")
    else:
        step = call.integer("split_size")
        if step < 1:
            raise call.refuse(f"split size must be positive, not {step}")
        sizes = _runs(size, step)
    return _pieces(call, x, sizes, dim)


@aten_op(
    "aten.view",
    "aten.reshape",
    "aten._unsafe_view",
    "aten.unsqueeze",
    "aten.squeeze",
)
def _reshape(call: Call) -> Value:
    x = call.tensor("self")
    target = call.out_shape()
    if target == list(dims(x)):
        return x
    batch_in = bool(dims(x)) and dims(x)[0] == DYNAMIC_INDEX
    if DYNAMIC_INDEX in target:
        if not batch_in:
            raise call.refuse("the result has the dynamic batch but the input has not")
        target = [0, *target[1:]]  # 0: the input's (dynamic) dimension 0
    elif batch_in:
        raise call.refuse("the dynamic batch is folded into another dimension")
    return call.b.reshape(x, target)


@aten_op("aten.slice")
def _slice(call: Call) -> Value:
    x = call.tensor("self")
    rank = rank_of(x)
    dim = axis(call, call.integer("dim"), rank)
    size = dims(x)[dim]
    if size == DYNAMIC_INDEX:
        raise call.refuse("slicing the dynamic batch is not supported")
    start = call.integer("start") if call.has("start") else 0
    end = call.integer("end") if call.has("end") else size
    step = call.integer("step")
    if step < 1:
        raise call.refuse(f"step must be positive, not {step}")
    start, end, _ = slice(start, end, step).indices(size)
    if start == 0 and end >= size and step == 1:
        return x
    if len(range(start, end, step)) == 0:
        raise call.refuse("the slice is empty: empty tensors are not supported")
    return call.b.slice(x, [start], [end], [dim], [step])


@aten_op("aten.select")
def _select(call: Call) -> Value:
    x = call.tensor("self")
    rank = rank_of(x)
    dim = axis(call, call.integer("dim"), rank)
    size = dims(x)[dim]
    if size == DYNAMIC_INDEX:
        raise call.refuse("selecting from the dynamic batch is not supported")
    index = call.integer("index")
    if not -size <= index < size:
        raise call.refuse(f"index {index} is out of range for size {size}")
    index %= size
    piece = x if size == 1 else call.b.slice(x, [index], [index + 1], [dim])
    shape = [0 if d == DYNAMIC_INDEX else d for d in dims(piece)]
    del shape[dim]
    return call.b.reshape(piece, shape or [1])


@aten_op("aten.flatten")
def _flatten(call: Call) -> Value:
    x = call.tensor("self")
    rank = max(rank_of(x), 1)
    start, end = (
        axis(call, call.integer("start_dim"), rank),
        axis(call, call.integer("end_dim"), rank),
    )
    if start >= end:
        return x
    if start == 0 and dims(x)[0] == DYNAMIC_INDEX:
        raise call.refuse("the dynamic batch is folded into another dimension")
    return call.b.flatten(x, start, end)


@aten_op("aten.permute")
def _permute(call: Call) -> Value:
    x = call.tensor("self")
    rank = rank_of(x)
    perm = [axis(call, d, rank) for d in call.ints("dims")]
    return _transposed(call, x, perm)


def _transposed(call: Call, x: SSAValue, perm: list[int]) -> Value:
    if sorted(perm) != list(range(len(dims(x)))):
        raise call.refuse(f"{perm} is not a permutation of the input's dimensions")
    if perm == sorted(perm):
        return x
    if dims(x) and dims(x)[0] == DYNAMIC_INDEX and perm[0] != 0:
        raise call.refuse("moving the dynamic batch off dimension 0 is not supported")
    return call.b.transpose(x, perm)


@aten_op("aten.transpose")
def _transpose(call: Call) -> Value:
    x = call.tensor("self")
    rank = rank_of(x)
    perm = list(range(rank))
    a, b = axis(call, call.integer("dim0"), rank), axis(call, call.integer("dim1"), rank)
    perm[a], perm[b] = perm[b], perm[a]
    return _transposed(call, x, perm)


@aten_op("aten.t")
def _t(call: Call) -> Value:
    x = call.tensor("self")
    return x if rank_of(x) < 2 else _transposed(call, x, [1, 0])


@aten_op("aten.expand")
def _expand(call: Call) -> Value:
    x = call.tensor("self")
    target = call.out_shape()
    return x if target == list(dims(x)) else call.b.broadcast(x, target)


@aten_op("aten.clone", "aten.contiguous", "aten.detach", "aten.alias", "aten.lift_fresh_copy")
def _identity(call: Call) -> Value:
    return call.tensor("self")


@aten_op("aten.dropout")
def _dropout(call: Call) -> Value:
    if call.arg("train"):
        raise call.refuse("training-mode dropout is not supported: export after module.eval()")
    return call.tensor("input")


@aten_op("aten._to_copy", "aten.to", "aten.type_as")
def _to_copy(call: Call) -> Value:
    # A cast to anything but float32 is refused by the importer's check of the
    # result's recorded dtype; a float32 one is the identity. A constant cast to
    # a graph tensor's type (`arange(8).type_as(x)`, as ultralytics builds its
    # anchors) stays a constant: only the type is read from the tensor.
    source = call.arg("self")
    if isinstance(source, np.ndarray):
        recorded = call.node.meta.get("val")
        dtype = getattr(recorded, "dtype", None)
        if not isinstance(dtype, torch.dtype):
            raise call.refuse("the result's element type was not recorded")
        try:
            target = torch.empty((), dtype=dtype).numpy().dtype
        except TypeError:  # bfloat16 and others numpy lacks
            raise call.refuse(f"a constant cast to {dtype}") from None
        return source.astype(target)
    return call.tensor("self")


@aten_op("operator.getitem")
def _getitem(call: Call) -> Value:
    if len(call.args) != 2 or not isinstance(call.args[0], (list, tuple)):
        raise call.refuse("expected an item of a node's results")
    results, index = call.args
    if not isinstance(index, int) or not -len(results) <= index < len(results):
        raise call.refuse(f"result {index} is out of range")
    found = results[index]
    if found is None:
        raise call.refuse(f"result {index} of the node is not supported")
    return found
