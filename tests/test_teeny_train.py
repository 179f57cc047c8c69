"""``teeny-train`` on LeNet's AdamW training plan (Triton's interpreter): 2 + 2
resumed steps end in exactly the state of 4 uninterrupted ones, the checkpoint
runs in the inference plan of the same model without renaming, and bad input is
one ``teeny-train: error:`` line and exit 1 before any step."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

import teeny_ir
from teeny_ir import reference, runtime
from teeny_ir.driver import opt, train
from teeny_ir.frontend.losses import add_cross_entropy_loss
from teeny_ir.runtime.backends import cuda
from teeny_ir.testing import REDUCTION_TOL, assert_close
from teeny_ir.testing.fake_cuda import FakeDriver

ROOT = Path(__file__).resolve().parents[1]
LENET = ROOT / "examples" / "lenet" / "lenet.mlir"
WEIGHTS = ROOT / "examples" / "lenet" / "lenet.safetensors"
TEENY_TRAIN = str(Path(sys.executable).parent / "teeny-train")


def _compile(text: str, pipeline: str, out: Path) -> Path:
    stderr = io.StringIO()
    code = opt.run(
        ["-", "-p", f"{pipeline},emit-triton{{out-dir={out}}}", "-o", "/dev/null"],
        io.BytesIO(text.encode()),
        io.StringIO(),
        stderr,
    )
    assert code == 0, stderr.getvalue()
    return out


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(the AdamW training plan, the inference plan, the batches file)."""
    root = tmp_path_factory.mktemp("teeny-train")
    module = teeny_ir.parse_module(LENET.read_text(), filename="lenet.mlir")
    add_cross_entropy_loss(module)
    training = _compile(
        teeny_ir.print_module(module),
        "teeny-training{optimizer=adamw lr=0.01 weight-decay=0.01 profile=interpreter}",
        root / "train",
    )
    inference = _compile(LENET.read_text(), "teeny-inference{profile=interpreter}", root / "infer")
    rng = np.random.default_rng(3)
    batches = root / "batches.npz"
    np.savez(
        batches,
        in0=rng.standard_normal((3, 2, 1, 28, 28)).astype(np.float32),
        in1=rng.integers(0, 10, (3, 2)),
    )
    return training, inference, batches


def _train(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = train.run([str(a) for a in argv], out, err)
    return code, out.getvalue(), err.getvalue()


def test_resuming_continues_exactly(plans: tuple[Path, Path, Path], tmp_path: Path) -> None:
    training, inference, batches = plans
    common = ("--batches", batches, "--quiet")
    four, two, resumed = tmp_path / "three.st", tmp_path / "one.st", tmp_path / "resumed.st"
    code, out, err = _train(training, "--weights", WEIGHTS, "--steps", "3", "-o", four, *common)
    assert (code, err) == (0, ""), err
    assert out.startswith("trained 3 steps (3 in all); loss ") and out.endswith(f"{four}\n")
    assert _train(training, "--weights", WEIGHTS, "--steps", "1", "-o", two, *common)[0] == 0
    code, out, err = _train(training, "--resume", two, "--steps", "2", "-o", resumed, *common)
    assert (code, err) == (0, ""), err
    assert "trained 2 steps (3 in all)" in out
    want, got, half = load_file(four), load_file(resumed), load_file(two)
    assert sorted(got) == sorted(want)
    for name in want:  # the interpreter's kernels are deterministic: bit-identical
        assert np.array_equal(got[name], want[name]), name
    assert any(not np.array_equal(half[name], want[name]) for name in want)
    for path, steps in ((four, "3"), (two, "1"), (resumed, "3")):
        with safe_open(str(path), "np") as handle:
            assert (handle.metadata() or {})[train.STEPS_KEY] == steps
    # The checkpoint (parameters and AdamW state) runs in the inference plan as it is.
    x = np.random.default_rng(4).standard_normal((3, 1, 28, 28)).astype(np.float32)
    params = {name: value for name, value in got.items() if name in load_file(WEIGHTS)}
    logits = runtime.load(inference).run([x], params)
    graph = teeny_ir.parse_module(LENET.read_text())
    assert_close(logits, reference.run(graph, params, [x]), REDUCTION_TOL, dtype=np.float32)
    assert not np.allclose(logits[0], reference.run(graph, load_file(WEIGHTS), [x])[0])


def _error(code: int, out: str, err: str) -> str:
    assert code == 1 and out == "", (code, out, err)
    assert err.startswith("teeny-train: error: ") and err.count("\n") == 1, err
    return err


def test_bad_input_is_one_line(plans: tuple[Path, Path, Path], tmp_path: Path) -> None:
    training, _, batches = plans
    ckpt = tmp_path / "out.st"
    base = (training, "--batches", batches, "--quiet", "-o", ckpt)
    assert "--steps must be at least 1" in _error(
        *_train(*base, "--weights", WEIGHTS, "--steps", "0")
    )
    assert "not a teeny-train checkpoint" in _error(
        *_train(*base, "--resume", WEIGHTS, "--steps", "1")
    )
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, x=np.zeros((1, 2, 1, 28, 28), np.float32))
    assert "must hold the plan's 2 inputs as in0, in1" in _error(
        *_train(training, "--batches", wrong, "--weights", WEIGHTS, "--steps", "1", "-o", ckpt)
    )
    ragged = tmp_path / "ragged.npz"
    np.savez(ragged, np.zeros((2, 2, 1, 28, 28), np.float32), np.zeros((3, 2), np.int64))
    assert "same leading number of batches" in _error(
        *_train(training, "--batches", ragged, "--weights", WEIGHTS, "--steps", "1", "-o", ckpt)
    )
    out_of_range = tmp_path / "targets.npz"
    targets = np.zeros((2, 2), np.int64)
    targets[1, 1] = 10
    np.savez(out_of_range, np.zeros((2, 2, 1, 28, 28), np.float32), targets)
    message = _error(
        *_train(
            training, "--batches", out_of_range, "--weights", WEIGHTS, "--steps", "1", "-o", ckpt
        )
    )
    assert "10 at index 1 is out of range [0, 10)" in message
    assert not ckpt.exists()
    # The output may not overwrite an input.
    copy = tmp_path / "w.safetensors"
    save_file(load_file(WEIGHTS), copy)
    before = copy.read_bytes()
    _error(*_train(training, "--batches", batches, "--weights", copy, "--steps", "1", "-o", copy))
    assert copy.read_bytes() == before
    assert "cannot read batches" in _error(
        *_train(training, "--batches", copy, "--weights", WEIGHTS, "--steps", "1", "-o", ckpt)
    )


def _no_cuda_python() -> object:
    raise ModuleNotFoundError("No module named 'cuda'", name="cuda")


def test_a_backend_that_cannot_run_is_one_line_before_any_step(
    plans: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    training, _, batches = plans
    ckpt = tmp_path / "out.st"
    argv = (training, "--batches", batches, "--weights", WEIGHTS, "--steps", "1", "-o", ckpt)
    monkeypatch.setattr(cuda, "_load_driver", _no_cuda_python)
    message = _error(*_train(*argv, "--backend", "cuda"))
    assert message == f"teeny-train: error: {cuda.NEEDS_CUDA_PYTHON}\n"
    # A GPU, but this plan was emitted without cubins: refused before any step.
    monkeypatch.setattr(cuda, "_load_driver", FakeDriver)
    message = _error(*_train(*argv, "--backend", "cuda"))
    assert "cannot run this plan on this sm_90 GPU: it has no cubins" in message
    with pytest.raises(runtime.BackendUnavailableError, match="has no cubins"):
        runtime.load(training).trainer(str(WEIGHTS), backend="cuda")
    assert "invalid choice: 'gpu'" in _train(*argv, "--backend", "gpu")[2]
    assert not ckpt.exists()


def test_the_console_script(plans: tuple[Path, Path, Path], tmp_path: Path) -> None:
    training, _, batches = plans
    done = subprocess.run(
        [
            TEENY_TRAIN,
            str(training),
            "--weights",
            str(WEIGHTS),
            "--batches",
            str(batches),
            "--steps",
            "0",
            "-o",
            str(tmp_path / "x.st"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr == "teeny-train: error: --steps must be at least 1, got 0\n"
