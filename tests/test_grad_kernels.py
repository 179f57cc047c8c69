"""The ``activation_grad``, ``softmax_backward``, ``cross_entropy_backward`` and
``broadcast`` kernel families: Triton's interpreter against the reference
semantics, the status output of cross_entropy_backward (targets out of range),
the validator's view of every launch, AOT compilation, and a training-style
graph end to end through ``lower-graph-to-kernel``, ``emit-triton`` and the
runtime.

Each kernel case is one graph op written as IR with a dynamic batch and lowered
by its family's ``@lowers`` rule, so the dims and the grid are what the compiler
emits at the case's batch (1 or 3, and more for many row blocks); some cases
shrink the tiles so that many programs and row chunks run, some launch extra
programs. The cases run in one `kernel_harness.py` subprocess with NaN-padded
inputs and canary-padded NaN-filled outputs, so an unwritten element or a write
out of bounds shows, and with warnings as errors: the derivatives at +-inf
(``silu'(inf) = inf * 0 = nan``, as PyTorch and the reference give it) come
without an invalid operation.
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import TensorType

import teeny_ir
from dialects.kernel import LaunchOp
from teeny_ir import reference, runtime
from teeny_ir.backend import aot
from teeny_ir.core import expressions
from teeny_ir.core.diagnostics import DiagnosticError
from teeny_ir.kernels import validator
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.lowering import lowering_for
from teeny_ir.kernels.render import RenderError, render
from teeny_ir.runtime import checks
from teeny_ir.testing import ELEMENTWISE_TOL, REDUCTION_TOL, assert_close


def _sibling(name: str) -> ModuleType:
    """Load another test module by path (``tests`` is not an importable package)."""
    spec = importlib.util.spec_from_file_location(f"_teeny_{name}", Path(__file__).with_name(name))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


copies = _sibling("test_concat_split_kernels.py")
harness = _sibling("kernel_harness.py")
CANARY = copies.CANARY


def _type(shape: tuple[int | str, ...], element: str = "f32") -> str:
    return f"tensor<{'x'.join(str(d) for d in shape)}{'x' if shape else ''}{element}>"


def lowered(text: str) -> tuple[Any, LaunchOp]:
    """The module of ``text`` (one graph op) and the launch its rule builds."""
    module = teeny_ir.parse_module(text)
    graph_op = next(o for o in module.walk() if o.name.startswith("graph."))
    rule = lowering_for(type(graph_op))
    assert not isinstance(rule, str), rule
    launch = rule(graph_op)
    assert isinstance(launch, LaunchOp)
    return module, launch


def one_op(op: str, operands: list[tuple[str, str]], result: str, options: str = "") -> str:
    """``func.func @f`` of one graph op over the function's arguments."""
    params = ", ".join(f"%a{k}: {t}" for k, (_, t) in enumerate(operands))
    names = ", ".join(f"%a{k}" for k in range(len(operands)))
    types = ", ".join(t for _, t in operands)
    return (
        f"func.func @forward({params}) -> {result} {{\n"
        f"  %r = {op} {names}{' ' + options if options else ''} : ({types}) -> {result}\n"
        f"  func.return %r : {result}\n}}\n"
    )


def make_case(
    case_id: str,
    module: Any,
    launch: LaunchOp,
    inputs: list[np.ndarray],
    batch: int,
    *,
    expected: dict[str, np.ndarray] | None = None,
    constexprs: dict[str, int | str] | None = None,
    extra_programs: int = 0,
    tol: float = ELEMENTWISE_TOL,
    views: dict[str, tuple[np.ndarray, int]] | None = None,
) -> Any:
    """A harness case of ``launch`` at ``batch``: ``in<k>`` bound to ``inputs[k]``
    (or to ``views[name]``, a padded buffer and its batch stride), each output
    to a fresh buffer of its result's size; expected: the reference's outputs
    (by ABI name) unless given."""
    family = FAMILIES[launch.family]
    env = {"B": batch}
    values = dict(launch.constexpr_values) | (constexprs or {})
    views = views or {}
    if expected is None:
        with np.errstate(all="ignore"):
            outs = reference.run(module, {}, inputs)
        expected = {}
        for name, binding in launch.arg_bindings:
            if binding.startswith("out"):
                expected[name] = np.asarray(outs[int(binding[3:])], np.float64)
    args: list[tuple[str, Any]] = []
    tensors: dict[str, tuple[tuple[int, ...], int]] = {}
    results = launch.results
    for name, binding in launch.arg_bindings:
        kind = family.arg(name).kind
        if kind == "input":
            array = inputs[int(binding[2:])]
            data, stride = views.get(name, (array.ravel(), math.prod(array.shape[1:])))
            args.append((name, data))
            tensors[name] = (array.shape, stride)
        elif kind == "output":
            result_type = results[int(binding[3:])].type
            assert isinstance(result_type, TensorType)
            shape = tuple(batch if d < 0 else d for d in result_type.get_shape())
            dtype = family.arg(name).dtype
            numel = math.prod(shape)
            args.append((name, ("output", numel, "i64") if dtype == "*i64" else ("output", numel)))
            tensors[name] = (shape, math.prod(shape[1:]))
        else:
            args.append((name, expressions.eval_text(binding, env)))
    for name, (data, stride) in views.items():
        bound = dict(args)
        stride_arg = family.batch_strides[name]
        assert expressions.eval_text(dict(launch.arg_bindings)[stride_arg], env) == math.prod(
            tensors[name][0][1:]
        )
        args = [(n, stride if n == stride_arg else v) for n, v in args]
        assert bound[name] is data
    grid = expressions.eval_text(launch.grid[0], env)
    if constexprs:  # shrunken tiles: the grid the tile model needs for them
        grid = validator_grid(family, dict(args), values)
    return copies.Case(
        id=case_id,
        family=launch.family,
        constexprs=values,
        args=args,
        grid=grid + extra_programs,
        pad=2048,
        expected=expected,
        tensors=tensors,
        num_warps=launch.num_warps,
        tol=tol,
    )


def validator_grid(family: Any, args: dict[str, Any], constexprs: dict[str, int | str]) -> int:
    """Programs the family's tile model needs on grid axis 0."""
    env = {k: v for k, v in args.items() if isinstance(v, int)}
    env |= {k: v for k, v in constexprs.items() if isinstance(v, int)}
    total = 1
    for extent, tile in family.grid[0].covers:
        total *= -(-expressions.eval_text(extent, env) // expressions.eval_text(tile, env))
    return total


# ---------------------------------------------------------------- activation_grad

ACTIVATIONS = {
    "relu": "activation relu",
    "silu": "activation silu",
    "sigmoid": "activation sigmoid",
    "tanh": "activation tanh",
    "gelu": "activation gelu",
    "gelu_tanh": "activation gelu approximate tanh",
    "leaky_relu": "activation leaky_relu negative_slope 0.2",
}
SPECIALS = np.array(
    [0.0, -0.0, np.nan, 1e30, -1e30, 3e38, -3e38, 100.0, -100.0, 20.0, -20.0, 9.0, -9.0, 1e-30],
    np.float32,
)
INFINITE = np.array([np.inf, -np.inf], np.float32)


def activation_case(
    name: str,
    batch: int,
    rng: np.random.Generator,
    *,
    block: int | None = None,
    extra_programs: int = 0,
) -> Any:
    shape = (batch, 5, 7)
    t = _type(("?", 5, 7))
    module, launch = lowered(
        one_op("graph.activation_grad", [("x", t), ("dy", t)], t, ACTIVATIONS[name])
    )
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    specials = np.concatenate([SPECIALS, INFINITE])
    x.ravel()[: specials.size] = specials
    dy = rng.standard_normal(shape).astype(np.float32)
    case_id = (
        f"act-{name}-b{batch}"
        + (f"-block{block}" if block else "")
        + (f"-grid+{extra_programs}" if extra_programs else "")
    )
    return make_case(
        case_id,
        module,
        launch,
        [x, dy],
        batch,
        constexprs={"BLOCK": block} if block else None,
        extra_programs=extra_programs,
    )


# ---------------------------------------------------------------- softmax_backward


def _softmax(x: np.ndarray, axis: int, log: bool) -> np.ndarray:
    shifted: np.ndarray = x - x.max(axis=axis, keepdims=True)
    if log:
        logs: np.ndarray = shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
        return logs
    e = np.exp(shifted)
    probs: np.ndarray = e / e.sum(axis=axis, keepdims=True)
    return probs


def softmax_case(
    shape: tuple[int, ...],
    axis: int,
    log: bool,
    rng: np.random.Generator,
    *,
    blocks: tuple[int, int] | None = None,
    extra_programs: int = 0,
    nan: bool = False,
    view: tuple[int, int] | None = None,
) -> Any:
    t = _type(("?", *shape[1:]))
    op = "graph.log_softmax_backward" if log else "graph.softmax_backward"
    module, launch = lowered(one_op(op, [("y", t), ("dy", t)], t, f"axis {axis}"))
    y = _softmax(rng.standard_normal(shape) * 2, axis, log).astype(np.float32)
    dy = rng.standard_normal(shape).astype(np.float32)
    if nan:
        y.ravel()[1] = np.nan
        dy.ravel()[-2] = np.nan
    views = None
    if view is not None:
        views = {"dy": copies.channel_slice(dy, view)}
    case_id = (
        f"{'log' if log else ''}softmax-bwd-{'x'.join(map(str, shape))}-axis{axis}"
        + (f"-b{blocks[0]}x{blocks[1]}" if blocks else "")
        + (f"-grid+{extra_programs}" if extra_programs else "")
        + ("-nan" if nan else "")
        + (f"-dy@{view[1]}of{view[0]}" if view else "")
    )
    return make_case(
        case_id,
        module,
        launch,
        [y, dy],
        shape[0],
        constexprs=dict(zip(("BLOCK_ROWS", "BLOCK_R"), blocks, strict=True)) if blocks else None,
        extra_programs=extra_programs,
        tol=REDUCTION_TOL,
        views=views,
    )


# ---------------------------------------------------------- cross_entropy_backward


def _status(targets: np.ndarray, classes: int) -> np.ndarray:
    bad = np.flatnonzero((targets < 0) | (targets >= classes))
    if not bad.size:
        return np.array([0, targets.size, 0], np.int64)
    return np.array([bad.size, bad[0], targets[bad[0]]], np.int64)


def ce_case(
    shape: tuple[int, int],
    rng: np.random.Generator,
    *,
    blocks: tuple[int, int] | None = None,
    bad: tuple[int, ...] = (),
    specials: bool = False,
    extra_programs: int = 0,
    g: float = 0.75,
    view: tuple[int, int] | None = None,
) -> Any:
    """``bad`` puts out-of-range targets first; their rows are NaN, the others
    the reference's (computed with those targets replaced by 0); ``view`` makes
    the logits columns ``[first, first + C)`` of a NaN-filled [N, total] buffer."""
    batch, classes = shape
    text = one_op(
        "graph.cross_entropy_backward",
        [("l", _type(("?", classes))), ("t", _type(("?",), "i64")), ("g", _type(()))],
        _type(("?", classes)),
    )
    module, launch = lowered(text)
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    targets = rng.integers(0, classes, batch).astype(np.int64)
    if specials:
        x[0, classes // 2] = np.nan
        x[1, 0] = np.inf
        x[2, :] = -np.inf
        x[3, 1:] = -np.inf  # finite: one class holds all the mass
        x[4, targets[4]] = -np.inf
    gradient = np.array(g, np.float32)
    safe = targets.copy()
    for index, value in zip(range(batch), bad, strict=False):
        targets[index] = value
        safe[index] = 0
    with np.errstate(all="ignore"):
        (want,) = reference.run(module, {}, [x, safe, gradient])
    want = np.asarray(want, np.float64)
    want[: len(bad)] = np.nan
    case_id = (
        f"ce-bwd-{batch}x{classes}"
        + (f"-b{blocks[0]}x{blocks[1]}" if blocks else "")
        + ("-specials" if specials else "")
        + (f"-bad{len(bad)}" if bad else "")
        + (f"-grid+{extra_programs}" if extra_programs else "")
        + (f"-x@{view[1]}of{view[0]}" if view else "")
    )
    views = None if view is None else {"logits": copies.channel_slice(x[:, :, None], view)}
    return make_case(
        case_id,
        module,
        launch,
        [x, targets, gradient],
        batch,
        expected={"dlogits": want, "status": _status(targets, classes)},
        constexprs=dict(zip(("BLOCK_ROWS", "BLOCK_C"), blocks, strict=True)) if blocks else None,
        extra_programs=extra_programs,
        tol=REDUCTION_TOL,
        views=views,
    )


# ---------------------------------------------------------------- broadcast


def broadcast_case(
    source: tuple[int | str, ...],
    target: tuple[int | str, ...],
    batch: int,
    rng: np.random.Generator,
    *,
    block: int | None = None,
    extra_programs: int = 0,
) -> Any:
    """``source`` to ``target`` (``?`` is the batch); a batch source operand when
    the input does not carry the batch."""
    operands = [("x", _type(source))]
    needs_source = target[:1] == ("?",) and source[:1] != ("?",)
    if needs_source:
        operands.append(("s", _type(("?", 2))))
    module, launch = lowered(one_op("graph.broadcast", operands, _type(target)))
    concrete = tuple(batch if d == "?" else int(d) for d in source)
    x = rng.standard_normal(concrete).astype(np.float32)
    if x.size:
        x.ravel()[0] = -0.0  # the sign of zero survives the copy
    inputs = [x] + ([rng.standard_normal((batch, 2)).astype(np.float32)] if needs_source else [])
    shape_text = "x".join(map(str, source)) or "scalar"
    case_id = (
        f"bcast-{shape_text}-to-{'x'.join(map(str, target))}-b{batch}"
        + (f"-block{block}" if block else "")
        + (f"-grid+{extra_programs}" if extra_programs else "")
    )
    return make_case(
        case_id,
        module,
        launch,
        inputs,
        batch,
        constexprs={"BLOCK": block} if block else None,
        extra_programs=extra_programs,
        tol=0.0,
    )


# ---------------------------------------------------------------- the cases


def all_cases() -> list[Any]:
    rng = np.random.default_rng(21)
    cases: list[Any] = []
    for name in ACTIVATIONS:
        cases.append(activation_case(name, 1, rng))
        cases.append(activation_case(name, 3, rng, block=16, extra_programs=2))
    for log in (False, True):
        cases.append(softmax_case((1, 10), 1, log, rng))
        cases.append(softmax_case((3, 10, 3), 1, log, rng, blocks=(4, 4), extra_programs=1))
        cases.append(softmax_case((3, 4, 1037), 2, log, rng))
        cases.append(softmax_case((3, 1037, 2), 1, log, rng, blocks=(2, 128)))
        cases.append(softmax_case((1, 3, 10), 2, log, rng, nan=True))
        cases.append(softmax_case((3, 5, 10), 2, log, rng, view=(9, 2)))
        cases.append(softmax_case((3, 6), 0, log, rng, blocks=(2, 2)))
    for batch in (1, 3):
        for classes in (10, 37):
            cases.append(ce_case((batch, classes), rng))
    cases.append(ce_case((3, 10), rng, bad=(10,)))
    cases.append(ce_case((9, 37), rng, blocks=(2, 8), bad=(37, -1), extra_programs=1))
    cases.append(ce_case((9, 37), rng, blocks=(4, 8)))
    cases.append(ce_case((6, 11), rng, specials=True, blocks=(2, 4)))
    cases.append(ce_case((3, 1037), rng, g=-2.5))
    cases.append(ce_case((3, 13), rng, blocks=(2, 4), view=(20, 4)))
    for batch in (1, 3):
        cases.append(broadcast_case((7,), ("?", 3, 5, 7), batch, rng))
        cases.append(broadcast_case((3, 1, 1), ("?", 3, 5, 7), batch, rng))
        cases.append(broadcast_case((), ("?", 3, 5, 7), batch, rng, block=64, extra_programs=2))
    cases.append(broadcast_case(("?", 3, 1, 1), ("?", 3, 5, 7), 3, rng, block=32))
    cases.append(broadcast_case((1, 7), (2, 3, 7), 1, rng))
    return cases


def mutants() -> dict[str, Any]:
    """Mutated kernels the checks must catch."""
    rng = np.random.default_rng(23)
    return {
        what: replace(case, id=f"mutant-{what}", mutation=mutation)
        for what, (case, mutation) in {
            # An unmasked store writes past the end of dx.
            "act-no-store-mask": (
                activation_case("tanh", 3, rng),
                ("derivative(v) * g, mask=mask)", "derivative(v) * g)"),
            ),
            # A sum that keeps only the last chunk of each row.
            "softmax-last-chunk": (
                softmax_case((3, 4, 1037), 2, False, rng),
                ("acc += g * tl.load(", "acc = g * tl.load("),
            ),
            # A status that never counts reports nothing.
            "ce-no-count": (
                ce_case((5, 10), rng, bad=(12,)),
                ("bad_count += bad.to(tl.int64)", "bad_count += 0"),
            ),
            # The innermost stride ignored: a broadcast along W reads the wrong elements.
            "bcast-no-inner-stride": (
                broadcast_case((7,), ("?", 3, 5, 7), 3, rng),
                ("+ i5 * x_stride5", "+ 0 * x_stride5"),
            ),
        }.items()
    }


CASES = all_cases()
MUTANTS = mutants()


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    """The cases and the mutants, in one interpreter process."""
    found: dict[str, np.ndarray] = copies.run_harness(
        [*CASES, *MUTANTS.values()], tmp_path_factory.mktemp("grad")
    )
    return found


def problems(case: Any, results: dict[str, np.ndarray]) -> list[str]:
    """What is wrong with a case's outputs: canaries, the status, NaN/inf where the
    reference has none or misses one, and the tolerance rule on the rest."""
    found: list[str] = []
    pad = case.pad
    for name, want in case.expected.items():
        buffer = results[f"{case.id}/{name}"]
        canary = harness.I64_CANARY if buffer.dtype == np.int64 else CANARY
        if (np.concatenate([buffer[:pad], buffer[-pad:]]) != canary).any():
            found.append(f"{name} canaries overwritten")
        got = buffer[pad:-pad]
        if buffer.dtype == np.int64:
            if not np.array_equal(got, want):
                found.append(f"{name} {got.tolist()}, expected {want.tolist()}")
            continue
        got, want = got.astype(np.float64), want.ravel()
        if got.shape != want.shape:
            found.append(f"{name}: {got.size} elements, expected {want.size}")
            continue
        finite = np.isfinite(want)
        if not np.array_equal(got[~finite], want[~finite], equal_nan=True):
            found.append(f"{name}: NaN/inf {got[~finite][:8]}, expected {want[~finite][:8]}")
        if not np.isfinite(got[finite]).all():
            found.append(f"{name}: non-finite where the reference's is finite")
            continue
        if finite.any():
            if case.tol == 0.0:
                if not np.array_equal(got[finite], want[finite]):
                    found.append(f"{name}: not an exact copy")
                elif not np.array_equal(np.signbit(got), np.signbit(want)):
                    found.append(f"{name}: the sign of zero is lost")
                continue
            error = float(np.abs(got[finite] - want[finite]).max())
            bound = case.tol * max(1.0, float(np.abs(want[finite]).max()))
            if error > bound:
                found.append(f"{name}: max error {error:.3g} above {bound:.3g}")
    return found


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_kernel_matches_the_reference(case: Any, results: dict[str, np.ndarray]) -> None:
    assert problems(case, results) == []


def test_every_case_is_a_valid_launch() -> None:
    for case in CASES:
        validator.validate(copies.case_contract(case))


def test_the_checks_catch_mutated_kernels(results: dict[str, np.ndarray]) -> None:
    found = {what: " ".join(problems(case, results)) for what, case in MUTANTS.items()}
    assert "dx canaries overwritten" in found["act-no-store-mask"], found
    assert "max error" in found["softmax-last-chunk"], found
    assert "status [0," in found["ce-no-count"], found
    assert "not an exact copy" in found["bcast-no-inner-stride"], found


def test_the_cases_are_not_vacuous() -> None:
    """Derivatives at 0, NaN and +-inf; NaN rows; multi-chunk rows; many programs;
    an out-of-range target; exact zeros' signs."""
    acts = [c for c in CASES if c.family == "activation_grad"]
    xs = np.concatenate([c.args[0][1] for c in acts])
    assert np.isnan(xs).any() and np.isposinf(xs).any() and np.isneginf(xs).any()
    assert (xs == 0).any() and (np.abs(xs) >= 1e30).any()
    dxs = np.concatenate([c.expected["dx"] for c in acts])
    assert np.isnan(dxs).any() and np.isfinite(dxs).sum() > 300
    softmax = [c for c in CASES if c.family == "softmax_backward"]
    assert any(int(dict(c.args)["R"]) > int(c.constexprs["BLOCK_R"]) for c in softmax)
    assert any(np.isnan(c.expected["dx"]).any() for c in softmax)
    ce = [c for c in CASES if c.family == "cross_entropy_backward"]
    assert any(c.expected["status"][0] == 2 for c in ce)
    assert any(c.grid > 2 for c in ce)


def test_the_validator_holds_the_dims_to_the_shapes() -> None:
    for case in (CASES[0], next(c for c in CASES if c.family == "cross_entropy_backward")):
        args = dict(case.args)
        name = "numel" if "numel" in args else "C"
        args[name] += 1
        wrong = replace(case, args=list(args.items()))
        with pytest.raises(validator.ContractError, match="imply"):
            validator.validate(copies.case_contract(wrong))


def test_out_of_range_in_the_reference_too() -> None:
    case_text = one_op(
        "graph.cross_entropy_backward",
        [("l", _type(("?", 10))), ("t", _type(("?",), "i64")), ("g", _type(()))],
        _type(("?", 10)),
    )
    module = teeny_ir.parse_module(case_text)
    x, g = np.zeros((3, 10), np.float32), np.array(1.0, np.float32)
    with pytest.raises(DiagnosticError, match=r"target 10 at index 1 is out of range \[0, 10\)"):
        reference.run(module, {}, [x, np.array([0, 10, 3], np.int64), g])


def test_a_binary_entry_has_no_derivative_to_render() -> None:
    family = FAMILIES["activation_grad"]
    with pytest.raises(RenderError, match=r"2-ary .add. does not fit"):
        render(family, "k", {"ACTIVATION": "add", "BLOCK": 1024})
    text = render(family, "k", {"ACTIVATION": "leaky_relu(negative_slope=0.2)", "BLOCK": 8})
    assert "return tl.where(x > 0, 1.0, 0.2)" in text


# ---------------------------------------------------------------- AOT


@pytest.fixture(scope="module")
def triton_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    saved = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = str(tmp_path_factory.mktemp("triton-cache"))
    yield
    if saved is None:
        del os.environ["TRITON_CACHE_DIR"]
    else:
        os.environ["TRITON_CACHE_DIR"] = saved


AOT_VARIANTS = [
    ("activation_grad", 80),
    ("softmax_backward", 80),
    ("cross_entropy_backward", 90),
    ("broadcast", 90),
]


@pytest.mark.parametrize(
    ("family_name", "arch"), AOT_VARIANTS, ids=[f"{f}-sm{a}" for f, a in AOT_VARIANTS]
)
def test_compiles_ahead_of_time(
    family_name: str, arch: int, tmp_path: Path, triton_cache: None
) -> None:
    """A variant each lowering emits (their tiles do not depend on the tile profile)."""
    family = FAMILIES[family_name]
    _module, launch = lowered(_e2e_op_text(family_name))
    constexprs = dict(launch.constexpr_values)
    name = f"{family_name}_0"
    path = tmp_path / f"{name}.py"
    path.write_text(render(family, name, constexprs))
    compiled = aot.compile_variant(
        path, name, family, constexprs, arch, launch.num_warps, launch.num_stages
    )
    assert f".target sm_{arch}" in compiled.ptx
    assert compiled.cubin[:4] == b"\x7fELF"
    assert re.search(rf"\.reqntid {32 * launch.num_warps}\b", compiled.ptx)
    aot.check_shared(compiled)


def _e2e_op_text(family: str) -> str:
    """One op of each family, as the end-to-end graph spells it."""
    t = _type(("?", 10))
    return {
        "activation_grad": one_op(
            "graph.activation_grad", [("x", t), ("dy", t)], t, ACTIVATIONS["gelu_tanh"]
        ),
        "softmax_backward": one_op("graph.softmax_backward", [("y", t), ("dy", t)], t, "axis 1"),
        "cross_entropy_backward": one_op(
            "graph.cross_entropy_backward",
            [("l", t), ("t", _type(("?",), "i64")), ("g", _type(()))],
            t,
        ),
        "broadcast": one_op("graph.broadcast", [("x", _type((10,)))], _type((2, 10))),
    }[family]


# ---------------------------------------------------------------- end to end

E2E = """\
func.func @forward(%x: tensor<?x10xf32>, %t: tensor<?xi64>, %g: tensor<f32>,
    %bias: tensor<10xf32>) -> (tensor<?x10xf32>, tensor<?x10xf32>) {
  %dl = graph.cross_entropy_backward %x, %t, %g
      : (tensor<?x10xf32>, tensor<?xi64>, tensor<f32>) -> tensor<?x10xf32>
  %da = graph.activation_grad %x, %dl activation gelu approximate tanh
      : (tensor<?x10xf32>, tensor<?x10xf32>) -> tensor<?x10xf32>
  %y = graph.softmax %x axis 1 : (tensor<?x10xf32>) -> tensor<?x10xf32>
  %ds = graph.softmax_backward %y, %da axis 1
      : (tensor<?x10xf32>, tensor<?x10xf32>) -> tensor<?x10xf32>
  %dls = graph.log_softmax_backward %x, %ds axis 1
      : (tensor<?x10xf32>, tensor<?x10xf32>) -> tensor<?x10xf32>
  %bb = graph.broadcast %bias, %x : (tensor<10xf32>, tensor<?x10xf32>) -> tensor<?x10xf32>
  func.return %dls, %bb : tensor<?x10xf32>, tensor<?x10xf32>
}
"""


def test_end_to_end_matches_the_reference(tmp_path: Path) -> None:
    out = tmp_path / "plan"
    module = teeny_ir.parse_module(E2E, filename="grad.mlir")
    teeny_ir.PassManager.parse(f"lower-graph-to-kernel,emit-triton{{out-dir={out}}}").run(module)
    families = sorted(o.family for o in module.walk() if isinstance(o, LaunchOp))
    assert families == [
        "activation_grad",
        "broadcast",
        "cross_entropy_backward",
        "softmax",
        "softmax_backward",
        "softmax_backward",
    ]
    rng = np.random.default_rng(5)
    inputs: list[np.ndarray] = [
        rng.standard_normal((3, 10)).astype(np.float32),
        np.array([9, 0, 4], np.int64),
        np.array(0.5, np.float32),
        rng.standard_normal(10).astype(np.float32),
    ]
    executable = runtime.load(out)
    got = executable.run(inputs, {})
    want = reference.run(teeny_ir.parse_module(E2E), {}, inputs)
    assert_close(got, want, REDUCTION_TOL)
    # A target out of range: the status the kernel writes (as the harness cases
    # show) is an error naming the graph op and its location.
    plan = executable.plan
    ((_index, tensor, check),) = checks.status_tensors(plan)
    assert check.what == "target"
    with pytest.raises(
        runtime.StatusCheckError,
        match=r"graph\.cross_entropy_backward at grad\.mlir:3:9: target 10 at index 2 is "
        r"out of range \[0, 10\) \(1 out of range in all\)",
    ):
        checks.check_statuses(plan, {tensor: [1, 2, 10]}, 3)
    checks.check_statuses(plan, {tensor: [0, 3, 0]}, 3)


def test_math() -> None:
    """The lowerings' blocks fit Triton's limit; the row kernels' grids cover the rows."""
    for case in CASES:
        family = FAMILIES[case.family]
        for block in family.blocks:
            assert math.prod(int(case.constexprs[k]) for k in block) <= 2**20
