"""Kernel-test cases, one interpreter run for many of them, and the check of a run.

A `Case` is one launch of a kernel family in Triton's interpreter: the family,
its constexprs, its ABI arguments in order (an array for a pointer, an int for
a dim, ``("output", numel[, "i64"])`` for a result buffer), the grid, the
padding, and what each output must hold afterwards (``expected``, by ABI name,
NaN where nothing may be written). `run_cases` renders every kernel variant the
cases need (once each, with a case's ``mutation`` applied to show a check is
not vacuous) and runs all of them in one `teeny_ir.testing.kernel_harness`
process: ``TRITON_INTERPRET`` is read when triton is imported, so the test
process, which may compile kernels for real, never imports triton in
interpreter mode.

The harness passes each array as a view into a buffer with ``pad`` elements of
padding on each side: inputs are padded with NaN (an unmasked read past the
view poisons the result) or, for int64 inputs, with `I64_PAD` (an index far out
of range); outputs start as NaN in the view (an element the kernel never
writes stays NaN; `I64_UNWRITTEN` for int64 ones) and `CANARY` in the padding
(`I64_CANARY`): the interpreter does not bounds-check, so a write past the view
lands there. `problems` reads a run back: overwritten canaries, elements never
written (or computed from a NaN read), elements written where they must stay
NaN (the gaps of a batch-strided view, an unused output), infinities lost, and
the finite values against the reference under the tolerance rule
(`teeny_ir.testing.compare`), or bit for bit when the case's ``tol`` is 0 (a
copy keeps the sign of zero).

`lowered` builds the launch of a one-op graph with its family's lowering rule
(`lower_op`, the one place the tests call the lowering facet), `launch_case`
binds such a launch at a batch into a `Case` (inputs in batch-strided views
where asked, dims evaluated, parameter slots derived from weights), and
`channel_slice` lays an array out as a channel slice of a larger NaN-filled
buffer, as a split's part or a concat's input is. An output written in place
(`Case.aliases`) and a raw harness run of any kernel file (`run_specs`, a probe
of a helper) are the harness's too.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from teeny_ir.core import derivations, expressions
from teeny_ir.kernels import validator
from teeny_ir.kernels.contract import POINTER_KINDS, KernelFamily
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.render import render
from teeny_ir.testing import compare

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Operation

    from dialects.kernel import LaunchOp

__all__ = [
    "CANARY",
    "HARNESS_MODULE",
    "I64_CANARY",
    "I64_PAD",
    "I64_UNWRITTEN",
    "Case",
    "Results",
    "View",
    "channel_slice",
    "evaluate",
    "launch_case",
    "lower_op",
    "lowered",
    "problems",
    "run_cases",
    "run_specs",
    "tile_grid",
]

CANARY = 1234.5
"""The value in a float output's padding; any other value there means corruption."""
I64_CANARY = -777_777_777
"""The padding of an i64 output (a status)."""
I64_UNWRITTEN = -555_555_555
"""What an i64 output holds before the kernel writes it."""
I64_PAD = 1 << 40
"""The padding of an i64 input (class indices): read unmasked, it is out of range."""
HARNESS_MODULE = "teeny_ir.testing.kernel_harness"

View = tuple[int, int]
"""A batch-strided view: (the enclosing buffer's channels, the view's first channel)."""
Results = dict[str, np.ndarray]
"""Each output's whole padded buffer after a run, by ``"<case id>/<ABI name>"``."""


@dataclass
class Case:
    """One launch of ``family`` and what its outputs must hold afterwards."""

    id: str
    family: str
    constexprs: dict[str, int | str]
    args: list[tuple[str, Any]]
    """Every ABI argument in order: an ndarray (a pointer's data, flat), an int (a
    dim), or ``("output", numel)`` / ``("output", numel, "i64")``."""
    grid: int | tuple[int, ...]
    """Programs on each axis (an int: axis 0 alone)."""
    pad: int
    """Elements of padding on each side of every array and output."""
    expected: dict[str, np.ndarray] = field(default_factory=dict)
    """Output ABI name -> what its view must hold (NaN: must stay NaN, unwritten)."""
    tensors: dict[str, tuple[tuple[int, ...], int]] = field(default_factory=dict)
    """Each pointer's tensor for `contract`: its shape and its batch stride."""
    num_warps: int = 4
    num_stages: int = 1
    tol: float | None = 0.0
    """The tolerance of the finite values (0.0: bit for bit; None: the test checks
    the numbers itself, `problems` only the rest)."""
    mutation: tuple[str, str] | None = None
    """(text, replacement), once in the rendered source: run a mutant of the
    family's kernel (a check of the checks)."""
    aliases: dict[str, str] = field(default_factory=dict)
    """Output pointer -> the input pointer whose buffer it writes in place (as
    the compiled trainer binds an update's outputs); that input is then padded
    with canaries, and its buffer after the run is the output's result."""
    spec: Any = None
    """What the test built the case from (its geometry), for its own coverage checks."""

    def grid3(self) -> tuple[int, int, int]:
        """The grid with all three axes."""
        axes = (self.grid,) if isinstance(self.grid, int) else tuple(self.grid)
        assert 1 <= len(axes) <= 3, (self.id, self.grid)
        padded = (*axes, 1, 1)[:3]
        return int(padded[0]), int(padded[1]), int(padded[2])

    def arg(self, name: str) -> Any:
        """The value of ABI argument ``name``."""
        return dict(self.args)[name]

    def got(self, results: Results, name: str) -> np.ndarray:
        """Output ``name``'s view after the run (its padding cut off)."""
        buffer = results[f"{self.id}/{name}"]
        return buffer[self.pad : len(buffer) - self.pad]

    def contract(self, **bindings: str) -> validator.LaunchContract:
        """The case as the validator sees it: each pointer bound to its own tensor
        (`tensors`, by the pointer's name), each dim to its value, or to
        ``bindings[name]`` where given."""
        family = FAMILIES[self.family]
        args = []
        for name, value in self.args:
            if family.arg(name).kind in POINTER_KINDS:
                args.append((name, name))
            else:
                args.append((name, bindings.get(name, str(value))))
        strides = tuple(
            (name, stride)
            for name, (shape, stride) in self.tensors.items()
            if stride != math.prod(shape[1:])
        )
        return validator.LaunchContract(
            self.family,
            tuple(sorted(self.constexprs.items())),
            tuple(args),
            tuple((name, shape) for name, (shape, _) in self.tensors.items()),
            tuple(str(g) for g in self.grid3()),
            self.num_warps,
            self.num_stages,
            strides,
        )


def channel_slice(
    x: np.ndarray, view: View | None, dtype: type[np.floating[Any]] = np.float32
) -> tuple[np.ndarray, int]:
    """``x`` [B, C, ...] as channels ``[first, first + C)`` of a NaN-filled
    [B, total, ...] buffer: the buffer's data from the view's first element to
    the end of its last image, and its batch stride; with no view, ``x``
    contiguous. In ``dtype`` (float64 for an expected output: NaN in the gaps)."""
    image = math.prod(x.shape[1:])
    if view is None:
        return x.astype(dtype).ravel(), image
    total, first = view
    assert first + x.shape[1] <= total, (x.shape, view)
    plane = math.prod(x.shape[2:])
    buffer = np.full((x.shape[0], total, *x.shape[2:]), np.nan, dtype)
    buffer[:, first : first + x.shape[1]] = x
    stride = total * plane
    start = first * plane
    return buffer.ravel()[start : start + (x.shape[0] - 1) * stride + image], stride


def evaluate(text: str, batch: int) -> int:
    """A dim expression (over the batch ``B``) at ``batch``."""
    return expressions.eval_text(text, {"B": batch})


def tile_grid(
    family: KernelFamily, args: Mapping[str, Any], constexprs: Mapping[str, int | str]
) -> tuple[int, ...]:
    """The programs each grid axis of ``family`` needs (its tile model) for the
    dims in ``args`` and the tiles in ``constexprs``."""
    env = {k: v for k, v in args.items() if isinstance(v, int)}
    env |= {k: v for k, v in constexprs.items() if isinstance(v, int)}
    axes = []
    for axis in family.grid:
        total = 1
        for extent, tile in axis.covers:
            total *= -(-expressions.eval_text(extent, env) // expressions.eval_text(tile, env))
        axes.append(total)
    return tuple(axes)


# ---------------------------------------------------------------- building cases


def lowered(text: str, op: str | None = None, *, profile: str = "gpu") -> tuple[ModuleOp, LaunchOp]:
    """The module of ``text`` and the launch the lowering rule of its op named
    ``op`` (default: its first graph op that is no ``graph.param``) builds, with
    tile profile ``profile`` (`lower_op`)."""
    import teeny_ir

    module = teeny_ir.parse_module(text)
    return module, lower_op(next(o for o in module.walk() if _is_the_op(o, op)), profile=profile)


def lower_op(op: Operation, *, profile: str = "gpu") -> LaunchOp:
    """The launch the lowering rule of ``op`` builds, with tile profile
    ``profile``; raises `teeny_ir.kernels.lowering.Unlowerable` where the rule
    refuses the op. (The one place the tests call the lowering facet.)"""
    from dialects.kernel import LaunchOp
    from teeny_ir.kernels.lowering import LoweringContext, lower
    from teeny_ir.kernels.tiles import check_profile

    launch = lower(LoweringContext(check_profile(profile)), op)
    assert isinstance(launch, LaunchOp), launch
    return launch


def _is_the_op(op: Operation, name: str | None) -> bool:
    if name is not None:
        return op.name == name
    return op.name.startswith("graph.") and op.name != "graph.param"


def launch_case(
    case_id: str,
    launch: LaunchOp,
    batch: int,
    inputs: Sequence[np.ndarray],
    outputs: Sequence[np.ndarray],
    *,
    pad: int,
    tol: float | None,
    weights: Mapping[str, np.ndarray] | None = None,
    views: Mapping[str, View] | None = None,
    constexprs: Mapping[str, int | str] | None = None,
    grid: int | Sequence[int] | None = None,
    extra_programs: int = 0,
    num_warps: int | None = None,
    spec: Any = None,
) -> Case:
    """``launch`` bound at ``batch``: each pointer bound to ``in<k>`` takes
    ``inputs[k]``, each bound to ``out<k>`` a fresh buffer that must end up
    holding ``outputs[k]`` (NaN: must stay NaN), each parameter slot its
    derivation of ``weights``, each dim its binding evaluated at ``batch``.

    ``views`` puts pointers (by ABI name; every pointer bound to the same tensor
    shares it) in batch-strided channel slices (`channel_slice`), their
    batch-stride dims bound to the view's stride as the view formation does.
    ``constexprs`` overrides the launch's (where it changes a tile of the grid,
    the grid is what the family's tile model needs, unless ``grid`` is given), and
    ``extra_programs`` adds programs on axis 0; ``num_warps`` overrides the
    launch's. Each output pointer gets a buffer of its own, also where the
    launch binds several to one result: the first holds the result, the others
    are slots the variant does not use (a split's unused parts, SGD's momentum
    buffer without momentum) and must stay NaN."""
    family = FAMILIES[launch.family]
    weights = weights or {}
    views = views or {}
    bindings = dict(launch.arg_bindings)
    shapes = _tensor_shapes(launch, batch)
    tensor_views: dict[str, View] = {}
    for pointer, pointer_view in views.items():
        assert tensor_views.setdefault(bindings[pointer], pointer_view) == pointer_view, (
            case_id,
            pointer,
        )
    slots = {f"param.{slot.name}": slot for slot in launch.param_slots}
    data: dict[str, tuple[np.ndarray, int]] = {}
    expected: dict[str, np.ndarray] = {}
    for key, shape in shapes.items():
        index = int(key.removeprefix("in").removeprefix("out"))
        view = tensor_views.get(key)
        if key.startswith("in"):
            array = inputs[index]
            assert array.shape == shape, (case_id, key, array.shape, shape)
            if array.dtype == np.int64:
                assert view is None, (case_id, key)
                data[key] = (array.ravel(), math.prod(shape[1:]))
            else:
                data[key] = channel_slice(array, view)
        else:
            want = np.asarray(outputs[index])
            assert want.size == math.prod(shape), (case_id, key, want.shape, shape)
            want = want.reshape(shape)
            if want.dtype == np.int64:
                assert view is None, (case_id, key)
                data[key] = (want.ravel(), math.prod(shape[1:]))
            else:
                data[key] = channel_slice(want, view, np.float64)
    stride_args = {arg: pointer for pointer, arg in family.batch_strides.items()}
    args: list[tuple[str, Any]] = []
    tensors: dict[str, tuple[tuple[int, ...], int]] = {}
    written: set[str] = set()
    for arg in family.args:
        binding = bindings[arg.name]
        if arg.kind == "input":
            array, stride = data[binding]
            args.append((arg.name, array))
            tensors[arg.name] = (shapes[binding], stride)
        elif arg.kind == "output":
            array, stride = data[binding]
            dtype = ("i64",) if arg.dtype == "*i64" else ()
            args.append((arg.name, ("output", array.size, *dtype)))
            tensors[arg.name] = (shapes[binding], stride)
            unused = binding in written
            written.add(binding)
            expected[arg.name] = np.full(array.shape, np.nan) if unused else array
        elif arg.kind == "param":
            slot = slots[binding]
            args.append((arg.name, derivations.evaluate(slot.derivation, weights)))
            tensors[arg.name] = (tuple(slot.shape), math.prod(slot.shape[1:]))
        elif arg.name in stride_args and bindings[stride_args[arg.name]] in tensor_views:
            tensor = bindings[stride_args[arg.name]]
            image = math.prod(shapes[tensor][1:])
            assert evaluate(binding, batch) == image, (case_id, arg.name, binding)
            args.append((arg.name, data[tensor][1]))
        else:
            args.append((arg.name, evaluate(binding, batch)))
    values = dict(launch.constexpr_values) | dict(constexprs or {})
    if grid is None:
        changed = {k for k, v in values.items() if launch.constexpr_values.get(k) != v}
        if changed & _tile_symbols(family):
            found = tile_grid(family, dict(args), values)
        else:
            found = tuple(evaluate(g, batch) for g in launch.grid)
    else:
        found = (grid,) if isinstance(grid, int) else tuple(grid)
    return Case(
        id=case_id,
        family=launch.family,
        constexprs=values,
        args=args,
        # One axis as an int: what the cases written by hand give.
        grid=found[0] + extra_programs
        if set(found[1:]) <= {1}
        else (found[0] + extra_programs, *found[1:]),
        pad=pad,
        expected=expected,
        tensors=tensors,
        num_warps=launch.num_warps if num_warps is None else num_warps,
        num_stages=launch.num_stages,
        tol=tol,
        spec=spec,
    )


def _tile_symbols(family: KernelFamily) -> set[str]:
    """The constexprs the tiles of ``family``'s grid axes name."""
    return {
        symbol
        for axis in family.grid
        for _, tile in axis.covers
        for symbol in expressions.symbols(expressions.parse_cached(tile))
    }


def _tensor_shapes(launch: LaunchOp, batch: int) -> dict[str, tuple[int, ...]]:
    """``in<k>`` and ``out<k>`` -> the shape of that operand or result at ``batch``."""
    from xdsl.dialects.builtin import TensorType

    shapes: dict[str, tuple[int, ...]] = {}
    for prefix, group in (("in", launch.inputs), ("out", launch.outputs)):
        for index, value in enumerate(group):
            assert isinstance(value.type, TensorType)
            shapes[f"{prefix}{index}"] = tuple(
                batch if d < 0 else d for d in value.type.get_shape()
            )
    return shapes


# ---------------------------------------------------------------- running them


def run_cases(
    cases: Sequence[Case],
    workdir: Path,
    *,
    flags: Sequence[str] = ("-W", "error"),
    timeout: float = 600,
) -> Results:
    """Every case in one interpreter process (`teeny_ir.testing.kernel_harness`,
    run with the Python ``flags``: warnings are errors), each at its
    ``num_warps`` and with its mutation; each output's padded buffer by
    ``"<case id>/<ABI name>"``."""
    assert len({case.id for case in cases}) == len(cases), "case ids must be unique"
    files: dict[tuple[str, str, tuple[str, str] | None], tuple[Path, str]] = {}
    specs = []
    for index, case in enumerate(cases):
        family = FAMILIES[case.family]
        names = [name for name, _ in case.args]
        assert names == [a.name for a in family.args], case.id
        slots = "/".join(
            str(case.constexprs[c.name])
            for c in family.constexprs
            if c.type in ("pointwise", "program")
        )
        key = (case.family, slots, case.mutation)
        if key not in files:
            name = f"{case.family}_{len(files)}"
            text = render(family, name, case.constexprs)
            if case.mutation is not None:
                old, new = case.mutation
                assert text.count(old) == 1, (case.id, old)
                text = text.replace(old, new)
            files[key] = (workdir / f"{name}.py", name)
            files[key][0].write_text(text)
        path, name = files[key]
        args: list[dict[str, Any]] = []
        for arg_index, (arg_name, value) in enumerate(case.args):
            if arg_name in case.aliases:
                args.append({"alias": names.index(case.aliases[arg_name])})
            elif isinstance(value, np.ndarray):
                array = workdir / f"case{index}_arg{arg_index}.npy"
                np.save(array, value)
                args.append({"array": str(array)})
            elif isinstance(value, tuple):  # ("output", numel[, dtype])
                kind, numel, *dtype = value
                assert kind == "output", (case.id, arg_name, value)
                args.append({"output": int(numel)} | ({"dtype": dtype[0]} if dtype else {}))
            else:
                assert family.arg(arg_name).kind == "dim", (case.id, arg_name, value)
                args.append({"int": int(value)})
        specs.append(
            {
                "kernel_file": str(path),
                "kernel_name": name,
                "constexprs": case.constexprs,
                "grid": list(case.grid3()),
                "num_warps": case.num_warps,
                "pad": case.pad,
                "args": args,
            }
        )
    npz = run_specs(specs, workdir, flags=flags, timeout=timeout)
    results: Results = {}
    for index, case in enumerate(cases):
        for arg_index, (name, _) in enumerate(case.args):
            if f"case{index}_arg{arg_index}" in npz:
                results[f"{case.id}/{name}"] = npz[f"case{index}_arg{arg_index}"]
    return results


def run_specs(
    specs: Sequence[Mapping[str, Any]],
    workdir: Path,
    *,
    flags: Sequence[str] = ("-W", "error"),
    timeout: float = 600,
) -> dict[str, np.ndarray]:
    """The harness on raw case specs (its CASES.json format: any kernel file, a
    probe of a helper too): RESULTS.npz as a dict (``case{i}_arg{j}``)."""
    cases_file, results_file = workdir / "cases.json", workdir / "results.npz"
    cases_file.write_text(json.dumps({"cases": list(specs)}))
    done = subprocess.run(
        [sys.executable, *flags, "-m", HARNESS_MODULE, str(cases_file), str(results_file)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr
    with np.load(results_file, allow_pickle=False) as npz:
        return {key: npz[key] for key in npz.files}


# ---------------------------------------------------------------- checking a run


def _first(where: np.ndarray) -> int:
    return int(np.flatnonzero(where)[0])


def _canaries(name: str, buffer: np.ndarray, pad: int) -> list[str]:
    canary = I64_CANARY if buffer.dtype == np.int64 else np.float32(CANARY)
    found = []
    for side, region in (("before", buffer[:pad]), ("after", buffer[len(buffer) - pad :])):
        changed = region != canary
        if changed.any():
            found.append(
                f"{name}: {int(changed.sum())} of the {pad} canaries {side} the view overwritten"
                f" (the first at element {_first(changed)} of that padding)"
            )
    return found


def problems(case: Case, results: Results) -> list[str]:
    """Everything wrong with ``case``'s outputs after a run, each located (the
    output, and the first element concerned): overwritten canaries, a size other
    than expected, elements not NaN where they must stay NaN (a view's gap, an
    unused output, the reference's NaN), elements other than the reference's
    infinity, NaN or infinite elements where the reference is finite (never
    written, or computed from a NaN read), then the finite values: bit for bit
    when ``case.tol`` is 0, else under the tolerance rule (not at all for
    None); an int64 output must equal its expected values exactly."""
    found: list[str] = []
    for name, want in case.expected.items():
        buffer = results[f"{case.id}/{name}"]
        found += _canaries(name, buffer, case.pad)
        got = case.got(results, name)
        want = np.asarray(want).ravel()
        if got.size != want.size:
            found.append(f"{name}: {got.size} elements, expected {want.size}")
            continue
        if buffer.dtype == np.int64:
            wrong = got != want
            if wrong.any():
                first = _first(wrong)
                found.append(
                    f"{name}: {int(wrong.sum())} of {want.size} elements differ (the first at "
                    f"element {first}: {got.tolist()}, expected {want.tolist()})"
                )
            continue
        found += _float_problems(name, got, want, case.tol)
    return found


def _float_problems(name: str, got: np.ndarray, want: np.ndarray, tol: float | None) -> list[str]:
    g, w = got.astype(np.float64), want.astype(np.float64)
    found = []
    checks: tuple[tuple[np.ndarray, str], ...] = (
        (
            np.isnan(w) & ~np.isnan(g),
            "not NaN where it must stay NaN (a view's gap, an unused output, "
            "or the reference's NaN)",
        ),
        (np.isinf(w) & (g != w), "not the reference's infinity"),
        (
            np.isfinite(w) & ~np.isfinite(g),
            "NaN or infinite where the reference is finite (never written, or read NaN)",
        ),
    )
    for wrong, what in checks:
        if wrong.any():
            first = _first(wrong)
            found.append(
                f"{name}: {int(wrong.sum())} of {w.size} elements {what} (the first at "
                f"element {first}: {float(g[first])!r}, expected {float(w[first])!r})"
            )
    finite = np.isfinite(w)
    if found or tol is None or not finite.any():
        return found
    if tol == 0.0:
        wrong = got.astype(np.float32).view(np.uint32) != want.astype(np.float32).view(np.uint32)
        wrong &= finite
        if wrong.any():
            first = _first(wrong)
            found.append(
                f"{name}: {int(wrong.sum())} of {w.size} elements differ from the reference bit "
                f"for bit (the first at element {first}: {float(g[first])!r}, expected {float(w[first])!r})"
            )
        return found
    comparison = compare(g[finite], w[finite], tol)
    if not comparison.ok:
        worst = int(np.flatnonzero(finite)[np.argmax(np.abs(g[finite] - w[finite]))])
        found.append(f"{name}: {comparison.reason} (the largest error at element {worst})")
    return found
