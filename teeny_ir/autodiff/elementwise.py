"""VJP rules of the elementwise ops: one rule for every pointwise-table op (its
entry holds the math: a unary op's ``derivative``, read by
``graph.activation_grad``; a binary op's ``vjp``, composed of graph ops), and
``graph.bias_add``. Broadcast operands get their gradient summed back to their
own shape (`VjpContext.unbroadcast`)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from dialects.graph.elementwise import ActivationGradOp, BiasAddOp
from dialects.graph.fused_pointwise import FusedPointwiseOp
from dialects.graph.reduce import ReduceSumOp
from teeny_ir.autodiff.context import VjpContext
from teeny_ir.autodiff.registry import VjpError, not_differentiable, pointwise_vjp, vjp
from teeny_ir.core import pointwise


def _type(value: SSAValue) -> TensorType:
    assert isinstance(value.type, TensorType)
    return value.type


@pointwise_vjp
def _pointwise(
    ctx: VjpContext, op: Operation, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    (g,) = grads
    if g is None:
        return [None] * len(op.operands)
    entry = pointwise.lookup(op.name)
    assert entry is not None
    if entry.arity == 1:
        x = ctx.value(op.operands[0])
        return [ctx.activation_grad(x, g, entry.name, pointwise.options_of(entry, op))]
    if entry.vjp is None:
        raise VjpError(f"the pointwise table has no vjp for '{op.name}'")
    x, y = (ctx.value(v) for v in op.operands)
    out = ctx.value(op.results[0]) if entry.vjp_reads_output else op.results[0]
    dx, dy = entry.vjp(ctx, x, y, out, g)
    return [
        ctx.unbroadcast(dx, _type(op.operands[0])),
        ctx.unbroadcast(dy, _type(op.operands[1])),
    ]


@vjp(BiasAddOp)
def _bias_add(
    ctx: VjpContext, op: BiasAddOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    """``x + bias[c]``: ``g`` for ``x``; ``g`` summed over every dimension but 1
    for the bias."""
    (g,) = grads
    if g is None:
        return [None, None]
    rank = len(_type(op.input).get_shape())
    axes = [0, *range(2, rank)]
    return [g, ctx.emit(ReduceSumOp(g, axes)).result]


not_differentiable(
    "the derivative of an activation's gradient (second order) is not supported",
    ActivationGradOp,
)


@vjp(FusedPointwiseOp)
def _fused_pointwise(
    ctx: VjpContext, op: FusedPointwiseOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    """fuse-pointwise runs once the backward is built (``teeny-training`` runs it
    after apply-optimizer), so a fused chain reaching insert-backward is
    differentiated as its ops, never as one: a located error saying so (it names
    the ops the program holds, and a trailing reduction too)."""
    if all(g is None for g in grads):
        return [None] * len(op.operands)
    raise VjpError(
        "a fused pointwise chain is differentiated as its unfused ops ("
        + ", ".join([*op.program.ops(), *([f"reduce_{r.kind}"] if (r := op.reduction) else [])])
        + "): run fuse-pointwise after insert-backward, or not at all in training"
    )
