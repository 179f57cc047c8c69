"""VJP rule of `dialects.graph.attention`: an attention passes its output's
gradient back through one `graph.attention_backward`, which recomputes the
probabilities from ``q``, ``k`` and the saved row statistic ``lse`` (the
forward's second result, kept by the policy with ``o``), FlashAttention's
way: nothing of size N x M is saved between the passes.

`graph.attention_backward` itself is not differentiated (no second-order
gradients).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from dialects.graph.attention import AttentionBackwardOp, AttentionOp
from teeny_ir.autodiff.context import VjpContext
from teeny_ir.autodiff.registry import VjpError, not_differentiable, vjp


@vjp(AttentionOp)
def _attention(
    ctx: VjpContext, op: AttentionOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    grad, lse_grad = grads
    if lse_grad is not None:
        raise VjpError(
            "the loss depends on the lse result of graph.attention, which has no gradient "
            "rule (only the output o has)"
        )
    if grad is None:
        return [None, None, None]
    backward = ctx.emit(
        AttentionBackwardOp(
            ctx.value(op.q),
            ctx.value(op.k),
            ctx.value(op.v),
            ctx.value(op.output),
            ctx.value(op.lse),
            grad,
            op.scale,
            op.transposed,
        )
    )
    return list(backward.results)


not_differentiable(
    "a backward op: teeny_ir computes first-order gradients only", AttentionBackwardOp
)
