"""Reference semantics of the math ops: `graph.tanh`, `graph.gelu`,
`graph.leaky_relu`, `graph.sub`, `graph.div`, `graph.linear`, `graph.matmul` and
`graph.constant`, in float64."""

from __future__ import annotations

import math

import numpy as np
from xdsl.ir import Operation

from dialects.graph import (
    ConstantOp,
    DivOp,
    GeluOp,
    LeakyReluOp,
    LinearOp,
    MatmulOp,
    SubOp,
    TanhOp,
)
from teeny_ir.reference import Array, Semantics, Weights, _binary, _unary

_erf = np.vectorize(math.erf, otypes=[np.float64])
"""Elementwise erf in float64 (numpy has none; scipy is no dependency)."""


def _gelu_op(op: GeluOp, args: list[Array], weights: Weights) -> list[Array]:
    x = np.asarray(args[0], np.float64)
    if op.approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)
        return [0.5 * x * (1.0 + np.tanh(inner))]
    return [0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))]


def _leaky_relu_op(op: LeakyReluOp, args: list[Array], weights: Weights) -> list[Array]:
    x = np.asarray(args[0], np.float64)
    return [np.where(x >= 0, x, op.negative_slope * x)]


def _divide(lhs: Array, rhs: Array) -> Array:
    """IEEE division: ``x / 0`` is ``±inf`` and ``0 / 0`` is ``nan``, without warnings."""
    with np.errstate(divide="ignore", invalid="ignore"):
        quotient: Array = np.divide(lhs, rhs)
    return quotient


def _linear_op(op: LinearOp, args: list[Array], weights: Weights) -> list[Array]:
    x, weight = (np.asarray(a, np.float64) for a in args[:2])
    y = x @ weight.T
    if len(args) == 3:
        y = y + np.asarray(args[2], np.float64)
    return [y]


def _matmul_op(op: MatmulOp, args: list[Array], weights: Weights) -> list[Array]:
    lhs, rhs = (np.asarray(a, np.float64) for a in args)
    return [np.matmul(lhs, rhs)]


def _constant_op(op: ConstantOp, args: list[Array], weights: Weights) -> list[Array]:
    values = np.array(op.value.get_values(), dtype=np.float64)
    return [values.reshape(op.value.get_shape())]


SEMANTICS: dict[type[Operation], Semantics] = {
    TanhOp: _unary(np.tanh),
    GeluOp: _gelu_op,
    LeakyReluOp: _leaky_relu_op,
    SubOp: _binary(np.subtract),
    DivOp: _binary(_divide),
    LinearOp: _linear_op,
    MatmulOp: _matmul_op,
    ConstantOp: _constant_op,
}
"""Op class -> its reference semantics (see `teeny_ir.reference.semantics_table`)."""
