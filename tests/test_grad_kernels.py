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
programs. The cases run in one harness process (`teeny_ir.testing.kernels.run_cases`)
with NaN-padded inputs and canary-padded NaN-filled outputs, so an unwritten element or a write
out of bounds shows, and with warnings as errors: the derivatives at +-inf
(``silu'(inf) = inf * 0 = nan``, as PyTorch and the reference give it) come
without an invalid operation. The activations are every unary entry of the
pointwise table, each option at its sample values (`teeny_ir.testing.variants`).
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import teeny_ir
from dialects.kernel import LaunchOp
from teeny_ir import reference, runtime
from teeny_ir.backend import aot
from teeny_ir.core import pointwise
from teeny_ir.core.diagnostics import DiagnosticError
from teeny_ir.kernels import validator
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.render import RenderError, render
from teeny_ir.runtime import checks
from teeny_ir.testing import ELEMENTWISE_TOL, REDUCTION_TOL, assert_close
from teeny_ir.testing import kernels as harness
from teeny_ir.testing.kernels import Case, Results, View, launch_case, problems
from teeny_ir.testing.variants import variants


def _type(shape: tuple[int | str, ...], element: str = "f32") -> str:
    return f"tensor<{'x'.join(str(d) for d in shape)}{'x' if shape else ''}{element}>"


def lowered(text: str) -> tuple[Any, LaunchOp]:
    """The module of ``text`` (one graph op) and the launch its rule builds."""
    return harness.lowered(text)


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
    expected: list[np.ndarray] | None = None,
    constexprs: dict[str, int | str] | None = None,
    extra_programs: int = 0,
    tol: float = ELEMENTWISE_TOL,
    views: dict[str, View] | None = None,
) -> Case:
    """A harness case of ``launch`` at ``batch``: ``in<k>`` bound to ``inputs[k]``
    (``views`` puts pointers in batch-strided channel slices), each output to a
    fresh buffer of its result's size; expected: the reference's outputs (by
    result) unless given; shrunken tiles (``constexprs``) get the grid their
    tile model needs."""
    if expected is None:
        with np.errstate(all="ignore"):
            expected = [np.asarray(o, np.float64) for o in reference.run(module, {}, inputs)]
    return launch_case(
        case_id,
        launch,
        batch,
        inputs,
        expected,
        pad=2048,
        tol=tol,
        views=views,
        constexprs=constexprs,
        extra_programs=extra_programs,
    )


# ---------------------------------------------------------------- activation_grad

ACTIVATIONS = {
    variant.spelling: " ".join(
        ["activation", variant.name, variant.option_text(every=True)]
    ).strip()
    for variant in variants(arity=1)
}
"""Every unary entry of the pointwise table with sample option values, by its
kernel spelling: ``graph.activation_grad``'s options (``activation gelu approximate tanh``)."""
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
) -> Case:
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
    views = None if view is None else {"dy": view}
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
    views = None if view is None else {"logits": view}
    return make_case(
        case_id,
        module,
        launch,
        [x, targets, gradient],
        batch,
        expected=[want, _status(targets, classes)],
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


def all_cases() -> list[Case]:
    rng = np.random.default_rng(21)
    cases: list[Case] = []
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


def mutants() -> dict[str, Case]:
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


HARNESS_CASES = [*CASES, *MUTANTS.values()]
"""What the `results` fixture (tests/conftest.py) runs, in one interpreter process."""


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_kernel_matches_the_reference(case: Case, results: Results) -> None:
    """Canaries, the status exactly, NaN/inf where the reference has them and
    nowhere else, the tolerance rule on the rest (a copy bit for bit)."""
    assert problems(case, results) == []


def test_every_case_is_a_valid_launch() -> None:
    for case in CASES:
        validator.validate(case.contract())


def test_every_unary_entry_of_the_table_is_run() -> None:
    acts = {c.constexprs["ACTIVATION"] for c in CASES if c.family == "activation_grad"}
    assert acts == set(ACTIVATIONS)
    assert {pointwise.parse_spelling(a)[0] for a in acts} == {
        e for e in pointwise.TABLE if e.arity == 1
    }


def test_the_checks_catch_mutated_kernels(results: Results) -> None:
    found = {what: " ".join(problems(case, results)) for what, case in MUTANTS.items()}
    assert re.search(r"dx: \d+ of the \d+ canaries after the view", found["act-no-store-mask"])
    assert "dx: max|got - ref|" in found["softmax-last-chunk"], found
    assert "status: " in found["ce-no-count"] and "element 0: [0," in found["ce-no-count"]
    assert "out: " in found["bcast-no-inner-stride"], found
    assert "bit for bit" in found["bcast-no-inner-stride"], found


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
            validator.validate(wrong.contract())


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
            "graph.activation_grad", [("x", t), ("dy", t)], t, ACTIVATIONS["gelu(approximate=tanh)"]
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
