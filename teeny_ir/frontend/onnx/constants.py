"""Constants and shape computations folded at import time with numpy: Constant,
Shape, Gather, Cast, Range, ConstantOfShape, Slice (a graph tensor is sliced by
`teeny_ir.frontend.onnx.slicing`), Expand, Equal, Where. A shape that depends on the
dynamic batch holds `BATCH`; anything that would compute with it is refused."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper
from xdsl.dialects.builtin import DYNAMIC_INDEX
from xdsl.ir import SSAValue

from teeny_ir.frontend.onnx.context import BATCH, Node, Value, dims, has_batch, onnx_op, tidy
from teeny_ir.frontend.onnx.slicing import slice_tensor


@onnx_op("Constant", since=11)
@onnx_op("Constant", since=12)  # value_float(s), value_int(s), value_string(s)
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
@onnx_op("Shape", since=15)  # start, end
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
@onnx_op("Cast", since=19)  # saturate (float8 targets only)
@onnx_op("Cast", since=24)  # round_mode (float8e8m0 targets only)
def _cast(node: Node) -> list[Value]:
    attrs = node.attrs(to=None, saturate=1, round_mode="up")
    return [_cast_to(node, attrs["to"])]


@onnx_op("CastLike", since=15)
@onnx_op("CastLike", since=19)  # saturate
@onnx_op("CastLike", since=24)  # round_mode
def _cast_like(node: Node) -> list[Value]:
    node.attrs(saturate=1, round_mode="up")
    like = node.value(1)
    if isinstance(like, SSAValue):
        return [_cast_to(node, TensorProto.FLOAT)]  # graph tensors are f32
    try:
        to = helper.np_dtype_to_tensor_dtype(like.dtype)
    except (KeyError, ValueError, TypeError):
        raise node.refuse(f"casting to the type of a {like.dtype} tensor") from None
    return [_cast_to(node, to)]


def _cast_to(node: Node, to: int) -> Value:
    """Input 0 as ONNX element type ``to``."""
    try:
        dtype = helper.tensor_dtype_to_np_dtype(to)
    except KeyError:
        raise node.refuse(f"unsupported attribute to={to}") from None
    if np.dtype(dtype).kind not in "biuf" or np.dtype(dtype).isbuiltin != 1:
        # float8, float4, int4 and bfloat16 (ml_dtypes), strings: rounding and
        # saturation numpy does not do as ONNX specifies.
        raise node.refuse(f"unsupported attribute to={TensorProto.DataType.Name(to)}")
    data = node.value(0)
    if not isinstance(data, np.ndarray):
        if to == TensorProto.FLOAT:
            return data  # graph tensors are f32 already
        raise node.refuse(f"casting a graph tensor to {TensorProto.DataType.Name(to)}")
    if has_batch(data):
        if dtype.kind not in "iu":
            raise node.refuse("casting a shape that depends on the dynamic batch to a float")
        return data
    if data.dtype.kind not in "biuf" or data.dtype.isbuiltin != 1:
        raise node.refuse(f"casting a tensor of {data.dtype} elements")
    return data.astype(dtype)


@onnx_op("Size", since=1)
def _size(node: Node) -> list[Value]:
    node.attrs()
    value = node.value(0)
    shape = value.shape if isinstance(value, np.ndarray) else dims(value)
    if any(d == DYNAMIC_INDEX for d in shape):
        raise node.refuse("the size of a tensor with the dynamic batch")
    return [np.array(int(np.prod(shape, dtype=np.int64)), dtype=np.int64)]


@onnx_op("Range", since=11)
@onnx_op("Range", since=27)  # stash_type: float16 accumulation only
def _range(node: Node) -> list[Value]:
    node.attrs(stash_type=1)
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
        return [slice_tensor(node, source, starts, ends, axes, steps)]
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
    if isinstance(node.value(0), SSAValue):
        return [_expand_tensor(node, node.tensor(0))]
    data = _plain(node, 0, "input")
    shape = node.ints(1, "shape")
    # Expand broadcasts both ways: a 1 in `shape` keeps the input's size.
    target = np.broadcast_shapes(data.shape, tuple(shape))
    return [np.broadcast_to(data, target).copy()]


def _expand_tensor(node: Node, x: SSAValue) -> SSAValue:
    """A graph tensor expanded: `graph.broadcast` to the two shapes' broadcast,
    the dynamic batch (``BATCH`` in the target, or the input's) kept in place."""
    source = dims(x)
    target = [BATCH if v is BATCH else int(v) for v in node.const(1, "shape").reshape(-1)]
    rank = max(len(source), len(target))
    padded_source = [1] * (rank - len(source)) + list(source)
    padded_target: list[object] = [1] * (rank - len(target)) + target
    result: list[int] = []
    for axis, (have, want) in enumerate(zip(padded_source, padded_target, strict=True)):
        if have == DYNAMIC_INDEX or want is BATCH:
            if axis != 0 or have != DYNAMIC_INDEX or want not in (1, BATCH):
                raise node.refuse(f"expanding to {target}: the dynamic batch moves or grows")
            result.append(DYNAMIC_INDEX)
        elif have == 1 or want in (1, have):
            result.append(have if want == 1 else int(str(want)))
        else:
            raise node.refuse(f"shape {target} does not broadcast with {list(source)}")
    if result == list(source):
        return x
    return node.b.broadcast(x, result)


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
