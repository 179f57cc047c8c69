"""The torch.export import facet and what a handler is given: `TORCH_RULES`,
`aten_op`, `Call`, `TorchLoc`.

Handlers are keyed by the ATen overload packet (``"aten.add"`` serves
``aten.add.Tensor`` and ``aten.add.Scalar``), because the overloads of one
packet name their arguments alike and a handler reads them by name
(`Call.arg`); `Call.overload` tells the forms apart where they differ. Python
functions in a graph are keyed by module and name (``"operator.getitem"``).

A handler is ``rule(call: Call) -> Value``. A value is a graph tensor (an
``SSAValue`` built with the importer's `GraphBuilder`), a constant folded at
import time (a numpy array, or a Python number), a `Sym` (a size that depends on
the dynamic batch), an `IntegerBuffer`, None, or a list of values (a node with several results,
read by ``operator.getitem``). A handler refuses what it cannot map with
`Call.refuse`: a `DiagnosticError` located at the node (`TorchLoc`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import torch
from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType
from xdsl.ir import SSAValue

from dialects.graph.constant import MAX_CONSTANT_ELEMENTS
from teeny_ir.core.diagnostics import DiagnosticError, SourceLoc
from teeny_ir.core.facets import Facet, modules_of

if TYPE_CHECKING:
    from teeny_ir.frontend.graph_builder import GraphBuilder


@dataclass(frozen=True)
class Sym:
    """A size that depends on the dynamic batch (a SymInt of the export): its
    expression, as sympy prints it (``s77``, ``8*s77``)."""

    expr: str
    is_batch: bool
    """Whether it is the batch itself (the symbol of dimension 0 of the inputs)."""


@dataclass(frozen=True)
class IntegerBuffer:
    """A buffer or constant of the program that is not floating point (BN's
    ``num_batches_tracked``): it may feed a fold, and is refused as data."""

    name: str
    array: np.ndarray


Value: TypeAlias = Any
"""A torch value during import: ``SSAValue``, numpy array, Python number, `Sym`,
None, or a list of these (see the module docstring)."""

TorchRule = Callable[["Call"], Value]

TORCH_RULES: Facet[TorchRule] = Facet(
    "torch.export import",
    homes=lambda: modules_of(__package__, skip=("context", "importer")),
)
"""ATen overload packet (``aten.conv2d``) or Python function (``operator.getitem``)
-> handler."""
aten_op = TORCH_RULES.register


@dataclass(frozen=True)
class TorchLoc(SourceLoc):
    """A node of an exported program, printed ``model.pt2:model.22.dfl node
    'conv2d_5' (yolo.py:64)``: the file, the module path of the node (from its
    ``nn_module_stack``; left out at the root), its name, and the user's source
    line when the export recorded it. The file alone when ``node`` is empty."""

    module: str = ""
    node: str = ""
    source: str = ""

    def __str__(self) -> str:
        if not self.node:
            return self.filename
        where = f"{self.module} node '{self.node}'" if self.module else f"node '{self.node}'"
        return f"{self.filename}:{where}" + (f" ({self.source})" if self.source else "")


def node_loc(filename: str, node: torch.fx.Node) -> TorchLoc:
    """Where messages about ``node`` point (see `TorchLoc`)."""
    return TorchLoc(filename, 0, 0, module_path(node), node.name, _user_line(node))


def module_path(node: torch.fx.Node) -> str:
    """The dotted path of the innermost module that ran ``node`` (``model.22.dfl``);
    empty at the root."""
    stack = node.meta.get("nn_module_stack") or {}
    paths = [
        entry[0]
        for key, entry in stack.items()
        if not str(key).startswith("_empty") and isinstance(entry, tuple) and entry
    ]
    return str(paths[-1]) if paths else ""


_TORCH_DIR = os.path.dirname(torch.__file__)


def _user_line(node: torch.fx.Node) -> str:
    """``file.py:12`` of the innermost frame outside torch in the node's stack trace."""
    trace = node.meta.get("stack_trace")
    if not isinstance(trace, str):
        return ""
    found = ""
    for line in trace.splitlines():
        line = line.strip()
        if not line.startswith('File "'):
            continue
        path, _, rest = line[len('File "') :].partition('", line ')
        number = rest.split(",", 1)[0]
        if number.isdigit() and not path.startswith(_TORCH_DIR):
            found = f"{os.path.basename(path)}:{number}"
    return found


def rule_key(target: object) -> str:
    """The `TORCH_RULES` key of a node's target: ``aten.add`` for
    ``aten.add.Tensor``, ``operator.getitem`` for a Python function."""
    if isinstance(target, torch._ops.OpOverload):
        qualified: str = target.name()  # type: ignore[no-untyped-call]  # untyped in torch
        return qualified.split(".", 1)[0].replace("::", ".")
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__name__", None) or str(target)
    return f"{module.removeprefix('_')}.{name}" if module else name


def op_name(target: object) -> str:
    """How refusals name a node's target: ``aten.add.Tensor``, ``operator.getitem``."""
    if isinstance(target, torch._ops.OpOverload):
        qualified: str = target.name()  # type: ignore[no-untyped-call]  # untyped in torch
        packet, _, overload = qualified.partition(".")
        return f"{packet.replace('::', '.')}.{overload or 'default'}"
    return rule_key(target)


def dims(value: SSAValue) -> tuple[int, ...]:
    """The shape of a graph tensor (-1, `DYNAMIC_INDEX`, for the dynamic batch)."""
    type_ = value.type
    assert isinstance(type_, TensorType)
    return tuple(type_.get_shape())


def is_constant(value: Value) -> bool:
    """Whether ``value`` is known at import time (no graph tensor, no batch size)."""
    if isinstance(value, (list, tuple)):
        return all(is_constant(v) for v in value)
    return not isinstance(value, (SSAValue, Sym))


LIFTED = ""
"""The name `Call.materialise` asks its ``weight`` callback with first: the
callback answers the `graph.param` of a lifted constant of the program when the
array is one (by identity), else None."""


class Call:
    """One ``call_function`` node being imported: its arguments by schema name,
    its result's shape, the builder, refusals."""

    def __init__(
        self,
        node: torch.fx.Node,
        location: TorchLoc,
        args: Sequence[Value],
        kwargs: dict[str, Value],
        builder: GraphBuilder,
        weight: Callable[[str, np.ndarray], SSAValue | None],
        batch: str = "",
    ) -> None:
        """``args``/``kwargs`` are the node's, with every input node replaced by
        its value; ``weight(name, array)`` is a `graph.param` for a large folded
        constant; ``batch`` is the dynamic batch's symbol (``s77``), empty when
        the batch is static."""
        self.node = node
        self.target = node.target
        self.location = location
        self.args = list(args)
        self.kwargs = kwargs
        self.b = builder
        self._weight = weight
        self.name = op_name(node.target)
        self.overload = self.name.rsplit(".", 1)[1] if "." in self.name else ""
        self.batch = batch
        self._bound: dict[str, Value] | None = None

    def refuse(self, message: str) -> DiagnosticError:
        """The located error for what this node asks that the importer cannot do."""
        return DiagnosticError.single(f"{self.name}: {message}", self.location)

    def _binding(self) -> dict[str, Value]:
        if self._bound is None:
            if not isinstance(self.target, torch._ops.OpOverload):
                raise self.refuse("arguments by name need an ATen op")
            bound: dict[str, Value] = {}
            positional = list(self.args)
            for argument in self.target._schema.arguments:
                if positional and not argument.kwarg_only:
                    bound[argument.name] = positional.pop(0)
                elif argument.name in self.kwargs:
                    bound[argument.name] = self.kwargs[argument.name]
                elif argument.has_default_value():
                    bound[argument.name] = argument.default_value
            self._bound = bound
        return self._bound

    def arg(self, name: str) -> Value:
        """The argument ``name`` of the op's schema (its default when not given)."""
        bound = self._binding()
        if name not in bound:
            raise self.refuse(f"missing argument '{name}'")
        return bound[name]

    def has(self, name: str) -> bool:
        """Whether argument ``name`` is given (or defaulted) and not None."""
        return self._binding().get(name) is not None

    def tensor(self, name: str) -> SSAValue:
        """Argument ``name`` as a graph tensor (constants become a `graph.constant`
        or, when large, a `graph.param`)."""
        value = self.arg(name)
        if isinstance(value, SSAValue):
            return value
        return self.materialise(value, name)

    def ints(self, name: str, rank: int | None = None) -> list[int]:
        """Argument ``name`` as integers known at import time; a single integer
        is repeated ``rank`` times (``stride=2`` of a 2-D pool is ``[2, 2]``)."""
        value = self.arg(name)
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        if any(isinstance(v, Sym) for v in values):
            raise self.refuse(f"argument '{name}' depends on the dynamic batch")
        if any(isinstance(v, SSAValue) for v in values):
            raise self.refuse(f"argument '{name}' must be known at import time")
        result = [int(np.asarray(v).item()) for v in values]
        if rank is not None and len(result) == 1:
            result = result * rank
        return result

    def integer(self, name: str) -> int:
        """Argument ``name`` as one integer known at import time."""
        values = self.ints(name)
        if len(values) != 1:
            raise self.refuse(f"argument '{name}' must be one integer")
        return values[0]

    def number(self, name: str) -> float:
        """Argument ``name`` as a float known at import time."""
        value = self.arg(name)
        if not isinstance(value, (int, float, bool, np.ndarray)) or isinstance(value, Sym):
            raise self.refuse(f"argument '{name}' must be a number known at import time")
        return float(np.asarray(value).item())

    def out_shape(self, index: int | None = None) -> list[int]:
        """The shape of the node's result (of result ``index``), -1 for the
        dynamic batch; refused where another dimension is symbolic."""
        val = self.node.meta.get("val")
        if index is not None and isinstance(val, (list, tuple)):
            val = val[index]
        if not isinstance(val, torch.Tensor):
            raise self.refuse("the export recorded no shape for the result")
        shape: list[int] = []
        for axis, size in enumerate(val.shape):
            if isinstance(size, int):
                shape.append(size)
                continue
            expr = size.node.expr
            if expr.is_number:
                shape.append(int(expr))
            elif axis == 0 and str(expr) == self.batch:
                shape.append(DYNAMIC_INDEX)
            else:
                raise self.refuse(
                    f"dimension {axis} of the result is {expr}: only dimension 0 may be "
                    "the dynamic batch"
                )
        return shape

    def materialise(self, value: Value, name: str) -> SSAValue:
        """A folded constant as a graph tensor (numbers and integer arrays as f32,
        the type promotion of the op that reads them)."""
        if isinstance(value, Sym):
            raise self.refuse(f"argument '{name}' depends on the dynamic batch: it cannot be data")
        if isinstance(value, IntegerBuffer):
            raise self.refuse(
                f"buffer '{value.name}' of type {value.array.dtype} is used as data: graph "
                "ops take f32"
            )
        if value is None or isinstance(value, (str, list, tuple)):
            raise self.refuse(f"argument '{name}' is not a tensor")
        array = np.asarray(value)
        lifted = self._weight(LIFTED, array) if isinstance(value, np.ndarray) else None
        if lifted is not None:  # a lifted constant of the program: its own param
            return lifted
        if array.dtype.kind not in "fiub":
            raise self.refuse(f"argument '{name}' of type {array.dtype} cannot be data")
        array = array.astype(np.float32)
        if array.ndim == 0:
            array = array.reshape(1)  # broadcasts as the scalar it was
        if array.size <= MAX_CONSTANT_ELEMENTS:
            return self.b.constant([float(v) for v in array.reshape(-1)], list(array.shape))
        param = self._weight(f"{self.node.name}.{name}", array)
        assert param is not None
        return param


def axis(call: Call, value: int, rank: int) -> int:
    """A dimension argument made non-negative, refused when out of range."""
    if not -rank <= value < rank:
        raise call.refuse(f"dimension {value} is out of range for rank {rank}")
    return value % rank


def rank_of(value: SSAValue) -> int:
    """The rank of a graph tensor."""
    return len(dims(value))
