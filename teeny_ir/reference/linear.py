"""Reference semantics of `graph.linear` and `graph.matmul`, in float64: the
product, then the optional bias (along the last dimension) and activation."""

from __future__ import annotations

import numpy as np

from dialects.graph.linear import LinearOp, MatmulOp
from teeny_ir.core import pointwise
from teeny_ir.reference.common import Array, Weights
from teeny_ir.reference.semantics import semantics


def _epilogue(y: Array, bias: Array | None, activation: str) -> Array:
    """``act(y + bias)``: the bias (if any) along the last dimension, then the
    epilogue activation (if any)."""
    if bias is not None:
        y = y + np.asarray(bias, np.float64)
    if activation != pointwise.NO_ACTIVATION:
        y = pointwise.BY_NAME[activation].evaluate(np, [y], {})
    return y


@semantics(LinearOp)
def _linear_op(op: LinearOp, args: list[Array], weights: Weights) -> list[Array]:
    x, weight = (np.asarray(a, np.float64) for a in args[:2])
    return [_epilogue(x @ weight.T, args[2] if len(args) == 3 else None, op.activation)]


@semantics(MatmulOp)
def _matmul_op(op: MatmulOp, args: list[Array], weights: Weights) -> list[Array]:
    lhs, rhs = (np.asarray(a, np.float64) for a in args[:2])
    return [_epilogue(np.matmul(lhs, rhs), args[2] if len(args) == 3 else None, op.activation)]
