"""The runtime: validation before any launch, the backend registry (the cuda
probe simulated by a fake driver), the interpreter backend, and the one
place each of kernel importing and the Triton settings lives.

Runs the hand-written fixture plan of test_plan.py (a fused 1x1 conv + BN +
SiLU, then a broadcasting add) through the interpreter worker at batch 1
and 3 and compares with numpy.
"""

from __future__ import annotations

import ast
import enum
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from teeny_ir import runtime
from teeny_ir.backend import kernel_files, triton_settings
from teeny_ir.backend.plan import PlanError
from teeny_ir.runtime import backends
from teeny_ir.runtime.backends import cuda, interpreter
from teeny_ir.testing import sample_plan as fixtures
from teeny_ir.testing.fake_cuda import FakeDriver


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

    monkeypatch.setattr(interpreter, "_start_worker", refuse)


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


def test_the_registry_holds_the_interpreter_and_cuda() -> None:
    assert list(runtime.BACKENDS) == ["interpreter", "cuda"]
    for name, backend in runtime.BACKENDS.items():
        assert backend.name == name and backend.description
    assert runtime.BACKENDS["interpreter"].available() is None  # torch is a test dependency


def test_unknown_backend(plan_dir: Path, no_worker: None) -> None:
    executable = runtime.load(plan_dir)
    with pytest.raises(runtime.RuntimeInputError, match=r"unknown backend 'gpu' \(valid: "):
        executable.run(fixtures.fixture_inputs(1), fixtures.fixture_weights(), backend="gpu")


class _NoDriverLibrary(RuntimeError):
    """What cuda-python 13 raises at the first driver call where libcuda is absent."""


class _CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_NO_DEVICE = 100


def _fake_driver(
    *, init: _CUresult = _CUresult.CUDA_SUCCESS, count: int = 1, raises: Exception | None = None
) -> Any:
    """A stand-in for ``cuda.bindings.driver``: calls return tuples led by a CUresult."""

    def cu_init(flags: int) -> tuple[_CUresult]:
        assert flags == 0
        if raises is not None:
            raise raises
        return (init,)

    def cu_device_get_count() -> tuple[_CUresult, int]:
        return _CUresult.CUDA_SUCCESS, count

    return SimpleNamespace(CUresult=_CUresult, cuInit=cu_init, cuDeviceGetCount=cu_device_get_count)


def _no_cuda_python() -> Any:
    raise ModuleNotFoundError("No module named 'cuda'", name="cuda")


def _broken_cuda_python() -> Any:
    raise ImportError("libcudart.so.13: cannot open shared object file")


def _driver_raising_at_import() -> Any:
    raise _NoDriverLibrary("Failed to dlopen libcuda.so.1")


CUDA_PROBES = [
    ("cuda-python missing", _no_cuda_python, cuda.NEEDS_CUDA_PYTHON),
    (
        "cuda-python broken",
        _broken_cuda_python,
        "the cuda backend cannot import cuda-python (ImportError: libcudart.so.13: cannot open",
    ),
    (
        "no driver library",
        lambda: _fake_driver(raises=_NoDriverLibrary("Failed to dlopen libcuda.so.1\n(details)")),
        "the cuda backend cannot run here: no CUDA GPU is visible "
        "(_NoDriverLibrary: Failed to dlopen libcuda.so.1)",
    ),
    (
        "no driver library at import",
        _driver_raising_at_import,
        "the cuda backend cannot run here: no CUDA GPU is visible (_NoDriverLibrary: ",
    ),
    (
        "cuInit fails",
        lambda: _fake_driver(init=_CUresult.CUDA_ERROR_NO_DEVICE),
        "the cuda backend cannot run here: no CUDA GPU is visible "
        "(cuInit returned CUDA_ERROR_NO_DEVICE)",
    ),
    (
        "no device",
        lambda: _fake_driver(count=0),
        "the cuda backend cannot run here: no CUDA GPU is visible "
        "(cuDeviceGetCount found 0 devices)",
    ),
]


@pytest.mark.parametrize(
    ("load_driver", "message"), [p[1:] for p in CUDA_PROBES], ids=[p[0] for p in CUDA_PROBES]
)
def test_cuda_probe_says_why_it_cannot_run(
    plan_dir: Path,
    no_worker: None,
    monkeypatch: pytest.MonkeyPatch,
    load_driver: Any,
    message: str,
) -> None:
    monkeypatch.setattr(cuda, "_load_driver", load_driver)
    problem = runtime.BACKENDS["cuda"].available()
    assert problem is not None and problem.startswith(message)
    assert "\n" not in problem and "later" not in problem and "not implemented" not in problem
    with pytest.raises(runtime.BackendUnavailableError) as info:
        runtime.load(plan_dir).run(
            fixtures.fixture_inputs(1), fixtures.fixture_weights(), backend="cuda"
        )
    assert str(info.value) == problem


def test_cuda_with_a_gpu_refuses_a_plan_without_cubins(
    plan_dir: Path, no_worker: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cuda, "_load_driver", lambda: FakeDriver(devices=2))
    assert runtime.BACKENDS["cuda"].available() is None
    with pytest.raises(runtime.BackendUnavailableError, match="it has no cubins"):
        runtime.load(plan_dir).run(
            fixtures.fixture_inputs(1), fixtures.fixture_weights(), backend="cuda"
        )


def test_cuda_on_this_machine_is_one_sentence(plan_dir: Path, no_worker: None) -> None:
    """Unpatched: whatever this machine has, cuda refuses with one line naming cuda."""
    with pytest.raises(runtime.BackendUnavailableError) as info:
        runtime.load(plan_dir).run(
            fixtures.fixture_inputs(1), fixtures.fixture_weights(), backend="cuda"
        )
    assert str(info.value).startswith("the cuda backend ") and "\n" not in str(info.value)


def test_the_interpreter_needs_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: None if name == "torch" else real_find_spec(name, *args),
    )
    assert runtime.BACKENDS["interpreter"].available() == (
        "the interpreter backend needs torch (pip install 'teeny-ir[interp]')"
    )


class _RecordingBackend:
    """A backend that returns its inputs, to check what `Executable.run` hands over."""

    name = "recording"
    description = "returns in0 and in1"

    def __init__(self) -> None:
        self.calls: list[tuple[Path, int, list[str]]] = []

    def available(self) -> str | None:
        return None

    def run(
        self,
        directory: Path,
        plan: Any,
        tensors: Any,
        batch: int,
        times: dict[str, float],
        progress: Any = None,
        trace: Any = None,
    ) -> list[np.ndarray]:
        self.calls.append((directory, batch, sorted(tensors)))
        times["recording"] = 0.0
        if progress is not None:
            progress(len(plan.launches), len(plan.launches))
        return [tensors["in0"], tensors["in1"]]


def test_a_registered_backend_gets_the_checked_tensors(
    plan_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recording = _RecordingBackend()
    monkeypatch.setattr(backends, "BACKENDS", {**backends.BACKENDS, "recording": recording})
    inputs = fixtures.fixture_inputs(3)
    timings: dict[str, float] = {}
    got = runtime.load(plan_dir).run(
        inputs, fixtures.fixture_weights(), backend="recording", timings=timings
    )
    assert recording.calls == [(plan_dir.resolve(), 3, ["in0", "in1", "p0", "p1", "p2"])]
    assert got[0] is inputs[0] and got[1] is inputs[1]
    assert {"validate", "bind parameters", "recording"} <= set(timings)


def test_grid_beyond_the_hardware_limit_is_refused_at_load(plan_dir: Path) -> None:
    path = plan_dir / "plan.json"
    data = json.loads(path.read_text())
    data["launches"][1]["grid"][1] = "B * 70000"
    path.write_text(json.dumps(data))
    with pytest.raises(PlanError, match=r"launch 1 .*grid\[1\] = 'B \* 70000' is 70000 at B = 1"):
        runtime.load(plan_dir)


def test_worker_failure_is_one_line(
    plan_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The kernel file changes between loading and running: the worker, which
    # loads the plan again, refuses it and fails. (Its kept log goes to tmp_path.)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    executable = runtime.load(plan_dir)
    source = plan_dir / "kernels" / "elementwise_0.py"
    source.write_text(source.read_text().replace("tl.store(", "tl.store(undefined_name + "))
    with pytest.raises(runtime.WorkerError) as info:
        executable.run(fixtures.fixture_inputs(1), fixtures.fixture_weights())
    message = str(info.value)
    assert message.startswith("the interpreter worker failed (exit status 1):")
    assert "elementwise_0" in message


def test_importing_the_runtime_imports_nothing_heavy() -> None:
    script = (
        "import sys, teeny_ir.runtime\n"
        "heavy = [m for m in ('numpy', 'torch', 'triton', 'cuda') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)


def test_the_worker_refuses_to_run_outside_the_interpreter(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != triton_settings.INTERPRET}
    done = subprocess.run(
        [sys.executable, "-m", interpreter.WORKER_MODULE, str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "error: RuntimeError: the worker needs TRITON_INTERPRET=1 in its environment "
        "(start it through the interpreter backend)"
    )


def test_interpreter_environment() -> None:
    env = triton_settings.interpreter_environment(
        {"PATH": "/bin", "TRITON_INTERPRET": "0", "TRITON_DEFAULT_FP_FUSION": "0"}
    )
    # Interpreting is the point of the worker; the user's fp-fusion choice stands.
    assert env == {
        "PATH": "/bin",
        "TRITON_INTERPRET": "1",
        "TRITON_DEFAULT_FP_FUSION": "0",
        **triton_settings.INTERPRETER_MALLOC,
    }
    assert triton_settings.interpreter_environment({"MALLOC_TOP_PAD_": "0"})["MALLOC_TOP_PAD_"] == "0"
    assert triton_settings.interpreter_environment({})["TRITON_DEFAULT_FP_FUSION"] == "1"
    assert triton_settings.interpreter_is_on(env)
    assert not triton_settings.interpreter_is_on({})


def test_compile_environment_keeps_the_users_choices() -> None:
    assert triton_settings.compile_environment({"TRITON_DISABLE_LINE_INFO": "0"}) == {
        "TRITON_DEFAULT_FP_FUSION": "1",
        "TRITON_DISABLE_LINE_INFO": "0",
    }
    environ = {"TRITON_DEFAULT_FP_FUSION": "0"}
    triton_settings.pin_compile_environment(environ)
    assert environ == {"TRITON_DEFAULT_FP_FUSION": "0", "TRITON_DISABLE_LINE_INFO": "1"}


def test_triton_settings_are_made_in_one_module() -> None:
    """A ``TRITON_*`` name as a string of its own (an environment key, not a
    mention in a message) appears only in `teeny_ir.backend.triton_settings`."""
    root = Path(__file__).resolve().parent.parent
    allowed = root / "teeny_ir" / "backend" / "triton_settings.py"
    found = []
    for package in ("teeny_ir", "dialects", "passes"):
        for path in sorted((root / package).rglob("*.py")):
            if path == allowed:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and re.fullmatch(
                    r"TRITON_[A-Z0-9_]+", str(node.value)
                ):
                    found.append(f"{path.relative_to(root)}:{node.lineno}: {node.value}")
    assert found == []


def test_import_kernel(tmp_path: Path) -> None:
    path = tmp_path / "kernel_0.py"
    path.write_text("def kernel_0():\n    return 1\n")
    assert kernel_files.import_kernel(path, "kernel_0")() == 1
    # Same size, same second: a bytecode cache could serve the old code.
    path.write_text("def kernel_0():\n    return 2\n")
    kernel = kernel_files.import_kernel(path, "kernel_0")
    assert kernel() == 2
    assert sys.modules[kernel.__module__].__file__ == str(path.resolve())
    assert not (tmp_path / "__pycache__").exists()
    with pytest.raises(kernel_files.KernelImportError, match=r"kernel_0\.py' defines no 'other'"):
        kernel_files.import_kernel(path, "other")
    with pytest.raises(kernel_files.KernelImportError, match=r"none\.py' cannot be read"):
        kernel_files.import_kernel(tmp_path / "none.py", "kernel_0")
