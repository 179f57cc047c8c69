"""Ahead-of-time compilation of rendered kernel files with ``triton.compile``.

No GPU or driver is touched: Triton lowers the kernel for a target
architecture and its bundled ptxas assembles the cubin. The result is an
artifact (PTX, cubin, metadata and a content hash) that the emitter records
in the launch plan.

Triton is imported only inside `compile_variant`, so ``import teeny_ir`` never
pays for it. The Triton settings for compiling are pinned before that import,
unless the user set them (`teeny_ir.backend.triton_settings` says which and
why).

`compile_all` compiles independent variants in parallel worker processes
(``spawn``: a worker imports triton itself, the caller never has to), the
largest tiles first, with a progress bar on a terminal; the emitter asks the compile cache
(`teeny_ir.backend.cache`) first and sends only the misses here.

A worker dies with the process that started it (`_die_with_parent`): on Linux
the kernel sends it ``SIGKILL`` when its parent exits (``prctl(PR_SET_PDEATHSIG)``,
through ctypes), so a ``kill -9`` of ``teeny-opt`` in the middle of an emission
leaves no compile worker behind, even one busy inside Triton's C++ (which a
watching thread could not interrupt); elsewhere a daemon thread polls
``getppid()`` twice a second. Either way the parent is checked once more after
the watch is set, for a parent that died before it.
"""

from __future__ import annotations

import hashlib
import math
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from teeny_ir.backend import triton_settings
from teeny_ir.backend.kernel_files import KernelImportError, import_kernel
from teeny_ir.kernels import validator
from teeny_ir.kernels.contract import KernelFamily

SHARED_MEMORY_LIMITS: dict[int, int] = {
    80: 166912,
    86: 101376,
    87: 166912,
    89: 101376,
    90: 232448,
    100: 232448,
    120: 101376,
}
"""Opt-in shared memory per block (bytes) by compute capability; Triton itself
does not check it when compiling ahead of time."""


class AotError(Exception):
    """A kernel variant that cannot be compiled or would not launch on its target."""


class JobError(AotError):
    """The `AotError` of one job of `compile_all`, with the job's index."""

    def __init__(self, message: str, index: int) -> None:
        super().__init__(message)
        self.index = index


@dataclass(frozen=True)
class CompiledVariant:
    """One kernel compiled for one architecture and launch configuration."""

    arch: int
    name: str
    num_warps: int
    num_stages: int
    shared: int
    """Static shared memory per block in bytes, as Triton's metadata reports it."""
    cubin: bytes
    ptx: str
    cubin_sha256: str
    global_scratch_size: int = 0
    """Bytes of global scratch memory per launch the kernel asks for (Triton's
    ``global_scratch_size``; 0 for every family today)."""
    profile_scratch_size: int = 0
    """Bytes of profile scratch memory (Triton's ``profile_scratch_size``)."""


def compile_variant(
    source_file: Path,
    kernel_name: str,
    family: KernelFamily,
    constexprs: Mapping[str, int | str],
    arch: int,
    num_warps: int,
    num_stages: int,
) -> CompiledVariant:
    """Compile ``kernel_name`` from ``source_file`` (a rendered family template)
    for ``sm_<arch>``.

    The signature comes from the family's ABI: each non-constexpr argument gets
    its Triton dtype and the constexprs are bound to ``constexprs``, which the
    contract validator checks (with the launch configuration) first. Raises
    `AotError` for a contract violation, a
    file that does not define the kernel, or ``TRITON_INTERPRET`` being on.
    """
    try:
        validator.check_constexprs(family, constexprs)
        validator.check_launch_config(num_warps, num_stages)
    except validator.ContractError as err:
        raise AotError(str(err)) from None
    triton_settings.pin_compile_environment()

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.runtime.jit import JITFunction

    try:
        kernel = import_kernel(source_file, kernel_name)
    except KernelImportError as err:
        raise AotError(str(err)) from None
    if not isinstance(kernel, JITFunction):
        raise AotError(
            f"{source_file}: '{kernel_name}' is not a @triton.jit function "
            "(is TRITON_INTERPRET set in this process?)"
        )
    signature = {arg.name: arg.dtype for arg in family.args}
    signature |= {c.name: "constexpr" for c in family.constexprs}
    if list(kernel.arg_names) != list(signature):
        raise AotError(
            f"{source_file}: '{kernel_name}' takes {list(kernel.arg_names)}, "
            f"family '{family.name}' expects {list(signature)}"
        )
    source = ASTSource(fn=kernel, signature=signature, constexprs=dict(constexprs))
    compiled = triton.compile(
        source,
        target=GPUTarget("cuda", arch, 32),
        options={"num_warps": num_warps, "num_stages": num_stages},
    )
    cubin: bytes = compiled.asm["cubin"]
    metadata = compiled.metadata
    return CompiledVariant(
        arch=arch,
        name=str(metadata.name),
        num_warps=int(metadata.num_warps),
        num_stages=int(metadata.num_stages),
        shared=int(metadata.shared),
        cubin=cubin,
        ptx=str(compiled.asm["ptx"]),
        cubin_sha256=hashlib.sha256(cubin).hexdigest(),
        global_scratch_size=int(getattr(metadata, "global_scratch_size", 0) or 0),
        profile_scratch_size=int(getattr(metadata, "profile_scratch_size", 0) or 0),
    )


def check_shared(variant: CompiledVariant) -> None:
    """Raise `AotError` if the variant needs more shared memory than its
    architecture offers per block (or the architecture's limit is unknown)."""
    limit = SHARED_MEMORY_LIMITS.get(variant.arch)
    if limit is None:
        known = ", ".join(f"sm_{arch}" for arch in sorted(SHARED_MEMORY_LIMITS))
        raise AotError(
            f"kernel '{variant.name}': no shared memory limit known for sm_{variant.arch} "
            f"(known: {known})"
        )
    if variant.shared > limit:
        raise AotError(
            f"kernel '{variant.name}' needs {variant.shared} bytes of shared memory per block "
            f"with num_stages={variant.num_stages}, but sm_{variant.arch} allows {limit}; "
            "use smaller tiles or fewer stages"
        )


@dataclass(frozen=True)
class Job:
    """The arguments of one `compile_variant` call (picklable, for a worker process)."""

    source_file: Path
    kernel_name: str
    family: KernelFamily
    constexprs: Mapping[str, int | str]
    arch: int
    num_warps: int
    num_stages: int


def run_job(job: Job) -> CompiledVariant:
    """`compile_variant` for one `Job`."""
    return compile_variant(
        job.source_file,
        job.kernel_name,
        job.family,
        job.constexprs,
        job.arch,
        job.num_warps,
        job.num_stages,
    )


def _run_in_worker(job: Job) -> CompiledVariant:
    """`run_job` in a worker process: an `AotError` comes back as it is, any
    other exception as a `RuntimeError` with the worker's traceback (Triton's
    own exceptions need not survive pickling)."""
    try:
        return run_job(job)
    except AotError:
        raise
    except Exception as err:  # noqa: BLE001 - re-raised, picklable, to the parent
        raise RuntimeError(
            f"compiling '{job.kernel_name}' for sm_{job.arch} failed in a worker process:\n"
            + "".join(traceback.format_exception(err))
        ) from None


def default_workers() -> int:
    """How many processes `compile_all` uses by default: one per CPU."""
    return os.cpu_count() or 1


def compile_all(
    jobs: Sequence[Job], workers: int = 0, stream: TextIO | None = None
) -> list[CompiledVariant]:
    """Compile every job, in order; ``workers`` processes at most (0: one per
    CPU; 1, a single job, or a caller that is itself a daemonic pool worker: in this
    process). Raises the exception of the
    first failing job in job order among those that ran (pending ones are
    cancelled), an `AotError` as a `JobError` naming the job. A progress bar goes to ``stream`` (stderr by default) when it
    is a terminal and ``rich`` is installed.

    Workers are started with ``spawn``: each imports triton itself (and the
    caller need not have). Unlike a plain spawned process, a worker does not
    re-import the calling program's main module (`_main_hidden`), so a script
    that compiles at its top level, with no ``if __name__ == "__main__"``
    guard, runs once and not once more per worker."""
    import multiprocessing

    workers = workers or default_workers()
    # A daemonic process (a worker of a multiprocessing pool, as lit's) may not
    # start children: it compiles in itself.
    daemonic = multiprocessing.current_process().daemon
    with _progress(len(jobs), sys.stderr if stream is None else stream) as advance:
        if workers <= 1 or len(jobs) <= 1 or daemonic:
            results = []
            for index, job in enumerate(jobs):
                try:
                    results.append(run_job(job))
                except AotError as err:
                    raise JobError(str(err), index) from None
                advance()
            return results
        return _compile_in_pool(jobs, min(workers, len(jobs)), advance)


def _compile_in_pool(
    jobs: Sequence[Job], workers: int, advance: Callable[[], None]
) -> list[CompiledVariant]:
    import multiprocessing
    from concurrent.futures import Future, ProcessPoolExecutor, as_completed

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        max_workers=workers,
        mp_context=context,
        initializer=_die_with_parent,
        initargs=(os.getpid(),),
    ) as pool:
        # A spawn pool starts its workers inside submit(), where the main
        # module is hidden from the data each worker is prepared from.
        with _main_hidden():
            futures: dict[Future[CompiledVariant], int] = {
                pool.submit(_run_in_worker, jobs[index]): index for index in _largest_first(jobs)
            }
        failed = False
        for future in as_completed(futures):
            if future.cancelled():
                continue
            if future.exception() is not None and not failed:
                failed = True
                for other in futures:
                    other.cancel()
            advance()
    errors = sorted(
        (
            (index, error)
            for future, index in futures.items()
            if not future.cancelled() and (error := future.exception()) is not None
        ),
        key=lambda entry: entry[0],
    )
    if errors:
        index, error = errors[0]
        if isinstance(error, AotError):
            raise JobError(str(error), index) from None
        raise error
    results = {index: future.result() for future, index in futures.items()}
    return [results[index] for index in range(len(jobs))]


_PR_SET_PDEATHSIG = 1
"""``<linux/prctl.h>``: the signal a process gets when its parent exits."""


def _die_with_parent(parent: int) -> None:
    """The initializer of a compile worker: exit when ``parent`` does (see the
    module). PR_SET_PDEATHSIG fires when the thread that spawned the worker
    exits; that thread is the one blocked in `compile_all` until the pool is
    shut down, so it outlives every worker it starts."""
    watched = False
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            watched = libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
        except (OSError, AttributeError):
            watched = False
    if not watched:
        import threading

        threading.Thread(
            target=_poll_parent, args=(parent,), name="teeny-ir-parent-watch", daemon=True
        ).start()
    if os.getppid() != parent:  # it died before the watch was set
        os._exit(1)


def _poll_parent(parent: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(1)


def _largest_first(jobs: Sequence[Job]) -> list[int]:
    """The job indices in the order a pool takes them: the largest tiles first
    (the sum of the family's block sizes, a GEMM's ``BLOCK_M*BLOCK_N +
    BLOCK_M*BLOCK_K + BLOCK_K*BLOCK_N``, times its stages), in job order among
    equals. Compile time grows with the tiles (YOLOv8n's variants take 0.2 to
    3.5 s each), and a large variant taken last keeps one worker busy while the
    others idle; largest first, they finish close together whatever the order
    the variants come in. (YOLOv8n's own order happens to leave almost no such
    tail: on two workers its measured job times schedule to within 0.3% of
    the ideal either way.)"""

    def size(job: Job) -> int:
        values = {k: v for k, v in job.constexprs.items() if isinstance(v, int)}
        blocks = sum(math.prod(values.get(name, 1) for name in b) for b in job.family.blocks)
        return max(blocks, 1) * max(job.num_stages, 1)

    return sorted(range(len(jobs)), key=lambda index: -size(jobs[index]))


@contextmanager
def _main_hidden() -> Iterator[None]:
    """While inside, ``sys.modules["__main__"]`` is a bare module: a process
    spawned meanwhile is prepared without the caller's main module (no
    ``init_main_from_path`` / ``init_main_from_name``), so it never re-runs the
    caller's script. The pool's workers need nothing from it: the function they
    run and the jobs they get live in this package."""
    import types

    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


@contextmanager
def _progress(total: int, stream: TextIO) -> Iterator[Callable[[], None]]:
    """``advance()`` of a rich progress bar on ``stream``, or a no-op when
    ``stream`` is not a terminal (or rich is not installed)."""
    isatty = getattr(stream, "isatty", None)
    bar: Any = None
    if total > 0 and isatty is not None and isatty():
        try:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )
        except ImportError:  # rich comes with the interp extra: no bar without it
            bar = None
        else:
            bar = Progress(
                TextColumn("compiling kernels"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(file=stream),
                transient=True,
            )
    if bar is None:
        yield lambda: None
        return
    bar.start()
    task = bar.add_task("aot", total=total)
    try:
        yield lambda: bar.update(task, advance=1)
    finally:
        bar.stop()
