"""Activations and unary math: one graph op each (``relu6`` is `graph.hardtanh`)."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import SSAValue

from teeny_ir.frontend.graph_builder import GraphBuilder
from teeny_ir.frontend.torch.context import Call, Value, aten_op

_UNARY: dict[str, Callable[[GraphBuilder, SSAValue], SSAValue]] = {
    "aten.relu": GraphBuilder.relu,
    "aten.silu": GraphBuilder.silu,
    "aten.sigmoid": GraphBuilder.sigmoid,
    "aten.tanh": GraphBuilder.tanh,
    "aten.hardswish": GraphBuilder.hardswish,
    "aten.abs": GraphBuilder.abs,
    "aten.neg": GraphBuilder.neg,
    "aten.exp": GraphBuilder.exp,
    "aten.log": GraphBuilder.log,
    "aten.sqrt": GraphBuilder.sqrt,
    "aten.reciprocal": GraphBuilder.reciprocal,
    "aten.erf": GraphBuilder.erf,
    "aten.sin": GraphBuilder.sin,
    "aten.cos": GraphBuilder.cos,
}


@aten_op(*_UNARY)
def _unary(call: Call) -> Value:
    return _UNARY[call.name.rsplit(".", 1)[0]](call.b, call.tensor("self"))


@aten_op("aten.gelu")
def _gelu(call: Call) -> Value:
    approximate = call.arg("approximate")
    if approximate not in ("none", "tanh"):
        raise call.refuse(f"unsupported approximate='{approximate}'")
    return call.b.gelu(call.tensor("self"), str(approximate))


@aten_op("aten.leaky_relu")
def _leaky_relu(call: Call) -> Value:
    return call.b.leaky_relu(call.tensor("self"), call.number("negative_slope"))


@aten_op("aten.hardtanh")
def _hardtanh(call: Call) -> Value:
    low, high = call.number("min_val"), call.number("max_val")
    if low > high:
        raise call.refuse(f"min_val {low} is above max_val {high}")
    return call.b.hardtanh(call.tensor("self"), low, high)


@aten_op("aten.relu6")
def _relu6(call: Call) -> Value:
    return call.b.hardtanh(call.tensor("self"), 0.0, 6.0)


@aten_op("aten.elu")
def _elu(call: Call) -> Value:
    if call.number("scale") != 1.0 or call.number("input_scale") != 1.0:
        raise call.refuse("scale and input_scale other than 1 are not supported")
    return call.b.elu(call.tensor("self"), call.number("alpha"))
