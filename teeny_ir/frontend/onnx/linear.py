"""Gemm and MatMul."""

from __future__ import annotations

from teeny_ir.frontend.onnx.context import Node, Value, dims, onnx_op


@onnx_op("Gemm", since=11)
def _gemm(node: Node) -> list[Value]:
    # alpha * A' @ B' + beta * C, A' and B' transposed as asked.
    attrs = node.attrs(alpha=1.0, beta=1.0, transA=0, transB=0)
    alpha, beta = float(attrs["alpha"]), float(attrs["beta"])
    a, w = node.tensor(0), node.tensor(1)
    if len(dims(a)) != 2 or len(dims(w)) != 2:
        raise node.refuse("expected 2-D A and B")
    b = node.b
    if attrs["transA"]:
        a = b.transpose(a, [1, 0])
    bias = node.tensor(2) if node.has_input(2) else None
    if bias is not None and beta != 1.0:
        bias = b.mul(bias, b.constant([beta], [1]))
    if attrs["transB"]:
        # A @ B^T + C is graph.linear; its bias is [N], a [1, N] or [M, N] C is added.
        if bias is not None and len(dims(bias)) == 1 and alpha == 1.0:
            return [b.linear(a, w, bias)]
        y = b.linear(a, w)
    else:
        y = b.matmul(a, w)
    if alpha != 1.0:
        y = b.mul(y, b.constant([alpha], [1]))
    return [y if bias is None else b.add(y, bias)]


@onnx_op("MatMul", since=9)
def _matmul(node: Node) -> list[Value]:
    # numpy's matmul: a 1-D operand is a row (left) or a column (right) vector
    # whose unit dimension is dropped from the result.
    node.attrs()
    lhs, rhs = node.tensor(0), node.tensor(1)
    b = node.b
    left, right = len(dims(lhs)) == 1, len(dims(rhs)) == 1
    if left and right:
        # The dot product: a rank-0 result.
        if dims(lhs) != dims(rhs):
            raise node.refuse(f"1-D operands of sizes {dims(lhs)[0]} and {dims(rhs)[0]}")
        return [b.reduce_sum(b.mul(lhs, rhs), [0])]
    if left:
        lhs = b.reshape(lhs, [1, dims(lhs)[0]])
    if right:
        rhs = b.reshape(rhs, [dims(rhs)[0], 1])
    y = b.matmul(lhs, rhs)
    if left or right:
        shape = list(dims(y))
        keep = [
            i
            for i in range(len(shape))
            if not ((left and i == len(shape) - 2) or (right and i == len(shape) - 1))
        ]
        y = b.reshape(y, [0 if i == 0 and shape[0] < 0 else shape[i] for i in keep] or [1])
    return [y]
