"""``teeny-run``: end to end through the console script, its error lines, and
``--backend`` (choices from the registry; cuda refusing in one sentence where it
cannot run: no cuda-python, no GPU, no cubin for the GPU)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import save_file

from teeny_ir.driver.run import run
from teeny_ir.runtime import backends
from teeny_ir.runtime.backends import cuda
from teeny_ir.testing import sample_plan as fixtures
from teeny_ir.testing.fake_cuda import FakeDriver

TEENY_RUN = str(Path(sys.executable).with_name("teeny-run"))


@pytest.fixture
def case(tmp_path: Path) -> Path:
    """A plan in ``plan/``, weights ``w.safetensors``, inputs ``a.npy``, ``b.npy`` (batch 3)."""
    (tmp_path / "plan").mkdir()
    fixtures.write_fixture(tmp_path / "plan")
    save_file(fixtures.fixture_weights(), str(tmp_path / "w.safetensors"))
    for name, array in zip("ab", fixtures.fixture_inputs(3), strict=True):
        np.save(tmp_path / f"{name}.npy", array)
    return tmp_path


def _argv(case: Path, *extra: str) -> list[str]:
    return [
        str(case / "plan"),
        "--weights",
        str(case / "w.safetensors"),
        "--input",
        str(case / "a.npy"),
        "--input",
        str(case / "b.npy"),
        *extra,
    ]


def _run(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(argv, out, err)
    return code, err.getvalue()


def test_end_to_end_through_the_console_script(case: Path) -> None:
    out = case / "out.npz"
    result = subprocess.run(
        [TEENY_RUN, *_argv(case, "-o", str(out), "--timing")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "teeny-run: worker: launches" in result.stderr
    with np.load(out, allow_pickle=False) as data:
        assert sorted(data.files) == ["output_0", "output_1"]
        got = [data["output_0"], data["output_1"]]
    inputs = [np.load(case / "a.npy"), np.load(case / "b.npy")]
    fixtures.assert_close(got, fixtures.fixture_reference(inputs, fixtures.fixture_weights()))


def test_bad_input_is_one_line_and_exit_1_in_a_real_process(case: Path) -> None:
    result = subprocess.run(
        [TEENY_RUN, *_argv(case)[:-2], "-o", str(case / "out.npz")],  # one input of two
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr == "teeny-run: error: the plan takes 2 inputs, got 1\n"
    assert not (case / "out.npz").exists()


ERRORS = [
    ("no output", lambda c: _argv(c), "the following arguments are required: -o"),
    (
        "unknown backend",
        lambda c: _argv(c, "-o", str(c / "o.npz"), "--backend", "gpu"),
        "argument --backend: invalid choice: 'gpu'",
    ),
    (
        "output is an input",
        lambda c: _argv(c, "-o", str(c / "a.npy")),
        f"refusing to overwrite the input file '{'{}'}/a.npy' with -o",
    ),
    (
        "missing weights",
        lambda c: [*_argv(c)[:2], str(c / "none"), *_argv(c, "-o", str(c / "o.npz"))[3:]],
        "cannot read weights '{}/none'",
    ),
    (
        "missing input",
        lambda c: [*_argv(c)[:-1], str(c / "none.npy"), "-o", str(c / "o.npz")],
        "cannot read input '{}/none.npy': No such file or directory",
    ),
    (
        "pickled input",
        lambda c: _argv(c, "-o", str(c / "o.npz"), "--input", str(c / "pickled.npy")),
        "cannot read input '{}/pickled.npy': Object arrays cannot be loaded",
    ),
    ("no plan", lambda c: [str(c), *_argv(c, "-o", str(c / "o.npz"))[1:]], "cannot read '{}/plan"),
]


@pytest.mark.parametrize(
    ("make_argv", "message"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS]
)
def test_errors(case: Path, make_argv: object, message: str) -> None:
    np.save(case / "pickled.npy", np.array([{"x": 1}], dtype=object), allow_pickle=True)
    code, stderr = _run(make_argv(case))  # type: ignore[operator]
    assert code == 1
    assert stderr.startswith("teeny-run: error: " + message.replace("{}", str(case)))
    assert stderr.count("\n") == 1 and "Traceback" not in stderr


def test_failed_run_keeps_the_previous_output(case: Path) -> None:
    out = case / "out.npz"
    out.write_bytes(b"previous")
    code, stderr = _run([*_argv(case)[:-2], "-o", str(out)])
    assert code == 1 and "got 1" in stderr
    assert out.read_bytes() == b"previous"
    assert [p.name for p in case.iterdir() if p.name.startswith(".teeny-")] == []


def test_output_replaces_a_regular_file(case: Path) -> None:
    out = case / "out.npz"
    out.write_bytes(b"previous")
    code, stderr = _run(_argv(case, "-o", str(out)))
    assert (code, stderr) == (0, "")
    with np.load(out, allow_pickle=False) as data:
        assert data["output_0"].shape == (3, 6, 3, 7)


class _DoublingBackend:
    """A registered backend that doubles ``in0`` and ``in1``."""

    name = "doubling"
    description = "twice the inputs"

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
        return [2 * tensors["in0"], 2 * tensors["in1"]]


def test_backend_choices_come_from_the_registry(
    case: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backends, "BACKENDS", {**backends.BACKENDS, "doubling": _DoublingBackend()})
    out = io.StringIO()
    assert run(["--help"], out, io.StringIO()) == 0
    assert "{interpreter,cuda,doubling}" in out.getvalue()
    assert "doubling: twice the inputs" in " ".join(out.getvalue().split())
    code, stderr = _run(_argv(case, "-o", str(case / "out.npz"), "--backend", "doubling"))
    assert (code, stderr) == (0, "")
    with np.load(case / "out.npz", allow_pickle=False) as data:
        np.testing.assert_array_equal(data["output_0"], 2 * np.load(case / "a.npy"))
    monkeypatch.setattr(backends, "BACKENDS", {"interpreter": backends.BACKENDS["interpreter"]})
    code, stderr = _run(_argv(case, "-o", str(case / "out.npz"), "--backend", "cuda"))
    assert code == 1 and "invalid choice: 'cuda'" in stderr and "doubling" not in stderr


def _no_cuda_python() -> Any:
    raise ModuleNotFoundError("No module named 'cuda'", name="cuda")


def _no_gpu() -> Any:
    class CUresult(int):
        CUDA_SUCCESS = 0

    return SimpleNamespace(
        CUresult=CUresult, cuInit=lambda flags: (0,), cuDeviceGetCount=lambda: (0, 0)
    )


def _gpu() -> Any:
    return FakeDriver()


CUDA_CASES = [
    ("cuda-python missing", _no_cuda_python, cuda.NEEDS_CUDA_PYTHON),
    (
        "no gpu",
        _no_gpu,
        "the cuda backend cannot run here: no CUDA GPU is visible "
        "(cuDeviceGetCount found 0 devices)",
    ),
    (
        "gpu but a plan without cubins",
        _gpu,
        "the cuda backend cannot run this plan on this sm_90 GPU: it has no cubins "
        "(emit it with emit-triton{archs=90})",
    ),
]


@pytest.mark.parametrize(
    ("load_driver", "message"), [c[1:] for c in CUDA_CASES], ids=[c[0] for c in CUDA_CASES]
)
def test_cuda_is_one_sentence_and_exit_1(
    case: Path, monkeypatch: pytest.MonkeyPatch, load_driver: Any, message: str
) -> None:
    monkeypatch.setattr(cuda, "_load_driver", load_driver)
    code, stderr = _run(_argv(case, "-o", str(case / "out.npz"), "--backend", "cuda"))
    assert (code, stderr) == (1, f"teeny-run: error: {message}\n")
    assert not (case / "out.npz").exists()


def test_cuda_fails_before_reading_the_inputs(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cuda, "_load_driver", _no_cuda_python)
    argv = [
        *_argv(case)[:-1],
        str(case / "none.npy"),
        "-o",
        str(case / "o.npz"),
        "--backend",
        "cuda",
    ]
    assert _run(argv) == (1, f"teeny-run: error: {cuda.NEEDS_CUDA_PYTHON}\n")


def test_cuda_on_this_machine_in_a_real_process(case: Path) -> None:
    """Unpatched, whatever this machine has (no cuda-python, no GPU, or a GPU and
    a plan without cubins): exit 1 and one line naming the cuda backend."""
    result = subprocess.run(
        [TEENY_RUN, *_argv(case, "-o", str(case / "out.npz"), "--backend", "cuda")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.startswith("teeny-run: error: the cuda backend ")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    for word in ("later", "not implemented", "yet"):
        assert word not in result.stderr
    assert not (case / "out.npz").exists()
