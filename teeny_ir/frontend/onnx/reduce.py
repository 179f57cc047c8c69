"""Softmax, LogSoftmax and the reductions: ReduceSum, ReduceMean, ReduceMax and
ReduceMin as graph reductions; ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum
and ReduceLogSumExp as their compositions (ReduceProd has no graph form)."""

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


def _axes(node: Node, axes: list[int] | None, noop: int) -> list[int] | None:
    """The reduced axes, non-negative and sorted; None for ``noop_with_empty_axes``
    with no axes (the identity)."""
    rank = len(dims(node.tensor(0)))
    if not axes:
        return None if noop else list(range(rank))
    if any(not -rank <= a < rank for a in axes):
        raise node.refuse(f"axes {axes} out of range for rank {rank}")
    return sorted({a % rank for a in axes})


def _reduce(node: Node, axes: list[int] | None, keepdims: int, noop: int) -> list[Value]:
    """Every Reduce* op: a graph reduction, or its composition of graph ops."""
    x = node.tensor(0)
    normal = _axes(node, axes, noop)
    b = node.b
    keep = bool(keepdims)
    op = node.op_type
    if normal is None:
        # The identity, but for the elementwise step of the composite reductions.
        if op in ("ReduceL1", "ReduceL2"):
            return [b.abs(x)]
        if op == "ReduceSumSquare":
            return [b.mul(x, x)]
        if op == "ReduceLogSum":
            return [b.log(x)]
        return [x]
    if op in _GRAPH_REDUCTIONS:
        return [getattr(b, _GRAPH_REDUCTIONS[op])(x, normal, keepdims=keep)]
    if op == "ReduceL1":
        return [b.reduce_sum(b.abs(x), normal, keepdims=keep)]
    if op == "ReduceSumSquare":
        return [b.reduce_sum(b.mul(x, x), normal, keepdims=keep)]
    if op == "ReduceL2":
        return [b.sqrt(b.reduce_sum(b.mul(x, x), normal, keepdims=keep))]
    if op == "ReduceLogSum":
        return [b.log(b.reduce_sum(x, normal, keepdims=keep))]
    assert op == "ReduceLogSumExp"
    # log(sum(exp(x - m))) + m with m the maximum, so exp never overflows (the
    # maximum taken twice, kept for the shift and in the result's shape).
    shifted = b.exp(b.sub(x, b.reduce_max(x, normal, keepdims=True)))
    total = b.log(b.reduce_sum(shifted, normal, keepdims=keep))
    return [b.add(total, b.reduce_max(x, normal, keepdims=keep))]


_GRAPH_REDUCTIONS = {
    "ReduceSum": "reduce_sum",
    "ReduceMean": "reduce_mean",
    "ReduceMax": "reduce_max",
    "ReduceMin": "reduce_min",
}
_COMPOSITES = ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")


@onnx_op("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", *_COMPOSITES, since=1)
def _reduce_attr(node: Node) -> list[Value]:
    attrs = node.attrs(axes=None, keepdims=1)
    axes = None if attrs["axes"] is None else [int(a) for a in attrs["axes"]]
    return _reduce(node, axes, attrs["keepdims"], 0)


def _reduce_input(node: Node) -> list[Value]:
    # `axes` moved from an attribute to an optional input (ReduceSum 13, the others 18).
    attrs = node.attrs(keepdims=1, noop_with_empty_axes=0)
    axes = node.ints(1, "axes") if node.has_input(1) else None
    return _reduce(node, axes, attrs["keepdims"], attrs["noop_with_empty_axes"])


onnx_op("ReduceSum", since=13)(_reduce_input)
onnx_op("ReduceMean", "ReduceMax", "ReduceMin", *_COMPOSITES, since=18)(_reduce_input)
