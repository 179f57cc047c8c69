"""emit-triton: kernel ops -> Triton kernel files and the launch plan.

Reads ``func.func @forward`` as lower-graph-to-kernel leaves it (``kernel.weight``
ops, ``kernel.launch`` ops in order, ``func.return``) and writes
``DIR/kernels/<family>_<ordinal>.py`` (the family's Triton source rendered
by `teeny_ir.kernels.render`: slots filled from the pointwise table, shared
helpers pasted in, the kernel renamed) and ``DIR/plan.json`` (`teeny_ir.backend.plan`). Kernel
variants are deduplicated by (family, constexprs), ordinals in first-use order.
Every name in the plan and every file name is generated (``in0``, ``p0``,
``t0``, ``conv1x1_gemm_0``); weight names are JSON data only and never reach
Python source or a path. With ``archs``, every variant is compiled ahead of
time for each architecture (`teeny_ir.backend.aot`) and its cubins recorded.

The directory is built as a temporary sibling and renamed into place, so a
failed emission leaves no half-written plan. An existing ``DIR`` is replaced
only if it is a previous emission; any other non-empty directory is refused.
An out-dir that cannot be made or written (its parent is a file, permission
denied, a name too long) is a located error, as is anything the plan schema
(`teeny_ir.backend.plan.SCHEMA`) would refuse - a weight name or a canonical
expression longer than the schema allows, a function with no results: the
draft plan is checked against the schema itself before any file is written, so
its limits live in one place. The IR is not changed.
"""

from __future__ import annotations

import contextvars
import dataclasses
import json
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from xdsl.context import Context
from xdsl.dialects.builtin import DYNAMIC_INDEX, Float32Type, ModuleOp, StringAttr, TensorType, i64
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from dialects.kernel import (
    ConcatOp,
    LaunchOp,
    ParamOp,
    ReshapeOp,
    SliceOp,
    WeightOp,
    batch_stride,
    is_strided,
    symbolic_shape,
)
from teeny_ir.backend import memory as memory_plan
from teeny_ir.backend.plan import (
    FORMAT,
    SCHEMA,
    Arg,
    CompiledSpec,
    KernelSpec,
    LaunchSpec,
    ParamSpec,
    Plan,
    SourceSpec,
    TensorSpec,
    ViewSpec,
    WeightSpec,
    load_plan,
    sha256_of,
    write_plan,
)
from teeny_ir.core.diagnostics import Diagnostic, DiagnosticError, Severity, loc_of, provenance
from teeny_ir.core.expressions import ExpressionError, format_expr, parse
from teeny_ir.kernels.contract import POINTER_KINDS, KernelFamily
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.render import PRECISIONS, RenderError, render

if TYPE_CHECKING:
    from teeny_ir.backend import aot

_REFERENCE = re.compile(r"(in|out)([0-9]+)|param\.([A-Za-z_][A-Za-z0-9_]*)")
_EMITTED_FILE = re.compile(r"[a-z0-9_]+_[0-9]+\.(py|sm[0-9]+(\.w[0-9]+s[0-9]+)?\.cubin)")


def _error(message: str, where: Operation | None) -> DiagnosticError:
    return DiagnosticError([Diagnostic(Severity.ERROR, message, loc_of(where))])


@dataclass
class _Variant:
    """One kernel file: a family with fixed constexprs, and where it is launched."""

    name: str
    family: KernelFamily
    constexprs: dict[str, int | str]
    first_use: LaunchOp
    configs: list[tuple[int, int]] = field(default_factory=list[tuple[int, int]])


@dataclass
class _Collected:
    """The plan's pieces, before files are written (kernels are still variants)."""

    inputs: list[TensorSpec] = field(default_factory=list[TensorSpec])
    weights: list[WeightSpec] = field(default_factory=list[WeightSpec])
    params: list[ParamSpec] = field(default_factory=list[ParamSpec])
    buffers: list[TensorSpec] = field(default_factory=list[TensorSpec])
    views: list[ViewSpec] = field(default_factory=list[ViewSpec])
    variants: dict[tuple[str, tuple[tuple[str, int | str], ...]], _Variant] = field(
        default_factory=dict[tuple[str, tuple[tuple[str, int | str], ...]], _Variant]
    )
    launches: list[LaunchSpec] = field(default_factory=list[LaunchSpec])
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


_ALLOWED = (WeightOp, LaunchOp, ParamOp, SliceOp, ReshapeOp, ConcatOp, ReturnOp)


class _Names:
    """Plan names of the function's values: ``in<N>`` inputs, ``t<N>`` buffers,
    ``v<N>`` views, numbered in first-use order. A value that a
    ``kernel.concat`` places is a view of the concat's buffer, a slice a view
    of its source's buffer."""

    def __init__(self, forward: FuncOp, plan: _Collected) -> None:
        self.plan = plan
        self.names: dict[SSAValue, str] = {}
        self.places: dict[SSAValue, tuple[ConcatOp, int]] = {}
        for op in forward.body.block.ops:
            if isinstance(op, ConcatOp):
                for value, offset in zip(op.inputs, op.offsets(), strict=True):
                    if value in self.places:
                        raise _error("a value is an operand of two kernel.concat places", op)
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
            raise _error(
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


def _collect(forward: FuncOp) -> _Collected:
    """Read @forward into plan pieces (raises DiagnosticError, one per foreign op)."""
    plan = _Collected()
    errors = [
        Diagnostic(
            Severity.ERROR,
            "emit-triton expects only kernel.weight, kernel.launch, kernel.param, kernel.slice, "
            f"kernel.reshape, kernel.concat and func.return in @forward, found '{op.name}' (run "
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
            raise _error(
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
        elif isinstance(op, ParamOp):
            name = f"p{len(plan.params)}"
            names.names[op.result] = name
            plan.origins["params", len(plan.params)] = op
            plan.params.append(ParamSpec(name, op.derivation.shape, op.derivation))
        elif isinstance(op, SliceOp | ReshapeOp | ConcatOp):
            names.define(op.results[0], op)
        elif isinstance(op, ReturnOp):
            for value in op.arguments:
                if is_strided(value.type) or value in names.places or value not in names.names:
                    raise _error("a function result must be an input or a buffer of its own", op)
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
    if (
        not isinstance(type_, TensorType)
        or not (isinstance(type_.element_type, Float32Type) or type_.element_type == i64)
        or any(
            d < 1 and not (i == 0 and d == DYNAMIC_INDEX) for i, d in enumerate(type_.get_shape())
        )
    ):
        raise _error(
            "emit-triton expects f32 or i64 tensors whose only dynamic dimension is the batch "
            "(0), "
            f"got {type_}",
            where,
        )
    return tuple(symbolic_shape(type_))


def _launch(op: LaunchOp, plan: _Collected, names: _Names) -> LaunchSpec:
    family = FAMILIES.get(op.family)
    if family is None:
        raise _error(f"unknown kernel family '{op.family}'", op)
    constexprs = dict(sorted(op.constexpr_values.items()))
    key = (family.name, tuple(constexprs.items()))
    if key not in plan.variants:
        ordinal = sum(v.family is family for v in plan.variants.values())
        plan.variants[key] = _Variant(f"{family.name}_{ordinal}", family, constexprs, op)
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
        match = _REFERENCE.fullmatch(binding)
        if match is None:
            raise _error(f"argument '{abi.name}' binds '{binding}', not a tensor reference", op)
        kind, index, slot_name = match.groups()
        values = op.operands if kind == "in" else op.results
        args.append(Arg(tensor=slots[slot_name] if slot_name else names[values[int(index)]]))
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


MEMORY_OPTIONS = {"planned": "best", "naive": "naive"}
"""emit-triton's ``memory`` option -> the strategy of `teeny_ir.backend.memory`."""

PHASE_OF = {"teeny.backward": "backward", "teeny.update": "update"}
"""The launch attributes of the training passes -> the plan's launch phase."""


def _with_phases(launches: list[LaunchSpec]) -> list[LaunchSpec]:
    """A training plan's launches (any not in the forward phase) keep their
    phases, each forward launch listing the backward launches whose sources
    share a location with its own (the gradient of a graph op takes its
    location); an inference plan's launches have no phase."""
    if all(launch.phase == "forward" for launch in launches):
        return [dataclasses.replace(launch, phase="") for launch in launches]
    locations = [{s.loc for s in launch.sources if s.loc} for launch in launches]
    backward = [i for i, launch in enumerate(launches) if launch.phase == "backward"]
    return [
        dataclasses.replace(
            launch, gradients=tuple(j for j in backward if locations[j] & locations[i])
        )
        if launch.phase == "forward"
        else launch
        for i, launch in enumerate(launches)
    ]


def _expression(text: str, op: Operation) -> str:
    """The canonical text of an expression (reprinted from its syntax tree)."""
    try:
        return format_expr(parse(text))
    except ExpressionError as err:
        raise _error(f"bad expression: {err}", op) from None


def _draft(forward: FuncOp, plan: _Collected) -> Plan:
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
        raise _error(f"emit-triton: the memory plan: {err}", forward) from None


def _check_schema(forward: FuncOp, plan: _Collected) -> None:
    """Refuse, located at the op it comes from, every entry of the draft plan
    that `SCHEMA` rejects (a name or text over its length limit, a plan with no
    outputs...): the limits are the schema's own, read from its errors."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(SCHEMA)
    origins = dict(plan.origins)
    for index, variant in enumerate(plan.variants.values()):
        origins["kernels", index] = variant.first_use
    order = {op: index for index, op in enumerate(forward.walk())}
    located: list[tuple[int, str, Operation]] = []
    for error in sorted(validator.iter_errors(_draft(forward, plan).to_json()), key=_error_key):
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


@dataclass(frozen=True)
class _KernelOptions:
    """The ``jobs`` and ``cache`` options of the emit-triton pass running now."""

    jobs: int = 0
    cache: bool = True


_KERNEL_OPTIONS: contextvars.ContextVar[_KernelOptions] = contextvars.ContextVar(
    "emit_triton_kernel_options",
    default=_KernelOptions(),  # noqa: B039 - frozen
)
"""Set by each `EmitTritonPass.apply`, read by `_write_kernels`."""


def _write_kernels(directory: Path, plan: _Collected, archs: tuple[int, ...]) -> list[KernelSpec]:
    """Render (and with ``archs`` compile) every variant into ``directory/kernels``."""
    kernels_dir = directory / "kernels"
    kernels_dir.mkdir()
    texts: dict[str, str] = {}
    for variant in plan.variants.values():
        try:
            texts[variant.name] = render(
                variant.family, variant.name, variant.constexprs, plan.precision
            )
        except RenderError as err:
            raise _error(f"kernel variant '{variant.name}': {err}", variant.first_use) from None
        (kernels_dir / f"{variant.name}.py").write_text(texts[variant.name], encoding="utf-8")
    compiled = _compile_variants(kernels_dir, plan, archs, texts)
    specs: list[KernelSpec] = []
    for variant in plan.variants.values():
        source = kernels_dir / f"{variant.name}.py"
        specs.append(
            KernelSpec(
                variant.name,
                variant.family.name,
                f"kernels/{source.name}",
                variant.constexprs,
                sha256_of(source),
                tuple(
                    _write_cubin(
                        source, variant, arch, config, compiled[variant.name, arch, config]
                    )
                    for arch in archs
                    for config in variant.configs
                ),
                plan.precision,
            )
        )
    shutil.rmtree(kernels_dir / "__pycache__", ignore_errors=True)  # left by AOT's import
    return specs


def _compile_variants(
    kernels_dir: Path, plan: _Collected, archs: tuple[int, ...], texts: dict[str, str]
) -> dict[tuple[str, int, tuple[int, int]], aot.CompiledVariant]:
    """Every (variant, arch, launch config) compiled: from the compile cache
    where it holds them, the rest in parallel processes (`aot.compile_all`),
    stored in the cache; each checked against its arch's shared memory."""
    from teeny_ir.backend import aot, cache

    options = _KERNEL_OPTIONS.get()
    use_cache = options.cache and cache.enabled() and bool(archs)
    root = cache.cache_dir() if use_cache else None
    found: dict[tuple[str, int, tuple[int, int]], aot.CompiledVariant] = {}
    missing: list[tuple[_Variant, int, tuple[int, int], str]] = []
    for variant in plan.variants.values():
        for arch in archs:
            for config in variant.configs:
                key = ""
                if root is not None:
                    key = cache.variant_key(
                        texts[variant.name], variant.name, variant.family, variant.constexprs,
                        arch, *config, precision=plan.precision,
                    )  # fmt: skip
                    hit = cache.lookup(key, root)
                    if hit is not None and cache.is_for(hit, variant.name, arch, *config):
                        found[variant.name, arch, config] = hit
                        continue
                missing.append((variant, arch, config, key))
    jobs = [
        aot.Job(kernels_dir / f"{v.name}.py", v.name, v.family, v.constexprs, arch, *config)
        for v, arch, config, _ in missing
    ]
    try:
        results = aot.compile_all(jobs, options.jobs)
    except aot.JobError as err:
        variant, arch = missing[err.index][:2]
        message = f"kernel variant '{variant.name}' for sm_{arch}: {err}"
        raise _error(message, variant.first_use) from None
    for (variant, arch, config, key), result in zip(missing, results, strict=True):
        found[variant.name, arch, config] = result
        if root is not None and cache.is_for(result, variant.name, arch, *config):
            cache.store(key, result, root)
    for variant in plan.variants.values():
        for arch in archs:
            for config in variant.configs:
                try:
                    aot.check_shared(found[variant.name, arch, config])
                except aot.AotError as err:
                    message = f"kernel variant '{variant.name}' for sm_{arch}: {err}"
                    raise _error(message, variant.first_use) from None
    return found


def _write_cubin(
    source: Path,
    variant: _Variant,
    arch: int,
    config: tuple[int, int],
    result: aot.CompiledVariant,
) -> CompiledSpec:
    num_warps, num_stages = config
    suffix = "" if len(variant.configs) == 1 else f".w{num_warps}s{num_stages}"
    cubin = source.with_name(f"{variant.name}.sm{arch}{suffix}.cubin")
    cubin.write_bytes(result.cubin)
    return CompiledSpec(
        arch,
        result.name,
        result.num_warps,
        result.num_stages,
        result.shared,
        f"kernels/{cubin.name}",
        result.cubin_sha256,
        result.global_scratch_size,
        result.profile_scratch_size,
    )


def _is_previous_emission(directory: Path) -> bool:
    """Whether ``directory`` holds only what an emission writes (so replacing it
    loses nothing of the user's)."""
    entries = {p.name for p in directory.iterdir()}
    if not entries <= {"plan.json", "kernels"} or "plan.json" not in entries:
        return False
    kernels = directory / "kernels"
    if kernels.exists() and (kernels.is_symlink() or not kernels.is_dir()):
        return False
    for path in kernels.iterdir() if kernels.exists() else ():
        if path.name == "__pycache__" and _only_bytecode(path):
            continue  # left by importing a kernel file
        if path.is_symlink() or not path.is_file() or not _EMITTED_FILE.fullmatch(path.name):
            return False
    try:
        data = json.loads((directory / "plan.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("format") == FORMAT


def _only_bytecode(directory: Path) -> bool:
    return not directory.is_symlink() and all(
        p.is_file() and not p.is_symlink() and p.suffix == ".pyc" for p in directory.iterdir()
    )


def _check_target(target: Path, where: Operation) -> None:
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise _error(f"out-dir '{target}' exists and is not a directory", where)
    if target.is_dir() and any(target.iterdir()) and not _is_previous_emission(target):
        raise _error(
            f"refusing to replace out-dir '{target}': it is not empty and does not hold "
            "only a previous emission (plan.json and kernels/)",
            where,
        )


@dataclass(frozen=True)
class EmitTritonPass(ModulePass):
    """Write Triton kernels and the launch plan (DIR/plan.json) for @forward's kernel ops.

    Options: ``out-dir`` (required) is the directory to write; ``archs`` (e.g.
    ``80,90``) also compiles every kernel variant ahead of time for those
    ``sm_XX`` targets (no GPU needed); ``memory`` is ``planned`` (default) or
    ``naive`` (see the field); ``precision`` is ``tf32`` (default) or ``ieee``,
    ``tl.dot``'s fp32 input precision in the GEMM kernels. Expects only kernel.weight,
    kernel.launch and func.return in ``@forward``; the IR is left unchanged.
    """

    name = "emit-triton"

    out_dir: str = ""
    archs: tuple[int, ...] = ()
    jobs: int = 0
    cache: Literal["on", "off"] = "on"
    memory: str = "planned"
    """``planned``: buffers share one arena by liveness (`teeny_ir.backend.memory`,
    the best greedy placement); ``naive``: one after another, no reuse."""
    precision: str = "tf32"
    """``tl.dot``'s input precision for fp32 operands in the GEMM kernels: ``tf32``
    (Triton's default: tensor cores) or ``ieee`` (exact fp32); recorded per
    kernel in the plan and in the compile-cache key."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.out_dir:
            raise _error("emit-triton needs out-dir=DIR (the directory to write)", op)
        forward = next(
            (f for f in op.ops if isinstance(f, FuncOp) and f.sym_name.data == "forward"), None
        )
        if forward is None:
            where = next(iter(op.ops), op)
            raise _error("emit-triton expects a function @forward in the module", where)
        if not forward.body.blocks:
            raise _error("emit-triton expects @forward to have a body", forward)
        if len(forward.body.blocks) > 1:
            raise _error(
                f"emit-triton expects @forward to have a single block, found "
                f"{len(forward.body.blocks)} (a launch plan is one straight-line sequence)",
                forward,
            )
        for arch in self.archs:
            from teeny_ir.backend.aot import SHARED_MEMORY_LIMITS

            if arch not in SHARED_MEMORY_LIMITS:
                known = ", ".join(str(a) for a in sorted(SHARED_MEMORY_LIMITS))
                raise _error(f"emit-triton: unknown arch {arch} (known: {known})", forward)
        if self.memory not in MEMORY_OPTIONS:
            raise _error(
                f"emit-triton: unknown memory={self.memory} (known: {', '.join(MEMORY_OPTIONS)})",
                forward,
            )
        if self.precision not in PRECISIONS:
            raise _error(
                f"emit-triton: unknown precision={self.precision} (known: {', '.join(PRECISIONS)})",
                forward,
            )
        collected = _collect(forward)
        collected.memory = MEMORY_OPTIONS[self.memory]
        collected.precision = self.precision
        _check_schema(forward, collected)
        if "\0" in self.out_dir:
            raise _error("emit-triton: out-dir must not contain a NUL character", forward)
        if self.jobs < 0:
            raise _error(f"emit-triton: jobs must be 0 (one per CPU) or more, got {self.jobs}", op)
        _KERNEL_OPTIONS.set(_KernelOptions(self.jobs, self.cache == "on"))
        target = Path(self.out_dir).absolute()
        try:
            _emit(target, forward, collected, self.archs)
        except OSError as err:
            raise _error(_os_message(target, err), forward) from None


def _os_message(target: Path, err: OSError) -> str:
    """One sentence for an out-dir the file system refuses (parent a file,
    permission denied, a name too long, a full disk...)."""
    nearest = next((p for p in target.parents if _lexists(p)), None)
    if nearest is not None and not _is_dir(nearest):
        return f"cannot create out-dir '{target}': '{nearest}' is not a directory"
    reason = err.strerror or str(err)
    filename = f" ('{err.filename}')" if err.filename and str(err.filename) != str(target) else ""
    return f"cannot write out-dir '{target}': {reason}{filename}"


def _lexists(path: Path) -> bool:
    try:
        return os.path.lexists(path)
    except (OSError, ValueError):
        return False


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


def _emit(target: Path, forward: FuncOp, collected: _Collected, archs: tuple[int, ...]) -> None:
    """Write the emission into a temporary sibling of ``target`` and rename it
    into place (raises OSError where the file system refuses)."""
    _check_target(target, forward)
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".emit", dir=target.parent))
    try:
        kernels = _write_kernels(temp, collected, archs)
        plan = dataclasses.replace(_draft(forward, collected), kernels=tuple(kernels))
        write_plan(temp, plan)
        load_plan(temp)  # the runtime's checks: never write a plan it would refuse
        temp.chmod(0o755)
        _replace(temp, target)
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def _replace(temp: Path, target: Path) -> None:
    """Rename ``temp`` to ``target``, moving a previous emission aside first."""
    if not target.exists():
        os.replace(temp, target)
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
    try:
        os.replace(target, aside / "previous")
        try:
            os.replace(temp, target)
        except BaseException:
            os.replace(aside / "previous", target)
            raise
    finally:
        shutil.rmtree(aside, ignore_errors=True)
