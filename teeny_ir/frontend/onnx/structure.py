"""Data movement: Identity, Concat, Split, Reshape, Flatten, Transpose, Unsqueeze,
Squeeze (folded when the input is a constant)."""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX
from xdsl.ir import SSAValue

from teeny_ir.frontend.onnx.context import BATCH, Node, Value, dims, has_batch, onnx_op, tidy


def _axis(node: Node, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise node.refuse(f"axis {axis} is out of range for rank {rank}")
    return axis % rank


@onnx_op("Identity", since=1)
def _identity(node: Node) -> list[Value]:
    node.attrs()
    return [node.value(0)]


@onnx_op("Concat", since=11)
def _concat(node: Node) -> list[Value]:
    axis = int(node.attrs(axis=None)["axis"])
    if node.all_constant():
        arrays = [node.const(i, "input") for i in range(len(node.inputs))]
        kind = object if any(a.dtype == object for a in arrays) else None
        return [tidy(np.concatenate([a.astype(kind) if kind else a for a in arrays], axis))]
    return [node.b.concat([node.tensor(i) for i in range(len(node.inputs))], axis)]


def _split_sizes(node: Node, size: int, count: int, given: list[int] | None) -> list[int]:
    if given is not None:
        if sum(given) != size:
            raise node.refuse(f"split sizes {given} do not add up to the axis size {size}")
        return given
    if size % count:
        raise node.refuse(f"the axis size {size} does not split into {count} equal parts")
    return [size // count] * count


def _split(node: Node, axis: int, given: list[int] | None, count: int) -> list[Value]:
    x = node.tensor(0)
    shape = dims(x)
    axis = _axis(node, axis, len(shape))
    if shape[axis] == DYNAMIC_INDEX:
        raise node.refuse("splitting the dynamic batch dimension")
    sizes = _split_sizes(node, shape[axis], count, given)
    return list(node.b.split(x, sizes, axis))


@onnx_op("Split", since=11)
def _split_11(node: Node) -> list[Value]:
    attrs = node.attrs(axis=0, split=None)
    given = None if attrs["split"] is None else [int(v) for v in attrs["split"]]
    return _split(node, int(attrs["axis"]), given, len(node.proto.output))


@onnx_op("Split", since=13)
def _split_13(node: Node) -> list[Value]:
    # `split` moved from an attribute to an input.
    attrs = node.attrs(axis=0)
    given = node.ints(1, "split") if node.has_input(1) else None
    return _split(node, int(attrs["axis"]), given, len(node.proto.output))


@onnx_op("Split", since=18)
def _split_18(node: Node) -> list[Value]:
    # num_outputs: chunks of ceil(size / n), the last one smaller.
    attrs = node.attrs(axis=0, num_outputs=None)
    given = node.ints(1, "split") if node.has_input(1) else None
    count = len(node.proto.output)
    if attrs["num_outputs"] is not None:
        if given is not None:
            raise node.refuse("both the split input and num_outputs are given")
        count = int(attrs["num_outputs"])
        x = node.tensor(0)
        shape = dims(x)
        axis = _axis(node, int(attrs["axis"]), len(shape))
        size = shape[axis]
        if size == DYNAMIC_INDEX:
            raise node.refuse("splitting the dynamic batch dimension")
        chunk = math.ceil(size / count)
        given = [chunk] * (size // chunk) + ([size % chunk] if size % chunk else [])
        if len(given) != count:
            raise node.refuse(f"axis size {size} does not give {count} outputs")
    return _split(node, int(attrs["axis"]), given, count)


def reshape_to(node: Node, x: SSAValue, target: list[object]) -> SSAValue:
    """`graph.reshape` of ``x`` to an ONNX target (0 copies, one -1 is inferred);
    the dynamic batch is kept only where the target keeps dimension 0."""
    shape = dims(x)
    entries: list[int] = []
    for index, entry in enumerate(target):
        if entry is BATCH:
            if index != 0 or not shape or shape[0] != DYNAMIC_INDEX:
                raise node.refuse(f"the dynamic batch at index {index} of the target shape")
            entries.append(0)
        elif isinstance(entry, int | np.integer):
            entries.append(int(entry))
        else:
            raise node.refuse(f"the entry {entry!r} at index {index} of the target shape")
    if shape and shape[0] == DYNAMIC_INDEX and entries and entries[0] != 0:
        rest = entries[1:]
        per_sample = math.prod(shape[1:])
        known = [shape[i] if e == 0 else e for i, e in enumerate(rest, 1)]
        if entries[0] == -1 and -1 not in rest and math.prod(known) == per_sample:
            entries[0] = 0  # x.view(-1, ...) of a dynamic batch keeps the batch
        else:
            raise node.refuse(
                f"target shape {entries} does not keep the dynamic batch at dimension 0"
            )
    return node.b.reshape(x, entries)


@onnx_op("Reshape", since=5)
@onnx_op("Reshape", since=14)  # allowzero
def _reshape(node: Node) -> list[Value]:
    attrs = node.attrs(allowzero=0)
    target = node.const(1, "shape").reshape(-1).tolist()
    if attrs["allowzero"] and 0 in target:
        raise node.refuse("unsupported attribute allowzero=1 with a 0 in the shape")
    data = node.value(0)
    if isinstance(data, np.ndarray):
        if has_batch(data) or any(t is BATCH for t in target):
            raise node.refuse("reshaping a shape value that depends on the dynamic batch")
        resolved = [data.shape[i] if t == 0 else int(t) for i, t in enumerate(target)]
        return [data.reshape(resolved)]
    return [reshape_to(node, data, target)]


@onnx_op("Flatten", since=11)
def _flatten(node: Node) -> list[Value]:
    axis = int(node.attrs(axis=1)["axis"])
    x = node.tensor(0)
    shape = dims(x)
    axis = axis + len(shape) if axis < 0 else axis
    if not 0 <= axis <= len(shape):
        raise node.refuse(f"axis {axis} is out of range for rank {len(shape)}")
    if axis == 1:
        return [node.b.flatten(x, 1, -1)]
    if DYNAMIC_INDEX in shape:
        raise node.refuse(f"axis={axis} merges the dynamic batch with other dimensions")
    return [node.b.reshape(x, [math.prod(shape[:axis]), math.prod(shape[axis:])])]


@onnx_op("Transpose", since=1)
def _transpose(node: Node) -> list[Value]:
    perm = node.attrs(perm=None)["perm"]
    data = node.value(0)
    if isinstance(data, np.ndarray):
        return [np.transpose(data, perm)]
    rank = len(dims(data))
    order = list(range(rank))[::-1] if perm is None else [int(p) for p in perm]
    return [node.b.transpose(data, order)]


def _unsqueezed(node: Node, shape: tuple[int, ...], axes: list[int]) -> list[int]:
    rank = len(shape) + len(axes)
    normal = sorted(a % rank if -rank <= a < rank else rank + 1 for a in axes)
    if any(a > rank for a in normal) or len(set(normal)) != len(normal):
        raise node.refuse(f"invalid axes {axes} for an output of rank {rank}")
    result = list(shape)
    for axis in normal:
        result.insert(axis, 1)
    return result


def _squeezed(node: Node, shape: tuple[int, ...], axes: list[int] | None) -> list[int]:
    rank = len(shape)
    if axes is None:
        if DYNAMIC_INDEX in shape:
            raise node.refuse("squeezing without axes a tensor with the dynamic batch")
        return [s for s in shape if s != 1]
    normal = {a % rank for a in axes if -rank <= a < rank}
    if len(normal) != len(axes) or any(shape[a] != 1 for a in normal):
        raise node.refuse(f"axes {axes} do not name dimensions of size 1 of {list(shape)}")
    return [s for i, s in enumerate(shape) if i not in normal]


def _reshape_like(node: Node, new: list[int]) -> list[Value]:
    """The input reshaped to ``new`` (a constant, or a graph tensor whose batch stays)."""
    data = node.value(0)
    if isinstance(data, np.ndarray):
        return [data.reshape(new)]
    shape = dims(data)
    if shape and shape[0] == DYNAMIC_INDEX:
        if not new or new[0] != DYNAMIC_INDEX:
            raise node.refuse("the dynamic batch would move from dimension 0")
        return [node.b.reshape(data, [0, *new[1:]])]
    return [node.b.reshape(data, new)]


def _shape_of(value: Value) -> tuple[int, ...]:
    return value.shape if isinstance(value, np.ndarray) else dims(value)


@onnx_op("Unsqueeze", since=11)
def _unsqueeze_11(node: Node) -> list[Value]:
    axes = [int(a) for a in node.attrs(axes=None)["axes"] or []]
    return _reshape_like(node, _unsqueezed(node, _shape_of(node.value(0)), axes))


@onnx_op("Unsqueeze", since=13)
def _unsqueeze_13(node: Node) -> list[Value]:
    # `axes` moved from an attribute to an input.
    node.attrs()
    axes = node.ints(1, "axes")
    return _reshape_like(node, _unsqueezed(node, _shape_of(node.value(0)), axes))


@onnx_op("Squeeze", since=11)
def _squeeze_11(node: Node) -> list[Value]:
    axes = node.attrs(axes=None)["axes"]
    given = None if axes is None else [int(a) for a in axes]
    return _reshape_like(node, _squeezed(node, _shape_of(node.value(0)), given))


@onnx_op("Squeeze", since=13)
def _squeeze_13(node: Node) -> list[Value]:
    node.attrs()
    given = node.ints(1, "axes") if node.has_input(1) else None
    return _reshape_like(node, _squeezed(node, _shape_of(node.value(0)), given))
