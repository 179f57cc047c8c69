"""The runtime: validation before any launch, and the interpreter backend.

Runs the hand-written fixture plan of test_plan.py (a fused 1x1 conv + BN +
SiLU, then a broadcasting add) through the interpreter worker at batch 1
and 3 and compares with numpy.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from teeny_ir import runtime
from teeny_ir.plan import PlanError


def _sibling(name: str) -> ModuleType:
    """Load another test module by path (``tests`` is not an importable package)."""
    spec = importlib.util.spec_from_file_location(f"_teeny_{name}", Path(__file__).with_name(name))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fixtures = _sibling("test_plan.py")


@pytest.fixture
def plan_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "plan"
    directory.mkdir()
    fixtures.write_fixture(directory)
    return directory


@pytest.fixture
def no_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if a worker process is started."""

    def refuse(workdir: Path) -> Any:
        raise AssertionError("a worker was started")

    monkeypatch.setattr(runtime, "_start_worker", refuse)


@pytest.mark.parametrize("batch", [1, 3])
def test_interpreter_matches_numpy(plan_dir: Path, batch: int) -> None:
    weights = fixtures.fixture_weights()
    inputs = fixtures.fixture_inputs(batch)
    timings: dict[str, float] = {}
    got = runtime.load(plan_dir).run(inputs, weights, timings=timings)
    fixtures.assert_close(got, fixtures.fixture_reference(inputs, weights))
    assert "worker: launches" in timings and "validate" in timings


def test_weights_from_a_safetensors_file(plan_dir: Path, tmp_path: Path) -> None:
    from safetensors.numpy import save_file

    weights = fixtures.fixture_weights()
    path = tmp_path / "w.safetensors"
    save_file(weights, str(path))
    inputs = fixtures.fixture_inputs(2)
    got = runtime.load(plan_dir).run(inputs, str(path))
    fixtures.assert_close(got, fixtures.fixture_reference(inputs, weights))


def test_every_weight_problem_in_one_error(plan_dir: Path, no_worker: None) -> None:
    weights = fixtures.fixture_weights()
    del weights["model.0.bn.weight"], weights["model.0.bn.bias"]
    weights["model.0.conv.weight"] = np.zeros((6, 4, 1, 1), np.float32)
    weights["model.0.bn.running_var"] = np.zeros(7, np.float32)
    with pytest.raises(runtime.RuntimeInputError) as info:
        runtime.load(plan_dir).run(fixtures.fixture_inputs(1), weights)
    assert str(info.value) == (
        "weights do not fit the plan: missing 'model.0.bn.weight' [6], 'model.0.bn.bias' [6]; "
        "'model.0.conv.weight' has shape [6, 4, 1, 1], expected [6, 5, 1, 1]; "
        "'model.0.bn.running_var' has shape [7], expected [6]"
    )


def test_integer_weight_is_rejected(plan_dir: Path, no_worker: None) -> None:
    weights = fixtures.fixture_weights()
    weights["model.0.bn.bias"] = np.zeros(6, np.int32)
    with pytest.raises(runtime.RuntimeInputError, match=r"'model\.0\.bn\.bias' has dtype int32"):
        runtime.load(plan_dir).run(fixtures.fixture_inputs(1), weights)


def _inputs_with(index: int, array: Any) -> list[Any]:
    inputs: list[Any] = fixtures.fixture_inputs(2)
    inputs[index] = array
    return inputs


BAD_INPUTS = [
    ("count", lambda: fixtures.fixture_inputs(2)[:1], "the plan takes 2 inputs, got 1"),
    ("array", lambda: fixtures.fixture_inputs(2)[0], "a sequence of numpy arrays"),
    ("list", lambda: _inputs_with(0, [[1.0]]), "input 0 is a list, not an array"),
    (
        "dtype",
        lambda: _inputs_with(1, np.zeros((2, 6, 1, 7))),
        "input 1 has dtype float64, expected float32",
    ),
    ("rank", lambda: _inputs_with(0, np.zeros((2, 5, 21), np.float32)), "input 0 has rank 3"),
    (
        "static dim",
        lambda: _inputs_with(0, np.zeros((2, 5, 3, 8), np.float32)),
        "input 0 has shape [2, 5, 3, 8], expected [B, 5, 3, 7] = [2, 5, 3, 7] at B=2",
    ),
    (
        "batch disagreement",
        lambda: _inputs_with(1, np.zeros((3, 6, 1, 7), np.float32)),
        "the inputs disagree on the batch size (input 0: 2, input 1: 3)",
    ),
    (
        "empty batch",
        lambda: [np.zeros((0, 5, 3, 7), np.float32), np.zeros((0, 6, 1, 7), np.float32)],
        "the batch size must be at least 1, got 0",
    ),
]


@pytest.mark.parametrize(
    ("make", "message"), [b[1:] for b in BAD_INPUTS], ids=[b[0] for b in BAD_INPUTS]
)
def test_bad_inputs(plan_dir: Path, no_worker: None, make: Any, message: str) -> None:
    with pytest.raises(runtime.RuntimeInputError) as info:
        runtime.load(plan_dir).run(make(), fixtures.fixture_weights())
    assert message in str(info.value)


BEFORE_ANY_LAUNCH = (
    "version",
    "unknown family",
    "call in a grid",
    "weight of the wrong size",
    "hash mismatch",
    "escaping path",
)


@pytest.mark.parametrize(
    ("change", "message"),
    [r[1:] for r in fixtures.REJECTIONS if r[0] in BEFORE_ANY_LAUNCH],
    ids=[r[0] for r in fixtures.REJECTIONS if r[0] in BEFORE_ANY_LAUNCH],
)
def test_bad_plans_fail_before_any_launch(
    plan_dir: Path, no_worker: None, change: Any, message: str
) -> None:
    path = plan_dir / "plan.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    with pytest.raises(PlanError) as info:
        runtime.load(plan_dir).run(fixtures.fixture_inputs(1), fixtures.fixture_weights())
    assert message in str(info.value)


def test_backends(plan_dir: Path, no_worker: None) -> None:
    executable = runtime.load(plan_dir)
    inputs, weights = fixtures.fixture_inputs(1), fixtures.fixture_weights()
    with pytest.raises(runtime.RuntimeInputError, match=r"cuda backend .* is a later issue"):
        executable.run(inputs, weights, backend="cuda")
    with pytest.raises(runtime.RuntimeInputError, match="unknown backend 'gpu'"):
        executable.run(inputs, weights, backend="gpu")


def test_grid_beyond_the_hardware_limit(plan_dir: Path, no_worker: None) -> None:
    path = plan_dir / "plan.json"
    data = json.loads(path.read_text())
    data["launches"][1]["grid"][1] = "B * 70000"
    path.write_text(json.dumps(data))
    with pytest.raises(runtime.RuntimeInputError, match=r"launch 1 .* needs grid \[1, 70000, 1\]"):
        runtime.load(plan_dir).run(fixtures.fixture_inputs(1), fixtures.fixture_weights())


def test_worker_failure_reports_its_last_lines(plan_dir: Path) -> None:
    # A kernel that fails inside the interpreter: the sha256 is updated so the plan loads.
    from teeny_ir.plan import sha256_of

    source = plan_dir / "kernels" / "elementwise_0.py"
    source.write_text(source.read_text().replace("tl.store(", "tl.store(undefined_name + "))
    path = plan_dir / "plan.json"
    data = json.loads(path.read_text())
    data["kernels"][1]["source_sha256"] = sha256_of(source)
    path.write_text(json.dumps(data))
    with pytest.raises(runtime.WorkerError) as info:
        runtime.load(plan_dir).run(fixtures.fixture_inputs(1), fixtures.fixture_weights())
    message = str(info.value)
    assert message.startswith("the interpreter worker failed (exit status 1):")
    assert message.splitlines()[-1].startswith("error: ")
    assert "undefined_name" in message


def test_importing_the_runtime_imports_nothing_heavy() -> None:
    script = (
        "import sys, teeny_ir.runtime\n"
        "heavy = [m for m in ('numpy', 'torch', 'triton') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
