"""VJP rules of the data-movement ops (`dialects.graph.structure`).

Each gradient is data movement too, built from the forward ops: reshape and
flatten reshape the gradient back, transpose applies the inverse permutation,
concat's gradient is a split along its axis, split's a concat (with zeros for
results the loss does not reach), broadcast's a sum over the stretched axes.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType
from xdsl.ir import SSAValue

from dialects.graph.structure import (
    BroadcastOp,
    ConcatOp,
    FlattenOp,
    ReshapeOp,
    SplitOp,
    TransposeOp,
)
from teeny_ir.autodiff.context import VjpContext
from teeny_ir.autodiff.registry import vjp


@vjp(ReshapeOp, FlattenOp)
def _view(
    ctx: VjpContext, op: ReshapeOp | FlattenOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    (grad,) = grads
    if grad is None:
        return [None]
    assert isinstance(op.input.type, TensorType)
    return [ctx.reshape(grad, op.input.type)]


@vjp(TransposeOp)
def _transpose(
    ctx: VjpContext, op: TransposeOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    (grad,) = grads
    if grad is None:
        return [None]
    inverse = [0] * len(op.perm)
    for index, dim in enumerate(op.perm):
        inverse[dim] = index
    if inverse == list(range(len(inverse))):
        return [grad]
    return [ctx.emit(TransposeOp(grad, inverse, result_type=op.input.type)).result]  # type: ignore[arg-type]


@vjp(ConcatOp)
def _concat(
    ctx: VjpContext, op: ConcatOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    (grad,) = grads
    if grad is None:
        return [None] * len(op.inputs)
    if len(op.inputs) == 1:
        return [grad]
    types: list[TensorType] = []
    for value in op.inputs:
        assert isinstance(value.type, TensorType)
        types.append(value.type)
    sizes = [type_.get_shape()[op.axis] for type_ in types]
    split = ctx.emit(SplitOp(grad, sizes, op.axis, result_types=types))
    return list(split.outputs)


def _zeros_like(ctx: VjpContext, type_: TensorType, like: SSAValue) -> SSAValue:
    """A zero gradient of ``type_``: a constant when static, else a scalar zero
    broadcast over the batch of ``like`` (a gradient alive anyway)."""
    shape = type_.get_shape()
    if DYNAMIC_INDEX not in shape:
        return ctx.zeros(type_)
    return ctx.emit(BroadcastOp(ctx.constant(0.0), type_, like)).result


@vjp(SplitOp)
def _split(ctx: VjpContext, op: SplitOp, grads: Sequence[SSAValue | None]) -> list[SSAValue | None]:
    present = [grad for grad in grads if grad is not None]
    if not present:
        return [None]
    if len(grads) == 1:
        return [present[0]]
    parts: list[SSAValue] = []
    for output, grad in zip(op.outputs, grads, strict=True):
        assert isinstance(output.type, TensorType)
        parts.append(grad if grad is not None else _zeros_like(ctx, output.type, present[0]))
    concat = ConcatOp(parts, op.axis, result_type=op.input.type)  # type: ignore[arg-type]
    return [ctx.emit(concat).result]


@vjp(BroadcastOp)
def _broadcast(
    ctx: VjpContext, op: BroadcastOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    (grad,) = grads
    if grad is None:
        return [None] * len(op.operands)
    assert isinstance(op.input.type, TensorType)
    dx = ctx.unbroadcast(grad, op.input.type)
    return [dx] if op.batch_source is None else [dx, None]  # the source's values are unread
