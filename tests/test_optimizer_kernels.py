"""The optimizer-update kernel families ``sgd_update`` and ``adamw_update``:
Triton's interpreter against the float64 reference (``teeny_ir/reference/optim.py``),
in place (outputs on their inputs' buffers), the bias correction over steps
1..1000, the validator's view of the launches, AOT compilation, and one graph
end to end through ``emit-triton`` and the runtime.

Each kernel case is one ``graph.sgd_update`` or ``graph.adamw_update`` written as
IR and lowered by its family's ``@lowers`` rule: the ``N``, the grid and the
``hyper`` slot are what the compiler emits (parameters have no batch dim, so
there is no batch to vary). Shapes of 1, 7, 1000 and 4099 elements (none a tile
multiple); some cases shrink ``BLOCK`` so that many programs (SGD) or many loop
chunks (AdamW) run, some launch extra programs. All cases, the harness
mutants and the in-place runs (each output pointer bound to its input's buffer,
`IN_PLACE`) run in one harness process (`teeny_ir.testing.kernels.run_cases`)
with NaN-padded inputs and canary-padded, NaN-filled outputs; the
bias-correction probe (`PROBE`, a kernel calling the family's helper) runs in a
second one.
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
from teeny_ir.core import derivations
from teeny_ir.kernels import validator
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.render import render
from teeny_ir.kernels.sgd_update import tiles
from teeny_ir.testing import ELEMENTWISE_TOL, assert_close, assert_round_trips
from teeny_ir.testing import kernels as harness
from teeny_ir.testing.kernels import Case, Results, launch_case, problems, run_specs

SHAPES = ((1,), (7,), (1000,), (4099,))


def _t(shape: tuple[int, ...]) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>" if shape else "tensor<f32>"


def _options(**values: float | None) -> str:
    return " ".join(f"{name} {value:.6e}" for name, value in values.items() if value is not None)


def sgd_text(shape: tuple[int, ...], lr: float, momentum: float, weight_decay: float) -> str:
    t = _t(shape)
    options = _options(lr=lr, momentum=momentum or None, weight_decay=weight_decay or None)
    if momentum:
        return f"""\
func.func @forward(%p: {t}, %g: {t}, %b: {t}) -> ({t}, {t}) {{
  %p2, %b2 = graph.sgd_update %p, %g, %b {options} : ({t}, {t}, {t}) -> ({t}, {t})
  func.return %p2, %b2 : {t}, {t}
}}
"""
    return f"""\
func.func @forward(%p: {t}, %g: {t}) -> {t} {{
  %p2 = graph.sgd_update %p, %g {options} : ({t}, {t}) -> {t}
  func.return %p2 : {t}
}}
"""


def adamw_text(shape: tuple[int, ...], lr: float, weight_decay: float, beta1: float | None) -> str:
    t, s = _t(shape), _t(())
    options = _options(lr=lr, beta1=beta1, weight_decay=weight_decay or None)
    return f"""\
func.func @forward(%p: {t}, %g: {t}, %m: {t}, %v: {t}, %s: {s}) -> ({t}, {t}, {t}, {s}) {{
  %p2, %m2, %v2, %s2 = graph.adamw_update %p, %g, %m, %v, %s {options}
      : ({t}, {t}, {t}, {t}, {s}) -> ({t}, {t}, {t}, {s})
  func.return %p2, %m2, %v2, %s2 : {t}, {t}, {t}, {s}
}}
"""


def lowered(text: str) -> tuple[Any, LaunchOp]:
    module, launch = harness.lowered(text)
    launch.check_plan()
    return module, launch


def _inputs(
    family: str, shape: tuple[int, ...], rng: np.random.Generator, step: float, specials: bool
) -> list[np.ndarray]:
    p = rng.standard_normal(shape).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    if specials:  # the reference's inf and NaN go through (weight decay 0)
        p.flat[0], g.flat[min(1, p.size - 1)] = np.inf, np.nan
    if family == "sgd_update":
        return [p, g, rng.standard_normal(shape).astype(np.float32)]
    m = (0.1 * rng.standard_normal(shape)).astype(np.float32)
    v = (0.01 * np.abs(rng.standard_normal(shape))).astype(np.float32)
    if step == 0:  # the first step: state that starts at zero
        m[:], v[:] = 0, 0
    return [p, g, m, v, np.array(step, np.float32)]


def kernel_case(
    family: str,
    shape: tuple[int, ...],
    rng: np.random.Generator,
    *,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    step: float = 0.0,
    beta1: float | None = None,
    block: int | None = None,
    extra_programs: int = 0,
    specials: bool = False,
) -> Case:
    """One launch, lowered from one graph op; expected outputs by ABI name (all
    NaN for ``buf_out`` without momentum: the kernel must never touch it)."""
    lr = 0.05 if family == "sgd_update" else 0.1  # updates well above f32 rounding of p
    if family == "sgd_update":
        text = sgd_text(shape, lr, momentum, weight_decay)
    else:
        text = adamw_text(shape, lr, weight_decay, beta1)
    module, launch = lowered(text)
    arrays = _inputs(family, shape, rng, step, specials)
    graph_inputs = arrays if family != "sgd_update" or momentum else arrays[:2]
    with np.errstate(all="ignore"):
        outputs = reference.run(module, {}, graph_inputs)
    case_id = (
        f"{family.split('_')[0]}-{'x'.join(map(str, shape))}"
        + (f"-mom{momentum}" if momentum else "")
        + (f"-wd{weight_decay}" if weight_decay else "")
        + (f"-step{int(step)}" if family == "adamw_update" else "")
        + (f"-beta1_{beta1}" if beta1 is not None else "")
        + (f"-b{block}" if block else "")
        + (f"-grid+{extra_programs}" if extra_programs else "")
        + ("-specials" if specials else "")
    )
    block_size = block or int(launch.constexpr_values["BLOCK"])
    return launch_case(
        case_id,
        launch,
        1,
        graph_inputs,
        outputs,
        # An unmasked access reaches at most BLOCK elements past the end per program.
        pad=block_size * (1 + extra_programs) + 16,
        tol=ELEMENTWISE_TOL,
        constexprs=None if block is None else {"BLOCK": block},
        extra_programs=extra_programs,
    )


def all_cases() -> list[Case]:
    rng = np.random.default_rng(21)
    cases: list[Case] = []
    for shape in SHAPES:
        for momentum in (0.0, 0.9):
            for weight_decay in (0.0, 0.1):
                cases.append(
                    kernel_case(
                        "sgd_update", shape, rng, momentum=momentum, weight_decay=weight_decay
                    )
                )
    # Many programs (33 of 128), extra programs, a non-flat parameter, inf and NaN.
    cases.append(kernel_case("sgd_update", (4099,), rng, momentum=0.9, weight_decay=0.1, block=128))
    cases.append(kernel_case("sgd_update", (1000,), rng, block=64, extra_programs=2))
    cases.append(kernel_case("sgd_update", (6, 1, 5, 5), rng, momentum=0.9, extra_programs=1))
    cases.append(kernel_case("sgd_update", (7,), rng, momentum=0.9, specials=True))
    for shape in SHAPES:
        for step in (0.0, 1.0, 999.0):
            weight_decay = 0.1 if shape[0] in (7, 4099) else 0.0
            block = 128 if shape == (4099,) and step == 1 else None
            cases.append(
                kernel_case(
                    "adamw_update", shape, rng, step=step, weight_decay=weight_decay, block=block
                )
            )
    # Many loop chunks, extra (masked-off) programs, beta1 = 0 (ln = -inf), specials.
    cases.append(kernel_case("adamw_update", (1000,), rng, step=999.0, block=16, extra_programs=2))
    cases.append(kernel_case("adamw_update", (6, 1, 5, 5), rng, step=1.0, weight_decay=0.1))
    cases.append(kernel_case("adamw_update", (7,), rng, step=4.0, beta1=0.0))
    cases.append(kernel_case("adamw_update", (7,), rng, step=2.0, specials=True))
    return cases


def mutants() -> dict[str, Case]:
    """Mutated kernels the checks must catch: an SGD store without its tail mask
    writes past the parameter; an AdamW step stored by every lane of the block."""
    rng = np.random.default_rng(22)
    return {
        what: replace(case, id=f"mutant-{what}", mutation=mutation)
        for what, (case, mutation) in {
            "sgd-no-mask": (
                kernel_case("sgd_update", (7,), rng),
                (
                    "tl.store(p_out + offs, param - lr * grad, mask=mask)",
                    "tl.store(p_out + offs, param - lr * grad)",
                ),
            ),
            "adamw-step-every-lane": (
                kernel_case("adamw_update", (7,), rng, step=3.0),
                ("+ count, mask=lane < live)", "+ count, mask=lane < 16)"),
            ),
        }.items()
    }


CASES = all_cases()
MUTANTS = mutants()


ALIASED = {"sgd_update": {"p_out": "p", "buf_out": "buf"}}
ALIASED["adamw_update"] = {"p_out": "p", "m_out": "m", "v_out": "v", "step_out": "step"}
"""Each update's outputs and the inputs they overwrite when the trainer runs it in place."""
ALIAS_CASES = {
    "sgd": next(c for c in CASES if c.id == "sgd-4099-mom0.9-wd0.1-b128"),
    "adamw": next(c for c in CASES if c.id == "adamw-1000-step999-b16-grid+2"),
    "adamw-chunks": next(c for c in CASES if c.id == "adamw-4099-wd0.1-step1-b128"),
}
IN_PLACE = {
    what: replace(case, id=f"in-place-{what}", aliases=ALIASED[case.family])
    for what, case in ALIAS_CASES.items()
}
"""The alias cases with each output pointer bound to its input's buffer."""
IN_PLACE_MUTANTS = {
    # Every program runs the update: harmless on separate buffers (each writes the
    # same values), but in place the extra programs update the updated state again.
    "adamw-all-programs": replace(
        IN_PLACE["adamw"],
        id="in-place-mutant-adamw-all-programs",
        mutation=("(tl.program_id(0) == 0)", "(tl.program_id(0) >= 0)"),
    ),
}


HARNESS_CASES = [
    *CASES,
    *MUTANTS.values(),
    *IN_PLACE.values(),
    *IN_PLACE_MUTANTS.values(),
]
"""What the `results` fixture (tests/conftest.py) runs, in one interpreter process."""


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_kernel_matches_the_reference(case: Case, results: Results) -> None:
    """Canaries, NaN and inf where the reference has them (``buf_out`` untouched
    without momentum), the finite values within ``case.tol``."""
    assert problems(case, results) == []


UPDATE_TOL = 1e-4
"""The update ``p' - p`` against the reference's, relative to its largest: a
check far tighter than the parameter's own (the update is small next to ``p``)."""


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_the_update_itself_matches(case: Any, results: dict[str, np.ndarray]) -> None:
    before = dict(case.args)["p"].astype(np.float64)
    after = case.expected["p_out"]
    finite = np.isfinite(after) & np.isfinite(before)
    want = after[finite] - before[finite]
    got = results[f"{case.id}/p_out"][case.pad : -case.pad].astype(np.float64)[finite]
    scale = np.max(np.abs(want))
    assert scale > 1e-4, scale
    # Plus the f32 rounding of p' itself (half an ulp, with a factor 2 to spare).
    bound = UPDATE_TOL * scale + 2.0**-23 * np.max(np.abs(after[finite]))
    assert np.max(np.abs((got - before[finite]) - want)) <= bound


def test_every_case_is_a_valid_launch() -> None:
    for case in [*CASES, *MUTANTS.values()]:
        validator.validate(case.contract())


def test_the_checks_catch_mutated_kernels(results: Results) -> None:
    found = {what: " ".join(problems(case, results)) for what, case in MUTANTS.items()}
    assert re.search(r"p_out: \d+ of the \d+ canaries after the view", found["sgd-no-mask"])
    assert re.search(r"step_out: \d+ of the \d+ canaries after", found["adamw-step-every-lane"])


def test_the_cases_cover_the_brief() -> None:
    """Shapes 1, 7, 1000, 4099; momentum 0 and 0.9; weight decay 0 and 0.1; AdamW
    at steps 0, 1 and 999; many programs (SGD) and many chunks (AdamW); extra
    programs; non-finite values; the step output is step + 1."""
    sgd = [c for c in CASES if c.family == "sgd_update"]
    adamw = [c for c in CASES if c.family == "adamw_update"]
    for shape in SHAPES:
        for group in (sgd, adamw):
            assert any(c.tensors["p"][0] == shape for c in group), shape
    assert {c.constexprs["HAS_MOMENTUM"] for c in sgd} == {0, 1}
    assert any("-wd" in c.id for c in sgd) and any("-wd" in c.id for c in adamw)
    steps = {float(dict(c.args)["step"][0]) for c in adamw}
    assert {0.0, 1.0, 999.0} <= steps
    for case in adamw:
        assert case.expected["step_out"][0] == dict(case.args)["step"][0] + 1
    assert max(c.grid for c in sgd) >= 33
    assert any(c.tensors["p"][0][0] // int(c.constexprs["BLOCK"]) >= 30 for c in adamw)
    assert any("grid+" in c.id for c in sgd) and any("grid+" in c.id for c in adamw)
    assert any(np.isnan(c.expected["p_out"]).any() for c in CASES)
    assert all(
        np.isnan(c.expected["buf_out"]).all() for c in sgd if not c.constexprs["HAS_MOMENTUM"]
    )


def test_the_validator_holds_the_dims_to_the_shapes() -> None:
    for case in (CASES[2], next(c for c in CASES if c.family == "adamw_update")):
        bad = dict(case.args)
        bad["N"] = bad["N"] + 1
        with pytest.raises(validator.ContractError, match="imply"):
            validator.validate(replace(case, args=list(bad.items())).contract())
    adamw = next(c for c in CASES if c.family == "adamw_update")
    tensors = dict(adamw.tensors) | {"step": ((2,), 1)}
    with pytest.raises(validator.ContractError, match="cannot take tensors"):
        validator.validate(replace(adamw, tensors=tensors).contract())


# ------------------------------------------------------ in place, bias correction


@pytest.mark.parametrize("what", sorted(IN_PLACE))
def test_in_place_matches_the_reference(what: str, results: Results) -> None:
    """Each output pointer is its input's tensor (as the compiled trainer binds them)."""
    assert problems(IN_PLACE[what], results) == []


def test_in_place_checks_catch_a_kernel_whose_extra_programs_run(results: Results) -> None:
    case = ALIAS_CASES["adamw"]
    assert case.grid == 3 and problems(case, results) == []  # fine on separate buffers
    found = " ".join(problems(IN_PLACE_MUTANTS["adamw-all-programs"], results))
    assert "step_out: max|got - ref| = 2.000e+00" in found and "p_out: max|got - ref|" in found


PROBE = """

@triton.jit
def probe(ln_beta, counts, result, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    c = tl.load(counts + offs, mask=mask, other=1.0)
    ln = tl.sum(tl.load(ln_beta + offs, mask=offs < 1, other=0.0), axis=0)
    tl.store(result + offs, _one_minus_pow(ln, c), mask=mask)
"""
"""A kernel of the bias correction alone: the family's ``_one_minus_pow`` at
``ln(beta)`` for every step count 1..1000 (appended to a rendered variant)."""
PROBE_BETAS = (0.9, 0.99, 0.999, 0.5, 0.0)


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    """`PROBE` run once per beta of `PROBE_BETAS`: its padded result buffers."""
    workdir = tmp_path_factory.mktemp("optim-probe")
    kernel = workdir / "adamw_probe.py"
    kernel.write_text(render(FAMILIES["adamw_update"], "adamw_probe", {"BLOCK": 16}) + PROBE)
    counts = workdir / "counts.npy"
    np.save(counts, np.arange(1, 1001, dtype=np.float32))
    specs = []
    for index, beta in enumerate(PROBE_BETAS):
        ln = workdir / f"ln{index}.npy"
        np.save(ln, np.array([math.log(beta) if beta > 0 else -math.inf], np.float32))
        args = [{"array": str(ln)}, {"array": str(counts)}, {"output": 1000}, {"int": 1000}]
        specs.append(
            {
                "kernel_file": str(kernel),
                "kernel_name": "probe",
                "constexprs": {"BLOCK": 1024},
                "grid": [1, 1, 1],
                "num_warps": 4,
                "pad": 64,
                "args": args,
            }
        )
    return run_specs(specs, workdir)


@pytest.mark.parametrize("index", range(len(PROBE_BETAS)), ids=[str(b) for b in PROBE_BETAS])
def test_bias_correction_over_steps_1_to_1000(index: int, probed: dict[str, np.ndarray]) -> None:
    """The kernel's ``1 - beta**step'`` (f32, from the f32 ``ln(beta)`` the lowering
    binds) against float64, relative error within 1e-6 at every step 1..1000."""
    beta = PROBE_BETAS[index]
    counts = np.arange(1, 1001, dtype=np.float64)
    want = 1 - beta**counts
    got = probed[f"case{index}_arg2"][64:-64].astype(np.float64)
    relative = np.abs(got - want) / want
    assert relative.max() < 1e-6, (relative.max(), int(relative.argmax()) + 1)


def test_the_hyper_slots_are_rounded_once_from_float64() -> None:
    """The derived constants are computed in float64, then rounded to f32; a beta
    of 0 gives ln = -inf, and the lowered IR (literals included) round-trips."""
    _, launch = lowered(adamw_text((7,), 1e-3, 0.1, None))
    (slot,) = launch.param_slots
    want = [1e-3, 0.9, 0.999, 1e-8, 1 - 1e-4, 1 - 0.9, 1 - 0.999, math.log(0.9), math.log(0.999)]
    assert np.array_equal(derivations.evaluate(slot.derivation, {}), np.array(want, np.float32))
    _, launch = lowered(sgd_text((7,), 0.05, 0.9, 0.1))
    (slot,) = launch.param_slots
    assert np.array_equal(
        derivations.evaluate(slot.derivation, {}), np.array([0.05, 0.9, 0.1], np.float32)
    )
    module = teeny_ir.parse_module(adamw_text((7,), 1e-3, 0.0, 0.0))
    teeny_ir.PassManager.parse("lower-graph-to-kernel").run(module)
    (launch,) = [o for o in module.walk() if isinstance(o, LaunchOp)]
    (slot,) = launch.param_slots
    assert slot.derivation.values[7] == -math.inf and slot.derivation.values[1] == 0.0
    assert_round_trips(module)


# ---------------------------------------------------------------- AOT


VARIANTS = [
    (80, "sgd_update", {"HAS_MOMENTUM": 1, "BLOCK": tiles.BLOCK}),
    (90, "sgd_update", {"HAS_MOMENTUM": 0, "BLOCK": tiles.BLOCK}),
    (80, "adamw_update", {"BLOCK": tiles.BLOCK}),
    (90, "adamw_update", {"BLOCK": tiles.BLOCK}),
]


@pytest.mark.parametrize(("arch", "family_name", "constexprs"), VARIANTS)
def test_compiles_ahead_of_time(
    arch: int, family_name: str, constexprs: dict[str, int], tmp_path: Path, triton_cache: None
) -> None:
    """Every variant the lowerings emit (their tiles: BLOCK 1024, 4 warps)."""
    family = FAMILIES[family_name]
    if family_name == "sgd_update":
        emitted = lowered(sgd_text((7,), 0.1, 0.9 * int(constexprs["HAS_MOMENTUM"]), 0.0))[1]
    else:
        emitted = lowered(adamw_text((7,), 0.1, 0.0, None))[1]
    assert emitted.constexpr_values == constexprs
    assert (emitted.num_warps, emitted.num_stages) == (tiles.NUM_WARPS, tiles.NUM_STAGES)
    name = f"{family_name}_0"
    path = tmp_path / f"{name}.py"
    path.write_text(render(family, name, constexprs))
    compiled = aot.compile_variant(
        path, name, family, constexprs, arch, tiles.NUM_WARPS, tiles.NUM_STAGES
    )
    assert f".target sm_{arch}" in compiled.ptx
    assert compiled.cubin[:4] == b"\x7fELF"
    assert re.search(rf"\.reqntid {32 * tiles.NUM_WARPS}\b", compiled.ptx)
    entry = compiled.ptx[compiled.ptx.index(f".entry {name}") :]
    assert entry[: entry.index(")")].count(".param") == len(family.args) + 2
    aot.check_shared(compiled)


# ---------------------------------------------------------------- end to end

E2E_SHAPE = (6, 1, 5, 5)


def test_end_to_end_matches_the_reference(tmp_path: Path) -> None:
    """An SGD step with momentum and an AdamW step in one graph, through
    lower-graph-to-kernel, emit-triton and the runtime (one run)."""
    t, s = _t(E2E_SHAPE), _t(())
    text = f"""\
func.func @forward(%p: {t}, %g: {t}, %b: {t}, %q: {t}, %m: {t}, %v: {t}, %s: {s})
    -> ({t}, {t}, {t}, {t}, {t}, {s}) {{
  %p2, %b2 = graph.sgd_update %p, %g, %b lr 5.000000e-02 momentum 9.000000e-01
      weight_decay 1.000000e-01 : ({t}, {t}, {t}) -> ({t}, {t})
  %q2, %m2, %v2, %s2 = graph.adamw_update %q, %g, %m, %v, %s lr 1.000000e-03
      weight_decay 1.000000e-01 : ({t}, {t}, {t}, {t}, {s}) -> ({t}, {t}, {t}, {s})
  func.return %p2, %b2, %q2, %m2, %v2, %s2 : {t}, {t}, {t}, {t}, {t}, {s}
}}
"""
    out = tmp_path / "plan"
    module = teeny_ir.parse_module(text)
    teeny_ir.PassManager.parse(f"lower-graph-to-kernel,emit-triton{{out-dir={out}}}").run(module)
    families = sorted(o.family for o in module.walk() if isinstance(o, LaunchOp))
    assert families == ["adamw_update", "sgd_update"]
    rng = np.random.default_rng(5)
    inputs = [rng.standard_normal(E2E_SHAPE).astype(np.float32) for _ in range(5)]
    inputs.append(np.abs(inputs[-1]) * np.float32(0.01))
    inputs[-2] *= np.float32(0.1)
    inputs.append(np.array(41.0, np.float32))
    got = runtime.load(out).run(inputs, {})
    want = reference.run(teeny_ir.parse_module(text), {}, inputs)
    assert got[-1].shape == () and float(got[-1]) == 42.0
    assert_close(got, want, ELEMENTWISE_TOL)
