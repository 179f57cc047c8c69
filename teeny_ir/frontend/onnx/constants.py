"""Constants and shape computations folded at import time with numpy: Constant,
Shape, Gather, Cast, Range, ConstantOfShape, Slice (which, on a graph tensor with
step 1, is the middle piece of a `graph.split`), Expand, Equal, Where. A shape that depends on the
dynamic batch holds `BATCH`; anything that would compute with it is refused."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper
from xdsl.dialects.builtin import DYNAMIC_INDEX
from xdsl.ir import SSAValue

from teeny_ir.frontend.onnx.context import BATCH, Node, Value, dims, has_batch, onnx_op, tidy


@onnx_op("Constant", since=11)
def _constant(node: Node) -> list[Value]:
    attrs = node.attrs(
        value=None, value_float=None, value_floats=None, value_int=None, value_ints=None
    )
    given = [(k, v) for k, v in attrs.items() if v is not None]
    if len(given) != 1:
        raise node.refuse("expected exactly one value attribute")
    key, value = given[0]
    if key == "value":
        return [np.asarray(value)]
    dtype = np.float32 if key.startswith("value_float") else np.int64
    return [np.asarray(value, dtype=dtype)]


@onnx_op("Shape", since=1)
def _shape(node: Node) -> list[Value]:
    # start and end (opset 15) slice the shape, clamped as Slice is.
    attrs = node.attrs(start=0, end=None)
    value = node.value(0)
    shape: list[object]
    if isinstance(value, np.ndarray):
        shape = list(value.shape)
    else:
        shape = [BATCH if d == DYNAMIC_INDEX else d for d in dims(value)]
    end = len(shape) if attrs["end"] is None else int(attrs["end"])
    sliced = shape[slice(int(attrs["start"]), end)]
    return [tidy(np.array(sliced, dtype=object))]


@onnx_op("Gather", since=11)
def _gather(node: Node) -> list[Value]:
    axis = int(node.attrs(axis=0)["axis"])
    data, indices = node.const(0, "data"), node.const(1, "indices")
    if indices.dtype.kind not in "iu":
        raise node.refuse("non-integer indices")
    size = data.shape[axis] if -data.ndim <= axis < data.ndim else 0
    if size == 0 or np.any((indices < -size) | (indices >= size)):
        raise node.refuse(f"indices out of range for axis {axis}")
    return [tidy(np.take(data, np.where(indices < 0, indices + size, indices), axis=axis))]


@onnx_op("Cast", since=6)
def _cast(node: Node) -> list[Value]:
    attrs = node.attrs(to=None, saturate=1)
    to = attrs["to"]
    try:
        dtype = helper.tensor_dtype_to_np_dtype(to)
    except KeyError:
        raise node.refuse(f"unsupported attribute to={to}") from None
    data = node.value(0)
    if not isinstance(data, np.ndarray):
        if to == TensorProto.FLOAT:
            return [data]  # graph tensors are f32 already
        raise node.refuse(f"casting a graph tensor to {TensorProto.DataType.Name(to)}")
    if has_batch(data):
        if dtype.kind not in "iu":
            raise node.refuse("casting a shape that depends on the dynamic batch to a float")
        return [data]
    return [data.astype(dtype)]


@onnx_op("Range", since=11)
def _range(node: Node) -> list[Value]:
    node.attrs()
    start, limit, delta = (
        node.const(i, name) for i, name in enumerate(("start", "limit", "delta"))
    )
    if any(has_batch(a) for a in (start, limit, delta)):
        raise node.refuse("a range whose bounds depend on the dynamic batch")
    return [np.arange(start.item(), limit.item(), delta.item()).astype(start.dtype)]


@onnx_op("ConstantOfShape", since=9)
def _constant_of_shape(node: Node) -> list[Value]:
    value = node.attrs(value=None)["value"]
    fill = np.zeros(1, np.float32) if value is None else np.asarray(value).reshape(-1)
    shape = node.ints(0, "shape")
    return [np.full(shape, fill[0], dtype=fill.dtype)]


def _slice_tensor(
    node: Node, x: SSAValue, starts: list[int], ends: list[int], axes: list[int], steps: list[int]
) -> SSAValue:
    """A step-1 slice of a graph tensor: the middle piece of a `graph.split` per axis."""
    for start, end, axis, step in zip(starts, ends, axes, steps, strict=True):
        shape = dims(x)
        if not -len(shape) <= axis < len(shape):
            raise node.refuse(f"invalid axis {axis}")
        axis %= len(shape)
        if step != 1:
            raise node.refuse(f"step {step} on a graph tensor (only step 1 is supported)")
        size = shape[axis]
        if size == DYNAMIC_INDEX:
            raise node.refuse("slicing the dynamic batch dimension")
        first = min(max(start + size if start < 0 else start, 0), size)
        last = min(max(end + size if end < 0 else end, 0), size)
        if last <= first:
            raise node.refuse(f"an empty slice [{start}:{end}] of axis {axis}")
        if (first, last) == (0, size):
            continue
        sizes = [n for n in (first, last - first, size - last) if n]
        pieces = node.b.split(x, sizes, axis)
        x = pieces[1 if first else 0]
    return x


@onnx_op("Slice", since=10)
def _slice(node: Node) -> list[Value]:
    node.attrs()
    starts, ends = node.ints(1, "starts"), node.ints(2, "ends")
    axes = node.ints(3, "axes") if node.has_input(3) else list(range(len(starts)))
    steps = node.ints(4, "steps") if node.has_input(4) else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise node.refuse("starts, ends, axes and steps differ in length")
    source = node.value(0)
    if isinstance(source, SSAValue):
        return [_slice_tensor(node, source, starts, ends, axes, steps)]
    data = source
    index = [slice(None)] * data.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps, strict=True):
        if step == 0 or not -data.ndim <= axis < data.ndim:
            raise node.refuse(f"invalid axis {axis} or step {step}")
        # numpy clamps like ONNX, but an end at INT_MIN with a negative step means "to 0".
        stop = None if step < 0 and end < -data.shape[axis] else end
        index[axis] = slice(start, stop, step)
    return [tidy(np.asarray(data[tuple(index)]))]


def _plain(node: Node, index: int, what: str) -> np.ndarray:
    array = node.const(index, what)
    if has_batch(array):
        raise node.refuse(f"input {index} ({what}) depends on the dynamic batch")
    return array


@onnx_op("Expand", since=8)
def _expand(node: Node) -> list[Value]:
    node.attrs()
    data = _plain(node, 0, "input")
    shape = node.ints(1, "shape")
    # Expand broadcasts both ways: a 1 in `shape` keeps the input's size.
    target = np.broadcast_shapes(data.shape, tuple(shape))
    return [np.broadcast_to(data, target).copy()]


@onnx_op("Equal", since=11)
def _equal(node: Node) -> list[Value]:
    node.attrs()
    return [np.equal(_plain(node, 0, "A"), _plain(node, 1, "B"))]


@onnx_op("Where", since=9)
def _where(node: Node) -> list[Value]:
    node.attrs()
    condition = _plain(node, 0, "condition")
    if condition.dtype != np.bool_:
        raise node.refuse("a condition that is not a bool tensor")
    return [np.where(condition, _plain(node, 1, "X"), _plain(node, 2, "Y"))]
