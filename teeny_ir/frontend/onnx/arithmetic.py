"""Add, Sub, Mul, Div: graph ops with numpy broadcasting, folded when both
operands are constants; ``x * sigmoid(x)`` is recognised as `graph.silu`."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.ir import SSAValue

from dialects.graph.elementwise import SigmoidOp
from teeny_ir.frontend.onnx.context import Node, Value, has_batch, onnx_op


def _int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # ONNX integer division truncates toward zero (numpy's // floors).
    return np.asarray(np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b)))


_FOLD: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "Add": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "Div": np.divide,
}


def _fold(node: Node) -> np.ndarray:
    a, b = node.const(0, "A"), node.const(1, "B")
    if has_batch(a) or has_batch(b):
        raise node.refuse("arithmetic on a shape that depends on the dynamic batch")
    if a.dtype != b.dtype:
        raise node.refuse(f"operands of types {a.dtype} and {b.dtype}")
    if node.op_type == "Div" and a.dtype.kind in "iu":
        return _int_div(a, b).astype(a.dtype)
    return np.asarray(_FOLD[node.op_type](a, b)).astype(a.dtype)


def _silu_input(lhs: SSAValue, rhs: SSAValue) -> SSAValue | None:
    """``x`` when the operands are ``x`` and ``sigmoid(x)`` (either order)."""
    for x, s in ((lhs, rhs), (rhs, lhs)):
        if isinstance(s.owner, SigmoidOp) and s.owner.operands[0] is x:
            return x
    return None


@onnx_op("Add", "Sub", "Mul", "Div", since=7)
def _binary(node: Node) -> list[Value]:
    node.attrs()
    if node.all_constant():
        return [_fold(node)]
    lhs, rhs = node.tensor(0), node.tensor(1)
    b = node.b
    if node.op_type == "Mul":
        x = _silu_input(lhs, rhs)
        return [b.silu(x) if x is not None else b.mul(lhs, rhs)]
    make = {"Add": b.add, "Sub": b.sub, "Div": b.div}[node.op_type]
    return [make(lhs, rhs)]
