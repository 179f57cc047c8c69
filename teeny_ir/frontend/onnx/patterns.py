"""Decompositions exporters produce, recognised over the ONNX graph before import.

``torch.onnx.export`` writes GELU and hard swish as chains of elementwise nodes
(GELU's exact form through ``Erf``, which has no graph op). Fusion needs the one
graph op, so before the nodes are imported `find_patterns` looks for:

- hard swish: ``x * clip(x + 3, 0, 6) / 6`` (``relu6`` exports as that ``Clip``),
  with the ``/ 6`` as a division or a factor of 1/6 anywhere in the product, and
  ``x * HardSigmoid(x, alpha=1/6, beta=0.5)``, as `graph.hardswish`;
- GELU: ``0.5 * x * (1 + erf(x / sqrt(2)))`` as ``graph.gelu`` and
  ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))`` as
  ``graph.gelu approximate tanh``, the product in any order or grouping.

Each constant must be a float scalar within `RELATIVE_TOLERANCE` of its exact
value; a near miss is imported node by node (and an ``Erf`` is then refused by
name). A match covers its nodes only when nothing outside it uses their results,
so a value the rest of the graph needs is never lost.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from onnx import GraphProto, NodeProto, helper, numpy_helper

RELATIVE_TOLERANCE = 1e-6
"""How far (relative) a constant of a pattern may be from its exact value."""


@dataclass(frozen=True)
class Match:
    """A recognised decomposition: ``op`` (``hardswish`` or ``gelu``) of the value
    ``input``, computing the output of node ``root``; ``covered`` are the indices of
    every node it replaces (``root`` among them)."""

    op: str
    approximate: str
    input: str
    root: int
    covered: frozenset[int]


class _Graph:
    """Producers, consumers and scalar constants of an ONNX graph, by value name."""

    def __init__(self, graph: GraphProto, initializers: Mapping[str, np.ndarray]) -> None:
        self.nodes = list(graph.node)
        self.producer = {name: i for i, node in enumerate(self.nodes) for name in node.output}
        self.consumers: dict[str, set[int]] = {}
        for i, node in enumerate(self.nodes):
            for name in node.input:
                self.consumers.setdefault(name, set()).add(i)
        self.outputs = {value.name for value in graph.output}
        self.initializers = initializers

    def node(self, name: str, *op_types: str) -> tuple[int, NodeProto] | None:
        index = self.producer.get(name)
        if index is None or self.nodes[index].op_type not in op_types:
            return None
        node = self.nodes[index]
        return (index, node) if node.domain in ("", "ai.onnx") else None

    def scalar(self, name: str) -> float | None:
        """The value of a float scalar constant (initializer or ``Constant`` node)."""
        array = self.initializers.get(name)
        found = self.node(name, "Constant")
        if array is None and found is not None and len(found[1].attribute) == 1:
            attribute = found[1].attribute[0]
            if attribute.name == "value":
                array = numpy_helper.to_array(attribute.t)
            elif attribute.name == "value_float":
                array = np.asarray(helper.get_attribute_value(attribute), np.float32)
        if array is None or array.dtype.kind != "f" or array.size != 1:
            return None
        return float(array.reshape(-1)[0])

    def private(self, index: int, covered: set[int]) -> bool:
        """Whether only nodes of ``covered`` use the results of node ``index``."""
        return all(
            name not in self.outputs and self.consumers.get(name, set()) <= covered
            for name in self.nodes[index].output
        )


def _near(value: float | None, exact: float) -> bool:
    return value is not None and abs(value - exact) <= RELATIVE_TOLERANCE * abs(exact)


def _product(g: _Graph, name: str, covered: set[int]) -> tuple[list[str], float]:
    """``name`` as a product of factors times a constant scale: nested ``Mul`` and
    ``Div`` by a constant are flattened (their nodes added to ``covered``)."""
    scale, factors = 1.0, []
    pending = [name]
    while pending:
        value = pending.pop()
        constant = g.scalar(value)
        found = g.node(value, "Mul", "Div")
        if constant is not None and value != name:
            scale *= constant
        elif found is not None and len(found[1].input) == 2:
            index, node = found
            if node.op_type == "Div":
                divisor = g.scalar(node.input[1])
                if not divisor:
                    factors.append(value)
                    continue
                scale /= divisor
                pending.append(node.input[0])
            else:
                pending.extend(node.input)
            covered.add(index)
        else:
            factors.append(value)
    return factors, scale


def _binary(g: _Graph, name: str, op_type: str, covered: set[int]) -> tuple[str, str] | None:
    """The operands of the ``op_type`` node producing ``name`` (node then covered)."""
    found = g.node(name, op_type)
    if found is None or len(found[1].input) != 2:
        return None
    covered.add(found[0])
    return str(found[1].input[0]), str(found[1].input[1])


def _plus(g: _Graph, name: str, constant: float, covered: set[int]) -> str | None:
    """``v`` when ``name`` is ``v + constant`` (either order)."""
    operands = _binary(g, name, "Add", covered)
    if operands is None:
        return None
    for v, c in (operands, operands[::-1]):
        if _near(g.scalar(c), constant):
            return v
    return None


def _times(g: _Graph, name: str, constant: float, covered: set[int]) -> str | None:
    """``v`` when ``name`` is ``v * constant`` (either order)."""
    operands = _binary(g, name, "Mul", covered)
    if operands is None:
        return None
    for v, c in (operands, operands[::-1]):
        if _near(g.scalar(c), constant):
            return v
    return None


def _unary(g: _Graph, name: str, op_type: str, covered: set[int]) -> str | None:
    found = g.node(name, op_type)
    if found is None or found[1].attribute or len(found[1].input) != 1:
        return None
    covered.add(found[0])
    return str(found[1].input[0])


def _is_cube(g: _Graph, name: str, x: str, covered: set[int]) -> bool:
    """Whether ``name`` is ``x^3``: ``Pow(x, 3)`` or a product of three ``x``."""
    power = _binary(g, name, "Pow", covered)
    if power is not None:
        return power[0] == x and _near(g.scalar(power[1]), 3.0)
    factors, scale = _product(g, name, covered)
    return factors == [x, x, x] and scale == 1.0


def _erf_gelu(g: _Graph, gate: str, x: str, covered: set[int]) -> bool:
    """Whether ``gate`` is ``1 + erf(x / sqrt(2))``."""
    erf = _plus(g, gate, 1.0, covered)
    inner = _unary(g, erf, "Erf", covered) if erf is not None else None
    if inner is None:
        return False
    divided = _binary(g, inner, "Div", covered)
    if divided is not None:
        return divided[0] == x and _near(g.scalar(divided[1]), math.sqrt(2.0))
    return _times(g, inner, math.sqrt(0.5), covered) == x


def _tanh_gelu(g: _Graph, gate: str, x: str, covered: set[int]) -> bool:
    """Whether ``gate`` is ``1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))``."""
    tanh = _plus(g, gate, 1.0, covered)
    scaled = _unary(g, tanh, "Tanh", covered) if tanh is not None else None
    inner = _times(g, scaled, math.sqrt(2.0 / math.pi), covered) if scaled else None
    operands = _binary(g, inner, "Add", covered) if inner is not None else None
    if operands is None:
        return False
    for lhs, rhs in (operands, operands[::-1]):
        if lhs != x:
            continue
        trial = set(covered)
        cube = _times(g, rhs, 0.044715, trial)
        if cube is not None and _is_cube(g, cube, x, trial):
            covered |= trial
            return True
    return False


def _hardswish(g: _Graph, gate: str, x: str, scale: float, covered: set[int]) -> bool:
    """Whether ``x * gate * scale`` is hard swish: ``gate`` is ``clip(x + 3, 0, 6)``
    with scale 1/6, or ``HardSigmoid(x, alpha=1/6, beta=0.5)`` with scale 1."""
    found = g.node(gate, "Clip", "HardSigmoid")
    if found is None:
        return False
    index, node = found
    covered.add(index)
    if node.op_type == "HardSigmoid":
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        return (
            _near(scale, 1.0)
            and list(node.input) == [x]
            and set(attrs) <= {"alpha", "beta"}
            and _near(float(attrs.get("alpha", 0.2)), 1.0 / 6.0)
            and _near(float(attrs.get("beta", 0.5)), 0.5)
        )
    if node.attribute or len(node.input) != 3 or not _near(scale, 1.0 / 6.0):
        return False
    low, high = g.scalar(node.input[1]), g.scalar(node.input[2])
    return low == 0.0 and _near(high, 6.0) and _plus(g, node.input[0], 3.0, covered) == x


def _match(g: _Graph, index: int) -> Match | None:
    root = g.nodes[index]
    if root.op_type not in ("Mul", "Div") or root.domain not in ("", "ai.onnx"):
        return None
    covered: set[int] = set()
    factors, scale = _product(g, root.output[0], covered)
    if len(factors) != 2:
        return None
    for x, gate in (factors, factors[::-1]):
        for op, approximate in (("gelu", "none"), ("gelu", "tanh"), ("hardswish", "")):
            trial = set(covered)
            if op == "hardswish":
                found = _hardswish(g, gate, x, scale, trial)
            else:
                gelu = _erf_gelu if approximate == "none" else _tanh_gelu
                found = _near(scale, 0.5) and gelu(g, gate, x, trial)
            if found and all(g.private(i, trial) for i in trial if i != index):
                return Match(op, approximate, x, index, frozenset(trial))
    return None


def find_patterns(graph: GraphProto, initializers: Mapping[str, np.ndarray]) -> dict[int, Match]:
    """The recognised decompositions of ``graph``, by the index of every node they
    cover; outermost first, so a larger product is tried before a part of it."""
    g = _Graph(graph, initializers)
    found: dict[int, Match] = {}
    for index in reversed(range(len(g.nodes))):
        if index in found:
            continue
        match = _match(g, index)
        if match is not None and not any(i in found for i in match.covered):
            found.update(dict.fromkeys(match.covered, match))
    return found
