"""`import_onnx`: an ONNX model as a verified graph-dialect module and its weights.

The model is checked (`onnx.checker`) and its shapes inferred
(`onnx.shape_inference`) first. Graph inputs without an initializer become the
arguments of ``@forward`` in order (a symbolic dimension 0 is the dynamic batch
``?``), initializers used as data become `graph.param` ops named exactly by the
initializer, and each node is served by its handler in `ONNX_RULES` for the
opset of its domain. Values that depend only on constants and shapes are folded
with numpy as they are met, the batch kept symbolic (`BATCH`); whatever is left
unused by the results (a folded shape subgraph, the sigmoid of a recognised
SiLU) is dropped from the module. Anything that cannot be mapped or folded is
refused with one located `DiagnosticError` naming the node and what it asked.
"""

from __future__ import annotations

import os

import numpy as np
import onnx

# protobuf ships no type information (and no stub package is pinned).
from google.protobuf.message import DecodeError  # type: ignore[import-untyped]
from onnx import TensorProto, numpy_helper
from xdsl.dialects.func import FuncOp
from xdsl.ir import SSAValue

from dialects.graph.param import ParamOp
from teeny_ir.core.diagnostics import DiagnosticError
from teeny_ir.core.facets import OptOut
from teeny_ir.frontend.graph_builder import GraphBuilder
from teeny_ir.frontend.imported import ImportedModel
from teeny_ir.frontend.onnx.context import (
    ONNX_RULES,
    Node,
    NodeLoc,
    OnnxRule,
    Value,
    node_loc,
)
from teeny_ir.frontend.onnx.patterns import Match, find_patterns
from teeny_ir.frontend.onnx.versions import first_change, schema_version

MIN_OPSET = 7
"""The oldest default-domain opset a model may declare (each node's op version
is then checked against its handler: `versions`)."""
MAX_OPSET = onnx.defs.onnx_opset_version()
"""The newest default-domain opset a model may declare: the newest onnx knows."""


def _error(message: str, filename: str, where: str = "") -> DiagnosticError:
    return DiagnosticError.single(message, NodeLoc(filename, 0, 0, where))


def _load(model: str | os.PathLike[str] | onnx.ModelProto) -> tuple[onnx.ModelProto, str]:
    if isinstance(model, onnx.ModelProto):
        return model, "<model>"
    filename = os.fspath(model)
    if os.path.isdir(filename):
        raise _error("is a directory, not an ONNX model", filename)
    try:
        return onnx.load(filename), filename
    except FileNotFoundError:
        raise _error("no such file", filename) from None
    except OSError as err:
        raise _error(f"cannot read it: {err.strerror or err}", filename) from None
    except (DecodeError, ValueError, RuntimeError) as err:
        reason = " ".join(str(err).split()) or type(err).__name__
        raise _error(f"not an ONNX model ({reason})", filename) from None


def import_onnx(model: str | os.PathLike[str] | onnx.ModelProto) -> ImportedModel:
    """Import an ONNX model (a path or a ``ModelProto``) as a verified module
    with ``@forward`` and its weights; refused in one located `DiagnosticError`."""
    proto, filename = _load(model)
    try:
        onnx.checker.check_model(proto)
    except (onnx.checker.ValidationError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise _error(f"not a valid ONNX model: {first}", filename) from None
    try:
        proto = onnx.shape_inference.infer_shapes(proto, check_type=True, strict_mode=True)
    except (onnx.shape_inference.InferenceError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise _error(f"shape inference failed: {first}", filename) from None
    return _Importer(proto, filename).run()


class _Importer:
    def __init__(self, model: onnx.ModelProto, filename: str) -> None:
        self.model = model
        self.filename = filename
        self.b = GraphBuilder()
        self.opsets = {
            ("" if entry.domain == "ai.onnx" else entry.domain): entry.version
            for entry in model.opset_import
        }
        self.values: dict[str, Value] = {}
        # Which node computed each value (index, proto): where a refusal of it points.
        self.producers: dict[str, tuple[int, onnx.NodeProto]] = {}
        self.initializers: dict[str, np.ndarray] = {}
        # Initializer arrays by identity: an Identity of a weight is still that weight.
        self.initializer_of: dict[int, str] = {}
        self.params: dict[str, SSAValue] = {}
        self.weights: dict[str, np.ndarray] = {}

    def run(self) -> ImportedModel:
        graph = self.model.graph
        opset = self.opsets.get("")
        if opset is None:
            # Only other domains (ai.onnx.ml, training): refused at their first node.
            for index, proto in enumerate(graph.node):
                self._node(index, proto)
        if opset is None or not MIN_OPSET <= opset <= MAX_OPSET:
            message = (
                f"default-domain opset {opset} is not supported: the importer knows "
                f"opsets {MIN_OPSET} to {MAX_OPSET}"
            )
            if graph.node:  # located at the first node, naming its op
                first = graph.node[0]
                raise DiagnosticError.single(
                    f"{first.op_type}: {message}", node_loc(self.filename, 0, first)
                )
            raise _error(message, self.filename)
        if graph.sparse_initializer:
            raise _error("sparse initializers are not supported", self.filename)
        for tensor in graph.initializer:
            self.initializers[tensor.name] = numpy_helper.to_array(tensor)
            self.values[tensor.name] = self.initializers[tensor.name]
            self.initializer_of[id(self.initializers[tensor.name])] = tensor.name
        for value_info in graph.input:
            if value_info.name not in self.initializers:
                self.values[value_info.name] = self._input(value_info)
        patterns = find_patterns(graph, self.initializers)
        for index, proto in enumerate(graph.node):
            match = patterns.get(index)
            if match is not None and not isinstance(self.values.get(match.input), SSAValue):
                # A constant input (defined before any node of the match): it folds
                # node by node instead.
                for covered in match.covered:
                    patterns.pop(covered, None)
                match = None
            if match is None:
                self._node(index, proto)
            elif match.root == index:
                self._pattern(proto, match)
        outputs = []
        for value_info in graph.output:
            value = self.values[value_info.name]
            if isinstance(value, np.ndarray):
                value = self._data(value, value_info.name)
            outputs.append(value)
        self.b.output(*outputs)
        module = self.b.build()
        forward = next(op for op in module.ops if isinstance(op, FuncOp))
        _drop_unused(forward)
        used = {op.param_name.data for op in forward.walk() if isinstance(op, ParamOp)}
        weights = {name: array for name, array in self.weights.items() if name in used}
        return ImportedModel(module, weights)

    def _input(self, value_info: onnx.ValueInfoProto) -> SSAValue:
        where = f"input '{value_info.name}'"
        readers = [n for n in self.model.graph.node if value_info.name in n.input]
        if readers:  # the op that reads it, named as every refusal names one
            where += f" of {readers[0].op_type}"
        type_ = value_info.type
        if not type_.HasField("tensor_type"):
            raise _error("expected a tensor input", self.filename, where)
        if type_.tensor_type.elem_type != TensorProto.FLOAT:
            name = TensorProto.DataType.Name(type_.tensor_type.elem_type)
            raise _error(
                f"unsupported element type {name}: inputs must be FLOAT", self.filename, where
            )
        if not type_.tensor_type.HasField("shape"):
            raise _error("the input has no shape", self.filename, where)
        shape: list[int | None] = []
        for index, dim in enumerate(type_.tensor_type.shape.dim):
            if dim.HasField("dim_value") and dim.dim_value == 0:
                raise _error(
                    f"dimension {index} has size 0: empty tensors are not supported",
                    self.filename,
                    where,
                )
            if dim.HasField("dim_value") and dim.dim_value > 0:
                shape.append(dim.dim_value)
            elif index == 0:
                shape.append(None)  # a dim_param or unknown batch: the dynamic batch
            else:
                raise _error(
                    f"dimension {index} is symbolic: only dimension 0 (the batch) may be",
                    self.filename,
                    where,
                )
        if not shape:
            raise _error("scalar inputs are not supported", self.filename, where)
        name = value_info.name if SSAValue.is_valid_name(value_info.name) else None
        try:
            return self.b.input(shape, name=name)
        except DiagnosticError as err:
            raise _error(_message(err), self.filename, where) from None

    def _data(self, array: np.ndarray, name: str) -> SSAValue:
        """A folded graph output as data, refused at the node that computed it
        (or at the output, for an initializer returned as it is)."""
        producer = self.producers.get(name)
        if producer is None:
            proto, loc = (
                onnx.NodeProto(op_type="Constant"),
                NodeLoc(self.filename, 0, 0, f"output '{name}'"),
            )
        else:
            proto, loc = producer[1], node_loc(self.filename, *producer)
        return Node(proto, loc, 0, [], self.b, self._weight).materialise(array, name)

    def _param(self, name: str, array: np.ndarray) -> SSAValue:
        found = self.params.get(name)
        if found is None:
            if array.dtype != np.float32:
                raise _error(
                    f"initializer '{name}' of type {array.dtype} used as data: graph ops take f32",
                    self.filename,
                    f"initializer '{name}'",
                )
            found = self.params[name] = self.b.param(name, list(array.shape) or [1])
            self.weights[name] = np.ascontiguousarray(array.reshape(array.shape or (1,)))
        return found

    def _node(self, index: int, proto: onnx.NodeProto) -> None:
        location = node_loc(self.filename, index, proto)
        domain = "" if proto.domain == "ai.onnx" else proto.domain
        if domain not in self.opsets:
            raise DiagnosticError.single(
                f"{proto.op_type}: domain '{domain}' is not imported by the model", location
            )
        if domain != "":
            raise DiagnosticError.single(
                f"{proto.op_type}: ops of domain '{domain}' are not supported", location
            )
        opset = self.opsets[domain]
        rule = self._rule(proto.op_type, domain, opset, location)
        inputs = [self.values[name] if name else None for name in proto.input]
        node = Node(proto, location, opset, inputs, self.b, self._weight)
        try:
            results = rule(node)
        except DiagnosticError as err:
            where = err.diagnostics[0].location if err.diagnostics else None
            if isinstance(where, NodeLoc) and not where.node.startswith("initializer "):
                raise
            # A builder's error, or an initializer the node reads: refused at the node.
            raise node.refuse(_message(err)) from None
        except (ValueError, TypeError, IndexError, ArithmeticError) as err:
            # numpy refusing a fold (arithmetic on the symbolic batch, a bad index).
            raise node.refuse(f"cannot fold this node: {' '.join(str(err).split())}") from None
        if proto.attribute and not node.attrs_read:
            raise node.refuse(f"unsupported attribute '{proto.attribute[0].name}'")
        if len(results) < node.num_outputs:
            raise node.refuse(f"output {len(results)} is not supported")
        for name, value in zip(proto.output, results, strict=False):
            if name:
                self.values[name] = value
                self.producers[name] = (index, proto)

    def _rule(self, op_type: str, domain: str, opset: int, location: NodeLoc) -> OnnxRule:
        """The handler of ``op_type`` at ``opset``, or its refusal at ``location``."""
        found = handler(op_type, opset, domain)
        if isinstance(found, str):
            raise DiagnosticError.single(f"{op_type}: {found}", location)
        return found

    def _pattern(self, proto: onnx.NodeProto, match: Match) -> None:
        """The one graph op of a recognised decomposition (`patterns`), at its root."""
        x = self.values[match.input]
        assert isinstance(x, SSAValue)
        gelu = match.op == "gelu"
        self.values[proto.output[0]] = (
            self.b.gelu(x, match.approximate) if gelu else self.b.hardswish(x)
        )

    def _weight(self, name: str, array: np.ndarray, large: bool) -> SSAValue | None:
        """The `graph.param` of initializer ``name`` (``array`` is its value), or
        when ``large`` a new one holding a big folded constant; else None."""
        initializer = self.initializer_of.get(id(array))
        if initializer is not None:
            return self._param(initializer, array)
        viewed = next(
            (
                known
                for known, value in self.initializers.items()
                if value.size == array.size and np.shares_memory(value, array)
            ),
            None,
        )
        if viewed is not None:
            # An initializer seen in another shape (a 1-D convolution's weight as
            # [O, C, 1, k], a folded Reshape of a weight): a param of that shape,
            # named by the initializer (or, once that name has a param in another
            # shape, a name of its own).
            named = viewed
            if named in self.params and tuple(self.weights[named].shape) != array.shape:
                named += ".as_" + "x".join(map(str, array.shape))
            self.initializer_of[id(array)] = named
            return self._param(named, array)
        if not large:
            return None
        unique = name
        while unique in self.initializers:
            unique += ".folded"
        self.initializers[unique] = array
        self.initializer_of[id(array)] = unique
        return self._param(unique, array)


def handler(op_type: str, opset: int, domain: str = "") -> OnnxRule | str:
    """The handler serving ``op_type`` in a model of ``opset`` (of ``domain``), or
    why none does: the op's version at that opset (`versions.schema_version`)
    picks the handler, which must know every signature change up to it."""
    version = schema_version(op_type, domain, opset)
    if version is None:
        return f"not an op of opset {opset}"
    rule = ONNX_RULES.lookup(op_type, version=version)
    if isinstance(rule, OptOut):
        return rule.reason
    if rule is None:
        if ONNX_RULES.candidates(op_type):
            return f"unsupported at opset {opset} (version {version} of the op)"
        return "unsupported op"
    since = ONNX_RULES.since(op_type, version)
    changed = None if since is None else first_change(op_type, domain, since, version)
    if changed is not None:
        return (
            f"unsupported at opset {opset}: version {changed} of the op changed its inputs "
            f"or attributes (the handler is for version {since})"
        )
    return rule


def _message(err: DiagnosticError) -> str:
    """A builder's message without its Python-side location."""
    text = err.diagnostics[0].message if err.diagnostics else str(err)
    for suffix in (" (at the top level)",):
        text = text.removesuffix(suffix)
    return text


def _drop_unused(forward: FuncOp) -> None:
    """Erase ops whose results nothing uses (graph ops are pure), last first."""
    for op in reversed(list(forward.body.block.ops)):
        if op.results and all(not result.uses for result in op.results):
            forward.body.block.erase_op(op)
