"""VJP rules of the matrix products, `graph.linear` and `graph.matmul`, built of
`MatmulOp`, `TransposeOp`, `ReshapeOp` and `ReduceSumOp` only.

With ``z`` the pre-activation (the product plus the bias) and ``dz = act'(z) * dy``
(`ActivationGradOp` on a recomputed ``z``; ``dy`` itself without an activation):

- linear, ``z = x @ w^T + b``: ``dx = dz @ w``, ``dw = dz^T x`` summed over every
  leading dimension, ``db = dz`` summed over every dimension but the last;
- matmul, ``z = lhs @ rhs + b``: ``dlhs = dz @ rhs^T`` and ``drhs = lhs^T @ dz``,
  each summed back over the batch dimensions broadcasting stretched
  (`VjpContext.unbroadcast`), ``db`` as for linear.

A dynamic batch cannot move or fold into another dimension, so a product over
it is written as a batched product of per-sample matrices summed over the
batch afterwards.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType, f32
from xdsl.ir import Operation, SSAValue

from dialects.graph.conv import Conv2dBackwardWeightOp
from dialects.graph.linear import LinearOp, MatmulOp
from dialects.graph.reduce import ReduceSumOp
from dialects.graph.structure import TransposeOp
from teeny_ir.autodiff.context import VjpContext
from teeny_ir.autodiff.registry import vjp
from teeny_ir.core import pointwise


def _type(value: SSAValue) -> TensorType:
    assert isinstance(value.type, TensorType)
    return value.type


def _shape(value: SSAValue) -> tuple[int, ...]:
    return tuple(_type(value).get_shape())


def _dynamic(value: SSAValue) -> bool:
    shape = _shape(value)
    return bool(shape) and shape[0] == DYNAMIC_INDEX


def _swap_last(ctx: VjpContext, value: SSAValue) -> SSAValue:
    """``value`` with its last two dimensions swapped (rank >= 2)."""
    rank = len(_shape(value))
    perm = [*range(rank - 2), rank - 1, rank - 2]
    return ctx.emit(TransposeOp(value, perm)).result


def _matmul(ctx: VjpContext, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
    return ctx.emit(MatmulOp(lhs, rhs)).result


def _pre_activation_grad(
    ctx: VjpContext, op: LinearOp | MatmulOp, g: SSAValue, recompute: Operation
) -> SSAValue:
    """``dz = act'(z) * g`` with ``z`` the product without its activation (the
    op ``recompute``, emitted here); ``g`` itself when there is no activation."""
    if op.activation == pointwise.NO_ACTIVATION:
        return g
    if pointwise.derivative_at_output(op.activation):
        # relu'(z) = [z > 0] = [relu(z) > 0]: the kept output serves, no recompute.
        return ctx.activation_grad(ctx.value(op.results[0]), g, op.activation)
    z = ctx.emit(recompute).results[0]
    return ctx.activation_grad(z, g, op.activation)


def _bias_grad(ctx: VjpContext, dz: SSAValue) -> SSAValue:
    """``dz`` summed over every dimension but the last: the gradient of a bias
    added along the last dimension."""
    return ctx.emit(ReduceSumOp(dz, list(range(len(_shape(dz)) - 1)))).result


def _outer_sum(ctx: VjpContext, a: SSAValue, b: SSAValue) -> SSAValue:
    """``sum_m a[m, i] * b[m, j]`` over every leading dimension ``m`` of ``a``
    [..., I] and ``b`` [..., J] (the same leading dimensions): an [I, J] matrix."""
    a_shape, b_shape = _shape(a), _shape(b)
    rows, columns = a_shape[-1], b_shape[-1]
    if not _dynamic(a):
        count = math.prod(a_shape[:-1])
        a2 = ctx.reshape(a, TensorType(f32, [count, rows]))
        b2 = ctx.reshape(b, TensorType(f32, [count, columns]))
        return _matmul(ctx, ctx.emit(TransposeOp(a2, [1, 0])).result, b2)
    # A reduction over the batch and the S positions of each sample: the weight
    # gradient of a 1x1 convolution whose channels are I (out) and J (in) and
    # whose S pixels are the positions, one GEMM over batch x positions with no
    # [?, I, J] intermediate.
    per_sample = math.prod(a_shape[1:-1])
    a4, b4 = (
        _channels_first(ctx, value, per_sample, width)
        for value, width in ((a, rows), (b, columns))
    )
    dw = ctx.emit(
        Conv2dBackwardWeightOp(b4, a4, TensorType(f32, [rows, columns, 1, 1]))
    ).result
    return ctx.reshape(dw, TensorType(f32, [rows, columns]))


def _channels_first(ctx: VjpContext, value: SSAValue, positions: int, width: int) -> SSAValue:
    """``value`` [?, ..., C] (``positions`` per sample) as an NCHW [?, C, S, 1]:
    a view when there is one position per sample, else a transpose."""
    if positions == 1:
        return ctx.reshape(value, TensorType(f32, [DYNAMIC_INDEX, width, 1, 1]))
    rows = ctx.reshape(value, TensorType(f32, [DYNAMIC_INDEX, positions, width]))
    moved = ctx.emit(TransposeOp(rows, [0, 2, 1])).result
    return ctx.reshape(moved, TensorType(f32, [DYNAMIC_INDEX, width, positions, 1]))


@vjp(LinearOp)
def _linear(
    ctx: VjpContext, op: LinearOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    """``y = act(x @ w^T + b)``: ``dx = dz @ w``, ``dw = dz^T x`` (over all leading
    dimensions), ``db = sum dz`` (over all but the last)."""
    (g,) = grads
    if g is None:
        return [None] * len(op.operands)
    x, w = ctx.value(op.input), ctx.value(op.weight)
    bias = None if op.bias is None else ctx.value(op.bias)
    dz = _pre_activation_grad(ctx, op, g, LinearOp(x, w, bias))
    dx = _matmul(ctx, dz, w)
    dw = _outer_sum(ctx, dz, x)
    if bias is None:
        return [dx, dw]
    return [dx, dw, _bias_grad(ctx, dz)]


def _lhs_transposed_times(ctx: VjpContext, lhs: SSAValue, dz: SSAValue) -> SSAValue:
    """``lhs^T @ dz`` over the broadcast batch dimensions. A rank-2 ``lhs`` with
    a dynamic row count (its rows are the batch) is multiplied per row and the
    products summed, since the batch cannot move."""
    if len(_shape(lhs)) == 2 and _dynamic(lhs):
        return _outer_sum(ctx, lhs, dz)
    return _matmul(ctx, _swap_last(ctx, lhs), dz)


@vjp(MatmulOp)
def _matmul_rule(
    ctx: VjpContext, op: MatmulOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    """``y = act(lhs @ rhs + b)``: ``dlhs = dz @ rhs^T``, ``drhs = lhs^T @ dz``,
    each unbroadcast to its operand, ``db = sum dz`` (over all but the last)."""
    (g,) = grads
    if g is None:
        return [None] * len(op.operands)
    lhs, rhs = ctx.value(op.lhs), ctx.value(op.rhs)
    bias = None if op.bias is None else ctx.value(op.bias)
    dz = _pre_activation_grad(ctx, op, g, MatmulOp(lhs, rhs, bias))
    dlhs = ctx.unbroadcast(_matmul(ctx, dz, _swap_last(ctx, rhs)), _type(op.lhs))
    drhs = ctx.unbroadcast(_lhs_transposed_times(ctx, lhs, dz), _type(op.rhs))
    if bias is None:
        return [dlhs, drhs]
    return [dlhs, drhs, _bias_grad(ctx, dz)]
