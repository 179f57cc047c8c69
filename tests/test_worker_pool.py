"""One-shot interpreter runs share one pooled worker
(`teeny_ir.runtime.backends.worker_pool`): the same results as a fresh
worker, a new worker when the environment changes or the old one died, and
failures reported as a fresh worker's would be."""

from __future__ import annotations

import io
import os
import signal
import sys
from pathlib import Path

import numpy as np
import pytest

from teeny_ir import runtime
from teeny_ir.driver import opt
from teeny_ir.runtime.backends import worker_pool

MODULE = """\
func.func @forward(%x: tensor<?x3x5x7xf32>) -> tensor<?x3x5x7xf32> {
  %y = graph.silu %x : tensor<?x3x5x7xf32>
  %z = graph.mul %y, %x : (tensor<?x3x5x7xf32>, tensor<?x3x5x7xf32>) -> tensor<?x3x5x7xf32>
  func.return %z : tensor<?x3x5x7xf32>
}
"""


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pool")
    source = root / "m.mlir"
    source.write_text(MODULE)
    out = root / "plan"
    stderr = io.StringIO()
    pipeline = f"teeny-inference,emit-triton{{out-dir={out}}}"
    code = opt.run([str(source), "-p", pipeline, "-o", "/dev/null"], io.BytesIO(), io.StringIO(), stderr)
    assert code == 0, stderr.getvalue()
    return out


def _want(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    return (x64 / (1 + np.exp(-x64)) * x64).astype(np.float32)


def _pid() -> int:
    assert worker_pool._worker is not None
    return worker_pool._worker.process.pid


def test_runs_reuse_one_worker_and_match_a_fresh_one(
    plan: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    executable = runtime.load(plan)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((batch, 3, 5, 7)).astype(np.float32) for batch in (1, 3)]
    pooled = [executable.run([x], {})[0] for x in inputs[:1]]
    pid = _pid()
    served = worker_pool._worker.served if worker_pool._worker else 0
    pooled += [executable.run([x], {})[0] for x in inputs[1:]]
    assert _pid() == pid  # one process served every run
    assert worker_pool._worker is not None and worker_pool._worker.served == served + 1
    for got, x in zip(pooled, inputs, strict=True):
        np.testing.assert_allclose(got, _want(x), rtol=1e-5, atol=1e-6)
    monkeypatch.setenv(worker_pool.REUSE_ENV, "0")  # a fresh worker gives the same bits
    assert executable.run([inputs[1]], {})[0].tobytes() == pooled[1].tobytes()


def test_a_changed_environment_starts_another_worker(
    plan: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    executable = runtime.load(plan)
    x = np.ones((1, 3, 5, 7), np.float32)
    executable.run([x], {})
    pid = _pid()
    monkeypatch.setenv("TEENY_TEST_POOL_SETTING", "1")  # the worker's environment differs
    executable.run([x], {})
    assert _pid() != pid


def test_a_worker_killed_during_a_run_is_reported_as_killed(tmp_path: Path) -> None:
    """The protocol, with a stand-in worker that takes the request and dies:
    the run's status is the signal (as a fresh worker's exit status would be),
    the dead worker is dropped and the next run gets a new one."""
    dies = (
        "import os, signal, sys; sys.stdin.readline(); print('start', flush=True); "
        "os.kill(os.getpid(), signal.SIGKILL)"
    )
    command = [sys.executable, "-c", dies]
    worker_pool._discard()
    assert worker_pool.run(tmp_path, command, dict(os.environ)) == -signal.SIGKILL
    assert worker_pool._worker is None
    answers = (
        "import sys\n"
        "for line in sys.stdin:\n"
        "    print('start', flush=True); print('done 3', flush=True)\n"
    )
    command = [sys.executable, "-c", answers]
    assert worker_pool.run(tmp_path, command, dict(os.environ)) == 3
    pid = _pid()
    assert worker_pool.run(tmp_path, command, dict(os.environ)) == 3
    assert _pid() == pid
    worker_pool._discard()


def test_a_worker_that_exited_while_idle_is_replaced(plan: Path) -> None:
    executable = runtime.load(plan)
    x = np.ones((1, 3, 5, 7), np.float32)
    executable.run([x], {})
    assert worker_pool._worker is not None
    old = worker_pool._worker.process
    old.terminate()
    old.wait()
    np.testing.assert_allclose(executable.run([x], {})[0], _want(x), rtol=1e-5, atol=1e-6)
    assert _pid() != old.pid


def test_the_pool_is_off_when_asked(plan: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    worker_pool._discard()
    monkeypatch.setenv(worker_pool.REUSE_ENV, "off")
    assert not worker_pool.enabled()
    runtime.load(plan).run([np.ones((1, 3, 5, 7), np.float32)], {})
    assert worker_pool._worker is None
