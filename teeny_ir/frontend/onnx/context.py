"""The ONNX import facet and what a handler is given: `ONNX_RULES`, `onnx_op`, `Node`.

A handler is ``rule(node: Node) -> list[Value]``, registered with
``@onnx_op("Conv", since=11)`` and looked up by the node's op type and the opset
of its domain. A value is a graph tensor (an ``SSAValue`` built with the
importer's `GraphBuilder`) or a constant folded at import time (a numpy array;
shape values that depend on the dynamic batch hold `BATCH` in an object array).
A handler reads its attributes through `Node.attrs`, which refuses any attribute
it does not name, and refuses what it cannot map with `Node.refuse`: a
`DiagnosticError` located at the node.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
from onnx import AttributeProto, NodeProto, helper, numpy_helper
from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType
from xdsl.ir import SSAValue

from dialects.graph.constant import MAX_CONSTANT_ELEMENTS
from teeny_ir.core.diagnostics import DiagnosticError, SourceLoc
from teeny_ir.core.facets import Facet, modules_of

if TYPE_CHECKING:
    from teeny_ir.frontend.graph_builder import GraphBuilder


class _Batch:
    """The dynamic batch size in a folded shape value (printed ``B``)."""

    def __repr__(self) -> str:
        return "B"


BATCH = _Batch()
"""The dynamic batch in a folded shape value (an entry of an object array)."""

Value: TypeAlias = SSAValue | np.ndarray
"""An ONNX value during import: a graph tensor, or a constant folded with numpy."""

OnnxRule = Callable[["Node"], list[Value]]

ONNX_RULES: Facet[OnnxRule] = Facet(
    "ONNX import",
    homes=lambda: modules_of(
        __package__, skip=("context", "importer", "patterns", "conformance", "versions")
    ),
)
"""ONNX op type -> handler, versioned by the opset the handler's form appeared in."""
onnx_op = ONNX_RULES.register


@dataclass(frozen=True)
class NodeLoc(SourceLoc):
    """A node (or input, initializer) of an ONNX file, printed
    ``model.onnx:node 12 'Conv_3'``; the file alone when ``node`` is empty."""

    node: str = ""

    def __str__(self) -> str:
        return f"{self.filename}:{self.node}" if self.node else self.filename


def node_loc(filename: str, index: int, proto: NodeProto) -> NodeLoc:
    """Where messages about node ``index`` point: its name, or its index when unnamed."""
    where = f"node {index} '{proto.name}'" if proto.name else f"node {index}"
    return NodeLoc(filename, 0, 0, where)


def dims(value: SSAValue) -> tuple[int, ...]:
    """The shape of a graph tensor (-1, `DYNAMIC_INDEX`, for the dynamic batch)."""
    type_ = value.type
    assert isinstance(type_, TensorType)
    return tuple(type_.get_shape())


def is_dynamic(value: SSAValue) -> bool:
    """Whether a graph tensor has the dynamic batch (dimension 0)."""
    shape = dims(value)
    return bool(shape) and shape[0] == DYNAMIC_INDEX


def has_batch(array: np.ndarray) -> bool:
    """Whether a folded value depends on the dynamic batch."""
    return array.dtype == object and any(entry is BATCH for entry in array.flat)


def tidy(array: object) -> np.ndarray:
    """A folded result as an array; an object array free of `BATCH` as int64
    (what numpy folding expects)."""
    array = np.asarray(array)
    if array.dtype == object and not has_batch(array):
        return np.array(array.tolist(), dtype=np.int64).reshape(array.shape)
    return array


class Node:
    """One ONNX node being imported: its inputs, attributes, the builder, refusals."""

    def __init__(
        self,
        proto: NodeProto,
        location: NodeLoc,
        opset: int,
        inputs: list[Value | None],
        builder: GraphBuilder,
        weight: Callable[[str, np.ndarray, bool], SSAValue | None],
    ) -> None:
        """``weight(name, array, large)`` is the importer's `graph.param` for an
        initializer (or, when ``large``, for any big folded constant), else None."""
        self.proto = proto
        self.op_type = proto.op_type
        self.location = location
        self.opset = opset
        self.inputs = inputs
        self.b = builder
        self._weight = weight
        self.attrs_read = False

    @property
    def num_outputs(self) -> int:
        """How many outputs the node names (trailing optional ones left out)."""
        names = list(self.proto.output)
        while names and not names[-1]:
            names.pop()
        return len(names)

    def refuse(self, message: str) -> DiagnosticError:
        """The located error for what this node asks that the importer cannot do."""
        return DiagnosticError.single(f"{self.op_type}: {message}", self.location)

    def attrs(self, **defaults: Any) -> dict[str, Any]:
        """The node's attributes by name, ``defaults`` for those absent; an
        attribute not among ``defaults`` is refused (never ignored)."""
        self.attrs_read = True
        values = dict(defaults)
        for attribute in self.proto.attribute:
            if attribute.name not in defaults:
                raise self.refuse(f"unsupported attribute '{attribute.name}'")
            if attribute.type == AttributeProto.TENSOR:
                values[attribute.name] = numpy_helper.to_array(attribute.t)
            elif attribute.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS):
                raise self.refuse(f"unsupported subgraph attribute '{attribute.name}'")
            else:
                value = helper.get_attribute_value(attribute)
                if isinstance(value, bytes):
                    value = value.decode("utf-8")
                elif isinstance(value, list):
                    value = [v.decode("utf-8") if isinstance(v, bytes) else v for v in value]
                values[attribute.name] = value
        return values

    def has_input(self, index: int) -> bool:
        """Whether optional input ``index`` is given."""
        return index < len(self.inputs) and self.inputs[index] is not None

    def value(self, index: int) -> Value:
        """Input ``index`` as it is (tensor or folded constant); refused when absent."""
        value = self.inputs[index] if index < len(self.inputs) else None
        if value is None:
            raise self.refuse(f"missing input {index}")
        return value

    def all_constant(self) -> bool:
        """Whether every given input is a folded constant."""
        return all(v is None or isinstance(v, np.ndarray) for v in self.inputs)

    def const(self, index: int, what: str) -> np.ndarray:
        """Input ``index`` as a folded constant (shapes, axes, sizes), or refused."""
        value = self.value(index)
        if not isinstance(value, np.ndarray):
            raise self.refuse(
                f"input {index} ({what}) must be a constant known at import time, "
                "not a tensor computed by the graph"
            )
        return value

    def ints(self, index: int, what: str) -> list[int]:
        """Input ``index`` as a constant list of integers, free of the dynamic batch."""
        array = self.const(index, what)
        if has_batch(array):
            raise self.refuse(f"input {index} ({what}) depends on the dynamic batch")
        return [int(v) for v in np.asarray(array).reshape(-1)]

    def tensor(self, index: int) -> SSAValue:
        """Input ``index`` as a graph tensor (constants become `graph.constant` or,
        when large, a `graph.param`)."""
        value = self.value(index)
        if isinstance(value, SSAValue):
            return value
        return self.materialise(value, f"{self.proto.input[index]}")

    def materialise(self, array: np.ndarray, name: str) -> SSAValue:
        """A folded float constant as a graph tensor."""
        if has_batch(array) or array.dtype.kind not in "fiu":
            raise self.refuse(f"value '{name}' depends on the dynamic batch: it cannot be data")
        if array.dtype.kind != "f":
            raise self.refuse(
                f"value '{name}' is an integer tensor used as data: graph ops take f32"
            )
        param = self._weight(name, array, False)
        if param is not None:
            return param
        array = array.astype(np.float32)
        if array.ndim == 0:
            array = array.reshape(1)  # broadcasts as the scalar it was
        if array.size <= MAX_CONSTANT_ELEMENTS:
            return self.b.constant([float(v) for v in array.reshape(-1)], list(array.shape))
        large = self._weight(name, array, True)
        assert large is not None
        return large
