"""Softmax, LogSoftmax, ReduceMean and ReduceSum."""

from __future__ import annotations

from teeny_ir.frontend.onnx.context import Node, Value, dims, onnx_op


@onnx_op("Softmax", "LogSoftmax", since=1)
def _softmax_1(node: Node) -> list[Value]:
    # Before opset 13 the input is coerced to 2-D at `axis` (default 1): that is a
    # softmax along one axis only when `axis` is the last one.
    axis = int(node.attrs(axis=1)["axis"])
    x = node.tensor(0)
    rank = len(dims(x))
    if not -rank <= axis < rank or axis % rank != rank - 1:
        raise node.refuse(
            f"axis={axis} of the coerced-2-D form (opset < 13) is not a softmax along one "
            f"axis for rank {rank}"
        )
    make = node.b.softmax if node.op_type == "Softmax" else node.b.log_softmax
    return [make(x, -1)]


@onnx_op("Softmax", "LogSoftmax", since=13)
def _softmax_13(node: Node) -> list[Value]:
    axis = int(node.attrs(axis=-1)["axis"])
    make = node.b.softmax if node.op_type == "Softmax" else node.b.log_softmax
    return [make(node.tensor(0), axis)]


def _reduce(node: Node, axes: list[int] | None, keepdims: int, noop: int) -> list[Value]:
    x = node.tensor(0)
    rank = len(dims(x))
    if not axes:
        if noop:
            return [x]
        axes = list(range(rank))
    if any(not -rank <= a < rank for a in axes):
        raise node.refuse(f"axes {axes} out of range for rank {rank}")
    normal = sorted({a % rank for a in axes})
    make = node.b.reduce_mean if node.op_type == "ReduceMean" else node.b.reduce_sum
    return [make(x, normal, keepdims=bool(keepdims))]


@onnx_op("ReduceMean", "ReduceSum", since=1)
def _reduce_attr(node: Node) -> list[Value]:
    attrs = node.attrs(axes=None, keepdims=1)
    axes = None if attrs["axes"] is None else [int(a) for a in attrs["axes"]]
    return _reduce(node, axes, attrs["keepdims"], 0)


def _reduce_input(node: Node) -> list[Value]:
    # `axes` moved from an attribute to an optional input (ReduceSum 13, ReduceMean 18).
    attrs = node.attrs(keepdims=1, noop_with_empty_axes=0)
    axes = node.ints(1, "axes") if node.has_input(1) else None
    return _reduce(node, axes, attrs["keepdims"], attrs["noop_with_empty_axes"])


onnx_op("ReduceSum", since=13)(_reduce_input)
onnx_op("ReduceMean", since=18)(_reduce_input)
