"""Reference semantics of `graph.linear` and `graph.matmul`, in float64."""

from __future__ import annotations

import numpy as np

from dialects.graph.linear import LinearOp, MatmulOp
from teeny_ir.core import pointwise
from teeny_ir.reference.common import Array, Weights
from teeny_ir.reference.semantics import semantics


@semantics(LinearOp)
def _linear_op(op: LinearOp, args: list[Array], weights: Weights) -> list[Array]:
    x, weight = (np.asarray(a, np.float64) for a in args[:2])
    y = x @ weight.T
    if len(args) == 3:
        y = y + np.asarray(args[2], np.float64)
    if op.activation != pointwise.NO_ACTIVATION:
        y = pointwise.BY_NAME[op.activation].evaluate(np, [y], {})
    return [y]


@semantics(MatmulOp)
def _matmul_op(op: MatmulOp, args: list[Array], weights: Weights) -> list[Array]:
    lhs, rhs = (np.asarray(a, np.float64) for a in args)
    return [np.matmul(lhs, rhs)]
