"""VJP rules of `graph.batch_norm` (`dialects.graph.norm`).

Training form (batch statistics): `graph.batch_norm_backward` on the kept
input and ``gamma`` gives dx, dgamma and dbeta, PyTorch's
``native_batch_norm_backward``. The gradients of results 1 and 2 (the updated
running statistics) are ignored, and the running statistics (operands 3 and
4) get None: PyTorch updates them outside autograd.

Inference form (frozen statistics; ``y = act(z)``, ``z = xhat * gamma + beta``,
``xhat = (x - mean) * rstd``, ``rstd = 1 / sqrt(var + eps)``), built from
existing ops only, with batch norms of the same ``eps`` standing in for the
per-channel affine maps:

- with an ``activation``, ``dz = graph.activation_grad(z, dy)`` on the
  recomputed pre-activation ``z`` (the same batch norm without the
  activation); without one, ``dz = dy``;
- ``dx = graph.batch_norm(dz, gamma, 0, 0, var) = dz * gamma * rstd``;
- ``dgamma = reduce_sum(dz * xhat)`` over every dimension but 1, with
  ``xhat = graph.batch_norm(x, 1, 0, mean, var)``;
- ``dbeta = reduce_sum(dz)``.

The running statistics get None (they are parameters PyTorch does not train).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from dialects.graph.norm import BatchNormBackwardOp, BatchNormOp
from dialects.graph.reduce import ReduceSumOp
from teeny_ir.autodiff.context import VjpContext
from teeny_ir.autodiff.registry import not_differentiable, vjp
from teeny_ir.core import pointwise


def _eps(op: BatchNormOp) -> float | None:
    """The forward's ``eps`` as written (None: absent, the default)."""
    return op.eps if "eps" in op.properties else None


@vjp(BatchNormOp)
def _batch_norm(
    ctx: VjpContext, op: BatchNormOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    grad = grads[0]
    if grad is None:
        return [None] * 5
    if op.training:
        backward = ctx.emit(
            BatchNormBackwardOp.of(op, ctx.value(op.input), ctx.value(op.gamma), grad)
        )
        return [backward.input_grad, backward.gamma_grad, backward.beta_grad, None, None]
    return _inference(ctx, op, grad)


def _inference(ctx: VjpContext, op: BatchNormOp, grad: SSAValue) -> list[SSAValue | None]:
    x, gamma, beta = ctx.value(op.input), ctx.value(op.gamma), ctx.value(op.beta)
    mean, var = ctx.value(op.running_mean), ctx.value(op.running_var)
    eps = _eps(op)
    input_type = op.input.type
    assert isinstance(input_type, TensorType)
    rank = len(input_type.get_shape())
    channels = input_type.get_shape()[1]
    if op.activation != pointwise.NO_ACTIVATION:
        pre = ctx.emit(BatchNormOp(x, gamma, beta, mean, var, eps=eps)).result
        grad = ctx.activation_grad(pre, grad, op.activation)
    zeros = ctx.constant(0.0, [channels])
    input_grad = ctx.emit(BatchNormOp(grad, gamma, zeros, zeros, var, eps=eps)).result
    xhat = ctx.emit(BatchNormOp(x, ctx.constant(1.0, [channels]), zeros, mean, var, eps=eps))
    axes = [0, *range(2, rank)]
    gamma_grad = ctx.emit(ReduceSumOp(ctx.mul(grad, xhat.result), axes)).result
    beta_grad = ctx.emit(ReduceSumOp(grad, axes)).result
    return [input_grad, gamma_grad, beta_grad, None, None]


not_differentiable("a backward op: second-order gradients are not supported", BatchNormBackwardOp)
