"""Binary arithmetic of tensors and scalars (``add.Tensor``, ``add.Scalar``,
``mul(x, 2.0)``): numbers become a one-element `graph.constant` that broadcasts."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import SSAValue

from teeny_ir.frontend.graph_builder import GraphBuilder
from teeny_ir.frontend.torch.context import Call, Value, aten_op

_BINARY: dict[str, Callable[[GraphBuilder, SSAValue, SSAValue], SSAValue]] = {
    "aten.add": GraphBuilder.add,
    "aten.sub": GraphBuilder.sub,
    "aten.mul": GraphBuilder.mul,
    "aten.div": GraphBuilder.div,
    "aten.maximum": GraphBuilder.maximum,
    "aten.minimum": GraphBuilder.minimum,
    "aten.pow": GraphBuilder.pow,
}


@aten_op(*_BINARY)
def _binary(call: Call) -> Value:
    packet = call.name.rsplit(".", 1)[0]
    if packet == "aten.div" and call.has("rounding_mode"):
        raise call.refuse(f"unsupported rounding_mode='{call.arg('rounding_mode')}'")
    if packet == "aten.pow" and call.overload == "Scalar":
        lhs, rhs = call.tensor("self"), call.tensor("exponent")
    else:
        lhs = call.tensor("self")
        rhs = call.tensor("exponent" if packet == "aten.pow" else "other")
    if packet in ("aten.add", "aten.sub") and call.has("alpha") and call.number("alpha") != 1:
        # x + alpha * y, as torch computes it.
        rhs = call.b.mul(rhs, call.materialise(call.number("alpha"), "alpha"))
    return _BINARY[packet](call.b, lhs, rhs)


@aten_op("aten.rsub")
def _rsub(call: Call) -> Value:
    rhs = call.tensor("self")
    if call.has("alpha") and call.number("alpha") != 1:
        rhs = call.b.mul(rhs, call.materialise(call.number("alpha"), "alpha"))
    return call.b.sub(call.tensor("other"), rhs)
