"""The launch plan: ``DIR/plan.json`` and the kernel files next to it.

`emit-triton` writes a plan with `write_plan`; the runtime reads it with
`load_plan`, which checks the JSON Schema (draft 2020-12) and then the
semantics before anything runs: known families, arguments matching each
family's ABI, tensor references of the right kind, expressions of the shape
grammar over ``B`` only (so a grid string is data, never code), derivations
that fit the weight table, kernel files inside DIR whose sha256 matches, and
the collectives (`CollectiveSpec`: one input and one output of one static
shape, one group size for the whole plan).
Every file of DIR is read by `teeny_ir.backend.kernel_files.read_regular`: a
FIFO, a device or an oversized file is a `PlanError` naming it, never a hang.

Only the standard library, jsonschema and teeny_ir's utility modules are
imported: no numpy, no triton.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from teeny_ir.backend import memory
from teeny_ir.backend.kernel_files import (
    CUBIN_BYTES,
    KERNEL_SOURCE_BYTES,
    PLAN_JSON_BYTES,
    read_regular,
)
from teeny_ir.core.derivations import KINDS, Derivation, DerivationError
from teeny_ir.core.expressions import ExpressionError, parse, symbols
from teeny_ir.core.symbols import BATCH as BATCH  # the runtime reads it from here
from teeny_ir.kernels import validator
from teeny_ir.kernels.contract import MAX_NUM_WARPS, KernelFamily, element_type_of
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.render import DEFAULT_PRECISION, PRECISIONS, RenderError, render

FORMAT = "teeny-ir-plan"
VERSION = 8
"""2: a pointwise constexpr is the name of a pointwise-table entry (a string).
3: ``views`` (channel slices of buffers, zero-copy splits and concats), each
launch's ``sources`` (the graph ops it implements, with their locations), launch
inputs bound to parameters, and ``literal`` derivations (``bits``).
4: inputs and buffers may be ``i64`` (class indices, status outputs), and a
family's status outputs (`KernelFamily.status_checks`) are checked after the run.
5: training plans: an output may carry a ``role`` (``grad``, ``updated``,
``running``) and the weight it is ``of``; a weight may be ``zero_default``
(optimizer state, zero when absent).
6: the memory plan: each buffer's ``offset`` (bytes, an expression of ``B``) in
one ``arena`` of the plan (an expression of ``B``), placed by the ``memory``
strategy (`teeny_ir.backend.memory`).
7: collectives: a launches entry may be a collective (``{"collective":
"all_reduce", "reduction", "world", "args": [input, output], "sources",
"phase"}``, `CollectiveSpec`) instead of a kernel launch; a data-parallel
training plan all-reduces its gradients (docs/plan.md, "Collectives").
8: the convolution families' residual flag (``implicit_gemm_conv``,
``conv1x1_gemm``, ``depthwise_conv``) is the launch's last dim argument
``HAS_RESIDUAL`` instead of a constexpr of the kernel, so one compiled variant
serves a tile with and without the residual add."""

_NAME = {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}
_TEXT = {"type": "string", "minLength": 1, "maxLength": 1000}
_SHA256 = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
_F32 = {"const": "f32"}
PHASES = ("forward", "backward", "update")
"""A training plan's launches, by what they compute: the forward, the backward
(ops insert-backward made) and the optimizer's update (apply-optimizer's)."""
ROLES = ("grad", "updated", "running")
"""What a training plan's output is besides a user result: a parameter's gradient
(``teeny.grad``), its update or an optimizer state's (``teeny.updated``), or an
updated running statistic (``teeny.running``); ``of`` names the weight."""
COLLECTIVES = ("all_reduce",)
"""The collectives a plan's launches may hold (`CollectiveSpec`)."""
REDUCTIONS = ("mean", "sum")
"""An all-reduce's reductions: the mean or the sum over the ranks."""
MAX_WORLD = 2**31 - 1
DTYPES = ("f32", "i64")
"""Element types of plan inputs and buffers (views, weights and params are f32)."""
_DTYPE = {"enum": list(DTYPES)}


def _int(minimum: int, maximum: int | None = None) -> dict[str, Any]:
    bounds = {"minimum": minimum} | ({} if maximum is None else {"maximum": maximum})
    return {"type": "integer"} | bounds


def _array(items: dict[str, Any], **limits: int) -> dict[str, Any]:
    return {"type": "array", "items": items} | limits


def _record(properties: dict[str, Any], *optional: str) -> dict[str, Any]:
    required = [name for name in properties if name not in optional]
    return {"type": "object", "properties": properties, "required": required} | {
        "additionalProperties": False
    }


_DIMS = _array(_int(1))
_SHAPE = _array({"oneOf": [_int(1), _TEXT]})
_TENSOR = _record({"name": _NAME, "shape": _SHAPE, "dtype": _DTYPE})
_BUFFER = _record({"name": _NAME, "shape": _SHAPE, "dtype": _DTYPE, "offset": _TEXT})
_SOURCE = _record({"op": _TEXT, "loc": _TEXT}, "loc")
_VIEW = _record(
    {"name": _NAME, "shape": _SHAPE, "dtype": _F32, "base": _NAME}
    | {"offset": _int(0, 2**31 - 1), "batch_stride": _int(1, 2**31 - 1)}
    | {"sources": _array(_SOURCE, maxItems=64)}
)
_DERIVATION = _record(
    {"kind": {"enum": list(KINDS)}, "sources": _array(_TEXT), "shape": _DIMS}
    | {"eps": {"type": "number"}, "value": {"type": "number"}}
    | {"bits": _array(_int(0, 2**32 - 1), maxItems=1 << 16)},
    *("eps", "value", "bits"),
)
_COMPILED = _record(
    {"arch": _int(1), "name": _TEXT, "num_warps": _int(1), "num_stages": _int(1)}
    | {"shared": _int(0), "cubin": _TEXT, "cubin_sha256": _SHA256}
    | {"global_scratch_size": _int(0), "profile_scratch_size": _int(0)},
    "global_scratch_size",
    "profile_scratch_size",
)
_KERNEL = _record(
    {"name": _NAME, "family": _TEXT, "file": _TEXT, "source_sha256": _SHA256}
    | {"constexprs": {"type": "object", "additionalProperties": {"type": ["integer", "string"]}}}
    | {"compiled": _array(_COMPILED), "precision": {"enum": list(PRECISIONS)}},
    "compiled",
    "precision",
)
_LAUNCH = _record(
    {"kernel": _NAME, "grid": _array(_TEXT, minItems=3, maxItems=3)}
    | {"num_warps": _int(1, MAX_NUM_WARPS), "num_stages": _int(1)}
    | {"args": _array({"oneOf": [_record({"tensor": _NAME}), _record({"expr": _TEXT})]})}
    | {"sources": _array(_SOURCE, maxItems=64)}
    | {"phase": {"enum": list(PHASES)}, "gradients": _array(_int(0))},
    "phase",
    "gradients",
)
_COLLECTIVE = _record(
    {"collective": {"enum": list(COLLECTIVES)}, "reduction": {"enum": list(REDUCTIONS)}}
    | {"world": _int(1, MAX_WORLD)}
    | {"args": _array(_record({"tensor": _NAME}), minItems=2, maxItems=2)}
    | {"sources": _array(_SOURCE, maxItems=64), "phase": {"enum": list(PHASES)}},
    "phase",
)
SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": f"teeny_ir launch plan, version {VERSION}",
} | _record(
    {"format": {"const": FORMAT}, "version": {"const": VERSION}, "function": _NAME}
    | {"inputs": _array(_TENSOR), "buffers": _array(_BUFFER), "views": _array(_VIEW)}
    | {"arena": _TEXT, "memory": {"enum": list(memory.STRATEGIES)}}
    | {
        "weights": _array(
            _record(
                {"name": _TEXT, "shape": _DIMS, "dtype": _F32, "zero_default": {"const": True}},
                "zero_default",
            )
        )
    }
    | {
        "params": _array(
            _record({"name": _NAME, "shape": _DIMS, "dtype": _F32, "derivation": _DERIVATION})
        )
    }
    | {"kernels": _array(_KERNEL), "launches": _array({"oneOf": [_LAUNCH, _COLLECTIVE]})}
    | {
        "outputs": _array(
            _record({"tensor": _NAME, "role": {"enum": list(ROLES)}, "of": _TEXT}, "role", "of"),
            minItems=1,
        )
    }
)
"""JSON Schema (draft 2020-12) of the current plan version."""


class PlanError(Exception):
    """A plan directory that is unreadable, off-schema or inconsistent."""


@dataclass(frozen=True)
class TensorSpec:
    """An input or buffer: entries of ``shape`` are ints or expressions over ``B``;
    ``dtype`` one of `DTYPES`; a buffer's ``offset`` is where it starts in the
    arena, in bytes (an expression of ``B``; empty for an input)."""

    name: str
    shape: tuple[int | str, ...]
    dtype: str = "f32"
    offset: str = ""


@dataclass(frozen=True)
class SourceSpec:
    """A graph op a launch or view implements: its name and source location
    (``file:line:col``, empty when unknown)."""

    op: str
    loc: str = ""

    def to_json(self) -> dict[str, str]:
        return {"op": self.op} | ({"loc": self.loc} if self.loc else {})


@dataclass(frozen=True)
class ViewSpec:
    """A batch-strided view of a buffer: images ``batch_stride`` elements apart,
    each contiguous and ``offset`` elements into the base's image (a channel
    slice: a split's part, or a concat's operand written in place)."""

    name: str
    shape: tuple[int | str, ...]
    base: str
    offset: int
    batch_stride: int
    sources: tuple[SourceSpec, ...] = ()


@dataclass(frozen=True)
class WeightSpec:
    """One entry of the weight table (a state-dict key and its static shape);
    ``zero_default``: optimizer state that is zero when the weights lack it."""

    name: str
    shape: tuple[int, ...]
    zero_default: bool = False


@dataclass(frozen=True)
class ParamSpec:
    """A parameter tensor, bound from the weights through its derivation."""

    name: str
    shape: tuple[int, ...]
    derivation: Derivation


@dataclass(frozen=True)
class CompiledSpec:
    """An AOT-compiled variant of a kernel for one GPU architecture."""

    arch: int
    name: str
    num_warps: int
    num_stages: int
    shared: int
    cubin: str
    cubin_sha256: str
    global_scratch_size: int = 0
    """Bytes of global scratch memory the kernel asks for (Triton's metadata);
    in ``plan.json`` only when not zero. The cuda backend refuses a kernel
    that needs any (it passes NULL scratch pointers)."""
    profile_scratch_size: int = 0
    """Bytes of profile scratch memory (Triton's metadata), likewise."""

    def to_json(self) -> dict[str, Any]:
        data = vars(self).copy()
        for field in ("global_scratch_size", "profile_scratch_size"):
            if not data[field]:
                del data[field]
        return data


@dataclass(frozen=True)
class KernelSpec:
    """A rendered kernel file: the family template with ``constexprs`` for its launches."""

    name: str
    family: str
    file: str
    constexprs: Mapping[str, int | str]
    source_sha256: str
    compiled: tuple[CompiledSpec, ...] = ()
    precision: str = DEFAULT_PRECISION
    """``tl.dot``'s fp32 input precision the file was rendered with (emit-triton's
    ``precision``); in ``plan.json`` only when not the default ``tf32``."""


@dataclass(frozen=True)
class Arg:
    """One ABI argument: a tensor name, or an expression over ``B`` (exactly one is set)."""

    tensor: str | None = None
    expr: str | None = None


@dataclass(frozen=True)
class LaunchSpec:
    """One kernel launch, in plan order."""

    kernel: str
    grid: tuple[str, str, str]
    num_warps: int
    num_stages: int
    args: tuple[Arg, ...]
    sources: tuple[SourceSpec, ...] = ()
    """Provenance: the graph ops this launch implements (the seed's
    ``lower_with_mapping``)."""
    phase: str = ""
    """In a training plan, one of `PHASES`; empty in an inference plan."""
    gradients: tuple[int, ...] = ()
    """A forward launch's: the backward launches that compute its gradients
    (those whose sources share a location with its own)."""


@dataclass(frozen=True)
class CollectiveSpec:
    """One collective, in plan order among the launches: ``input`` reduced over
    the ``world`` ranks of the process group (``reduction`` ``mean`` or
    ``sum``) into ``output``, every rank receiving the result. ``args`` are
    the two tensors, input then output (the same name: in place). No kernel,
    no grid: the runtime runs it through torch.distributed."""

    collective: str
    reduction: str
    world: int
    args: tuple[Arg, Arg]
    sources: tuple[SourceSpec, ...] = ()
    """Provenance: the ``graph.all_reduce`` it implements."""
    phase: str = ""
    """In a training plan, one of `PHASES`; empty in an inference plan."""

    @property
    def input(self) -> str:
        return self.args[0].tensor or ""

    @property
    def output(self) -> str:
        return self.args[1].tensor or ""

    @property
    def in_place(self) -> bool:
        """Whether the output is the input's tensor (reduced where it lies)."""
        return self.input == self.output

    def where(self) -> str:
        """The graph op it implements, with its location: for messages."""
        if not self.sources:
            return f"a {self.collective}"
        return ", ".join(f"{s.op} at {s.loc}" if s.loc else s.op for s in self.sources)


PlanLaunch = LaunchSpec | CollectiveSpec
"""An entry of a plan's launches: a kernel launch or a collective."""


@dataclass(frozen=True)
class Plan:
    """A whole launch plan (see docs/plan.md)."""

    function: str
    inputs: tuple[TensorSpec, ...]
    weights: tuple[WeightSpec, ...]
    params: tuple[ParamSpec, ...]
    buffers: tuple[TensorSpec, ...]
    kernels: tuple[KernelSpec, ...]
    launches: tuple[PlanLaunch, ...]
    outputs: tuple[str, ...]
    views: tuple[ViewSpec, ...] = ()
    roles: tuple[tuple[str, str], ...] = ()
    """Per output, ``(role, weight)`` (see `ROLES`), ``("", "")`` for a user
    result; empty when no output has a role (an inference plan)."""
    arena: str = "0"
    """The bytes of the one arena that holds every buffer (an expression of ``B``)."""
    memory: str = "naive"
    """The strategy that placed the buffers (`teeny_ir.backend.memory.STRATEGIES`)."""

    def role(self, index: int) -> tuple[str, str]:
        """Output ``index``'s ``(role, weight)``; ``("", "")`` for a user result."""
        return self.roles[index] if self.roles else ("", "")

    def collectives(self) -> list[tuple[int, CollectiveSpec]]:
        """(launch index, collective) of every collective, in plan order."""
        return [(i, c) for i, c in enumerate(self.launches) if isinstance(c, CollectiveSpec)]

    @property
    def world(self) -> int:
        """The number of ranks the plan's collectives run over (the loader
        checks that they agree); 1 without collectives."""
        return max((c.world for _, c in self.collectives()), default=1)

    def to_json(self) -> dict[str, Any]:
        def tensor(t: TensorSpec | WeightSpec | ParamSpec) -> dict[str, Any]:
            dtype = t.dtype if isinstance(t, TensorSpec) else "f32"
            return {"name": t.name, "shape": list(t.shape), "dtype": dtype}

        def kernel(k: KernelSpec) -> dict[str, Any]:
            data: dict[str, Any] = {"name": k.name, "family": k.family, "file": k.file}
            data |= {"constexprs": dict(k.constexprs), "source_sha256": k.source_sha256}
            if k.compiled:
                data["compiled"] = [c.to_json() for c in k.compiled]
            if k.precision != DEFAULT_PRECISION:
                data["precision"] = k.precision
            return data

        def launch(entry: PlanLaunch) -> dict[str, Any]:
            if isinstance(entry, CollectiveSpec):
                return {
                    "collective": entry.collective,
                    "reduction": entry.reduction,
                    "world": entry.world,
                    "args": [{"tensor": a.tensor} for a in entry.args],
                    "sources": [source.to_json() for source in entry.sources],
                } | ({"phase": entry.phase} if entry.phase else {})
            args = [
                {"tensor": a.tensor} if a.tensor is not None else {"expr": a.expr}
                for a in entry.args
            ]
            return {
                "kernel": entry.kernel,
                "grid": list(entry.grid),
                "num_warps": entry.num_warps,
                "num_stages": entry.num_stages,
                "args": args,
                "sources": [source.to_json() for source in entry.sources],
            } | (
                {"phase": entry.phase, "gradients": list(entry.gradients)} if entry.phase else {}
            )

        def view(v: ViewSpec) -> dict[str, Any]:
            return {
                "name": v.name,
                "shape": list(v.shape),
                "dtype": "f32",
                "base": v.base,
                "offset": v.offset,
                "batch_stride": v.batch_stride,
                "sources": [source.to_json() for source in v.sources],
            }

        return {
            "format": FORMAT,
            "version": VERSION,
            "function": self.function,
            "inputs": [tensor(t) for t in self.inputs],
            "weights": [
                tensor(w) | ({"zero_default": True} if w.zero_default else {})
                for w in self.weights
            ],
            "params": [tensor(p) | {"derivation": p.derivation.to_json()} for p in self.params],
            "buffers": [tensor(t) | {"offset": t.offset} for t in self.buffers],
            "arena": self.arena,
            "memory": self.memory,
            "views": [view(v) for v in self.views],
            "kernels": [kernel(k) for k in self.kernels],
            "launches": [launch(entry) for entry in self.launches],
            "outputs": [
                {"tensor": name}
                | (dict(zip(("role", "of"), self.role(i), strict=True)) if self.role(i)[0] else {})
                for i, name in enumerate(self.outputs)
            ],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Plan:
        """Build from JSON that has passed `SCHEMA` (raises PlanError on a bad derivation)."""

        def tensor(t: Mapping[str, Any]) -> TensorSpec:
            return TensorSpec(
                t["name"],
                tuple(d if isinstance(d, str) else int(d) for d in t["shape"]),
                t["dtype"],
                t.get("offset", ""),
            )

        def param(p: Mapping[str, Any]) -> ParamSpec:
            try:
                derivation = Derivation.from_json(p["derivation"])
            except DerivationError as err:
                raise PlanError(f"param '{p['name']}': {err}") from None
            return ParamSpec(p["name"], tuple(int(d) for d in p["shape"]), derivation)

        def kernel(k: Mapping[str, Any]) -> KernelSpec:
            compiled = tuple(CompiledSpec(**c) for c in k.get("compiled", ()))
            constexprs = dict(sorted(k["constexprs"].items()))
            return KernelSpec(
                k["name"],
                k["family"],
                k["file"],
                constexprs,
                k["source_sha256"],
                compiled,
                k.get("precision", DEFAULT_PRECISION),
            )

        def sources(entries: Any) -> tuple[SourceSpec, ...]:
            return tuple(SourceSpec(s["op"], s.get("loc", "")) for s in entries)

        def launch(entry: Mapping[str, Any]) -> PlanLaunch:
            if "collective" in entry:
                first, second = (Arg(a["tensor"]) for a in entry["args"])
                return CollectiveSpec(
                    entry["collective"],
                    entry["reduction"],
                    entry["world"],
                    (first, second),
                    sources(entry["sources"]),
                    entry.get("phase", ""),
                )
            args = tuple(Arg(a.get("tensor"), a.get("expr")) for a in entry["args"])
            grid = (entry["grid"][0], entry["grid"][1], entry["grid"][2])
            return LaunchSpec(
                entry["kernel"],
                grid,
                entry["num_warps"],
                entry["num_stages"],
                args,
                sources(entry["sources"]),
                entry.get("phase", ""),
                tuple(entry.get("gradients", ())),
            )

        def view(v: Mapping[str, Any]) -> ViewSpec:
            shape = tuple(d if isinstance(d, str) else int(d) for d in v["shape"])
            return ViewSpec(
                v["name"], shape, v["base"], v["offset"], v["batch_stride"], sources(v["sources"])
            )

        return cls(
            function=data["function"],
            inputs=tuple(tensor(t) for t in data["inputs"]),
            weights=tuple(
                WeightSpec(
                    w["name"], tuple(int(d) for d in w["shape"]), bool(w.get("zero_default"))
                )
                for w in data["weights"]
            ),
            params=tuple(param(p) for p in data["params"]),
            buffers=tuple(tensor(t) for t in data["buffers"]),
            kernels=tuple(kernel(k) for k in data["kernels"]),
            launches=tuple(launch(entry) for entry in data["launches"]),
            outputs=tuple(o["tensor"] for o in data["outputs"]),
            views=tuple(view(v) for v in data["views"]),
            roles=(
                tuple((o.get("role", ""), o.get("of", "")) for o in data["outputs"])
                if any("role" in o for o in data["outputs"])
                else ()
            ),
            arena=data["arena"],
            memory=data["memory"],
        )


def plan_text(plan: Plan) -> str:
    """The canonical, deterministic text of ``plan.json``."""
    return json.dumps(plan.to_json(), sort_keys=True, indent=2) + "\n"


def write_plan(directory: str | Path, plan: Plan) -> None:
    """Write ``DIR/plan.json`` (the kernel files are the emitter's to write)."""
    Path(directory, "plan.json").write_text(plan_text(plan), encoding="utf-8")


def sha256_of(path: str | Path, limit: int = CUBIN_BYTES) -> str:
    """The sha256 of a regular file of at most ``limit`` bytes (raises OSError)."""
    return hashlib.sha256(read_regular(path, limit)).hexdigest()


def load_plan(directory: str | Path) -> Plan:
    """Read and validate ``DIR/plan.json`` and the files it names (raises PlanError)."""
    from teeny_ir.backend.schema_check import fits_schema

    root = Path(directory)
    try:
        text = read_regular(root / "plan.json", PLAN_JSON_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise PlanError(
            f"cannot read '{root / 'plan.json'}': {getattr(err, 'strerror', None) or err}"
        ) from None
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as err:
        raise PlanError(f"'{root / 'plan.json'}' is not valid JSON: {err}") from None
    version = data.get("version") if isinstance(data, dict) else None
    if (
        isinstance(data, dict)
        and data.get("format") == FORMAT
        and isinstance(version, int)
        and not isinstance(version, bool)
        and version != VERSION
    ):
        raise PlanError(
            f"plan.json is plan version {version}, but this teeny_ir reads version {VERSION} "
            "(emit the plan again with this teeny_ir)"
        )
    # The compiled check passes only what jsonschema passes; where it does not,
    # jsonschema says what is wrong and where.
    error = None
    if not fits_schema(data):
        import jsonschema

        error = _branch_error(
            jsonschema.exceptions.best_match(
                jsonschema.Draft202012Validator(SCHEMA).iter_errors(data)
            )
        )
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        message = error.message if len(error.message) <= 200 else error.message[:200] + "..."
        raise PlanError(f"plan.json does not match the plan schema at {where}: {message}")
    plan = Plan.from_json(data)
    _check_semantics(plan, root)
    return plan


def _branch_error(error: Any) -> Any:
    """For a launches entry that fits neither a kernel launch nor a collective
    (a ``oneOf``), the best error of the branch it means to be: a collective
    when it has a ``collective`` key, else a launch."""
    import jsonschema

    while error is not None and error.validator == "oneOf" and error.context:
        instance = error.instance
        branch = 1 if isinstance(instance, dict) and "collective" in instance else 0
        errors = [e for e in error.context if e.relative_schema_path[0] == branch]
        if not errors:
            break
        error = jsonschema.exceptions.best_match(errors)
    return error


def _reject_constant(name: str) -> None:
    raise ValueError(f"'{name}' is not a number in a plan")


_POINTER_REFS = {
    "input": ("input", "buffer", "view", "param"),
    "param": ("param",),
    "output": ("buffer", "view"),
}
"""ABI pointer kind -> the plan tensors it may refer to."""


def _static_image(shape: tuple[int | str, ...]) -> int | None:
    """Elements of one image (``shape[1:]``), or None if one is symbolic."""
    sizes = shape[1:]
    if not all(isinstance(d, int) for d in sizes):
        return None
    return math.prod(int(d) for d in sizes)


def _check_views(plan: Plan, kinds: dict[str, str]) -> dict[str, tuple[str, int, int]]:
    """Each view's images lie inside its base's (an input or a buffer; so, for
    every batch, inside the base): a channel slice or a reshape of each image. Returns name -> (base,
    first, end): the element interval of the image it covers; a buffer or an
    input covers its whole image."""
    regions: dict[str, tuple[str, int, int]] = {}
    buffers = {spec.name: spec for spec in (*plan.inputs, *plan.buffers)}
    for spec in (*plan.inputs, *plan.buffers):
        image = _static_image(spec.shape)  # None: a symbol the expression check refuses
        regions[spec.name] = (spec.name, 0, 1 if image is None else image)
    for view in plan.views:
        where = f"view '{view.name}'"
        if view.name in kinds:
            raise PlanError(f"tensor '{view.name}' is defined twice")
        kinds[view.name] = "view"
        base = buffers.get(view.base)
        if base is None:
            raise PlanError(
                f"{where} has base '{view.base}', which is not an input or a buffer of the plan"
            )
        image, base_image = _static_image(view.shape), _static_image(base.shape)
        if image is None or base_image is None or not view.shape or view.shape[0] != base.shape[0]:
            raise PlanError(
                f"{where} {list(view.shape)} does not keep the batch of '{view.base}' "
                f"{list(base.shape)} with static images"
            )
        if view.batch_stride != base_image:
            raise PlanError(
                f"{where} has batch stride {view.batch_stride}, but an image of "
                f"'{view.base}' holds {base_image} elements"
            )
        if view.offset + image > base_image:
            raise PlanError(
                f"{where} covers elements [{view.offset}, {view.offset + image}) of each "
                f"image of '{view.base}', which holds {base_image}"
            )
        regions[view.name] = (view.base, view.offset, view.offset + image)
    return regions


def _covered(region: tuple[str, int, int], written: Mapping[str, list[tuple[int, int]]]) -> bool:
    """Whether the intervals written into the region's base cover it."""
    base, first, end = region
    position = first
    for start, stop in sorted(written.get(base, ())):
        if start > position:
            break
        position = max(position, stop)
        if position >= end:
            return True
    return position >= end


def _check_semantics(plan: Plan, root: Path) -> None:
    kinds: dict[str, str] = {}
    for kind, specs in (("input", plan.inputs), ("param", plan.params), ("buffer", plan.buffers)):
        for spec in specs:
            if spec.name in kinds:
                raise PlanError(f"tensor '{spec.name}' is defined twice")
            kinds[spec.name] = kind
    regions = _check_views(plan, kinds)
    dtypes = {spec.name: spec.dtype for spec in (*plan.inputs, *plan.buffers)}
    uses_batch = False
    tensors: list[TensorSpec | ViewSpec] = [*plan.inputs, *plan.buffers, *plan.views]
    for tensor in tensors:
        for dim in tensor.shape:
            if isinstance(dim, str):
                uses_batch |= _check_expr(dim, f"shape of '{tensor.name}'")
    weight_shapes: dict[str, tuple[int, ...]] = {}
    for weight in plan.weights:
        if weight.name in weight_shapes:
            raise PlanError(f"weight {weight.name!r} is listed twice")
        weight_shapes[weight.name] = weight.shape
    for param in plan.params:
        if param.derivation.shape != param.shape:
            raise PlanError(
                f"param '{param.name}' has shape {list(param.shape)} but its derivation "
                f"gives {list(param.derivation.shape)}"
            )
        problems = param.derivation.check_sources(weight_shapes)
        if problems:
            raise PlanError(
                f"param '{param.name}' does not fit the weight table: {'; '.join(problems)}"
            )
    kernels = {kernel.name: kernel for kernel in plan.kernels}
    if len(kernels) != len(plan.kernels):
        raise PlanError("two kernels have the same name")
    for kernel in plan.kernels:
        _check_kernel(kernel, root)
    written: dict[str, list[tuple[int, int]]] = {
        spec.name: [regions[spec.name][1:]] for spec in plan.inputs
    }
    shapes = tensor_shapes(plan)
    for index, launch in enumerate(plan.launches):
        if isinstance(launch, CollectiveSpec):
            _check_collective(plan, index, launch, kinds, dtypes, shapes, regions, written)
            continue
        where = f"launch {index} ('{launch.kernel}')"
        if launch.kernel not in kernels:
            raise PlanError(f"{where} names no kernel of the plan")
        family = FAMILIES[kernels[launch.kernel].family]
        for axis in launch.grid:
            uses_batch |= _check_expr(axis, f"{where} grid")
        if len(launch.args) != len(family.args):
            raise PlanError(
                f"{where} passes {len(launch.args)} arguments; family '{family.name}' takes "
                f"{len(family.args)} ({', '.join(a.name for a in family.args)})"
            )
        outputs: list[str] = []
        for abi, arg in zip(family.args, launch.args, strict=True):
            what = f"{where} argument '{abi.name}' ({abi.kind})"
            if abi.kind not in _POINTER_REFS:
                if arg.expr is None:
                    raise PlanError(f"{what} must be an expression, got tensor '{arg.tensor}'")
                uses_batch |= _check_expr(arg.expr, what)
                continue
            if arg.tensor is None:
                raise PlanError(f"{what} must be a tensor, got expression '{arg.tensor}'")
            if arg.tensor not in kinds:
                raise PlanError(f"{what} refers to undefined tensor '{arg.tensor}'")
            kind = kinds[arg.tensor]
            if kind not in _POINTER_REFS[abi.kind]:
                allowed = " or ".join(_POINTER_REFS[abi.kind])
                raise PlanError(f"{what} must refer to: {allowed}; got {kind} '{arg.tensor}'")
            dtype, wanted = dtypes.get(arg.tensor, "f32"), element_type_of(abi.dtype)
            if dtype != wanted:
                raise PlanError(f"{what} takes {wanted}, got {dtype} tensor '{arg.tensor}'")
            if (
                abi.kind == "input"
                and kind in ("buffer", "view")
                and not _covered(regions[arg.tensor], written)
            ):
                raise PlanError(
                    f"{what} reads {kind} '{arg.tensor}' before launches have written all of it"
                )
            if abi.kind == "output":
                outputs.append(arg.tensor)
        for name in outputs:
            base, first, end = regions[name]
            written.setdefault(base, []).append((first, end))
    for name in plan.outputs:
        if kinds.get(name) not in ("input", "buffer", "view") or (
            kinds[name] != "input" and not _covered(regions[name], written)
        ):
            raise PlanError(
                f"output '{name}' is not an input, or a buffer or view written by launches"
            )
    _check_roles(plan, weight_shapes)
    _check_phases(plan)
    _check_world(plan)
    _check_memory(plan)
    batch_inputs = [t for t in plan.inputs if any(is_batch_dim(d) for d in t.shape)]
    if uses_batch and not batch_inputs:
        raise PlanError(f"the plan uses '{BATCH}' but no input has a '{BATCH}' dimension")
    for index, launch in enumerate(plan.launches):
        if isinstance(launch, CollectiveSpec):
            continue
        try:
            validator.validate(launch_contract(plan, kernels[launch.kernel], launch, shapes))
        except validator.ContractError as err:
            raise PlanError(f"launch {index} ('{launch.kernel}'): {err}") from None


_COLLECTIVE_REFS = (("input", ("input", "param", "buffer", "view")), ("output", ("buffer",)))
"""A collective's two tensors, by position: what each may refer to."""


def _check_collective(
    plan: Plan,
    index: int,
    collective: CollectiveSpec,
    kinds: Mapping[str, str],
    dtypes: Mapping[str, str],
    shapes: Mapping[str, tuple[int | str, ...]],
    regions: Mapping[str, tuple[str, int, int]],
    written: dict[str, list[tuple[int, int]]],
) -> None:
    """One collective: its input (an input, a parameter, a buffer, or a
    contiguous view of one, written before it) and its output (a buffer: the
    input's own in place), f32 tensors of one static shape. Records the
    output as written."""
    where = f"launch {index} ({collective.collective} of {collective.where()})"
    views = {view.name: view for view in plan.views}
    for (role, allowed), arg in zip(_COLLECTIVE_REFS, collective.args, strict=True):
        name = arg.tensor or ""
        kind = kinds.get(name)
        if kind is None:
            raise PlanError(f"{where} {role} refers to undefined tensor '{name}'")
        if kind not in allowed:
            raise PlanError(
                f"{where} {role} must refer to: {' or '.join(allowed)}; got {kind} '{name}'"
            )
        if dtypes.get(name, "f32") != "f32":
            raise PlanError(f"{where} {role} takes f32, got {dtypes[name]} tensor '{name}'")
        shape = shapes[name]
        if not all(isinstance(d, int) for d in shape):
            raise PlanError(
                f"{where} {role} '{name}' has shape {list(shape)}: a collective's tensors are "
                "static (every rank holds one of the same shape)"
            )
        view = views.get(name)
        if view is not None and not _contiguous(view):
            raise PlanError(f"{where} {role} '{name}' is a strided view; a collective needs one run")
    source, target = collective.input, collective.output
    if shapes[source] != shapes[target]:
        raise PlanError(
            f"{where} reduces '{source}' {list(shapes[source])} into '{target}' "
            f"{list(shapes[target])}: the shapes differ"
        )
    if kinds[source] in ("buffer", "view") and not _covered(regions[source], written):
        raise PlanError(f"{where} reads {kinds[source]} '{source}' before launches have written it")
    base, first, end = regions[target]
    written.setdefault(base, []).append((first, end))


def _check_world(plan: Plan) -> None:
    """The collectives of one plan run on one process group: one world size."""
    worlds = sorted({c.world for _, c in plan.collectives()})
    if len(worlds) > 1:
        raise PlanError(
            f"the plan's collectives are built for different numbers of ranks "
            f"({', '.join(map(str, worlds))}); one plan runs on one process group"
        )


def launch_name(entry: PlanLaunch) -> str:
    """A launch's kernel, or a collective's kind (``all_reduce``): for messages."""
    return entry.collective if isinstance(entry, CollectiveSpec) else entry.kernel


def _check_memory(plan: Plan) -> None:
    """The memory plan, for every ``B >= 1``: the arena and each offset are affine
    in ``B``, each offset a multiple of `memory.ALIGNMENT`, each buffer inside the
    arena, and no two buffers live across one launch share a byte. For affine
    ``f``, ``f(B) >= 0`` for every ``B >= 1`` exactly when ``f(1) >= 0`` and its
    ``B`` coefficient is ``>= 0``: each inequality is checked that way."""

    def at_least(lower: memory.Affine, upper: memory.Affine) -> bool:
        """``lower(B) <= upper(B)`` for every ``B >= 1``."""
        return lower.at(1) <= upper.at(1) and lower.per_batch <= upper.per_batch

    try:
        arena = memory.affine(plan.arena)
    except memory.MemoryPlanError as err:
        raise PlanError(f"the arena {err}") from None
    extents: dict[str, tuple[memory.Affine, memory.Affine]] = {}
    for buffer in plan.buffers:
        where = f"buffer '{buffer.name}'"
        try:
            offset = memory.affine(buffer.offset)
            size = memory.buffer_bytes(buffer)
        except memory.MemoryPlanError as err:
            raise PlanError(f"{where} offset: {err}") from None
        if offset.per_batch % memory.ALIGNMENT or offset.constant % memory.ALIGNMENT:
            raise PlanError(
                f"{where} has offset '{buffer.offset}', which is not a multiple of "
                f"{memory.ALIGNMENT} bytes for every {BATCH}"
            )
        end = offset + size
        if not at_least(memory.Affine(0, 0), offset) or not at_least(end, arena):
            raise PlanError(
                f"{where} at offset '{buffer.offset}' with {size.text()} bytes does not lie "
                f"inside the arena of '{plan.arena}' bytes for every {BATCH} >= 1"
            )
        extents[buffer.name] = (offset, end)
    # (start and end at B = 1, their B coefficients): the pairs are many (every
    # two buffers live at once), so the test is on plain ints.
    numbers = {
        name: (start.at(1), end.at(1), start.per_batch, end.per_batch)
        for name, (start, end) in extents.items()
    }
    for one, other, index in memory.overlapping_pairs(memory.intervals(plan)):
        s1, e1, sb, eb = numbers[one]
        t1, f1, tb, fb = numbers[other]
        if (e1 <= t1 and eb <= tb) or (f1 <= s1 and fb <= sb):
            continue
        (start, end), (other_start, other_end) = extents[one], extents[other]
        overlaps = [b for b in (1, 2, 1 << 20) if start.at(b) < other_end.at(b)]
        batch = next((b for b in overlaps if other_start.at(b) < end.at(b)), 1)
        launch = launch_name(plan.launches[index]) if index < len(plan.launches) else "none"
        raise PlanError(
            f"buffers '{one}' (offset '{start.text()}', bytes up to '{end.text()}') and "
            f"'{other}' (offset '{other_start.text()}', bytes up to '{other_end.text()}') "
            f"overlap in the arena (at {BATCH}={batch}) while both are live at launch "
            f"{index} ('{launch}')"
        )


def check_layout(plan: Plan, layout: memory.Layout) -> None:
    """The memory proof at one batch size, for the placement a run there uses
    (`memory.layout`): an offset for exactly the plan's buffers, each a
    multiple of `memory.ALIGNMENT`, each buffer inside the arena at
    ``layout.batch``, and no two buffers live across one launch sharing a
    byte. At a known batch every extent is a plain interval of bytes: a sweep
    in order of offset meets each pair of buffers whose bytes intersect, and
    their lifetimes must not (the sweep is not the planner's, so a planner
    bug cannot hide in it). Raises PlanError."""
    batch = layout.batch
    names = [buffer.name for buffer in plan.buffers]
    if sorted(layout.offsets) != sorted(names):
        raise PlanError(
            f"the memory layout at {BATCH}={batch} places "
            f"{sorted(set(layout.offsets) ^ set(names))} but the plan's buffers are others"
        )
    spans: dict[str, tuple[int, int]] = {}
    for buffer in plan.buffers:
        start = layout.offsets[buffer.name]
        end = start + memory.buffer_bytes(buffer).at(batch)
        if start % memory.ALIGNMENT:
            raise PlanError(
                f"buffer '{buffer.name}' has offset {start} at {BATCH}={batch}, which is not "
                f"a multiple of {memory.ALIGNMENT} bytes"
            )
        if start < 0 or end > layout.arena:
            raise PlanError(
                f"buffer '{buffer.name}' at offset {start} with {end - start} bytes does not "
                f"lie inside the arena of {layout.arena} bytes at {BATCH}={batch}"
            )
        spans[buffer.name] = (start, end)
    live = memory.intervals(plan)
    active: list[str] = []  # buffers whose bytes reach past the current offset
    for name in sorted(names, key=lambda n: spans[n]):
        start, end = spans[name]
        active = [other for other in active if spans[other][1] > start]
        first, last = live[name]
        for other in active:
            since, until = live[other]
            if since <= last and first <= until:
                index = max(first, since)
                launch = launch_name(plan.launches[index]) if index < len(plan.launches) else "none"
                raise PlanError(
                    f"buffers '{other}' (bytes {spans[other][0]} to {spans[other][1]}) and "
                    f"'{name}' (bytes {start} to {end}) overlap in the arena at {BATCH}={batch} "
                    f"while both are live at launch {index} ('{launch}')"
                )
        active.append(name)


def _check_roles(plan: Plan, weight_shapes: Mapping[str, tuple[int, ...]]) -> None:
    """A training plan's output roles: one per output, each naming a weight of
    the table, each (role, weight) once."""
    if not plan.roles:
        return
    if len(plan.roles) != len(plan.outputs):
        raise PlanError(f"{len(plan.roles)} output roles for {len(plan.outputs)} outputs")
    seen: set[tuple[str, str]] = set()
    for index, (role, weight) in enumerate(plan.roles):
        if not role:
            continue
        if weight not in weight_shapes:
            raise PlanError(f"output {index} is the {role} of '{weight}', which is no weight")
        if (role, weight) in seen:
            raise PlanError(f"two outputs are the {role} of '{weight}'")
        seen.add((role, weight))


def _check_phases(plan: Plan) -> None:
    """Launch phases: all or none; a forward launch's gradients name backward launches."""
    phased = [bool(launch.phase) for launch in plan.launches]
    if any(phased) and not all(phased):
        raise PlanError("some launches have a phase and some do not")
    for index, launch in enumerate(plan.launches):
        if isinstance(launch, CollectiveSpec):
            continue  # a collective lists no gradients
        if launch.gradients and launch.phase != "forward":
            raise PlanError(f"launch {index} is no forward launch but lists gradients")
        for other in launch.gradients:
            if other >= len(plan.launches) or plan.launches[other].phase != "backward":
                raise PlanError(
                    f"launch {index} lists launch {other} as a gradient, which is no "
                    "backward launch of the plan"
                )


def tensor_shapes(plan: Plan) -> dict[str, tuple[int | str, ...]]:
    """Every tensor a launch may bind (inputs, parameters, buffers, views), by name."""
    shapes: dict[str, tuple[int | str, ...]] = {}
    for spec in (*plan.inputs, *plan.buffers):
        shapes[spec.name] = spec.shape
    for view in plan.views:
        shapes[view.name] = view.shape
    for param in plan.params:
        shapes[param.name] = param.shape
    return shapes


def _check_kernel(kernel: KernelSpec, root: Path) -> None:
    family = FAMILIES.get(kernel.family)
    if family is None:
        raise PlanError(
            f"kernel '{kernel.name}' has unknown family '{kernel.family}' "
            f"(known: {', '.join(sorted(FAMILIES))})"
        )
    try:
        validator.check_constexprs(family, kernel.constexprs)
    except validator.ContractError as err:
        raise PlanError(f"kernel '{kernel.name}': {err}") from None
    source = _check_file(
        root, kernel.file, kernel.source_sha256, f"kernel '{kernel.name}' file", KERNEL_SOURCE_BYTES
    )
    _check_rendering(root, kernel, family, source)
    for compiled in kernel.compiled:
        _check_file(
            root,
            compiled.cubin,
            compiled.cubin_sha256,
            f"kernel '{kernel.name}' sm{compiled.arch} cubin",
            CUBIN_BYTES,
        )


def launch_contract(
    plan: Plan,
    kernel: KernelSpec,
    launch: LaunchSpec,
    shapes: Mapping[str, tuple[int | str, ...]] | None = None,
) -> validator.LaunchContract:
    """A plan launch as the one contract validator sees it (tensors by plan name)."""
    family = FAMILIES[kernel.family]
    if shapes is None:
        shapes = tensor_shapes(plan)
    args = tuple(
        (abi.name, arg.tensor if arg.tensor is not None else arg.expr or "")
        for abi, arg in zip(family.args, launch.args, strict=True)
    )
    bound = {arg.tensor for arg in launch.args if arg.tensor is not None}
    return validator.LaunchContract(
        family.name,
        tuple(sorted(kernel.constexprs.items())),
        args,
        tuple(sorted((name, tuple(shapes[name])) for name in bound)),
        tuple(launch.grid),
        launch.num_warps,
        launch.num_stages,
        tuple(
            sorted(
                (v.name, v.batch_stride)
                for v in plan.views
                if v.name in bound and not _contiguous(v)
            )
        ),
    )


def _contiguous(view: ViewSpec) -> bool:
    """A view whose images are back to back (a reshape of a contiguous tensor)."""
    return view.batch_stride == _static_image(view.shape)


def check_at_batch(plan: Plan, batch: int) -> None:
    """Prove every launch again at the run's actual ``batch`` (which may exceed
    the 1..64 proven at load time); raises PlanError."""
    kernels = {kernel.name: kernel for kernel in plan.kernels}
    for index, launch in enumerate(plan.launches):
        if isinstance(launch, CollectiveSpec):
            continue  # static tensors: proven at load time for every batch
        contract = launch_contract(plan, kernels[launch.kernel], launch)
        try:
            validator.validate(contract, (batch,))
        except validator.ContractError as err:
            raise PlanError(f"launch {index} ('{launch.kernel}'): {err}") from None


def _check_rendering(root: Path, kernel: KernelSpec, family: KernelFamily, source: bytes) -> None:
    """The kernel file is a regular file (no symlink) and ``source``, what it
    holds, is exactly what rendering the family's source with the kernel's
    constexprs gives (a hash alone could be recomputed by whoever edited the
    file)."""
    path = root / kernel.file
    if path.is_symlink() or not path.is_file():
        raise PlanError(f"kernel '{kernel.name}' file '{kernel.file}' is not a regular file")
    try:
        expected = render(family, kernel.name, kernel.constexprs, kernel.precision).encode("utf-8")
    except RenderError as err:
        raise PlanError(f"kernel '{kernel.name}' cannot be rendered: {err}") from None
    if source != expected:
        raise PlanError(
            f"kernel '{kernel.name}' file '{kernel.file}' differs from the rendering of "
            f"family '{family.name}' with its constexprs (edited, or from another teeny_ir)"
        )


def _check_file(root: Path, relative: str, sha256: str, what: str, limit: int) -> bytes:
    """The bytes of the file at ``relative`` inside ``root``, a regular file of
    at most ``limit`` bytes whose sha256 is ``sha256``."""
    path = PurePosixPath(relative)
    if path.is_absolute() or ".." in path.parts or "\\" in relative or "\0" in relative:
        raise PlanError(f"{what} '{relative}' must be a relative path inside the plan directory")
    resolved = (root / path).resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise PlanError(f"{what} '{relative}' resolves outside the plan directory")
    try:
        data = read_regular(resolved, limit)
    except OSError as err:
        raise PlanError(f"{what} '{relative}' cannot be read: {err.strerror or err}") from None
    actual = hashlib.sha256(data).hexdigest()
    if actual != sha256:
        raise PlanError(f"{what} '{relative}' has sha256 {actual}, but the plan records {sha256}")
    return data


def _check_expr(text: str, what: str) -> bool:
    """Check an expression of the shape grammar over ``B``; True when it uses ``B``."""
    try:
        used = symbols(parse(text))
    except ExpressionError as err:
        raise PlanError(f"{what}: {err}") from None
    if used - {BATCH}:
        raise PlanError(
            f"{what}: '{text}' uses {sorted(used - {BATCH})}; only '{BATCH}' is allowed"
        )
    return bool(used)


def is_batch_dim(dim: int | str) -> bool:
    """Whether a shape entry is exactly the batch symbol (it binds ``B`` at run time)."""
    if not isinstance(dim, str):
        return False
    try:
        return parse(dim) == parse(BATCH)
    except ExpressionError:
        return False
