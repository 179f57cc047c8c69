"""One interpreter worker kept alive between one-shot runs of the interpreter
backend (``runtime.load(DIR).run(...)``, ``teeny-run``'s stages, the tests).

Starting a worker costs about 1.5 s of CPU before it runs a single launch:
the imports of torch and of Triton in interpreter mode. A program that runs
several plans one after another (a notebook, a test suite, a script comparing
batch sizes) pays that once with the pool: the parent keeps one idle worker
(``python -m teeny_ir.runtime.backends.interpreter_worker --pool IDLE``) and
hands it each run's work directory; the worker runs the request exactly as a
fresh one would (`interpreter_worker.main` on that directory: the same files
in, the same files out, its stdout and stderr sent to that run's
``worker.log``) and answers with the status a fresh worker would have exited
with. Nothing of one run is reused by the next but the imported modules: the
plan is loaded, the kernel files are executed as fresh modules and the arena
is allocated anew every time.

The worker is replaced when the environment or the working folder it was
started with differs from the caller's now (Triton and glibc read settings at
start-up), after `MAX_REQUESTS` runs (so whatever the imported modules cache
stays bounded), and after it died. It exits by itself after `IDLE_SECONDS`
without a request, when the parent closes its end of the pipe (the parent
exited) and, on Linux, when the parent dies (``PR_SET_PDEATHSIG``). A worker
that crashes during a run (a signal) is reported like a fresh one that did.

Only one thread uses the pooled worker at a time; a run that finds it busy
starts a fresh worker, as every run did before the pool. ``TEENY_INTERPRETER_REUSE=0``
turns the pool off. Trainer sessions (`InterpreterSession`) keep their own
worker and are not affected.

Standard library only; importing this module starts nothing.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

REUSE_ENV = "TEENY_INTERPRETER_REUSE"
"""``0`` (or ``false``, ``no``, ``off``) starts a fresh worker for every run."""
MAX_REQUESTS = 64
"""Runs one pooled worker serves before it is replaced."""
IDLE_SECONDS = 120.0
"""A pooled worker with no request for this long exits."""

_lock = threading.Lock()
_worker: _Pooled | None = None


class _Pooled:
    """A started pool worker and what it was started with."""

    def __init__(self, command: Sequence[str], env: Mapping[str, str]) -> None:
        self.env = dict(env)
        self.cwd = os.getcwd()
        self.served = 0
        self.process = subprocess.Popen(
            list(command),
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        assert self.process.stdout is not None
        self.answers = _Lines(self.process.stdout.fileno())

    def fits(self, env: Mapping[str, str]) -> bool:
        return (
            self.process.poll() is None
            and self.served < MAX_REQUESTS
            and self.env == dict(env)
            and self.cwd == os.getcwd()
        )

    def close(self) -> None:
        process = self.process
        with contextlib.suppress(OSError, ValueError):
            assert process.stdin is not None
            process.stdin.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def enabled() -> bool:
    """Whether runs may reuse the pooled worker (`REUSE_ENV`)."""
    return os.environ.get(REUSE_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def run(
    workdir: Path,
    command: Sequence[str],
    env: Mapping[str, str],
    poll: Callable[[], None] | None = None,
) -> int | None:
    """Run the request in ``workdir`` on the pooled worker (``command`` starts
    one, with ``env``); returns the status a fresh worker would have exited
    with (negative: killed by that signal), or None when the pool is off or in
    use by another thread (the caller starts a fresh worker). ``poll`` is called
    about every 0.1 s while the run goes on. Raises OSError when no worker can
    be started."""
    if not enabled() or not _lock.acquire(blocking=False):
        return None
    try:
        for _attempt in range(2):  # a worker that exited while idle: start another
            worker = _current(command, env)
            status = _request(worker, workdir, poll)
            if status is not None:
                return status
        raise OSError("the pooled interpreter worker exits before it takes a request")
    finally:
        _lock.release()


def _current(command: Sequence[str], env: Mapping[str, str]) -> _Pooled:
    global _worker
    if _worker is not None and not _worker.fits(env):
        _discard()
    if _worker is None:
        _worker = _Pooled(command, env)
    return _worker


def _discard() -> None:
    global _worker
    worker, _worker = _worker, None
    if worker is not None:
        worker.close()


def _request(worker: _Pooled, workdir: Path, poll: Callable[[], None] | None) -> int | None:
    """One request; None when the worker was gone before it took it."""
    process = worker.process
    assert process.stdin is not None
    try:
        process.stdin.write(f"run {json.dumps(os.fspath(workdir))}\n")
        process.stdin.flush()
        if worker.answers.next(None) != "start":
            _discard()
            return None
        while True:
            answer = worker.answers.next(0.1 if poll is not None else None)
            if answer is None:
                assert poll is not None
                poll()
                continue
            if answer.startswith("done "):
                worker.served += 1
                return int(answer.removeprefix("done "))
            status = process.wait()  # it died during the run: report how
            _discard()
            return status if status != 0 else 1
    except OSError:  # a broken pipe: the worker was gone before it took the request
        _discard()
        return None
    except BaseException:  # interrupted: the run is abandoned, and so is the worker
        process.kill()
        _discard()
        raise


class _Lines:
    """Lines read from a file descriptor without a buffer that ``select``
    cannot see (a text stream's readline may read past the line it returns)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pending = b""

    def next(self, timeout: float | None) -> str | None:
        """The next line, stripped (``""`` at end of file), or None after ``timeout``."""
        while b"\n" not in self.pending:
            if timeout is not None and not select.select([self.fd], [], [], timeout)[0]:
                return None
            chunk = os.read(self.fd, 4096)
            if not chunk:
                line, self.pending = self.pending, b""
                return line.decode("utf-8", "replace").strip()
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return line.decode("utf-8", "replace").strip()


@atexit.register
def _close_at_exit() -> None:
    with contextlib.suppress(Exception):
        _discard()


# --- the worker's side ---------------------------------------------------------


def serve(idle: float, run_one: Callable[[list[str]], int]) -> int:
    """The pool worker's loop: for each ``run "WORKDIR"`` line (the folder as a
    JSON string) on stdin, answer
    ``start``, run ``run_one([WORKDIR])`` with stdout and stderr sent to
    ``WORKDIR/worker.log`` and answer ``done STATUS``; exit on ``quit``, at end
    of input or after ``idle`` seconds without a request."""
    from teeny_ir.runtime.backends.interpreter import LOG_FILE

    _die_with_parent()
    control = os.fdopen(os.dup(1), "w", buffering=1)
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)  # nothing but answers on the control channel
    os.close(quiet)
    requests = _Lines(0)
    while True:
        line = requests.next(idle)
        if line is None:
            return 0
        verb, _, argument = line.partition(" ")
        try:
            workdir = Path(json.loads(argument)) if verb == "run" else None
        except ValueError:
            workdir = None
        if workdir is None:
            return 0
        control.write("start\n")
        try:
            with _output_to(workdir / LOG_FILE):
                status = run_one([str(workdir)])
        except SystemExit as exit_:
            status = exit_.code if isinstance(exit_.code, int) else 1
        control.write(f"done {status}\n")


@contextlib.contextmanager
def _output_to(path: Path) -> Iterator[None]:
    """Send this process's stdout and stderr (file descriptors 1 and 2, so
    native code's output too) to ``path`` while the block runs."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        os.dup2(log, 1)
        os.dup2(log, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (log, *saved):
            os.close(fd)


def _die_with_parent() -> None:
    """Ask Linux to kill this worker when its parent dies (best effort)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
