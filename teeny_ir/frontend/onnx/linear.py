"""Gemm and MatMul."""

from __future__ import annotations

from teeny_ir.frontend.onnx.context import Node, Value, dims, onnx_op


@onnx_op("Gemm", since=11)
def _gemm(node: Node) -> list[Value]:
    attrs = node.attrs(alpha=1.0, beta=1.0, transA=0, transB=0)
    for name, default in (("alpha", 1.0), ("beta", 1.0), ("transA", 0)):
        if attrs[name] != default:
            raise node.refuse(f"unsupported attribute {name}={attrs[name]}")
    a, w = node.tensor(0), node.tensor(1)
    if len(dims(a)) != 2 or len(dims(w)) != 2:
        raise node.refuse("expected 2-D A and B")
    b = node.b
    bias = node.tensor(2) if node.has_input(2) else None
    if attrs["transB"]:
        # A @ B^T + C is graph.linear; its bias is [N], a [1, N] or [M, N] C is added.
        if bias is not None and len(dims(bias)) == 1:
            return [b.linear(a, w, bias)]
        y = b.linear(a, w)
    else:
        y = b.matmul(a, w)
    return [y if bias is None else b.add(y, bias)]


@onnx_op("MatMul", since=9)
def _matmul(node: Node) -> list[Value]:
    node.attrs()
    lhs, rhs = node.tensor(0), node.tensor(1)
    if len(dims(lhs)) < 2 or len(dims(rhs)) < 2:
        raise node.refuse("1-D operands are not supported (graph.matmul takes rank >= 2)")
    return [node.b.matmul(lhs, rhs)]
