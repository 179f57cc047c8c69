"""Faults of the trainer and ``teeny-train`` (issue 29): outputs that are devices,
FIFOs or unwritable, checked before any step and never replaced; a NaN or an
overflowing learning rate named at the step where it appears, the last finite
state kept; threads sharing a trainer; checkpoints of another optimizer; inputs
that are FIFOs, devices, forged headers or Unicode digits; arenas that do not fit.

LeNet's AdamW plan for the NaN case (the brief's model); a one-layer model for
the cases that only need steps (threads, lr=1e30, resuming across optimizers),
whose steps take milliseconds instead of LeNet's second. Every run that could
hang is bounded: subprocesses by ``timeout=60``, in-process runs by a thread
joined with a timeout."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.lib import format as npy
from safetensors import safe_open
from safetensors.numpy import load, load_file, save_file

import teeny_ir
from teeny_ir import runtime
from teeny_ir.backend.plan import load_plan
from teeny_ir.core.files import default_file_mode
from teeny_ir.driver import opt, train
from teeny_ir.frontend.losses import add_cross_entropy_loss
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.runtime import trainer as trainer_module
from teeny_ir.runtime.backends import cuda, interpreter, interpreter_worker
from teeny_ir.runtime.errors import ArenaAllocationError
from teeny_ir.runtime.trainer import OPTIMIZER_KEY, STEPS_KEY, Trainer
from teeny_ir.testing.fake_cuda import FakeDriver, FakeResult, stand_in_cubins

ROOT = Path(__file__).resolve().parents[1]
LENET = ROOT / "examples" / "lenet" / "lenet.mlir"
WEIGHTS = ROOT / "examples" / "lenet" / "lenet.safetensors"
TEENY_TRAIN = str(Path(sys.executable).parent / "teeny-train")
BOUND = 60.0
"""Seconds any one run may take before the test calls it a hang."""
LOCATION = r"graph\.\w+ at \S+:\d+:\d+"
"""A graph op named with its source location."""

TINY = """builtin.module {
  func.func @forward(%x: tensor<?x4xf32>) -> tensor<?x3xf32> {
    %w = graph.param "fc.weight" : tensor<3x4xf32>
    %b = graph.param "fc.bias" : tensor<3xf32>
    %0 = graph.linear %x, %w, %b : (tensor<?x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<?x3xf32>
    func.return %0 : tensor<?x3xf32>
  }
}
"""


def _compile(text: str, options: str, out: Path, filename: str) -> Path:
    module = teeny_ir.parse_module(text, filename=filename)
    add_cross_entropy_loss(module)
    stderr = io.StringIO()
    pipeline = f"teeny-training{{{options} profile=interpreter}},emit-triton{{out-dir={out}}}"
    code = opt.run(
        ["-", "-p", pipeline, "-o", "/dev/null"],
        io.BytesIO(teeny_ir.print_module(module).encode()),
        io.StringIO(),
        stderr,
    )
    assert code == 0, stderr.getvalue()
    return out


@dataclass(frozen=True)
class Lenet:
    adamw: Path
    batches: Path
    """5 batches of 2 images."""
    nan_batches: Path
    """The same, with one NaN pixel in batch 2 (the third step's)."""
    two_steps: Path
    """The checkpoint of 2 AdamW steps on ``batches``."""


@dataclass(frozen=True)
class Tiny:
    sgd: Path
    sgd_other_lr: Path
    adamw: Path
    adamw_huge_lr: Path
    weights: Path
    batches: Path
    inputs: tuple[np.ndarray, np.ndarray]


def _train(*argv: object) -> tuple[int, str, str]:
    """teeny-train in this process, bounded by `BOUND` (a thread joined with a timeout)."""
    out, err = io.StringIO(), io.StringIO()
    answer: list[int] = []
    worker = threading.Thread(
        target=lambda: answer.append(train.run([str(a) for a in argv], out, err)), daemon=True
    )
    worker.start()
    worker.join(BOUND)
    assert answer, f"teeny-train {argv} did not end in {BOUND} s: {err.getvalue()}"
    return answer[0], out.getvalue(), err.getvalue()


def _console(*argv: object) -> subprocess.CompletedProcess[str]:
    """The teeny-train console script, bounded by `BOUND`."""
    return subprocess.run(
        [TEENY_TRAIN, *(str(a) for a in argv)],
        capture_output=True,
        text=True,
        check=False,
        timeout=BOUND,
    )


def _error(code: int, out: str, err: str) -> str:
    assert code == 1 and out == "", (code, out, err)
    assert err.startswith("teeny-train: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


@pytest.fixture(scope="module")
def lenet(tmp_path_factory: pytest.TempPathFactory) -> Lenet:
    root = tmp_path_factory.mktemp("lenet")
    adamw = _compile(
        LENET.read_text(), "optimizer=adamw lr=0.01 weight-decay=0.01", root / "adamw", "lenet.mlir"
    )
    rng = np.random.default_rng(3)
    images = rng.standard_normal((5, 2, 1, 28, 28)).astype(np.float32)
    targets = rng.integers(0, 10, (5, 2))
    batches = root / "batches.npz"
    np.savez(batches, in0=images, in1=targets)
    images[2, 1, 0, 13, 7] = np.nan
    nan_batches = root / "nan.npz"
    np.savez(nan_batches, in0=images, in1=targets)
    two = root / "two.safetensors"
    code, _, err = _train(
        adamw, "--weights", WEIGHTS, "--batches", batches, "--steps", 2, "-o", two, "--quiet"
    )
    assert code == 0, err
    return Lenet(adamw, batches, nan_batches, two)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Tiny:
    root = tmp_path_factory.mktemp("tiny")
    rng = np.random.default_rng(5)
    weights = root / "tiny.safetensors"
    save_file(
        {
            "fc.weight": (0.5 * rng.standard_normal((3, 4))).astype(np.float32),
            "fc.bias": (0.1 * rng.standard_normal(3)).astype(np.float32),
        },
        weights,
    )
    x = rng.standard_normal((8, 4)).astype(np.float32)
    y = rng.integers(0, 3, 8)
    batches = root / "tiny.npz"
    np.savez(batches, x[None], y[None])
    return Tiny(
        _compile(TINY, "optimizer=sgd lr=0.1 momentum=0.9", root / "sgd", "tiny.mlir"),
        _compile(TINY, "optimizer=sgd lr=0.2 momentum=0.9", root / "sgd2", "tiny.mlir"),
        _compile(TINY, "optimizer=adamw lr=0.01", root / "adamw", "tiny.mlir"),
        _compile(TINY, "optimizer=adamw lr=1e30", root / "huge", "tiny.mlir"),
        weights,
        batches,
        (x, y),
    )


class _NoTrainer:
    """Stands in for the Trainer: any step would need one, so none may be made."""

    made = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        type(self).made += 1
        raise AssertionError("a trainer was made: the run got past its checks")


@pytest.fixture
def no_steps(monkeypatch: pytest.MonkeyPatch) -> type[_NoTrainer]:
    """teeny-train runs with no Trainer to make: a run that trains fails the test."""
    _NoTrainer.made = 0
    monkeypatch.setattr(trainer_module, "Trainer", _NoTrainer)
    return _NoTrainer


# --- -o -----------------------------------------------------------------------


def test_outputs_that_cannot_be_written_are_refused_before_any_step(
    lenet: Lenet, tmp_path: Path, no_steps: type[_NoTrainer]
) -> None:
    args = (lenet.adamw, "--weights", WEIGHTS, "--batches", lenet.batches, "--steps", 5)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    start = time.monotonic()
    message = _error(*_train(*args, "-o", fifo))
    assert "FIFO with no reader" in message, message
    assert time.monotonic() - start < 10  # no step ran: each takes a second
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    unwritable = [tmp_path / "file" / "out.st", tmp_path / "no" / "out.st", tmp_path]
    if os.geteuid() == 0:  # root may write anywhere os.access can see: /proc takes no new file
        unwritable.append(Path("/proc/teeny-out.st"))
    for path in unwritable:
        assert f"cannot write '{path}'" in _error(*_train(*args, "-o", path)), path
    assert blocker.read_text() == "not a folder"
    assert no_steps.made == 0


def test_a_fifo_with_a_reader_gets_the_checkpoint(tiny: Tiny, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, before teeny-train starts
    try:
        args = ("--weights", tiny.weights, "--batches", tiny.batches, "--steps", 1, "--quiet")
        code, out, err = _train(tiny.sgd, *args, "-o", fifo)
        assert (code, err) == (0, ""), err
        assert out.endswith(f"checkpoint {fifo}\n")
        chunks = []  # the checkpoint is smaller than the pipe's buffer: it waits there
        while chunk := os.read(reader, 1 << 16):
            chunks.append(chunk)
    finally:
        os.close(reader)
    state = load(b"".join(chunks))
    assert sorted(state) == sorted(w.name for w in load_plan(tiny.sgd).weights)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and os.listdir(tmp_path) == ["fifo"]


# --- divergence -----------------------------------------------------------------


def test_a_nan_at_step_3_is_named_and_the_state_after_step_2_kept(
    lenet: Lenet, tmp_path: Path
) -> None:
    ckpt = tmp_path / "out.st"
    args = ("--weights", WEIGHTS, "--batches", lenet.nan_batches, "--steps", 5, "--quiet")
    code, out, err = _train(lenet.adamw, *args, "-o", ckpt)
    message = _error(code, out, err)
    assert "step 3 diverged: the loss is nan" in message, message
    assert "the first non-finite result is output 0 of launch 0" in message, message
    assert re.search(LOCATION, message), message
    assert f"checkpoint {ckpt} holds that state ({STEPS_KEY} = 2)" in message
    got, want = load_file(ckpt), load_file(lenet.two_steps)
    assert sorted(got) == sorted(want)
    for name in want:
        assert np.array_equal(got[name], want[name]), name
    with safe_open(str(ckpt), "np") as handle:
        metadata = handle.metadata() or {}
    assert metadata[STEPS_KEY] == "2"
    assert json.loads(metadata[OPTIMIZER_KEY])["kind"] == "adamw"


@pytest.fixture(scope="module")
def diverged(tiny: Tiny, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str]:
    """teeny-train with lr=1e30 (finite in float32): (checkpoint, exit code, stderr)."""
    ckpt = tmp_path_factory.mktemp("huge") / "huge.st"
    args = ("--weights", tiny.weights, "--batches", tiny.batches, "--steps", 4, "--quiet")
    code, _, err = _train(tiny.adamw_huge_lr, *args, "-o", ckpt)
    return ckpt, code, err


def test_an_overflowing_learning_rate_diverges_at_the_step_it_overflows(
    diverged: tuple[Path, int, str],
) -> None:
    ckpt, code, err = diverged
    message = _error(code, "", err)
    # Step 1 moves the weights by 1e30 and scales them by 1 - 1e30 * 0.01: finite.
    # Step 2 scales them again, beyond float32.
    assert "step 2 diverged: the update of 'fc.weight' is not finite" in message, message
    assert re.search(
        r"the first non-finite result is output \d+ of launch \d+ \('adamw_update", message
    )
    assert re.search(LOCATION, message), message
    state = load_file(ckpt)
    assert all(np.isfinite(value).all() for value in state.values())
    assert np.abs(state["fc.weight"]).max() > 1e25  # the state after step 1
    with safe_open(str(ckpt), "np") as handle:
        assert (handle.metadata() or {})[STEPS_KEY] == "1"


# --- threads -------------------------------------------------------------------


THREAD_STEPS = 6
"""Steps each of the two threads takes (without the lock, fewer already garble the worker's pipe)."""


@pytest.fixture(scope="module")
def shared(tiny: Tiny, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, list[str]]:
    """2 threads x THREAD_STEPS steps of one trainer (tiny SGD), saved: (checkpoint, steps, errors)."""
    ckpt = tmp_path_factory.mktemp("threads") / "shared.st"
    errors: list[str] = []
    with runtime.load(tiny.sgd).trainer(load_file(tiny.weights)) as trainer:

        def work() -> None:
            try:
                for _ in range(THREAD_STEPS):
                    trainer.step(list(tiny.inputs))
            except Exception as err:  # noqa: BLE001 - reported by the test
                errors.append(f"{type(err).__name__}: {err}")

        threads = [threading.Thread(target=work, daemon=True) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(BOUND)
        assert not any(thread.is_alive() for thread in threads), "the steps did not end"
        trainer.save(ckpt)
        return ckpt, trainer.steps, errors


def test_threads_sharing_a_trainer_take_turns(
    tiny: Tiny, shared: tuple[Path, int, list[str]]
) -> None:
    ckpt, steps, errors = shared
    assert errors == [] and steps == 2 * THREAD_STEPS
    with runtime.load(tiny.sgd).trainer(load_file(tiny.weights)) as alone:
        for _ in range(2 * THREAD_STEPS):
            alone.step(list(tiny.inputs))
        want = alone.state_dict()
    got = load_file(ckpt)
    for name in want:  # every update applied once, each to the state the one before left
        assert np.array_equal(got[name], want[name]), name
    with safe_open(str(ckpt), "np") as handle:
        metadata = handle.metadata() or {}
    assert metadata[STEPS_KEY] == str(2 * THREAD_STEPS)
    assert json.loads(metadata[OPTIMIZER_KEY]) == {
        "kind": "sgd",
        "lr": 0.1,
        "momentum": 0.9,
        "weight_decay": 0.0,
    }
    # The umask's mode (not mkstemp's 0600), and no temporary file left beside it.
    assert stat.S_IMODE(os.stat(ckpt).st_mode) == default_file_mode()
    assert os.listdir(ckpt.parent) == [ckpt.name]


# --- resuming across optimizers ------------------------------------------------------


def test_a_checkpoint_of_another_optimizer_is_refused_unless_reset(
    tiny: Tiny, shared: tuple[Path, int, list[str]], diverged: tuple[Path, int, str], tmp_path: Path
) -> None:
    sgd_ckpt, adamw_ckpt = shared[0], diverged[0]
    out = tmp_path / "out.st"
    common = ("--batches", tiny.batches, "--steps", 1, "--quiet")
    message = _error(*_train(tiny.adamw, "--resume", sgd_ckpt, "-o", out, *common))
    assert (
        f"'{sgd_ckpt}': its optimizer state is another optimizer's: it was trained with sgd (lr=0.1, "
        "momentum=0.9, weight_decay=0.0), the plan trains with adamw (lr=0.01, betas=(0.9, "
        "0.999), eps=1e-08, weight_decay=0.01)"
    ) in message, message
    assert "--reset-optimizer" in message
    message = _error(*_train(tiny.sgd, "--resume", adamw_ckpt, "-o", out, *common))
    assert "trained with adamw (lr=1e+30," in message and "plan trains with sgd (lr=0.1," in message
    assert not out.exists()
    # Reset, and -o /dev/null: written in place, never replaced by a checkpoint file.
    code, text, err = _train(
        tiny.adamw, "--resume", sgd_ckpt, "--reset-optimizer", "-o", "/dev/null", *common
    )
    assert (code, err) == (0, ""), err
    assert text.startswith(f"trained 1 steps ({2 * THREAD_STEPS + 1} in all)") and text.endswith("/dev/null\n")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_the_trainer_checks_the_recorded_optimizer(
    tiny: Tiny, shared: tuple[Path, int, list[str]]
) -> None:
    """The same kind with another lr is a mismatch too; reset_optimizer zeroes the
    optimizer state and keeps the parameters and the step count."""
    ckpt = shared[0]
    executable = runtime.load(tiny.sgd_other_lr)
    with pytest.raises(runtime.RuntimeInputError, match=r"sgd \(lr=0\.1,.*sgd \(lr=0\.2,"):
        Trainer(executable, ckpt)
    saved = load_file(ckpt)
    assert np.abs(saved["fc.weight.momentum_buffer"]).max() > 0
    with Trainer(executable, ckpt, reset_optimizer=True) as trainer:
        state = trainer.state_dict()
        assert trainer.steps == 2 * THREAD_STEPS
    assert (
        not state["fc.weight.momentum_buffer"].any() and not state["fc.bias.momentum_buffer"].any()
    )
    assert np.array_equal(state["fc.weight"], saved["fc.weight"])


# --- bad input ---------------------------------------------------------------------


def test_step_counts_are_ascii_digits(lenet: Lenet, tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt.st"
    out = tmp_path / "out.st"
    for text in ("٣", "²", "+3", " 3", "9" * 40, ""):
        save_file(load_file(WEIGHTS), ckpt, metadata={STEPS_KEY: text})
        message = _error(
            *_train(
                lenet.adamw, "--resume", ckpt, "--batches", lenet.batches, "--steps", 1, "-o", out
            )
        )
        assert "is not a step count (ASCII digits" in message, (text, message)
    message = _error(
        *_train(
            lenet.adamw, "--weights", WEIGHTS, "--batches", lenet.batches, "--steps", "٣", "-o", out
        )
    )
    assert "argument --steps: expected a number of steps" in message
    assert not out.exists()


def _npz_with_header(path: Path, shape: tuple[int, ...], targets: np.ndarray) -> None:
    """An .npz whose ``in0`` header claims ``shape`` of float32 over a few bytes."""
    member = io.BytesIO()
    npy.write_array_header_1_0(member, {"descr": "<f4", "fortran_order": False, "shape": shape})
    member.write(b"\0" * 64)
    target = io.BytesIO()
    np.save(target, targets)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("in0.npy", member.getvalue())
        archive.writestr("in1.npy", target.getvalue())


def test_forged_batches_are_one_line(lenet: Lenet, tmp_path: Path) -> None:
    out = tmp_path / "out.st"
    args = (lenet.adamw, "--weights", WEIGHTS, "--steps", 1, "-o", out)
    huge = tmp_path / "huge.npz"
    count = 3 * 2**50 // (2 * 28 * 28 * 4)  # 3 PiB of float32 images
    _npz_with_header(huge, (count, 2, 1, 28, 28), np.zeros((1, 2), np.int64))
    message = _error(*_train(*args, "--batches", huge))
    assert f"its header claims shape [{count}, 2, 1, 28, 28] of float32" in message, message
    objects = tmp_path / "objects.npz"
    np.savez(objects, in0=np.array([None, 1], dtype=object), in1=np.zeros((1, 2), np.int64))
    message = _error(*_train(*args, "--batches", objects))
    assert "Object arrays cannot be loaded without unpickling" in message
    assert "allow_pickle" not in message
    assert not out.exists()


def test_fifos_and_devices_as_inputs_are_refused_at_once(lenet: Lenet, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    out = tmp_path / "out.st"
    cases = [
        ("--weights", fifo, "--batches", lenet.batches),
        ("--resume", "/dev/zero", "--batches", lenet.batches),
        ("--weights", WEIGHTS, "--batches", fifo),
    ]
    for case in cases:
        done = _console(lenet.adamw, *case, "--steps", 1, "-o", out)
        assert done.returncode == 1, (case, done.stderr)
        assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
        assert "not a regular file" in done.stderr, done.stderr
    assert not out.exists() and stat.S_ISFIFO(os.stat(fifo).st_mode)


def _edited_hyper(source: Path, target: Path, element: int, bits: int) -> Path:
    """A copy of a training plan whose AdamW ``hyper`` literals have ``bits``
    (float32) at ``element`` (0: lr, 4: 1 - lr * weight_decay)."""
    shutil.copytree(source, target)
    path = target / "plan.json"
    data = json.loads(path.read_text())
    edited = 0
    for param in data["params"]:
        derivation = param["derivation"]
        if derivation["kind"] == "literal" and derivation["shape"] == [9]:
            derivation["bits"][element] = bits
            edited += 1
    assert edited
    path.write_text(json.dumps(data))
    return target


def test_hyperparameters_beyond_float32_cannot_come_from_a_plan(
    lenet: Lenet, tmp_path: Path
) -> None:
    """apply-optimizer refuses lr or weight decay beyond float32, but not the
    product lr * weight_decay, and a plan.json can be written by hand: the
    trainer refuses them before its worker starts."""
    out = tmp_path / "out.st"
    args = ("--weights", WEIGHTS, "--batches", lenet.batches, "--steps", 1, "-o", out)
    for element, bits, name in ((0, 0x7F800000, "lr = inf"), (4, 0xFF800000, "decay = -inf")):
        plan = _edited_hyper(lenet.adamw, tmp_path / f"plan{element}", element, bits)
        with pytest.raises(runtime.RuntimeInputError, match=name) as caught:
            trainer_module.plan_optimizer(load_plan(plan))
        assert "the plan's optimizer update at launch" in str(caught.value)
        assert "\n" not in str(caught.value)
    message = _error(*_train(tmp_path / "plan0", *args))
    assert "has lr = inf in float32, expected finite and > 0" in message
    assert not out.exists()


def test_an_arena_larger_than_the_memory_is_one_line_before_any_step(
    lenet: Lenet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_steps: type[_NoTrainer]
) -> None:
    monkeypatch.setattr(interpreter, "physical_memory", lambda: 1024)
    out = tmp_path / "out.st"
    message = _error(
        *_train(
            lenet.adamw, "--weights", WEIGHTS, "--batches", lenet.batches, "--steps", 1, "-o", out
        )
    )
    arena = runtime.load(lenet.adamw).memory(2)["arena_bytes"]
    assert (
        f"cannot allocate the arena of a run at batch size 2: {arena} bytes" in message
        and "more than this machine's memory (1024 bytes); run a smaller batch" in message
    ), message
    assert no_steps.made == 0 and not out.exists()


def test_the_worker_and_the_gpu_name_an_arena_they_cannot_allocate(
    tiny: Tiny, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worker: beyond the machine's memory, then what torch's allocator refuses.
    monkeypatch.setattr(interpreter, "physical_memory", lambda: 4096)
    with pytest.raises(ArenaAllocationError, match=r"batch size 3: 8192 bytes .*memory \(4096"):
        interpreter_worker.allocate_arena(8192, 3)
    monkeypatch.setattr(interpreter, "physical_memory", lambda: None)
    with pytest.raises(ArenaAllocationError, match=r"batch size 5: 4611686018427387904 bytes"):
        interpreter_worker.allocate_arena(2**62, 5)
    # The parent turns the worker's report into the same error (exit 1, the session kept).
    (tmp_path / interpreter.ERROR_FILE).write_text(
        json.dumps({"error": "cannot allocate the arena ...", "arena": True})
    )
    assert isinstance(interpreter._failure(tmp_path, 1), ArenaAllocationError)
    # The cuda backend: cuMemAlloc's CUDA_ERROR_OUT_OF_MEMORY for the arena.
    directory = tmp_path / "gpu"
    shutil.copytree(tiny.sgd, directory)
    stand_in_cubins(directory)
    plan = load_plan(directory)
    counts = {
        compiled.name: len(FAMILIES[kernel.family].args) + cuda.SCRATCH_POINTERS
        for kernel in plan.kernels
        for compiled in kernel.compiled
    }
    driver = FakeDriver(capability=(9, 0), arity=counts.__getitem__)
    executable = runtime.load(directory)
    state = load_file(tiny.weights) | {
        w.name: np.zeros(w.shape, np.float32) for w in plan.weights if w.zero_default
    }
    session = cuda.CudaSession(directory, plan, driver=driver)
    try:
        session.upload_params(executable.bind_parameters(state))
        driver.failures["cuMemAlloc"] = FakeResult.CUDA_ERROR_OUT_OF_MEMORY
        arena = executable.memory(4)["arena_bytes"]
        with pytest.raises(
            ArenaAllocationError,
            match=rf"the arena of a run at batch size 4: {arena} bytes .*CUDA_ERROR_OUT_OF_MEMORY",
        ):
            session.prepare(4)
        del driver.failures["cuMemAlloc"]
        assert session.prepare(4)  # nothing was left half allocated
    finally:
        session.close()
