"""The ``concat`` and ``split`` kernel families: Triton's interpreter against numpy,
the validator's view of their launches, AOT compilation, and a split -> silu ->
concat graph end to end against the reference interpreter.

Kernels run in one `kernel_harness.py` subprocess (``TRITON_INTERPRET`` is read
when triton is imported). Every output is canary-padded on both sides and starts
as NaN: a write past the view changes a canary, an element never written stays
NaN. Unused part pointers are bound to an all-NaN input (concat: a read of it
would poison the result) or to an empty, canary-only output (split: a write to
it would change a canary). Shapes are odd, batches 1 and 3, BLOCK 128 so that
every launch has several programs and a tail, some grids with extra programs.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import teeny_ir
from dialects.kernel import LaunchOp
from teeny_ir.backend import aot
from teeny_ir.kernels import validator
from teeny_ir.kernels.concat import lowering as concat_lowering
from teeny_ir.kernels.concat.rows import MAX_PARTS
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.render import render
from teeny_ir.testing import assert_close

HARNESS = Path(__file__).with_name("kernel_harness.py")
CANARY = np.float32(1234.5)  # kernel_harness.CANARY
BLOCK = 128


@dataclass
class Case:
    """One launch of ``family`` and the outputs it must produce."""

    id: str
    family: str
    constexprs: dict[str, int]
    args: list[tuple[str, Any]]  # ABI order: ndarray, int, or ("output", numel)
    grid: int
    pad: int
    expected: dict[str, np.ndarray] = field(default_factory=dict)  # by ABI name; size 0: untouched


def _inner(shape: tuple[int, ...], axis: int) -> int:
    return math.prod(shape[axis:])


def _parts(whole: tuple[int, ...], sizes: list[int], axis: int) -> list[tuple[int, ...]]:
    return [(*whole[:axis], s, *whole[axis + 1 :]) for s in sizes]


def concat_case(
    whole: tuple[int, ...], sizes: list[int], axis: int, rng: np.random.Generator, extra: int = 0
) -> Case:
    shapes = _parts(whole, sizes, axis)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    inputs[0].flat[0] = -0.0  # the sign of zero survives the copy
    out = np.concatenate(inputs, axis=axis)
    unused = np.full((7,), np.nan, np.float32)
    numel = out.size
    args: list[tuple[str, Any]] = [
        (f"x{k}", inputs[k] if k < len(inputs) else unused) for k in range(MAX_PARTS)
    ]
    args += [("out", ("output", numel)), ("numel", numel), ("INNER_OUT", _inner(whole, axis))]
    args += [
        (f"INNER{k}", _inner(shapes[k], axis) if k < len(shapes) else 0) for k in range(MAX_PARTS)
    ]
    return Case(
        id=f"concat-{'x'.join(map(str, whole))}-axis{axis}-{'+'.join(map(str, sizes))}"
        + (f"-grid+{extra}" if extra else ""),
        family="concat",
        constexprs={"N_INPUTS": len(sizes), "BLOCK": BLOCK},
        args=args,
        grid=math.ceil(numel / BLOCK) + extra,
        pad=BLOCK * (1 + extra),
        expected={"out": out.ravel()},
    )


def split_case(
    whole: tuple[int, ...], sizes: list[int], axis: int, rng: np.random.Generator, extra: int = 0
) -> Case:
    shapes = _parts(whole, sizes, axis)
    x = rng.standard_normal(whole).astype(np.float32)
    pieces = np.split(x, np.cumsum(sizes)[:-1], axis=axis)
    args: list[tuple[str, Any]] = [("x", x)]
    args += [
        (f"y{k}", ("output", pieces[k].size if k < len(sizes) else 0)) for k in range(MAX_PARTS)
    ]
    args += [("numel", x.size), ("INNER_IN", _inner(whole, axis))]
    args += [
        (f"INNER{k}", _inner(shapes[k], axis) if k < len(shapes) else 0) for k in range(MAX_PARTS)
    ]
    expected = {
        f"y{k}": pieces[k].ravel() if k < len(sizes) else np.zeros(0) for k in range(MAX_PARTS)
    }
    return Case(
        id=f"split-{'x'.join(map(str, whole))}-axis{axis}-{'+'.join(map(str, sizes))}"
        + (f"-grid+{extra}" if extra else ""),
        family="split",
        constexprs={"N_OUTPUTS": len(sizes), "BLOCK": BLOCK},
        args=args,
        grid=math.ceil(x.size / BLOCK) + extra,
        pad=BLOCK * (1 + extra),
        expected=expected,
    )


def all_cases() -> list[Case]:
    rng = np.random.default_rng(3)
    cases: list[Case] = []
    for batch in (1, 3):
        cases.append(concat_case((batch, 8, 5, 7), [3, 5], 1, rng))
        cases.append(concat_case((batch, 10, 3, 5), [2, 7, 1], 1, rng))
        cases.append(concat_case((batch, 13, 3, 3), [4, 1, 5, 3], 1, rng))
        cases.append(concat_case((batch, 3, 9, 5), [4, 5], 2, rng))
        cases.append(split_case((batch, 10, 5, 7), [5, 5], 1, rng))
        cases.append(split_case((batch, 9, 3, 5), [2, 6, 1], 1, rng))
        cases.append(split_case((batch, 3, 5, 11), [3, 1, 7], 3, rng))
    cases.append(concat_case((3, 2, 5, 7), [3, 4], 3, rng, extra=2))
    cases.append(concat_case((5, 11), [2, 3], 0, rng))
    cases.append(concat_case((3, 6, 5), [6], 1, rng))
    cases.append(split_case((3, 12, 5, 7), [1, 4, 2, 5], 1, rng, extra=2))
    cases.append(split_case((7, 6), [4, 3], 0, rng))
    cases.append(split_case((2, 6, 5), [6], 1, rng))
    return cases


def run_harness(cases: list[Case], workdir: Path, num_warps: int) -> dict[str, np.ndarray]:
    """Every case in one interpreter process; each output's padded buffer by
    ``"<case id>/<arg name>"``."""
    files: dict[str, Path] = {}
    specs = []
    for index, case in enumerate(cases):
        family = FAMILIES[case.family]
        assert [name for name, _ in case.args] == [a.name for a in family.args], case.id
        key = f"{case.family}_{case.constexprs[next(iter(case.constexprs))]}"
        if key not in files:
            files[key] = workdir / f"{key}.py"
            files[key].write_text(render(family, key, case.constexprs))
        args: list[dict[str, Any]] = []
        for arg_index, (_, value) in enumerate(case.args):
            if isinstance(value, np.ndarray):
                path = workdir / f"case{index}_arg{arg_index}.npy"
                np.save(path, value)
                args.append({"array": str(path)})
            elif isinstance(value, tuple):
                args.append({"output": value[1]})
            else:
                args.append({"int": value})
        specs.append(
            {
                "kernel_file": str(files[key]),
                "kernel_name": key,
                "constexprs": case.constexprs,
                "grid": [case.grid, 1, 1],
                "num_warps": num_warps,
                "pad": case.pad,
                "args": args,
            }
        )
    cases_file, results_file = workdir / "cases.json", workdir / "results.npz"
    cases_file.write_text(json.dumps({"cases": specs}))
    done = subprocess.run(
        [sys.executable, "-W", "error", str(HARNESS), str(cases_file), str(results_file)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    results: dict[str, np.ndarray] = {}
    with np.load(results_file, allow_pickle=False) as npz:
        for index, case in enumerate(cases):
            for arg_index, (name, _) in enumerate(case.args):
                if f"case{index}_arg{arg_index}" in npz:
                    results[f"{case.id}/{name}"] = npz[f"case{index}_arg{arg_index}"]
    return results


CASES = all_cases()


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    return run_harness(CASES, tmp_path_factory.mktemp("copies"), concat_lowering.NUM_WARPS)


def problems(case: Case, results: dict[str, np.ndarray]) -> list[str]:
    """What is wrong with the outputs of ``case``: overwritten canaries, elements
    never written (or computed from a NaN read), wrong values. A copy is exact,
    down to the sign of zero."""
    found: list[str] = []
    for name, expected in case.expected.items():
        buffer = results[f"{case.id}/{name}"]
        padding = np.concatenate([buffer[: case.pad], buffer[len(buffer) - case.pad :]])
        if (padding != CANARY).any():
            found.append(f"{name}: {(padding != CANARY).sum()} canaries overwritten")
        got = buffer[case.pad : len(buffer) - case.pad]
        if np.isnan(got).any():
            found.append(f"{name}: {np.isnan(got).sum()} elements never written or read NaN")
        bits = expected.astype(np.float32).view(np.uint32)
        if got.size != expected.size or not np.array_equal(got.view(np.uint32), bits):
            found.append(f"{name}: differs from numpy")
    return found


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_kernel_matches_numpy(case: Case, results: dict[str, np.ndarray]) -> None:
    assert problems(case, results) == []


# ---------------------------------------------------------------- lowering and validation

C2F = """func.func @forward(%x: tensor<?x6x5x7xf32>)
    -> (tensor<?x10x5x7xf32>, tensor<?x10x5x4xf32>, tensor<?x10x5x3xf32>) {
  %a, %b = graph.split %x axis 1 sizes [2, 4]
      : (tensor<?x6x5x7xf32>) -> (tensor<?x2x5x7xf32>, tensor<?x4x5x7xf32>)
  %c = graph.silu %b : tensor<?x4x5x7xf32>
  %y = graph.concat %a, %b, %c axis 1 : (tensor<?x2x5x7xf32>, tensor<?x4x5x7xf32>,
      tensor<?x4x5x7xf32>) -> tensor<?x10x5x7xf32>
  %p, %q, %r = graph.split %y axis 3 sizes [1, 4, 2] : (tensor<?x10x5x7xf32>)
      -> (tensor<?x10x5x1xf32>, tensor<?x10x5x4xf32>, tensor<?x10x5x2xf32>)
  %z = graph.concat %r, %p axis 3
      : (tensor<?x10x5x2xf32>, tensor<?x10x5x1xf32>) -> tensor<?x10x5x3xf32>
  func.return %y, %q, %z : tensor<?x10x5x7xf32>, tensor<?x10x5x4xf32>, tensor<?x10x5x3xf32>
}
"""


def _lowered(text: str) -> Any:
    module = teeny_ir.parse_module(text)
    teeny_ir.PassManager.parse("teeny-inference").run(module)
    return module


def _launches(module: Any) -> list[LaunchOp]:
    return [op for op in module.walk() if isinstance(op, LaunchOp)]


def test_one_launch_per_concat_and_split() -> None:
    launches = _launches(_lowered(C2F))
    assert [op.family for op in launches] == ["split", "elementwise", "concat", "split", "concat"]
    first_split, _, first_concat, second_split, _ = launches
    assert len(first_split.results) == 2 and len(second_split.results) == 3
    assert first_split.constexpr_values == {"N_OUTPUTS": 2, "BLOCK": 1024}
    assert first_concat.constexpr_values == {"N_INPUTS": 3, "BLOCK": 1024}
    bindings = dict(first_concat.arg_bindings)
    assert (bindings["x3"], bindings["INNER3"], bindings["INNER_OUT"]) == ("in0", "0", "350")
    assert dict(second_split.arg_bindings)["INNER_IN"] == "7"
    # Each split result feeds its own users: %b reaches both silu and the concat.
    assert list(first_concat.operands)[1] is first_split.results[1]


def test_more_than_four_parts_is_refused() -> None:
    t = "tensor<?x1x2x2xf32>"
    text = f"""func.func @forward(%x: {t}) -> tensor<?x5x2x2xf32> {{
  %y = graph.concat %x, %x, %x, %x, %x axis 1 : ({t}, {t}, {t}, {t}, {t}) -> tensor<?x5x2x2xf32>
  func.return %y : tensor<?x5x2x2xf32>
}}
"""
    with pytest.raises(teeny_ir.DiagnosticError, match="5 inputs exceed the concat family's 4"):
        _lowered(text)


def _contract(launch: LaunchOp, **changes: str) -> validator.LaunchContract:
    contract = launch.contract()
    args = tuple((name, changes.get(name, value)) for name, value in contract.args)
    return validator.LaunchContract(
        contract.family,
        contract.constexprs,
        args,
        contract.tensors,
        contract.grid,
        contract.num_warps,
        contract.num_stages,
    )


def test_the_validator_holds_the_dims_to_the_shapes() -> None:
    _, _, concat, split, _ = _launches(_lowered(C2F))
    for launch in (concat, split):
        validator.validate(launch.contract())
    for launch, changes, message in (
        (concat, {"INNER1": "141"}, "argument 'INNER1' = '141' is 141 .* imply 140"),
        (concat, {"INNER3": "70"}, "argument 'INNER3' = '70' is 70 .* imply 0"),
        (split, {"INNER_IN": "6"}, "argument 'INNER_IN' = '6' is 6 .* imply 7"),
        (split, {"numel": "B * 351"}, "argument 'numel'"),
    ):
        with pytest.raises(validator.ContractError, match=message):
            validator.validate(_contract(launch, **changes))
    # Shapes that are no concatenation imply nothing.
    no_concat = dict(concat.contract().tensors) | {"out0": ("B", 11, 5, 7)}
    contract = concat.contract()
    bad = validator.LaunchContract(
        contract.family,
        contract.constexprs,
        contract.args,
        tuple(no_concat.items()),
        contract.grid,
        contract.num_warps,
        contract.num_stages,
    )
    with pytest.raises(validator.ContractError, match="cannot take tensors of shapes"):
        validator.validate(bad)


# ---------------------------------------------------------------- end to end


@pytest.mark.parametrize("batch", [1, 3])
def test_split_silu_concat_end_to_end(tmp_path: Path, batch: int) -> None:
    module = teeny_ir.parse_module(C2F)
    out_dir = tmp_path / "plan"
    teeny_ir.PassManager.parse(f"teeny-inference,emit-triton{{out-dir={out_dir}}}").run(module)
    x = np.random.default_rng(batch).standard_normal((batch, 6, 5, 7)).astype(np.float32)
    got = teeny_ir.runtime.load(out_dir).run([x], {})
    want = teeny_ir.reference.run(teeny_ir.parse_module(C2F), {}, [x])
    assert len(got) == len(want) == 3
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        assert_close(g, w, 1e-5)


# ---------------------------------------------------------------- AOT

ARCHS = (80, 90)
VARIANTS = [(family, count) for family in ("concat", "split") for count in (2, 4)]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize(("family", "count"), VARIANTS)
def test_compiles_ahead_of_time(tmp_path: Path, family: str, count: int, arch: int) -> None:
    """Every variant config the lowering emits (num_warps 4, 1 stage) compiles."""
    monkey = pytest.MonkeyPatch()
    monkey.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    try:
        counter = "N_INPUTS" if family == "concat" else "N_OUTPUTS"
        constexprs: dict[str, int | str] = {counter: count, "BLOCK": concat_lowering.BLOCK}
        name = f"{family}_0"
        path = tmp_path / f"{name}.py"
        path.write_text(render(FAMILIES[family], name, constexprs))
        variant = aot.compile_variant(
            path,
            name,
            FAMILIES[family],
            constexprs,
            arch=arch,
            num_warps=concat_lowering.NUM_WARPS,
            num_stages=concat_lowering.NUM_STAGES,
        )
    finally:
        monkey.undo()
    assert f".target sm_{arch}" in variant.ptx
    assert variant.cubin[:4] == b"\x7fELF"
    entry = variant.ptx[variant.ptx.index(f".entry {name}") :]
    params = entry[: entry.index(")")].count(".param")
    assert params == len(FAMILIES[family].args) + 2  # plus Triton's global and profile scratch
    aot.check_shared(variant)


def test_removing_the_store_masks_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checks are not vacuous: without its store mask, concat writes past its
    destination (into the canaries) and split writes each element into every part."""
    rng = np.random.default_rng(11)
    cases = [concat_case((3, 8, 5, 7), [3, 5], 1, rng), split_case((3, 9, 3, 5), [2, 7], 1, rng)]
    stores = {"concat": "tl.store(out + flat, value, mask=mask)", "split": "value, mask=inside)"}
    for family, store in stores.items():
        text = FAMILIES[family].source()
        assert text.count(store) == 1, family
        mutated = tmp_path / family / "kernel.py"
        mutated.parent.mkdir()
        mutated.write_text(
            text.replace(store, store.replace(", mask=mask", "").replace(", mask=inside", ""))
        )
        monkeypatch.setitem(FAMILIES, family, replace(FAMILIES[family], package=mutated.parent))
    results = run_harness(cases, tmp_path, concat_lowering.NUM_WARPS)
    assert "canaries overwritten" in " ".join(problems(cases[0], results))
    assert problems(cases[1], results) != []
