"""IR -> launch plan: what emit-triton and plan-memory read from ``@forward``.

`collect` reads ``func.func @forward`` as lower-graph-to-kernel leaves it
(``kernel.weight``, ``kernel.param``, ``kernel.launch``, the view ops
``kernel.slice``, ``kernel.reshape`` and ``kernel.concat``, the collectives
``kernel.all_reduce``, ``func.return``) into the plan's pieces, a
`Collected`: tensors named ``in<N>``, ``p<N>``, ``t<N>``, ``v<N>`` in
first-use order, kernel variants deduplicated by (family, constexprs) with
ordinals in first-use order, each launch's arguments, grid, sources and
training phase, and each collective (`CollectiveSpec`) in its place among the
launches. A collective reduces in place (its output is its input's buffer)
when its input is a buffer of its own that nothing else reads and the
function does not return; otherwise into a buffer of its own. Every name in the plan is
generated; weight names are JSON data only and never reach Python source or a
path. `draft_plan` turns the pieces into the `Plan` that will be written
(memory placed by the one planner, `teeny_ir.backend.memory`; kernel hashes
still placeholders), and `check_schema` refuses, located at the op each entry
comes from, whatever the plan schema (`teeny_ir.backend.plan.SCHEMA`) would
refuse, so its limits live in one place. Every error is a located
`DiagnosticError` (`error_at`). Writing the files is `teeny_ir.backend.emit`'s.

Kept apart from the writing because plan-memory needs the plan without any
file, and because this half depends on the IR (xDSL, the kernel dialect) and
that half on the file system and the compiler. Nothing here changes the IR.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects.builtin import StringAttr, TensorType, i64
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue

from dialects.kernel import (
    AllReduceOp,
    ConcatOp,
    LaunchOp,
    ParamOp,
    ReshapeOp,
    SliceOp,
    WeightOp,
    batch_stride,
    is_batch_tensor,
    is_strided,
    symbolic_shape,
)
from teeny_ir.backend import memory as memory_plan
from teeny_ir.backend.plan import (
    SCHEMA,
    Arg,
    CollectiveSpec,
    KernelSpec,
    LaunchSpec,
    ParamSpec,
    Plan,
    PlanLaunch,
    SourceSpec,
    TensorSpec,
    ViewSpec,
    WeightSpec,
)
from teeny_ir.backend.schema_check import fits_schema
from teeny_ir.core.diagnostics import Diagnostic, DiagnosticError, Severity, loc_of, provenance
from teeny_ir.core.expressions import ExpressionError, format_expr, parse
from teeny_ir.core.symbols import parse_binding
from teeny_ir.kernels.contract import POINTER_KINDS, KernelFamily
from teeny_ir.kernels.families import FAMILIES


def error_at(message: str, where: Operation | None) -> DiagnosticError:
    """One error diagnostic at ``where`` (its location, or none), ready to raise."""
    return DiagnosticError([Diagnostic(Severity.ERROR, message, loc_of(where))])


@dataclass
class Variant:
    """One kernel file: a family with fixed constexprs, and where it is launched."""

    name: str
    family: KernelFamily
    constexprs: dict[str, int | str]
    first_use: LaunchOp
    configs: list[tuple[int, int]] = field(default_factory=list[tuple[int, int]])


@dataclass
class Collected:
    """The plan's pieces, before files are written (kernels are still variants)."""

    inputs: list[TensorSpec] = field(default_factory=list[TensorSpec])
    weights: list[WeightSpec] = field(default_factory=list[WeightSpec])
    params: list[ParamSpec] = field(default_factory=list[ParamSpec])
    buffers: list[TensorSpec] = field(default_factory=list[TensorSpec])
    views: list[ViewSpec] = field(default_factory=list[ViewSpec])
    variants: dict[tuple[str, tuple[tuple[str, int | str], ...]], Variant] = field(
        default_factory=dict[tuple[str, tuple[tuple[str, int | str], ...]], Variant]
    )
    launches: list[PlanLaunch] = field(default_factory=list[PlanLaunch])
    outputs: list[str] = field(default_factory=list[str])
    roles: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    origins: dict[tuple[str, int], Operation] = field(
        default_factory=dict[tuple[str, int], Operation]
    )
    """(plan section, index) -> the op that entry comes from, to locate schema errors."""
    returned: Operation | None = None
    memory: str = "best"
    """The memory plan's strategy (`teeny_ir.backend.memory.CHOICES`)."""
    precision: str = "tf32"
    """``tl.dot``'s fp32 input precision (`teeny_ir.kernels.render.PRECISIONS`)."""


_ALLOWED = (WeightOp, LaunchOp, ParamOp, SliceOp, ReshapeOp, ConcatOp, AllReduceOp, ReturnOp)


class _Names:
    """Plan names of the function's values: ``in<N>`` inputs, ``t<N>`` buffers,
    ``v<N>`` views, numbered in first-use order. A value that a
    ``kernel.concat`` places is a view of the concat's buffer, a slice a view
    of its source's buffer."""

    def __init__(self, forward: FuncOp, plan: Collected) -> None:
        self.plan = plan
        self.names: dict[SSAValue, str] = {}
        self.places: dict[SSAValue, tuple[ConcatOp, int]] = {}
        for op in forward.body.block.ops:
            if isinstance(op, ConcatOp):
                for value, offset in zip(op.inputs, op.offsets(), strict=True):
                    if value in self.places:
                        raise error_at("a value is an operand of two kernel.concat places", op)
                    self.places[value] = (op, offset)

    def __getitem__(self, value: SSAValue) -> str:
        return self.names[value]

    def input(self, value: SSAValue, index: int) -> None:
        self.names[value] = f"in{index}"

    def home(self, value: SSAValue, where: Operation) -> tuple[str, int]:
        """(buffer, element offset in its images) where ``value`` lives."""
        if value in self.places:
            concat, offset = self.places[value]
            base, base_offset = self.home(concat.result, concat)
            return base, base_offset + offset
        if isinstance(value.owner, SliceOp):
            base, offset = self.home(value.owner.source, value.owner)
            return base, offset + value.owner.offset
        if isinstance(value.owner, ReshapeOp):
            return self.home(value.owner.source, value.owner)
        if is_strided(value.type):
            raise error_at(
                "a batch-strided value must be a kernel.slice or an operand of a kernel.concat "
                "(which names the buffer it is written into)",
                where,
            )
        if value not in self.names:
            self.names[value] = f"t{len(self.plan.buffers)}"
            self.plan.origins["buffers", len(self.plan.buffers)] = where
            self.plan.buffers.append(
                TensorSpec(self.names[value], _shape(value, where), _dtype(value))
            )
        return self.names[value], 0

    def define(self, value: SSAValue, where: Operation) -> str:
        """Name a result: a buffer of its own, or a view of the buffer it lives in."""
        if value in self.names:
            return self.names[value]
        base, offset = self.home(value, where)
        if base == self.names.get(value):
            return base
        assert isinstance(value.type, TensorType)
        name = f"v{len(self.plan.views)}"
        self.names[value] = name
        self.plan.origins["views", len(self.plan.views)] = where
        self.plan.views.append(
            ViewSpec(
                name,
                _shape(value, where),
                base,
                offset,
                batch_stride(value.type),
                _sources(value.owner if isinstance(value.owner, SliceOp | ReshapeOp) else where),
            )
        )
        return name


def _sources(op: Operation) -> tuple[SourceSpec, ...]:
    return tuple(SourceSpec(name, loc) for name, loc in provenance(op, op.name))


def collect(forward: FuncOp) -> Collected:
    """Read @forward into plan pieces (raises DiagnosticError, one per foreign op)."""
    plan = Collected()
    errors = [
        Diagnostic(
            Severity.ERROR,
            "emit-triton expects only kernel.weight, kernel.launch, kernel.param, kernel.slice, "
            "kernel.reshape, kernel.concat, kernel.all_reduce and func.return in @forward, found "
            f"'{op.name}' (run "
            "lower-graph-to-kernel first)",
            loc_of(op),
        )
        for op in forward.body.block.ops
        if not isinstance(op, _ALLOWED)
    ]
    if errors:
        raise DiagnosticError(errors)
    names = _Names(forward, plan)
    for index, argument in enumerate(forward.body.block.args):
        if is_strided(argument.type):
            raise error_at(
                f"argument #{index} of @forward has a #kernel.batch_stride type, but an input "
                "is a whole contiguous array (only values inside the function are views)",
                forward,
            )
        names.input(argument, index)
        plan.inputs.append(TensorSpec(f"in{index}", _shape(argument, forward), _dtype(argument)))
        plan.origins["inputs", index] = forward
    for op in forward.body.block.ops:
        if isinstance(op, WeightOp):
            plan.origins["weights", len(plan.weights)] = op
            plan.weights.append(WeightSpec(op.weight_name, tuple(op.shape), op.zero_default))
        elif isinstance(op, LaunchOp):
            plan.origins["launches", len(plan.launches)] = op
            plan.launches.append(_launch(op, plan, names))
        elif isinstance(op, AllReduceOp):
            plan.origins["launches", len(plan.launches)] = op
            plan.launches.append(_collective(op, plan, names))
        elif isinstance(op, ParamOp):
            name = f"p{len(plan.params)}"
            names.names[op.result] = name
            plan.origins["params", len(plan.params)] = op
            plan.params.append(ParamSpec(name, op.derivation.shape, op.derivation))
        elif isinstance(op, SliceOp | ReshapeOp | ConcatOp):
            names.define(op.results[0], op)
        elif isinstance(op, ReturnOp):
            for index, value in enumerate(op.arguments):
                if isinstance(value.owner, ParamOp):
                    raise error_at(
                        f"result #{index} of @forward is a parameter itself (a value folded to "
                        "a constant), which no launch writes: a plan's results are inputs or "
                        "buffers its launches write",
                        op,
                    )
                if is_strided(value.type) or value in names.places or value not in names.names:
                    raise error_at("a function result must be an input or a buffer of its own", op)
            plan.outputs = [names[value] for value in op.arguments]
            plan.roles = _roles(forward)
            plan.launches = _with_phases(plan.launches)
            plan.returned = op
    return plan


def _dtype(value: SSAValue) -> str:
    """The plan dtype of a value `_shape` accepted: ``i64`` or ``f32``."""
    assert isinstance(value.type, TensorType)
    return "i64" if value.type.element_type == i64 else "f32"


ROLE_ATTRS = {"teeny.grad": "grad", "teeny.updated": "updated", "teeny.running": "running"}
"""The result attributes of the training passes -> the plan's output roles."""


def _roles(forward: FuncOp) -> list[tuple[str, str]]:
    """Per result, its plan role from its result attributes (empty when none has one)."""
    if forward.res_attrs is None:
        return []
    roles: list[tuple[str, str]] = []
    for attrs in forward.res_attrs.data:
        found = [(role, attrs.data[key]) for key, role in ROLE_ATTRS.items() if key in attrs.data]
        if found and isinstance(found[0][1], StringAttr):
            roles.append((found[0][0], found[0][1].data))
        else:
            roles.append(("", ""))
    return roles if any(role for role, _ in roles) else []


def _shape(value: SSAValue, where: Operation) -> tuple[int | str, ...]:
    """The plan shape of an f32 or i64 tensor whose only dynamic dimension is the batch."""
    type_ = value.type
    if not any(
        is_batch_tensor(type_, static=False, strided=True, element=element)
        for element in ("f32", "i64")
    ):
        raise error_at(
            "emit-triton expects f32 or i64 tensors whose only dynamic dimension is the batch "
            "(0), "
            f"got {type_}",
            where,
        )
    assert isinstance(type_, TensorType)  # is_batch_tensor holds
    return tuple(symbolic_shape(type_))


def _launch(op: LaunchOp, plan: Collected, names: _Names) -> LaunchSpec:
    family = FAMILIES.get(op.family)
    if family is None:
        raise error_at(f"unknown kernel family '{op.family}'", op)
    constexprs = dict(sorted(op.constexpr_values.items()))
    key = (family.name, tuple(constexprs.items()))
    if key not in plan.variants:
        ordinal = sum(v.family is family for v in plan.variants.values())
        plan.variants[key] = Variant(f"{family.name}_{ordinal}", family, constexprs, op)
    variant = plan.variants[key]
    if (op.num_warps, op.num_stages) not in variant.configs:
        variant.configs.append((op.num_warps, op.num_stages))
    slots: dict[str, str] = {}
    for slot in op.param_slots:
        slots[slot.name] = f"p{len(plan.params)}"
        plan.origins["params", len(plan.params)] = op
        plan.params.append(ParamSpec(slots[slot.name], slot.shape, slot.derivation))
    for result in op.results:
        names.define(result, op)
    args: list[Arg] = []
    for abi, (_, binding) in zip(family.args, op.arg_bindings, strict=True):
        if abi.kind not in POINTER_KINDS:
            args.append(Arg(expr=_expression(binding, op)))
            continue
        try:
            kind, where = parse_binding(binding)
        except ValueError:
            message = f"argument '{abi.name}' binds '{binding}', not a tensor reference"
            raise error_at(message, op) from None
        values = op.operands if kind == "in" else op.results
        args.append(Arg(tensor=slots[where] if isinstance(where, str) else names[values[where]]))
    grid = tuple(_expression(axis, op) for axis in op.grid)
    phase = next((p for key, p in PHASE_OF.items() if key in op.attributes), "forward")
    return LaunchSpec(
        variant.name,
        (grid[0], grid[1], grid[2]),
        op.num_warps,
        op.num_stages,
        tuple(args),
        _sources(op),
        phase,
    )


PHASE_OF = {"teeny.backward": "backward", "teeny.update": "update"}
"""The launch attributes of the training passes -> the plan's launch phase."""


def _collective(op: AllReduceOp, plan: Collected, names: _Names) -> CollectiveSpec:
    """A ``kernel.all_reduce`` as the plan's collective: in place when its
    input is a buffer of its own that only it reads (the function does not
    return it), else into a new buffer."""
    source = op.input
    name = names[source]  # defined before its use: the block is in program order
    reads_alone = len(list(source.uses)) == 1 and not any(
        isinstance(use.operation, ReturnOp) for use in source.uses
    )
    if reads_alone and any(buffer.name == name for buffer in plan.buffers):
        names.names[op.result] = name
        target = name
    else:
        target = names.define(op.result, op)
    phase = next((p for key, p in PHASE_OF.items() if key in op.attributes), "forward")
    return CollectiveSpec(
        "all_reduce",
        op.reduction,
        op.world,
        (Arg(tensor=name), Arg(tensor=target)),
        _sources(op),
        phase,
    )


def _with_phases(launches: list[PlanLaunch]) -> list[PlanLaunch]:
    """A training plan's launches (any not in the forward phase) keep their
    phases, each forward launch listing the backward launches whose sources
    share a location with its own (the gradient of a graph op takes its
    location); an inference plan's launches have no phase."""
    if all(launch.phase == "forward" for launch in launches):
        return [dataclasses.replace(launch, phase="") for launch in launches]
    locations = [{s.loc for s in launch.sources if s.loc} for launch in launches]
    backward = [
        i
        for i, launch in enumerate(launches)
        if launch.phase == "backward" and isinstance(launch, LaunchSpec)
    ]
    return [
        dataclasses.replace(
            launch, gradients=tuple(j for j in backward if locations[j] & locations[i])
        )
        if launch.phase == "forward" and isinstance(launch, LaunchSpec)
        else launch
        for i, launch in enumerate(launches)
    ]


def _expression(text: str, op: Operation) -> str:
    """The canonical text of an expression (reprinted from its syntax tree)."""
    try:
        return _canonical_text(text)
    except ExpressionError as err:
        raise error_at(f"bad expression: {err}", op) from None


@functools.lru_cache(maxsize=65536)
def _canonical_text(text: str) -> str:
    """`_expression`'s text, once per distinct text (a plan repeats the same
    dims and grids across launches: YOLOv8n's 1153 are 56 texts)."""
    return format_expr(parse(text))


def draft_plan(forward: FuncOp, plan: Collected) -> Plan:
    """The plan as it will be written, with placeholder kernel hashes (the
    kernel files do not exist yet): what the schema checks is all there."""
    kernels = tuple(
        KernelSpec(v.name, v.family.name, f"kernels/{v.name}.py", v.constexprs, "0" * 64)
        for v in plan.variants.values()
    )
    draft = Plan(
        forward.sym_name.data,
        tuple(plan.inputs),
        tuple(plan.weights),
        tuple(plan.params),
        tuple(plan.buffers),
        kernels,
        tuple(plan.launches),
        tuple(plan.outputs),
        tuple(plan.views),
        tuple(plan.roles),
    )
    try:  # the one planner (teeny_ir.backend.memory), as plan-memory runs it
        return memory_plan.with_memory(draft, plan.memory)
    except memory_plan.MemoryPlanError as err:
        raise error_at(f"emit-triton: the memory plan: {err}", forward) from None


def check_schema(forward: FuncOp, plan: Collected) -> Plan:
    """Refuse, located at the op it comes from, every entry of the draft plan
    that `SCHEMA` rejects (a name or text over its length limit, a plan with no
    outputs...): the limits are the schema's own, read from its errors.
    Returns the draft (`draft_plan`) it checked, for the emitter to complete.

    A draft that `fits_schema` passes is valid and needs nothing more; only
    one it does not pass is validated by jsonschema, for the errors."""
    checked = draft_plan(forward, plan)
    draft = checked.to_json()
    if fits_schema(draft):
        return checked
    import jsonschema

    validator = jsonschema.Draft202012Validator(SCHEMA)
    origins = dict(plan.origins)
    for index, variant in enumerate(plan.variants.values()):
        origins["kernels", index] = variant.first_use
    order = {op: index for index, op in enumerate(forward.walk())}
    located: list[tuple[int, str, Operation]] = []
    for error in sorted(validator.iter_errors(draft), key=_error_key):
        error = _most_specific(error)
        path = list(error.absolute_path)
        where: Operation = forward
        if path and path[0] == "outputs":
            where = plan.returned or forward
        elif len(path) >= 2 and isinstance(path[1], int):
            where = origins.get((str(path[0]), path[1]), forward)
        message = _schema_message(error, path, _describe(path, where))
        located.append((order.get(where, 0), message, where))
    if located:  # in source order, as the verifier reports
        located.sort(key=lambda entry: entry[0])
        raise DiagnosticError(
            Diagnostic(Severity.ERROR, message, loc_of(where)) for _, message, where in located
        )
    return checked


def _error_key(error: Any) -> tuple[str, ...]:
    return tuple(f"{p:09d}" if isinstance(p, int) else p for p in error.absolute_path)


def _most_specific(error: Any) -> Any:
    """For a ``oneOf`` failure, the sub-error deepest in the instance (the
    branch that matched best, e.g. an ``expr`` argument over the length limit)."""
    while error.context:
        error = max(error.context, key=lambda e: len(e.absolute_path))
    return error


def _schema_message(error: Any, path: Sequence[str | int], what: str) -> str:
    where = "/".join(str(p) for p in path) or "(top level)"
    if path == ["outputs"] and error.validator == "minItems":
        return (
            "emit-triton: @forward returns no results, but a launch plan needs at least "
            f"{error.validator_value} output"
        )
    instance = error.instance
    if error.validator == "maxLength" and isinstance(instance, str):
        return (
            f"emit-triton: {what} {_preview(instance)} is {len(instance)} characters long, "
            f"but the launch plan holds at most {error.validator_value} (plan schema at {where})"
        )
    if error.validator == "minLength" and isinstance(instance, str):
        return f"emit-triton: {what} must not be empty in a launch plan (plan schema at {where})"
    message = error.message if len(error.message) <= 200 else error.message[:200] + "..."
    return f"emit-triton: {what} does not fit the launch plan (plan schema at {where}): {message}"


_DESCRIPTIONS = {
    ("weights", "name"): "weight name",
    ("params", "derivation", "sources"): "derivation source weight name",
    ("launches", "grid"): "grid expression",
    ("launches", "args", "expr"): "argument expression",
    ("inputs", "shape"): "input shape entry",
    ("buffers", "shape"): "result shape entry",
}


def _describe(path: Sequence[str | int], where: Operation) -> str:
    """What a schema path names, in words (``argument 'numel' expression``)."""
    keys = tuple(p for p in path if isinstance(p, str))
    if keys == ("launches", "grid") and isinstance(path[-1], int):
        return f"grid[{path[-1]}] expression"
    if keys == ("launches", "args", "expr") and isinstance(where, LaunchOp):
        index = path[3]
        bindings = where.arg_bindings
        if isinstance(index, int) and index < len(bindings):
            return f"argument '{bindings[index][0]}' expression"
    return _DESCRIPTIONS.get(keys, "plan entry")


def _preview(text: str) -> str:
    return repr(text) if len(text) <= 40 else repr(text[:40]) + "..."
