"""The ``cross_entropy`` kernel family: Triton's interpreter against the reference
semantics, its status output (targets out of range), the validator's view of its
launches, AOT compilation, and graphs end to end through ``teeny-inference``,
``emit-triton``, the runtime and ``teeny-run``.

Each kernel case is one ``graph.cross_entropy`` written as IR with a dynamic
batch and lowered by the family's ``@lowers`` rule: the dims are what the
compiler emits at the case's batch; some cases shrink ``BLOCK_ROWS`` and
``BLOCK_C`` so that rows span many chunks and the batch many row blocks. All
cases run in one harness process (`teeny_ir.testing.kernels.run_cases`) with
NaN-padded logits,
targets padded with an index far out of range (an unmasked read of a target
counts as out of range), and canary-padded outputs. The expected loss is the
reference's, in float64; the expected status is counted here from the targets.
"""

from __future__ import annotations

import io
import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import save_file

import teeny_ir
from dialects.kernel import LaunchOp
from teeny_ir import reference, runtime
from teeny_ir.backend import aot
from teeny_ir.core.diagnostics import DiagnosticError
from teeny_ir.driver import run as teeny_run
from teeny_ir.kernels import validator
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.render import render
from teeny_ir.kernels.softmax import tiles
from teeny_ir.testing import REDUCTION_TOL, assert_close
from teeny_ir.testing import kernels as harness
from teeny_ir.testing.kernels import Case, Results, launch_case, problems


def graph_text(classes: int) -> str:
    return f"""\
func.func @forward(%x: tensor<?x{classes}xf32>, %t: tensor<?xi64>) -> tensor<f32> {{
  %l = graph.cross_entropy %x, %t : (tensor<?x{classes}xf32>, tensor<?xi64>) -> tensor<f32>
  func.return %l : tensor<f32>
}}
"""


def lowered(classes: int) -> tuple[Any, LaunchOp]:
    return harness.lowered(graph_text(classes))


def _logits(shape: tuple[int, int], kind: str, rng: np.random.Generator) -> np.ndarray:
    """``normal`` (scale 3), ``large`` (scale 1e4: exp overflows unshifted),
    ``specials`` (a NaN row, a +inf row, a row of -inf only, and a finite row
    whose target's logit is -inf), or ``neg-inf`` (only the last case)."""
    scale = 1e4 if kind == "large" else 3.0
    x = (rng.standard_normal(shape) * scale).astype(np.float32)
    if kind in ("specials", "neg-inf"):
        x[-1, 0] = -np.inf  # the target's logit (set below): the loss is +inf
    if kind == "specials":
        x[0, shape[1] // 2] = np.nan
        x[1, 0] = np.inf
        x[2, :] = -np.inf
        x[3, 1:] = -np.inf  # finite: one class holds all the mass
    return x


def _status(targets: np.ndarray, classes: int) -> np.ndarray:
    bad = np.flatnonzero((targets < 0) | (targets >= classes))
    if not bad.size:
        return np.array([0, targets.size, 0], np.int64)
    return np.array([bad.size, bad[0], targets[bad[0]]], np.int64)


def kernel_case(
    shape: tuple[int, int],
    rng: np.random.Generator,
    *,
    blocks: tuple[int, int] | None = None,
    kind: str = "normal",
    bad: tuple[int, ...] = (),
    view: tuple[int, int] | None = None,
    extra_programs: int = 0,
) -> Case:
    """One launch on logits ``shape`` [N, C]; ``bad`` puts out-of-range values at
    the start of the targets (C, -1, C + 5, ...), ``view`` makes the logits
    columns ``[first, first + C)`` of a NaN-filled [N, total] buffer."""
    batch, classes = shape
    module, launch = lowered(classes)
    x = _logits(shape, kind, rng)
    targets = rng.integers(0, classes, batch).astype(np.int64)
    if kind in ("specials", "neg-inf"):
        targets[-1] = 0
    for index, value in zip(range(batch), bad, strict=False):
        targets[index] = value
    if bad:
        want = np.array(np.nan)
    else:
        with np.errstate(all="ignore"):
            (want,) = reference.run(module, {}, [x, targets])
    case_id = (
        f"ce-{batch}x{classes}"
        + (f"-b{blocks[0]}x{blocks[1]}" if blocks else "")
        + (f"-{kind}" if kind != "normal" else "")
        + (f"-bad{len(bad)}" if bad else "")
        + (f"-x@{view[1]}of{view[0]}" if view else "")
        + (f"-grid+{extra_programs}" if extra_programs else "")
    )
    return launch_case(
        case_id,
        launch,
        batch,
        [x, targets],
        [want, _status(targets, classes)],
        pad=64,
        tol=REDUCTION_TOL,
        views={} if view is None else {"logits": view},
        constexprs=None if blocks is None else {"BLOCK_ROWS": blocks[0], "BLOCK_C": blocks[1]},
        extra_programs=extra_programs,
    )


def all_cases() -> list[Case]:
    rng = np.random.default_rng(11)
    cases: list[Case] = []
    for batch in (1, 3):
        for classes in (1, 10, 37, 1000):
            cases.append(kernel_case((batch, classes), rng))
        cases.append(kernel_case((batch, 13), rng, view=(20, 4)))
        cases.append(kernel_case((batch, 13), rng, bad=(13,)))
    # Long rows (the lowering's 2 x 1024 tiles: five chunks per row), many row blocks.
    cases.append(kernel_case((5, 4099), rng))
    cases.append(kernel_case((37, 13), rng, blocks=(4, 4)))
    cases.append(kernel_case((37, 13), rng, blocks=(8, 2), view=(17, 3)))
    cases.append(kernel_case((6, 11), rng, kind="large"))
    cases.append(kernel_case((6, 11), rng, kind="specials", blocks=(2, 4)))
    cases.append(kernel_case((6, 11), rng, kind="neg-inf"))
    # Out of range: above, at C, negative, many; the first is reported.
    cases.append(kernel_case((9, 10), rng, bad=(10, -1, 15), blocks=(4, 4)))
    cases.append(kernel_case((9, 10), rng, bad=(-(2**40),)))
    cases.append(kernel_case((40, 7), rng, bad=(7,) * 40, blocks=(8, 8)))
    # A second program would write the same values (the family runs one).
    cases.append(kernel_case((3, 10), rng, extra_programs=1))
    return cases


def mutants() -> dict[str, Case]:
    """Mutated kernels the checks must catch: a logits load masked to the rows
    only reads the NaN past each row; a status that never counts reports nothing."""
    rng = np.random.default_rng(12)
    return {
        what: replace(case, id=f"mutant-{what}", mutation=mutation)
        for what, (case, mutation) in {
            "no-class-mask": (
                kernel_case((3, 10), rng, blocks=(4, 4)),
                ("c[None, :], mask=mask,", "c[None, :], mask=row_mask[:, None],"),
            ),
            "no-count": (
                kernel_case((5, 10), rng, bad=(12,)),
                ("bad_count += bad.to(tl.int64)", "bad_count += 0"),
            ),
        }.items()
    }


CASES = all_cases()
MUTANTS = mutants()


HARNESS_CASES = [*CASES, *MUTANTS.values()]
"""What the `results` fixture (tests/conftest.py) runs, in one interpreter process."""


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_kernel_matches_the_reference(case: Case, results: Results) -> None:
    """The status exactly; the loss NaN or infinite where the reference's is,
    else within ``case.tol``; canaries intact around both."""
    assert problems(case, results) == []


def test_every_case_is_a_valid_launch() -> None:
    for case in CASES:
        validator.validate(case.contract())


def test_the_checks_catch_mutated_kernels(results: Results) -> None:
    found = {what: " ".join(problems(case, results)) for what, case in MUTANTS.items()}
    assert (
        "loss: 1 of 1 elements NaN or infinite where the reference is finite"
        in found["no-class-mask"]
    ), found
    assert "status: " in found["no-count"] and "element 0: [0," in found["no-count"], found


def test_the_cases_are_not_vacuous() -> None:
    """Finite, NaN and +inf losses; several row blocks and chunks; bad targets."""
    losses = np.concatenate([c.expected["loss"] for c in CASES])
    assert np.isnan(losses).any() and np.isposinf(losses).any()
    assert np.isfinite(losses).sum() >= 10
    assert any(c.expected["status"][0] == 40 for c in CASES)
    specials = next(c for c in CASES if c.id.endswith("-specials"))
    assert np.isnan(specials.expected["loss"]).all()  # the NaN, +inf and -inf rows


def test_out_of_range_in_the_reference_too() -> None:
    module, _ = lowered(10)
    x = np.zeros((3, 10), np.float32)
    with pytest.raises(DiagnosticError, match=r"target 10 at index 1 is out of range \[0, 10\)"):
        reference.run(module, {}, [x, np.array([0, 10, 3], np.int64)])


def test_the_validator_holds_the_dims_to_the_shapes() -> None:
    case = CASES[1]
    contract = case.contract()
    assert validator.validate(contract) is None
    bad = dict(case.args)
    bad["C"] = bad["C"] + 1
    wrong = replace(case, args=list(bad.items()))
    with pytest.raises(validator.ContractError, match="imply"):
        validator.validate(wrong.contract())


@pytest.mark.parametrize("arch", [80, 90])
def test_compiles_ahead_of_time(arch: int, tmp_path: Path, triton_cache: None) -> None:
    """The lowering's tiles for 10 classes (128 x 16)."""
    block_rows, block_c = tiles.row_tiles(10)
    constexprs: dict[str, int | str] = {"BLOCK_ROWS": block_rows, "BLOCK_C": block_c}
    family = FAMILIES["cross_entropy"]
    name = "cross_entropy_0"
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

E2E = """\
func.func @forward(%x: tensor<?x3x4x4xf32>, %t: tensor<?xi64>) -> (tensor<f32>, tensor<?x10xf32>) {
  %w = graph.param "fc.weight" : tensor<10x48xf32>
  %b = graph.param "fc.bias" : tensor<10xf32>
  %f = graph.flatten %x : (tensor<?x3x4x4xf32>) -> tensor<?x48xf32>
  %y = graph.linear %f, %w, %b : (tensor<?x48xf32>, tensor<10x48xf32>, tensor<10xf32>)
      -> tensor<?x10xf32>
  %l = graph.cross_entropy %y, %t : (tensor<?x10xf32>, tensor<?xi64>) -> tensor<f32>
  func.return %l, %y : tensor<f32>, tensor<?x10xf32>
}
"""


def _compiled(tmp_path: Path) -> Path:
    out = tmp_path / "plan"
    module = teeny_ir.parse_module(E2E, filename="ce.mlir")
    teeny_ir.PassManager.parse(f"teeny-inference,emit-triton{{out-dir={out}}}").run(module)
    families = sorted(o.family for o in module.walk() if isinstance(o, LaunchOp))
    assert families == ["cross_entropy", "linear"]
    return out


def test_end_to_end_matches_the_reference(tmp_path: Path) -> None:
    out = _compiled(tmp_path)
    executable = runtime.load(out)
    assert [t.dtype for t in executable.plan.inputs] == ["f32", "i64"]
    assert sorted(t.dtype for t in executable.plan.buffers) == ["f32", "f32", "i64"]
    rng = np.random.default_rng(3)
    weights = {
        "fc.weight": rng.standard_normal((10, 48)).astype(np.float32),
        "fc.bias": rng.standard_normal(10).astype(np.float32),
    }
    x = rng.standard_normal((3, 3, 4, 4)).astype(np.float32)
    t = np.array([9, 0, 4], np.int64)
    got = executable.run([x, t], weights)
    want = reference.run(teeny_ir.parse_module(E2E), weights, [x, t])
    assert got[0].shape == () and got[0].dtype == np.float32
    assert_close(got, want, REDUCTION_TOL)
    with pytest.raises(runtime.RuntimeInputError, match="expected int64"):
        executable.run([x, t.astype(np.float32)], weights)


def test_a_target_out_of_range_is_an_error_naming_the_op(tmp_path: Path) -> None:
    """teeny-run exits 1 with one line naming graph.cross_entropy and its location."""
    out = _compiled(tmp_path)
    rng = np.random.default_rng(4)
    save_file(
        {
            "fc.weight": rng.standard_normal((10, 48)).astype(np.float32),
            "fc.bias": np.zeros(10, np.float32),
        },
        tmp_path / "w.safetensors",
    )
    np.save(tmp_path / "x.npy", rng.standard_normal((4, 3, 4, 4)).astype(np.float32))
    np.save(tmp_path / "t.npy", np.array([1, 2, 10, -3], np.int64))
    stdout, stderr = io.StringIO(), io.StringIO()
    argv = [str(out), "--input", str(tmp_path / "x.npy"), "--input", str(tmp_path / "t.npy")]
    argv += ["--weights", str(tmp_path / "w.safetensors"), "-o", str(tmp_path / "o.npz")]
    code = teeny_run.run(argv, stdout, stderr)
    assert code == 1
    message = stderr.getvalue()
    assert re.search(
        r"error: graph\.cross_entropy at ce\.mlir:7:8: target 10 at index 2 is out of range "
        r"\[0, 10\) \(2 out of range in all\)",
        message,
    ), message
    assert "Traceback" not in message and len(message.strip().splitlines()) == 1
    assert not (tmp_path / "o.npz").exists()


def test_plan_dtypes_are_checked(tmp_path: Path) -> None:
    """A plan that binds a float tensor to the i64 targets pointer is refused."""
    out = _compiled(tmp_path)
    plan = (out / "plan.json").read_text()
    edited = re.sub(
        r'"dtype": "i64",\n(\s*)"name": "in1"', r'"dtype": "f32",\n\1"name": "in1"', plan
    )
    assert edited != plan
    (out / "plan.json").write_text(edited)
    with pytest.raises(runtime.PlanError, match=r"argument 'targets' \(input\) takes i64"):
        runtime.load(out)


def test_math() -> None:
    """The family's grid is one program; its blocks fit Triton's limit."""
    _, launch = lowered(4099)
    values = launch.constexpr_values
    assert launch.grid == ("1", "1", "1")
    assert math.prod(int(values[k]) for k in ("BLOCK_ROWS", "BLOCK_C")) <= 2**20
