"""Elementwise math: Abs, Neg, Exp, Log, Sqrt, Reciprocal, Erf, Sin, Cos; the activations
Softplus, Softsign, Elu, Selu, Celu and PRelu; Pow; and the variadic Max, Min, Sum and
Mean (a chain of broadcasting binaries).

Every handler folds its node when all inputs are folded constants, with the pointwise
table's own semantics for float values (`teeny_ir.core.pointwise`) and numpy's integer
arithmetic for the integer ones a shape computation feeds Abs, Neg, Max, Min, Sum or Pow.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.ir import SSAValue

from teeny_ir.core import pointwise
from teeny_ir.frontend.onnx.context import Node, Value, has_batch, onnx_op

_INTEGER_FOLD: dict[str, Callable[..., np.ndarray]] = {
    "Abs": np.abs,
    "Neg": np.negative,
    "Max": np.maximum,
    "Min": np.minimum,
    "Sum": np.add,
}
"""Integer folding (exact, unlike float64): the ops a shape computation may use."""


def _constants(node: Node) -> list[np.ndarray]:
    """Every input as a folded constant of one dtype, free of the dynamic batch."""
    arrays = [node.const(i, f"input {i}") for i in range(len(node.inputs)) if node.has_input(i)]
    if any(has_batch(a) for a in arrays):
        raise node.refuse("arithmetic on a shape that depends on the dynamic batch")
    if len({a.dtype for a in arrays}) > 1:
        raise node.refuse(f"operands of types {', '.join(str(a.dtype) for a in arrays)}")
    if arrays[0].dtype.kind not in "fiu":
        raise node.refuse(f"operands of type {arrays[0].dtype}")
    return arrays


def _table(name: str, arrays: Sequence[np.ndarray], **options: float) -> np.ndarray:
    """The pointwise entry ``name`` on float constants, in their dtype."""
    entry = pointwise.BY_NAME[name]
    return np.asarray(entry.evaluate(np, list(arrays), options)).astype(arrays[0].dtype)


def _fold_unary(node: Node, name: str, **options: float) -> np.ndarray:
    (a,) = _constants(node)
    if a.dtype.kind != "f":
        if node.op_type not in _INTEGER_FOLD:
            raise node.refuse(f"an integer operand ({a.dtype})")
        return np.asarray(_INTEGER_FOLD[node.op_type](a)).astype(a.dtype)
    return _table(name, [a], **options)


def _unary(op_type: str, since: int, name: str) -> None:
    """Register the handler of ``op_type``: the pointwise entry ``name``, no attributes."""

    def handler(node: Node) -> list[Value]:
        node.attrs()
        if node.all_constant():
            return [_fold_unary(node, name)]
        build: Callable[[SSAValue], SSAValue] = getattr(node.b, name)
        return [build(node.tensor(0))]

    handler.__name__ = f"_{name}"
    onnx_op(op_type, since=since)(handler)


for _op_type, _since, _name in (
    ("Abs", 6, "abs"),
    ("Neg", 6, "neg"),
    ("Exp", 6, "exp"),
    ("Log", 6, "log"),
    ("Sqrt", 6, "sqrt"),
    ("Reciprocal", 6, "reciprocal"),
    ("Erf", 9, "erf"),
    ("Sin", 7, "sin"),
    ("Cos", 7, "cos"),
    ("Softplus", 1, "softplus"),
    ("Softsign", 1, "softsign"),
):
    _unary(_op_type, _since, _name)


@onnx_op("Elu", since=6)
def _elu(node: Node) -> list[Value]:
    alpha = float(node.attrs(alpha=1.0)["alpha"])
    if node.all_constant():
        return [_fold_unary(node, "elu", alpha=alpha)]
    return [node.b.elu(node.tensor(0), alpha)]


@onnx_op("Celu", since=12)
def _celu(node: Node) -> list[Value]:
    alpha = float(node.attrs(alpha=1.0)["alpha"])
    if not alpha > 0:
        raise node.refuse(f"alpha={alpha}: graph.celu takes a positive alpha")
    if node.all_constant():
        return [_fold_unary(node, "celu", alpha=alpha)]
    return [node.b.celu(node.tensor(0), alpha)]


@onnx_op("Selu", since=6)
def _selu(node: Node) -> list[Value]:
    # gamma * (x > 0 ? x : alpha * (exp(x) - 1)) is gamma * elu(x, alpha) exactly (a
    # graph.selu with options would have no PyTorch function to be held to).
    attrs = node.attrs(alpha=1.67326319217681884765625, gamma=1.05070102214813232421875)
    alpha, gamma = float(attrs["alpha"]), float(attrs["gamma"])
    if node.all_constant():
        (a,) = _constants(node)
        if a.dtype.kind != "f":
            raise node.refuse(f"an integer operand ({a.dtype})")
        return [(_table("elu", [a], alpha=alpha) * a.dtype.type(gamma)).astype(a.dtype)]
    b = node.b
    return [b.mul(b.elu(node.tensor(0), alpha), b.constant([gamma], [1]))]


@onnx_op("PRelu", since=6)
def _prelu(node: Node) -> list[Value]:
    # x where x >= 0, slope * x elsewhere, slope broadcast to x: leaky_relu for one
    # constant slope; else relu(x) + slope * min(x, 0), which is exact for finite x
    # (x + slope * 0, or 0 + slope * x) and NaN where x is.
    node.attrs()
    if node.all_constant():
        xs, slopes = _constants(node)
        if xs.dtype.kind != "f":
            raise node.refuse(f"an integer operand ({xs.dtype})")
        with np.errstate(invalid="ignore", over="ignore"):
            return [np.asarray(np.where(xs < 0, slopes * xs, xs)).astype(xs.dtype)]
    x = node.tensor(0)
    slope = node.value(1)
    b = node.b
    if isinstance(slope, np.ndarray) and slope.size == 1 and slope.dtype.kind == "f":
        value = float(slope.reshape(-1)[0])
        if np.isfinite(value):
            return [b.leaky_relu(x, value)]
    negative = b.mul(node.tensor(1), b.minimum(x, b.constant([0.0], [1])))
    return [b.add(b.relu(x), negative)]


@onnx_op("Pow", since=7)
def _pow(node: Node) -> list[Value]:
    # Pow 12 lets the exponent have another type than the base: an integer exponent
    # (a folded constant) is converted, exactly for any |y| < 2**24.
    node.attrs()
    if node.all_constant():
        base, exponent = (node.const(i, name) for i, name in ((0, "X"), (1, "Y")))
        if has_batch(base) or has_batch(exponent):
            raise node.refuse("arithmetic on a shape that depends on the dynamic batch")
        if base.dtype.kind == "f":
            return [_table("pow", [base, exponent.astype(np.float64)])]
        if base.dtype.kind in "iu" and exponent.dtype.kind in "iu":
            if (exponent < 0).any():
                raise node.refuse("an integer raised to a negative integer power")
            return [np.asarray(np.power(base, exponent)).astype(base.dtype)]
        raise node.refuse(f"operands of types {base.dtype} and {exponent.dtype}")
    given = node.value(1)
    if isinstance(given, SSAValue):
        y = given
    else:
        integer = given.dtype.kind in "iu" and not has_batch(given)
        y = node.materialise(given.astype(np.float32) if integer else given, node.proto.input[1])
    return [node.b.pow(node.tensor(0), y)]


def _fold_variadic(node: Node, name: str) -> np.ndarray:
    arrays = _constants(node)
    if arrays[0].dtype.kind != "f":
        if node.op_type not in _INTEGER_FOLD:
            raise node.refuse(f"integer operands ({arrays[0].dtype})")
        folded = functools.reduce(_INTEGER_FOLD[node.op_type], arrays)
        return np.asarray(folded).astype(arrays[0].dtype)
    if name == "mean":
        total = functools.reduce(lambda a, b: _table("add", [a, b]), arrays)
        return _table("div", [total, np.asarray(len(arrays), total.dtype)])
    return functools.reduce(lambda a, b: _table(name, [a, b]), arrays)


@onnx_op("Max", "Min", "Sum", "Mean", since=6)
def _variadic(node: Node) -> list[Value]:
    # Version 8 added multidirectional broadcasting (the inputs of a version-6 node
    # have one shape, a case of it). One input is that input.
    node.attrs()
    name = {"Max": "maximum", "Min": "minimum", "Sum": "add", "Mean": "mean"}[node.op_type]
    count = len(node.inputs)
    if count == 0 or not all(node.has_input(i) for i in range(count)):
        raise node.refuse("expected one or more inputs, none of them omitted")
    if node.all_constant():
        return [_fold_variadic(node, name)]
    if count == 1:
        return [node.tensor(0)]
    b = node.b
    combine: Callable[[SSAValue, SSAValue], SSAValue] = getattr(
        b, "add" if name == "mean" else name
    )
    result = functools.reduce(combine, (node.tensor(i) for i in range(count)))
    if name == "mean":
        result = b.div(result, b.constant([float(count)], [1]))
    return [result]
