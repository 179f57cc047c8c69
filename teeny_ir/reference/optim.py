"""Reference semantics of the optimizer updates, in float64: one step of
``torch.optim.SGD`` (`graph.sgd_update`) and ``torch.optim.AdamW``
(`graph.adamw_update`), in PyTorch's order of operations."""

from __future__ import annotations

import numpy as np

from dialects.graph.optim import AdamwUpdateOp, SgdUpdateOp
from teeny_ir.reference.common import Array, Weights
from teeny_ir.reference.semantics import semantics


@semantics(SgdUpdateOp)
def _sgd_update_op(op: SgdUpdateOp, args: list[Array], weights: Weights) -> list[Array]:
    param, grad, *buffer = (np.asarray(a, np.float64) for a in args)
    if op.weight_decay != 0:
        grad = grad + op.weight_decay * param
    if not buffer:
        return [param - op.lr * grad]
    new_buffer = op.momentum * buffer[0] + grad
    return [param - op.lr * new_buffer, new_buffer]


@semantics(AdamwUpdateOp)
def _adamw_update_op(op: AdamwUpdateOp, args: list[Array], weights: Weights) -> list[Array]:
    param, grad, exp_avg, exp_avg_sq, step = (np.asarray(a, np.float64) for a in args)
    beta1, beta2, lr = op.beta1, op.beta2, op.lr
    step = step + 1
    if op.weight_decay != 0:
        param = param * (1 - lr * op.weight_decay)
    exp_avg = beta1 * exp_avg + (1 - beta1) * grad
    exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad * grad
    step_size = lr / (1 - beta1**step)
    denom = np.sqrt(exp_avg_sq) / np.sqrt(1 - beta2**step) + op.eps
    return [param - step_size * exp_avg / denom, exp_avg, exp_avg_sq, step]
