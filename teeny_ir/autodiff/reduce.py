"""VJP rules of softmax, log-softmax, cross-entropy and the reductions
(`dialects.graph.reduce`).

Softmax and log-softmax read their forward OUTPUT (kept by the policy) and
emit their dedicated backward ops; cross-entropy emits
`graph.cross_entropy_backward` (its integer targets get no gradient). A
reduction's gradient is the upstream one reshaped to the keepdims shape and
stretched back over the reduced axes with `graph.broadcast` (divided by the
reduced count for the mean; a reduced dynamic batch is counted at run time).
A maximum's (minimum's) gradient goes to the elements equal to the result,
shared evenly among ties, as ``torch.amax``'s (``amin``'s) backward.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType, f32
from xdsl.ir import SSAValue

from dialects.graph.reduce import (
    CrossEntropyBackwardOp,
    CrossEntropyOp,
    LogSoftmaxBackwardOp,
    LogSoftmaxOp,
    ReduceMaxOp,
    ReduceMeanOp,
    ReduceMinOp,
    ReduceSumOp,
    ReductionOp,
    SoftmaxBackwardOp,
    SoftmaxOp,
    infer_reduce_shape,
)
from dialects.graph.structure import BroadcastOp, needs_batch_source
from teeny_ir.autodiff.context import VjpContext
from teeny_ir.autodiff.registry import not_differentiable, vjp


@vjp(SoftmaxOp)
def _softmax(
    ctx: VjpContext, op: SoftmaxOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    (grad,) = grads
    if grad is None:
        return [None]
    return [ctx.emit(SoftmaxBackwardOp(ctx.value(op.result), grad, op.axis)).result]


@vjp(LogSoftmaxOp)
def _log_softmax(
    ctx: VjpContext, op: LogSoftmaxOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    (grad,) = grads
    if grad is None:
        return [None]
    return [ctx.emit(LogSoftmaxBackwardOp(ctx.value(op.result), grad, op.axis)).result]


@vjp(CrossEntropyOp)
def _cross_entropy(
    ctx: VjpContext, op: CrossEntropyOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    (grad,) = grads
    if grad is None:
        return [None, None]
    backward = CrossEntropyBackwardOp(ctx.value(op.logits), ctx.value(op.targets), grad)
    return [ctx.emit(backward).result, None]  # integer targets have no gradient


def broadcast_to(ctx: VjpContext, value: SSAValue, type_: TensorType, like: SSAValue) -> SSAValue:
    """``value`` stretched to ``type_`` by `graph.broadcast`, its dynamic batch (if
    ``value`` lacks it) taken from the forward value ``like`` of batched type."""
    assert isinstance(value.type, TensorType)
    if value.type == type_:
        return value
    source = None
    if needs_batch_source(value.type.get_shape(), type_.get_shape()):
        source = ctx.value(like)
    return ctx.emit(BroadcastOp(value, type_, source)).result


def _stretch(ctx: VjpContext, op: ReductionOp, grad: SSAValue) -> SSAValue:
    """The reduction's gradient ``grad`` as the keepdims shape, broadcast to the input."""
    assert isinstance(op.input.type, TensorType)
    shape = op.input.type.get_shape()
    kept = TensorType(f32, infer_reduce_shape(shape, op.axes, keepdims=True))
    assert isinstance(grad.type, TensorType)
    if grad.type.get_shape():  # a rank-0 gradient broadcasts as it is
        grad = ctx.reshape(grad, kept)
    return broadcast_to(ctx, grad, op.input.type, op.input)


@vjp(ReduceSumOp)
def _reduce_sum(
    ctx: VjpContext, op: ReduceSumOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    (grad,) = grads
    if grad is None:
        return [None]
    return [_stretch(ctx, op, grad)]


@vjp(ReduceMeanOp)
def _reduce_mean(
    ctx: VjpContext, op: ReduceMeanOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    (grad,) = grads
    if grad is None:
        return [None]
    assert isinstance(op.input.type, TensorType)
    shape = op.input.type.get_shape()
    static = math.prod(shape[axis] for axis in op.axes if shape[axis] != DYNAMIC_INDEX)
    if any(shape[axis] == DYNAMIC_INDEX for axis in op.axes):
        # The batch is reduced: divide by its run-time size, the sum of ones over it.
        ones = broadcast_to(ctx, ctx.constant(1.0), TensorType(f32, [DYNAMIC_INDEX]), op.input)
        batch = ctx.emit(ReduceSumOp(ones, [0])).result
        grad = ctx.div(grad, batch)
    if static != 1:
        grad = ctx.div(grad, ctx.constant(float(static)))  # exact: no rounded reciprocal
    return [_stretch(ctx, op, grad)]


@vjp(ReduceMaxOp, ReduceMinOp)
def _reduce_extremum(
    ctx: VjpContext, op: ReduceMaxOp | ReduceMinOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    (grad,) = grads
    if grad is None:
        return [None]
    assert isinstance(op.input.type, TensorType)
    x = ctx.value(op.input)
    extremum = _stretch(ctx, op, ctx.value(op.result))
    # The distance to the extremum is >= 0 and 0 exactly at the ties: relu's
    # derivative [d > 0] marks the others, so the ties' mask is 1 - [d > 0].
    distance = ctx.sub(extremum, x) if isinstance(op, ReduceMaxOp) else ctx.sub(x, extremum)
    ones = broadcast_to(ctx, ctx.constant(1.0), op.input.type, op.input)
    mask = ctx.sub(ones, ctx.activation_grad(distance, ones, "relu"))
    ties = ctx.emit(ReduceSumOp(mask, op.axes, keepdims=True)).result
    share = ctx.div(_stretch(ctx, op, grad), broadcast_to(ctx, ties, op.input.type, op.input))
    return [ctx.mul(share, mask)]


not_differentiable(
    "a backward op: insert-backward differentiates forward programs once (no second derivatives)",
    SoftmaxBackwardOp,
    LogSoftmaxBackwardOp,
    CrossEntropyBackwardOp,
)
