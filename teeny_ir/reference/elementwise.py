"""Reference semantics of the elementwise ops: `graph.bias_add`, and one rule for
every op of the pointwise table (`teeny_ir.core.pointwise`), which owns their
math, so it is written once for the interpreter, the fuser and the kernels."""

from __future__ import annotations

from typing import Any

import numpy as np

from dialects.graph.elementwise import ActivationGradOp, BiasAddOp
from dialects.graph.fused_pointwise import FusedPointwiseOp
from teeny_ir.core import pointwise
from teeny_ir.reference.common import Array, Weights, channel, error
from teeny_ir.reference.semantics import pointwise_rule, semantics


@pointwise_rule
def _pointwise_op(op: Any, args: list[Array], weights: Weights) -> list[Array]:
    entry = pointwise.BY_OP[op.name]
    return [entry.evaluate(np, args, pointwise.options_of(entry, op))]


@semantics(BiasAddOp)
def _bias_add_op(op: BiasAddOp, args: list[Array], weights: Weights) -> list[Array]:
    x, bias = args
    return [np.asarray(x, np.float64) + channel(bias, x.ndim)]


@semantics(ActivationGradOp)
def _activation_grad_op(op: ActivationGradOp, args: list[Array], weights: Weights) -> list[Array]:
    x, grad = (np.asarray(a, np.float64) for a in args)
    entry = pointwise.BY_NAME[op.activation]
    if entry.derivative is None:
        raise error(f"the pointwise table has no derivative for '{entry.op}'", op)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        factor = entry.derivative(np, x, **pointwise.options_of(entry, op))
    return [factor * grad]


@semantics(FusedPointwiseOp)
def _fused_pointwise_op(op: FusedPointwiseOp, args: list[Array], weights: Weights) -> list[Array]:
    value = op.program.evaluate(np, args)
    reduction = op.reduction
    if reduction is None:
        return [value]
    reduce = np.sum if reduction.kind == "sum" else np.mean
    with np.errstate(invalid="ignore"):  # +inf + -inf is NaN, as the kernels give it
        total = reduce(
            np.asarray(value, np.float64), axis=reduction.axes, keepdims=reduction.keepdims
        )
    return [total]
