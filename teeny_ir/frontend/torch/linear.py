"""``linear``, ``addmm``, ``matmul``, ``mm``, ``bmm`` as `graph.linear` and `graph.matmul`."""

from __future__ import annotations

from teeny_ir.frontend.torch.context import Call, Value, aten_op, dims


@aten_op("aten.linear")
def _linear(call: Call) -> Value:
    x, w = call.tensor("input"), call.tensor("weight")
    if len(dims(w)) != 2:
        raise call.refuse(f"the weight must be 2-D (rank {len(dims(w))})")
    bias = call.tensor("bias") if call.has("bias") else None
    return call.b.linear(x, w, bias)


@aten_op("aten.matmul", "aten.mm", "aten.bmm")
def _matmul(call: Call) -> Value:
    lhs, rhs = (
        call.tensor("self"),
        call.tensor("other" if call.name.startswith("aten.matmul") else "mat2"),
    )
    if len(dims(lhs)) < 2 or len(dims(rhs)) < 2:
        raise call.refuse("a product with a 1-D operand is not supported")
    return call.b.matmul(lhs, rhs)


@aten_op("aten.addmm")
def _addmm(call: Call) -> Value:
    # beta * self + alpha * (mat1 @ mat2)
    product = call.b.matmul(call.tensor("mat1"), call.tensor("mat2"))
    if call.number("alpha") != 1:
        product = call.b.mul(product, call.materialise(call.number("alpha"), "alpha"))
    bias = call.tensor("self")
    if call.number("beta") != 1:
        bias = call.b.mul(bias, call.materialise(call.number("beta"), "beta"))
    return call.b.add(product, bias)
