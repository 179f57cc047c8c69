"""Reference semantics of `graph.batch_norm`, in float64: inference with the
running statistics (then the optional epilogue activation), or training with
the batch's (and the updated running ones); and `graph.batch_norm_backward`,
PyTorch's training-mode ``native_batch_norm_backward``."""

from __future__ import annotations

import numpy as np

from dialects.graph.norm import BatchNormBackwardOp, BatchNormOp
from teeny_ir.core import pointwise
from teeny_ir.reference.common import Array, Weights, channel, error
from teeny_ir.reference.semantics import semantics


@semantics(BatchNormOp)
def _batch_norm_op(op: BatchNormOp, args: list[Array], weights: Weights) -> list[Array]:
    x, gamma, beta, running_mean, running_var = (np.asarray(a, np.float64) for a in args)
    rank = x.ndim
    if not op.training:
        inv_std = 1.0 / np.sqrt(running_var + op.eps)
        y = (x - channel(running_mean, rank)) * channel(gamma * inv_std, rank) + channel(beta, rank)
        if op.activation != pointwise.NO_ACTIVATION:
            y = pointwise.BY_NAME[op.activation].evaluate(np, [y], {})
        return [y]
    axes = (0, *range(2, rank))
    count = x.size // x.shape[1]
    if count < 2:
        raise error(
            f"batch_norm in training mode needs more than 1 value per channel, got {count}", op
        )
    mean = x.mean(axis=axes)
    var = x.var(axis=axes)  # biased: normalises the batch
    y = (x - channel(mean, rank)) / np.sqrt(channel(var, rank) + op.eps)
    y = y * channel(gamma, rank) + channel(beta, rank)
    momentum = op.momentum
    new_mean = (1 - momentum) * running_mean + momentum * mean
    new_var = (1 - momentum) * running_var + momentum * var * count / (count - 1)
    return [y, new_mean, new_var]


@semantics(BatchNormBackwardOp)
def _batch_norm_backward_op(
    op: BatchNormBackwardOp, args: list[Array], weights: Weights
) -> list[Array]:
    x, gamma, dy = (np.asarray(a, np.float64) for a in args)
    rank = x.ndim
    axes = (0, *range(2, rank))
    count = x.size // x.shape[1]
    if count < 2:
        raise error(
            "batch_norm_backward needs more than 1 value per channel (as the training "
            f"form), got {count}",
            op,
        )
    mean = x.mean(axis=axes)
    rstd = 1.0 / np.sqrt(x.var(axis=axes) + op.eps)  # biased, as the forward
    xhat = (x - channel(mean, rank)) * channel(rstd, rank)
    dbeta = dy.sum(axis=axes)
    dgamma = (dy * xhat).sum(axis=axes)
    dx = channel(gamma * rstd / count, rank) * (
        count * dy - channel(dbeta, rank) - xhat * channel(dgamma, rank)
    )
    return [dx, dgamma, dbeta]
