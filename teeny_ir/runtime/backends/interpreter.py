"""The ``interpreter`` backend: Triton's interpreter on torch CPU tensors.

It runs in a separate process (`teeny_ir.runtime.backends.interpreter_worker`)
because Triton fixes interpreter mode when ``triton`` is imported, and
``import teeny_ir`` never imports triton: the parent starts the worker with
`teeny_ir.backend.triton_settings.interpreter_environment`. Arrays cross in
safetensors files in a temporary work directory (never pickle).

`InterpreterBackend.available` looks for torch and triton without importing
them, so a missing extra is one sentence before anything is read; should the
worker still fail to import one of them (a broken install), it says so in
``error.json`` and the run raises `BackendUnavailableError` with the same kind
of sentence. Any other worker failure raises `WorkerError` with one line: the
worker's error, and the path of ``worker.log``, which holds everything the
worker wrote (its full traceback included). On success the work directory is
removed; after a failure only ``worker.log`` is kept in it, for a bug report.

A session (`InterpreterSession`, a trainer's) runs a plan's collectives over
more than one rank with the ``collective`` it is given (the trainer's
`teeny_ir.runtime.distributed.ProcessGroup`): the worker stops at each bucket,
the session reduces the bucket's tensors through the group and the worker
goes on (`teeny_ir.runtime.backends.interpreter_worker`). A one-shot run
cannot, and refuses such a plan before the worker starts.

Importing this module imports neither numpy, torch nor triton.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from teeny_ir.backend.plan import CollectiveSpec
from teeny_ir.backend.triton_settings import interpreter_environment
from teeny_ir.runtime.backends import worker_pool
from teeny_ir.runtime.errors import (
    ArenaAllocationError,
    BackendUnavailableError,
    RuntimeInputError,
    StatusCheckError,
    WorkerError,
    arena_message,
)

if TYPE_CHECKING:
    import numpy as np

    from teeny_ir.backend.plan import Plan
    from teeny_ir.runtime.backends import Progress

TENSORS_FILE = "tensors.safetensors"
"""Inputs and bound parameters, keyed by their plan names (``in0``, ``p0``)."""
OUTPUTS_FILE = "outputs.safetensors"
"""The worker's results, keyed ``output_0 ... output_{N-1}``."""
REQUEST_FILE = "request.json"
"""The plan directory and the batch size."""
TIMINGS_FILE = "timings.json"
"""The worker's stage times in seconds."""
ERROR_FILE = "error.json"
"""Written by a failing worker: ``{"error": one line, "unavailable": "torch", "triton"
or null, "missing": whether that module is not installed at all, "check": whether
it is a status check (`teeny_ir.runtime.checks`: bad input data, raised as
`StatusCheckError`), "arena": whether the arena could not be allocated (raised
as `ArenaAllocationError`)}``."""
LOG_FILE = "worker.log"
"""The worker's stdout and stderr (a failure's full traceback); kept after a failure."""
TRACE_FILE = "trace.safetensors"
"""With ``trace``: every launch's outputs, ``launch<i>_<k>`` (k over its distinct output tensors)."""
PROFILE_FILE = "profile.json"
"""With ``spans``: each launch's ``[start, duration]`` in ``perf_counter_ns``
nanoseconds, the kernel call alone (`teeny_ir.runtime.profile`)."""
PROGRESS_FILE = "progress"
"""The worker rewrites it after each launch: ``<done> <total>``."""
COLLECTIVE_FILE = "collective.safetensors"
"""A serving worker's bucket of collectives: each input, ``c<launch index>``."""
COLLECTIVE_RESULT_FILE = "collective_result.safetensors"
"""The session's answer: each reduced value, under the same keys."""
WORKER_MODULE = "teeny_ir.runtime.backends.interpreter_worker"
REQUIRED_MODULES = {"torch": "interp", "triton": ""}
"""What the interpreter needs, each with the teeny-ir extra that installs it."""
_SUMMARY_CHARS = 300
_ROOT = Path(__file__).resolve().parents[3]
"""The directory holding this ``teeny_ir``, put first on the worker's path so
that it runs this copy and not another one installed elsewhere."""


class HostCollective(Protocol):
    """What a session reduces a bucket of collectives with (the trainer's
    `teeny_ir.runtime.distributed.ProcessGroup`)."""

    def all_reduce(
        self, reduction: str, arrays: Sequence[np.ndarray], what: str
    ) -> list[np.ndarray]:
        """``arrays`` reduced over the ranks (``mean`` or ``sum``), in their
        shapes; ``what`` names the collective's graph op for an error."""
        ...


class InterpreterBackend:
    """Runs each launch with ``TRITON_INTERPRET=1`` in a worker process."""

    name = "interpreter"
    description = "Triton's interpreter on the CPU, in a worker process"

    def available(self) -> str | None:
        """None when torch and triton are installed (found without importing them)."""
        for module in REQUIRED_MODULES:
            if not _installed(module):
                return needs(module)
        return None

    def run(
        self,
        directory: Path,
        plan: Plan,
        tensors: Mapping[str, np.ndarray],
        batch: int,
        times: dict[str, float],
        progress: Progress | None = None,
        trace: dict[int, list[np.ndarray]] | None = None,
        spans: list[tuple[int, int]] | None = None,
    ) -> list[np.ndarray]:
        """Run the plan in a worker process (see `Backend.run`); raises
        `WorkerError` (one line naming the kept log) when it fails, and
        `BackendUnavailableError` when it cannot import torch or triton or the
        work directory cannot be written."""
        import numpy as np
        from safetensors.numpy import load_file, save_file

        from teeny_ir.runtime.distributed import check_no_group_needed

        check_no_group_needed(plan)
        check_arena(plan, batch)
        start = time.perf_counter()
        try:
            workdir = Path(tempfile.mkdtemp(prefix="teeny-run-"))
        except OSError as err:
            raise BackendUnavailableError(
                "the interpreter backend cannot make its work directory in "
                f"'{tempfile.gettempdir()}': {err.strerror or err}"
            ) from None
        keep_log = False
        try:
            try:
                arrays = {name: np.ascontiguousarray(array) for name, array in tensors.items()}
                save_file(arrays, workdir / TENSORS_FILE)
                request = {"plan": str(directory), "batch": batch, "trace": trace is not None}
                request["profile"] = spans is not None
                (workdir / REQUEST_FILE).write_text(json.dumps(request), encoding="utf-8")
            except OSError as err:
                raise BackendUnavailableError(
                    f"the interpreter backend cannot write its work files in '{workdir}': "
                    f"{err.strerror or err}"
                ) from None
            times["write tensors"] = time.perf_counter() - start
            start = time.perf_counter()
            status = _start_worker(workdir, progress)
            times["worker"] = time.perf_counter() - start
            if status != 0:
                error = _failure(workdir, status)
                keep_log = isinstance(error, WorkerError)
                raise error
            with (workdir / TIMINGS_FILE).open(encoding="utf-8") as handle:
                times |= {f"worker: {k}": v for k, v in json.load(handle).items()}
            results = load_file(workdir / OUTPUTS_FILE)
            if spans is not None:
                spans[:] = _read_spans(workdir)
            if trace is not None:
                traced = load_file(workdir / TRACE_FILE)
                for key in sorted(traced, key=_trace_key):
                    trace.setdefault(_trace_key(key)[0], []).append(traced[key])
            if progress is not None:
                progress(len(plan.launches), len(plan.launches))
        finally:
            _clean(workdir, keep_log=keep_log)
        return [results[f"output_{i}"] for i in range(len(plan.outputs))]

    def session(
        self, directory: Path, plan: Plan, *, collective: HostCollective | None = None
    ) -> InterpreterSession:
        """A worker process serving repeated runs of ``plan`` (a trainer's
        steps); ``collective`` runs its collectives over more than one rank."""
        return InterpreterSession(directory, plan, collective=collective)


class InterpreterSession:
    """A worker process that stays alive across runs of one plan (a trainer's
    steps): Triton's import and the kernel files are loaded once. `run` takes
    the inputs and bound parameters by plan name, as `InterpreterBackend.run`.
    ``collective`` reduces the plan's collectives over more than one rank
    (required when it has some: `RuntimeInputError` otherwise); a collective
    that fails closes the session and raises its error."""

    def __init__(
        self, directory: Path, plan: Plan, *, collective: HostCollective | None = None
    ) -> None:
        from teeny_ir.runtime.distributed import buckets, needs_group

        reason = needs_group(plan)
        if reason is not None and collective is None:
            raise RuntimeInputError(reason)
        self.collective = collective
        self.buckets = buckets(plan)
        try:
            self.workdir = Path(tempfile.mkdtemp(prefix="teeny-train-"))
        except OSError as err:
            raise BackendUnavailableError(
                "the interpreter backend cannot make its work directory in "
                f"'{tempfile.gettempdir()}': {err.strerror or err}"
            ) from None
        self.plan = plan
        request = {"plan": str(directory), "batch": 1, "trace": False}
        (self.workdir / REQUEST_FILE).write_text(json.dumps(request), encoding="utf-8")
        env = interpreter_environment(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_ROOT), env.get("PYTHONPATH")) if p)
        env.setdefault("PYTHONFAULTHANDLER", "1")
        self._log = (self.workdir / LOG_FILE).open("wb")
        try:
            self.worker: subprocess.Popen[str] | None = subprocess.Popen(
                [sys.executable, "-m", WORKER_MODULE, "--serve", str(self.workdir)],
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._log,
                text=True,
            )
        except OSError as err:
            self._log.close()
            raise BackendUnavailableError(
                f"the interpreter backend cannot start its worker: {err.strerror or err}"
            ) from None
        self._expect("ready")

    def _expect(self, word: str) -> None:
        self._check(self._answer(), word)

    def _answer(self) -> str:
        """The worker's next line on stdout."""
        assert self.worker is not None and self.worker.stdout is not None
        return self.worker.stdout.readline().strip()

    def _check(self, answer: str, word: str) -> None:
        """Raise the worker's failure unless ``answer`` is ``word``."""
        assert self.worker is not None
        if answer == word:
            return
        status = self.worker.poll()
        error = _failure(self.workdir, 1 if status is None else status)
        if not isinstance(error, StatusCheckError | ArenaAllocationError):
            self.close(keep_log=True)
        raise error

    def run(
        self,
        tensors: Mapping[str, np.ndarray],
        batch: int,
        *,
        spans: list[tuple[int, int]] | None = None,
    ) -> list[np.ndarray]:
        """One run of the plan in the session's worker (raises like
        `InterpreterBackend.run`; a `StatusCheckError` leaves the session
        usable); ``spans`` as `InterpreterBackend.run`."""
        import numpy as np
        from safetensors.numpy import load_file, save_file

        if self.worker is None:
            raise WorkerError("the trainer's interpreter session is closed")
        check_arena(self.plan, batch)
        (self.workdir / ERROR_FILE).unlink(missing_ok=True)
        arrays = {name: np.ascontiguousarray(array) for name, array in tensors.items()}
        save_file(arrays, self.workdir / TENSORS_FILE)
        assert self.worker.stdin is not None
        try:
            self.worker.stdin.write(f"run {batch}{' profile' if spans is not None else ''}\n")
            self.worker.stdin.flush()
        except OSError:
            pass  # the worker died: _expect reports it from its log
        answer = self._answer()
        while answer.startswith("collective "):
            self._collective(answer)
            answer = self._answer()
        self._check(answer, "ok")
        if spans is not None:
            spans[:] = _read_spans(self.workdir)
        results = load_file(self.workdir / OUTPUTS_FILE)
        return [results[f"output_{i}"] for i in range(len(self.plan.outputs))]

    def _collective(self, answer: str) -> None:
        """Reduce the bucket the worker stopped at (``collective <index>``) and
        let it resume; a failure ends the session and is raised."""
        from safetensors.numpy import load_file, save_file

        assert self.worker is not None and self.worker.stdin is not None
        words = answer.split()
        first = int(words[1]) if len(words) == 2 and words[1].isdigit() else -1
        indices = self.buckets.get(first)
        if indices is None or self.collective is None:
            self.close(keep_log=True)
            raise WorkerError(f"the interpreter worker stopped at an unknown collective: {answer}")
        specs = [self.plan.launches[i] for i in indices]
        collectives = [c for c in specs if isinstance(c, CollectiveSpec)]
        more = f" (and the {len(indices) - 1} after it in its bucket)" if len(indices) > 1 else ""
        try:
            arrays = load_file(self.workdir / COLLECTIVE_FILE)
            reduced = self.collective.all_reduce(
                collectives[0].reduction,
                [arrays[f"c{i}"] for i in indices],
                collectives[0].where() + more,
            )
            save_file(
                {f"c{i}": array for i, array in zip(indices, reduced, strict=True)},
                self.workdir / COLLECTIVE_RESULT_FILE,
            )
            self.worker.stdin.write("resume\n")
            self.worker.stdin.flush()
        except BaseException:
            with contextlib.suppress(OSError, ValueError):
                self.worker.stdin.write("abort\n")
                self.worker.stdin.flush()
            self.close()
            raise

    def close(self, *, keep_log: bool = False) -> None:
        """End the worker and remove the work directory (but its log, after a failure)."""
        worker, self.worker = self.worker, None
        if worker is not None:
            with contextlib.suppress(OSError, ValueError):
                assert worker.stdin is not None
                worker.stdin.write("quit\n")
                worker.stdin.close()
            try:
                worker.wait(timeout=10)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
            if worker.stdout is not None:
                worker.stdout.close()
        self._log.close()
        _clean(self.workdir, keep_log=keep_log)


def check_arena(plan: Plan, batch: int) -> None:
    """Refuse, before the worker allocates it, an arena at ``batch`` larger
    than this machine's memory (`ArenaAllocationError`, one line)."""
    from teeny_ir.backend import memory

    available = physical_memory()
    if available is None:
        return
    nbytes = memory.layout(plan, batch).arena
    if nbytes > available:
        reason = f"more than this machine's memory ({available} bytes)"
        raise ArenaAllocationError(arena_message(nbytes, batch, reason))


def physical_memory() -> int | None:
    """The machine's memory in bytes (None where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _read_spans(workdir: Path) -> list[tuple[int, int]]:
    """The launch times the worker wrote (`PROFILE_FILE`)."""
    data = json.loads((workdir / PROFILE_FILE).read_text(encoding="utf-8"))
    return [(int(start), int(duration)) for start, duration in data]


def _trace_key(key: str) -> tuple[int, int]:
    """``launch<i>_<k>`` -> (i, k)."""
    index, part = key.removeprefix("launch").split("_")
    return int(index), int(part)


def needs(module: str, problem: str = "") -> str:
    """The sentence for a required module that is missing or, with ``problem``
    (one line: the import's error), installed but failing to import."""
    extra = REQUIRED_MODULES.get(module, "")
    install = f"teeny-ir[{extra}]" if extra else "teeny-ir"
    if problem:
        return (
            f"the interpreter backend cannot import {module} ({_clip(problem)}); "
            f"reinstall it (pip install '{install}')"
        )
    return f"the interpreter backend needs {module} (pip install '{install}')"


def _installed(module: str) -> bool:
    """Whether ``module`` can be found, without importing it. A finder that
    raises, or a bare namespace directory of that name, counts as missing."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return False
    return spec is not None and spec.origin is not None


def _start_worker(workdir: Path, progress: Progress | None = None) -> int:
    """Run the worker on ``workdir`` with the interpreter switched on, its
    output going to ``workdir/worker.log``; returns its exit status. With
    ``progress``, polls the worker's progress file while it runs. The pooled
    worker (`worker_pool`) takes the run when it is free; a fresh one otherwise."""
    env = interpreter_environment(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_ROOT), env.get("PYTHONPATH")) if p)
    env.setdefault("PYTHONFAULTHANDLER", "1")  # a crash in native code leaves a traceback
    try:
        pool = [sys.executable, "-m", WORKER_MODULE, "--pool", str(worker_pool.IDLE_SECONDS)]
        poll = None if progress is None else lambda: _report(workdir / PROGRESS_FILE, progress)
        status = worker_pool.run(workdir, pool, env, poll)
        if status is not None:
            return status
    except OSError as err:
        raise BackendUnavailableError(
            f"the interpreter backend cannot start its worker: {err.strerror or err}"
        ) from None
    command = [sys.executable, "-m", WORKER_MODULE, str(workdir)]
    try:
        with (workdir / LOG_FILE).open("wb") as log:
            worker = subprocess.Popen(
                command, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )
            while True:
                try:
                    return worker.wait(timeout=0.1 if progress is not None else None)
                except subprocess.TimeoutExpired:
                    assert progress is not None
                    _report(workdir / PROGRESS_FILE, progress)
                except BaseException:
                    worker.kill()
                    worker.wait()
                    raise
    except OSError as err:
        raise BackendUnavailableError(
            f"the interpreter backend cannot start its worker: {err.strerror or err}"
        ) from None


def _report(path: Path, progress: Progress) -> None:
    """Call ``progress`` with what the worker's progress file says (if readable)."""
    try:
        done, total = (int(field) for field in path.read_text(encoding="ascii").split())
    except (OSError, ValueError):
        return
    progress(done, total)


def _failure(workdir: Path, status: int) -> Exception:
    """The exception for a worker that exited with ``status`` (one line)."""
    log = workdir / LOG_FILE
    report: object = None
    with contextlib.suppress(OSError, ValueError):  # no report: the log's last line
        report = json.loads((workdir / ERROR_FILE).read_text(encoding="utf-8"))
    summary = ""
    if isinstance(report, dict):
        unavailable = report.get("unavailable")
        if isinstance(unavailable, str) and unavailable in REQUIRED_MODULES:
            problem = "" if report.get("missing") else str(report.get("error", "")) or "?"
            return BackendUnavailableError(needs(unavailable, problem))
        summary = str(report.get("error", ""))
        if report.get("check") is True and summary:
            return StatusCheckError(summary)
        if report.get("arena") is True and summary:
            return ArenaAllocationError(summary)
    if not summary:
        summary = _last_line(log) or "it wrote nothing"
    if status < 0:
        try:
            how = f"killed by {signal.Signals(-status).name}"
        except ValueError:
            how = f"killed by signal {-status}"
    else:
        how = f"exit status {status}"
    return WorkerError(
        f"the interpreter worker failed ({how}): {_clip(summary)} (worker log: {log})"
    )


def _last_line(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return next((line.strip() for line in reversed(lines) if line.strip()), "")


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SUMMARY_CHARS else text[: _SUMMARY_CHARS - 3] + "..."


def _clean(workdir: Path, *, keep_log: bool) -> None:
    """Remove the work directory, or after a failure everything in it but the log."""
    if not keep_log:
        shutil.rmtree(workdir, ignore_errors=True)
        return
    for path in workdir.iterdir():
        if path.name == LOG_FILE:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
