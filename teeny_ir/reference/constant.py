"""Reference semantics of `graph.constant`: its dense value, in float64."""

from __future__ import annotations

import numpy as np

from dialects.graph.constant import ConstantOp
from teeny_ir.reference.common import Array, Weights
from teeny_ir.reference.semantics import semantics


@semantics(ConstantOp)
def _constant_op(op: ConstantOp, args: list[Array], weights: Weights) -> list[Array]:
    values = np.array(op.value.get_values(), dtype=np.float64)
    return [values.reshape(op.value.get_shape())]
