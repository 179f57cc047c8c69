"""`import_exported` and `import_module`: a torch.export program as a verified
graph-dialect module and its weights.

The program's graph is walked as exported (no Core-ATen decomposition, so
``silu`` stays ``graph.silu``): the user inputs become the arguments of
``@forward`` in order (a symbolic dimension 0 is the dynamic batch ``?``), the
parameters, buffers and lifted constants of ``graph_signature.input_specs``
become `graph.param` ops named by their state-dict key, and each
``call_function`` node is served by its handler in `TORCH_RULES`. An op without
a handler that PyTorch can decompose (``torch._decomp``) is decomposed first,
that op only (`ExportedProgram.run_decompositions` with a one-op table). A node
whose inputs are all known at import time is folded by running it in PyTorch;
sizes are the numbers the export recorded (the batch kept symbolic). A program
that updates buffers in place (a module exported in ``train()``) is
functionalised first; its BN running-statistic updates become results after the
user outputs, each named ``{teeny.running = "<buffer>"}``. Whatever the results
do not use is dropped. Anything else is refused with one located
`DiagnosticError` naming the op, the module path and the node (`TorchLoc`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, StringAttr, UnitAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import SSAValue

from dialects.graph.norm import BatchNormOp
from dialects.graph.param import ParamOp
from teeny_ir.core.diagnostics import DiagnosticError
from teeny_ir.core.facets import OptOut
from teeny_ir.frontend.graph_builder import GraphBuilder
from teeny_ir.frontend.imported import ImportedModel
from teeny_ir.frontend.torch.context import (
    LIFTED,
    TORCH_RULES,
    Call,
    IntegerBuffer,
    Sym,
    TorchLoc,
    Value,
    is_constant,
    node_loc,
    op_name,
    rule_key,
)

RUNNING_ATTR = "teeny.running"
"""The result attribute naming the running statistic a result updates (the
name ``passes/train_mode.py`` gives it; the frontend layer cannot import it)."""

MAX_DECOMPOSITION_ROUNDS = 4
"""How many times ops without a handler are decomposed (a decomposition may
write ops that need one of their own)."""


def _error(message: str, filename: str, where: str = "") -> DiagnosticError:
    return DiagnosticError.single(message, TorchLoc(filename, 0, 0, node=where))


def load(path: str | os.PathLike[str]) -> ExportedProgram:
    """A ``torch.export.save`` file, or one located line saying why it is not one."""
    filename = os.fspath(path)
    if os.path.isdir(filename):
        raise _error("is a directory, not a torch.export program", filename)
    if not os.path.exists(filename):
        raise _error("no such file", filename)
    try:
        with _quiet("torch.export"):  # it logs the whole traceback before raising
            return torch.export.load(filename)
    except OSError as err:
        raise _error(f"cannot read it: {err.strerror or err}", filename) from None
    except Exception as err:  # noqa: BLE001 - zip, pickle and schema errors alike
        reason = " ".join(str(err).split()) or type(err).__name__
        raise _error(f"not a torch.export program ({reason})", filename) from None


@contextlib.contextmanager
def _quiet(logger: str) -> Iterator[None]:
    log = logging.getLogger(logger)
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(level)


def import_module(
    module: torch.nn.Module, example_inputs: Sequence[torch.Tensor], dynamic_batch: bool = True
) -> ImportedModel:
    """Export ``module`` on ``example_inputs`` (``torch.export.export``,
    ``strict=False``) and import it (`import_exported`).

    With ``dynamic_batch``, dimension 0 of every input is one ``torch.export.Dim``
    (torch specialises a size of 1, so a batch-1 example is traced at batch 2, the
    example repeated). When the model specialises the batch anyway (a constraint
    violation), a `UserWarning` says so in one line and the static batch of the
    examples is imported."""
    inputs = tuple(example_inputs)
    filename = f"<{type(module).__name__}>"
    for index, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor) or x.dim() == 0:
            raise _error(f"example input {index} is not a tensor with a batch", filename)
    if dynamic_batch and inputs:
        batch = torch.export.Dim("batch")
        traced = tuple(torch.cat([x, x]) if x.shape[0] == 1 else x for x in inputs)
        # Keyed by tensor, which fits any forward signature (``*args`` too).
        shapes = torch.export.ShapesCollection()  # type: ignore[no-untyped-call]  # untyped
        for x in traced:
            shapes[x] = {0: batch}
        try:
            program = _export(module, traced, shapes.dynamic_shapes(module, traced), filename)  # type: ignore[no-untyped-call]
        except _Specialised:
            warnings.warn(
                f"{filename}: the model specialises the batch (torch.export: constraint "
                f"violation on dimension 0): imported with the static batch "
                f"{inputs[0].shape[0]}",
                UserWarning,
                stacklevel=2,
            )
        else:
            return import_exported(program, filename=filename)
    return import_exported(_export(module, inputs, None, filename), filename=filename)


class _Specialised(Exception):
    """torch.export found that the model fixes a size marked dynamic."""


def _export(
    module: torch.nn.Module,
    inputs: tuple[torch.Tensor, ...],
    dynamic_shapes: Any,
    filename: str,
) -> ExportedProgram:
    from torch._dynamo.exc import UserError, UserErrorType

    try:
        return torch.export.export(module, inputs, dynamic_shapes=dynamic_shapes, strict=False)
    except UserError as err:
        if err.error_type == UserErrorType.CONSTRAINT_VIOLATION and dynamic_shapes:
            raise _Specialised from None
        raise _error(f"torch.export failed: {_first_line(err)}", filename) from None
    except Exception as err:  # noqa: BLE001 - any tracing failure is the model's
        raise _error(f"torch.export failed: {_first_line(err)}", filename) from None


def _first_line(err: BaseException) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return lines[0] if lines else type(err).__name__


def import_exported(program: ExportedProgram, *, filename: str = "<exported>") -> ImportedModel:
    """Import a torch.export program as a verified module with ``@forward`` and
    its weights (state-dict key -> float32 array); refused in one located
    `DiagnosticError`. ``filename`` names the program in messages."""
    if not isinstance(program, ExportedProgram):
        raise _error(
            f"expected a torch.export.ExportedProgram, not {type(program).__name__}", filename
        )
    return _Importer(_decompose_unhandled(_functional(program)), filename).run()


def _functional(program: ExportedProgram) -> ExportedProgram:
    """``program`` with its in-place updates as results: a module exported in
    ``train()`` updates its BN running statistics inside ``aten.batch_norm`` and
    counts batches with ``add_``; functionalisation (``run_decompositions`` with
    an empty table, so no op is decomposed) makes them the training
    ``_native_batch_norm_legit_functional`` and buffer-mutation outputs. Unchanged
    when nothing mutates."""
    for node in program.graph.nodes:
        target = node.target
        if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
            continue
        training_bn = target is torch.ops.aten.batch_norm.default and bool(
            node.args[5] if len(node.args) > 5 else node.kwargs.get("training")
        )
        if training_bn or target._schema.is_mutable:
            return _run_decompositions(program, {})
    return program


def _rule(target: object) -> object:
    return TORCH_RULES.lookup(rule_key(target))


def _decompose_unhandled(program: ExportedProgram) -> ExportedProgram:
    """``program`` with the ops that compute data but have no handler decomposed
    by PyTorch's own ATen decompositions (`torch.export.default_decompositions`),
    those ops only; unchanged when that leaves an op without a handler, so the
    refusal names the op the user wrote. Ops on constants only are left to fold."""
    table = torch.export.default_decompositions()
    decomposed = program
    for _ in range(MAX_DECOMPOSITION_ROUNDS):
        wanted = {op: table[op] for op in _unhandled(decomposed) if op in table}
        if not wanted:
            break
        decomposed = _run_decompositions(decomposed, wanted)
    return program if _unhandled(decomposed) else decomposed


def _run_decompositions(program: ExportedProgram, table: dict[Any, Any]) -> ExportedProgram:
    with warnings.catch_warnings():
        # PyTorch's own deprecation inside its copy of the call spec; nothing the user can change.
        warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
        result: ExportedProgram = program.run_decompositions(table)
    return result


def _unhandled(program: ExportedProgram) -> set[torch._ops.OpOverload]:
    """The ATen ops of ``program`` without a handler that compute data (read a
    user input or a floating-point parameter, directly or not)."""
    data_kinds = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)
    specs = {
        spec.arg.name: spec
        for spec in program.graph_signature.input_specs
        if hasattr(spec.arg, "name")
    }
    data: set[torch.fx.Node] = set()
    found: set[torch._ops.OpOverload] = set()
    for node in program.graph.nodes:
        if node.op == "placeholder":
            spec = specs.get(node.name)
            val = node.meta.get("val")
            if (
                spec is None
                or spec.kind == InputKind.USER_INPUT
                or (
                    spec.kind in data_kinds
                    and isinstance(val, torch.Tensor)
                    and val.is_floating_point()
                )
            ):
                data.add(node)
        elif node.op == "call_function" and any(n in data for n in node.all_input_nodes):
            data.add(node)
            if isinstance(node.target, torch._ops.OpOverload) and _rule(node.target) is None:
                found.add(node.target)
    return found


class _Importer:
    def __init__(self, program: ExportedProgram, filename: str) -> None:
        self.program = program
        self.filename = filename
        self.b = GraphBuilder()
        self.values: dict[torch.fx.Node, Value] = {}
        self.params: dict[str, SSAValue] = {}
        self.weights: dict[str, np.ndarray] = {}
        # Lifted constants by the identity of their array: (name, array).
        self.lifted: dict[int, tuple[str, np.ndarray]] = {}
        self.batch = ""
        self.running: list[tuple[SSAValue, str]] = []
        """Buffer updates kept as results: (value, buffer name), in output order."""

    def run(self) -> ImportedModel:
        signature = self.program.graph_signature
        specs = {spec.arg.name: spec for spec in signature.input_specs if hasattr(spec.arg, "name")}
        outputs: list[SSAValue] = []
        for node in self.program.graph.nodes:
            if node.op == "placeholder":
                self.values[node] = self._placeholder(node, specs.get(node.name))
            elif node.op == "call_function":
                self._call(node)
            elif node.op == "output":
                outputs = self._outputs(node)
            else:
                raise DiagnosticError.single(
                    f"unsupported graph node kind '{node.op}' (control flow or a submodule)",
                    node_loc(self.filename, node),
                )
        self.b.output(*outputs, *(value for value, _ in self.running))
        module = self.b.build()
        forward = next(op for op in module.ops if isinstance(op, FuncOp))
        if self.running:
            plain = [DictionaryAttr({}) for _ in outputs]
            named = [DictionaryAttr({RUNNING_ATTR: StringAttr(n)}) for _, n in self.running]
            forward.res_attrs = ArrayAttr([*plain, *named])
        _drop_unused(forward)
        used = {op.param_name.data for op in forward.walk() if isinstance(op, ParamOp)}
        weights = {name: array for name, array in self.weights.items() if name in used}
        return ImportedModel(module, weights)

    # Inputs and outputs.

    def _placeholder(self, node: torch.fx.Node, spec: Any) -> Value:
        loc = node_loc(self.filename, node)
        kind = spec.kind if spec is not None else InputKind.USER_INPUT
        if kind == InputKind.USER_INPUT:
            return self._user_input(node, loc)
        if kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            name = str(spec.target)
            found = self.program.state_dict.get(name)
            if found is None:
                found = self.program.constants.get(name)
            if not isinstance(found, torch.Tensor):
                raise DiagnosticError.single(f"no tensor for '{name}' in the program", loc)
            array = found.detach().cpu()
            if not array.is_floating_point():
                # Not data (BN's num_batches_tracked): it may feed a fold only.
                return IntegerBuffer(name, array.numpy().copy())
            if kind == InputKind.CONSTANT_TENSOR:
                # A lifted constant (ultralytics' cached anchors and strides): known
                # at import time, so folds may read it; a param of its own name
                # where it is data (`_folded_param` with `LIFTED`).
                constant = array.to(torch.float32).numpy().copy()
                self.lifted[id(constant)] = (name, constant)
                return constant
            # PyTorch trains neither buffers nor parameters without requires_grad
            # (the DFL's fixed projection): frozen, so training leaves them be.
            frozen = kind == InputKind.BUFFER or not found.requires_grad
            return self._param(name, array.to(torch.float32).numpy(), frozen=frozen)
        raise DiagnosticError.single(f"unsupported input kind {kind.name}", loc)

    def _user_input(self, node: torch.fx.Node, loc: TorchLoc) -> Value:
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            raise DiagnosticError.single(
                f"input '{node.name}' is not a tensor ({type(val).__name__})", loc
            )
        if val.dtype != torch.float32:
            raise DiagnosticError.single(
                f"input '{node.name}' has type {val.dtype}: inputs must be float32", loc
            )
        if val.dim() == 0:
            raise DiagnosticError.single("scalar inputs are not supported", loc)
        shape: list[int | None] = []
        for axis, size in enumerate(val.shape):
            if isinstance(size, int) or size.node.expr.is_number:
                if int(size) == 0:
                    raise DiagnosticError.single(
                        f"dimension {axis} of input '{node.name}' has size 0: empty tensors "
                        "are not supported",
                        loc,
                    )
                shape.append(int(size))
                continue
            symbol = str(size.node.expr)
            if axis != 0:
                raise DiagnosticError.single(
                    f"dimension {axis} of input '{node.name}' is symbolic ({symbol}): only "
                    "dimension 0 (the batch) may be",
                    loc,
                )
            if self.batch and symbol != self.batch:
                raise DiagnosticError.single(
                    f"input '{node.name}' has batch {symbol}, another than the first "
                    f"input's {self.batch}: the inputs must share one dynamic batch",
                    loc,
                )
            self.batch = symbol
            shape.append(None)
        name = node.name if SSAValue.is_valid_name(node.name) else None
        return self.b.input(shape, name=name)

    def _param(self, name: str, array: np.ndarray, frozen: bool = False) -> SSAValue:
        found = self.params.get(name)
        if found is None:
            found = self.params[name] = self.b.param(name, list(array.shape) or [1])
            self.weights[name] = np.ascontiguousarray(array.reshape(array.shape or (1,)))
            if frozen and isinstance(found.owner, ParamOp):
                found.owner.properties["frozen"] = UnitAttr()
        return found

    def _folded_param(self, name: str, array: np.ndarray) -> SSAValue | None:
        """A `graph.param` holding a large folded constant, under a fresh name;
        asked with `LIFTED`, the param of a lifted constant, or None."""
        if name == LIFTED:
            found = self.lifted.get(id(array))
            return None if found is None or found[1] is not array else self._param(*found)
        unique = name
        while unique in self.params or unique in self.program.state_dict:
            unique += ".folded"
        return self._param(unique, np.asarray(array, dtype=np.float32))

    def _outputs(self, node: torch.fx.Node) -> list[SSAValue]:
        loc = node_loc(self.filename, node)
        specs = self.program.graph_signature.output_specs
        results = node.args[0] if isinstance(node.args[0], (list, tuple)) else [node.args[0]]
        outputs = []
        for spec, result in zip(specs, results, strict=True):
            value = self.values.get(result) if isinstance(result, torch.fx.Node) else result
            if spec.kind == OutputKind.BUFFER_MUTATION:
                self._mutation(str(spec.target), value, result, loc)
                continue
            if spec.kind != OutputKind.USER_OUTPUT:
                raise DiagnosticError.single(
                    f"unsupported output kind {spec.kind.name}: only user outputs and "
                    "buffer updates (BN running statistics) are imported",
                    loc,
                )
            if isinstance(value, SSAValue):
                outputs.append(value)
                continue
            where = node_loc(self.filename, result) if isinstance(result, torch.fx.Node) else loc
            if isinstance(value, np.ndarray) and value.dtype.kind == "f":
                call = Call(node, where, [], {}, self.b, self._folded_param, self.batch)
                outputs.append(call.materialise(value, "output"))
                continue
            raise DiagnosticError.single(
                f"output '{spec.arg.name}' is not a float tensor the graph computes", where
            )
        if not outputs:
            raise DiagnosticError.single("the program returns no tensor", loc)
        return outputs

    def _mutation(self, buffer: str, value: Value, result: Any, loc: TorchLoc) -> None:
        """Keep a buffer update of a training export: a training batch norm's
        running statistic becomes a result after the user outputs, named by
        ``{teeny.running = buffer}`` (train-mode's convention); an integer counter
        (``num_batches_tracked``, which no graph op reads) is dropped."""
        if isinstance(value, IntegerBuffer) or (
            isinstance(value, np.ndarray) and value.dtype.kind != "f"
        ):
            return
        where = node_loc(self.filename, result) if isinstance(result, torch.fx.Node) else loc
        owner = value.owner if isinstance(value, SSAValue) else None
        if not isinstance(owner, BatchNormOp) or value not in owner.updated_running_stats:
            raise DiagnosticError.single(
                f"buffer '{buffer}' is updated by something other than a training batch "
                "norm's running statistics: only those buffer updates are imported",
                where,
            )
        self.running.append((value, buffer))

    # Nodes.

    def _value(self, arg: Any) -> Value:
        if isinstance(arg, torch.fx.Node):
            return self.values[arg]
        if isinstance(arg, (list, tuple)):
            return [self._value(a) for a in arg]
        return arg

    def _call(self, node: torch.fx.Node) -> None:
        loc = node_loc(self.filename, node)
        args = [self._value(a) for a in node.args]
        kwargs = {k: self._value(v) for k, v in node.kwargs.items()}
        call = Call(node, loc, args, kwargs, self.b, self._folded_param, self.batch)
        target = node.target
        if (
            isinstance(target, torch._ops.OpOverload)
            and is_constant(args)
            and is_constant(list(kwargs.values()))
            and torch.Tag.nondeterministic_seeded not in target.tags
        ):
            self.values[node] = _evaluate(call, target, args, kwargs)
            return
        found = _rule(target)
        if isinstance(found, OptOut):
            raise call.refuse(found.reason)
        if found is None:
            if not any(isinstance(v, SSAValue) for v in _flat([*args, *kwargs.values()])):
                raise call.refuse("depends on the dynamic batch: it cannot be folded")
            raise call.refuse("unsupported op")
        try:
            result = found(call)  # type: ignore[operator]
        except DiagnosticError as err:
            where = err.diagnostics[0].location if err.diagnostics else None
            if isinstance(where, TorchLoc):
                raise
            raise call.refuse(_message(err)) from None  # a builder's error, at the node
        self._check_types(call, result)
        self.values[node] = result

    def _check_types(self, call: Call, result: Value) -> None:
        """Refuse a graph tensor the export says is not float32 (an integer cast)."""
        val = call.node.meta.get("val")
        if isinstance(result, list):
            pairs = list(zip(result, val if isinstance(val, (list, tuple)) else [], strict=False))
        else:
            pairs = [(result, val)]
        for value, recorded in pairs:
            if (
                isinstance(value, SSAValue)
                and isinstance(recorded, torch.Tensor)
                and recorded.dtype != torch.float32
            ):
                raise call.refuse(f"a result of type {recorded.dtype}: graph ops compute f32")


def _flat(values: Sequence[Value]) -> Iterator[Value]:
    for value in values:
        if isinstance(value, (list, tuple)):
            yield from _flat(value)
        else:
            yield value


def _evaluate(
    call: Call, target: torch._ops.OpOverload, args: list[Value], kwargs: dict[str, Value]
) -> Value:
    """Fold a node whose inputs are all known, by running the op in PyTorch."""

    def to_torch(value: Value) -> Any:
        if isinstance(value, IntegerBuffer):
            value = value.array
        if isinstance(value, np.ndarray):
            return torch.from_numpy(value.copy())
        if isinstance(value, list):
            return [to_torch(v) for v in value]
        return value

    def to_numpy(value: Any) -> Value:
        if isinstance(value, torch.Tensor):
            return value.detach().cpu().numpy()
        if isinstance(value, (list, tuple)):
            return [to_numpy(v) for v in value]
        return value

    torch_kwargs = {k: to_torch(v) for k, v in kwargs.items()}
    if "device" in torch_kwargs:
        torch_kwargs["device"] = torch.device("cpu")  # folding runs here, whatever it named
    try:
        with torch.no_grad():
            return to_numpy(target(*[to_torch(a) for a in args], **torch_kwargs))
    except Exception as err:  # noqa: BLE001 - PyTorch refusing the fold
        raise call.refuse(f"cannot fold this node: {_first_line(err)}") from None


def _message(err: DiagnosticError) -> str:
    """A builder's message without its Python-side location."""
    text = err.diagnostics[0].message if err.diagnostics else str(err)
    return text.removesuffix(" (at the top level)")


def _drop_unused(forward: FuncOp) -> None:
    """Erase ops whose results nothing uses (graph ops are pure), last first."""
    for op in reversed(list(forward.body.block.ops)):
        if op.results and all(not result.uses for result in op.results):
            forward.body.block.erase_op(op)


__all__ = ["Sym", "import_exported", "import_module", "load", "op_name"]
