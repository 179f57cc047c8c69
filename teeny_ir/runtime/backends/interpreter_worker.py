"""The interpreter backend's process:
``python -m teeny_ir.runtime.backends.interpreter_worker WORKDIR``.

Started by `teeny_ir.runtime.backends.interpreter` with the environment of
`teeny_ir.backend.triton_settings.interpreter_environment` (Triton reads
``TRITON_INTERPRET`` at import). ``WORKDIR`` holds ``request.json`` (the plan
directory and the batch size) and ``tensors.safetensors`` (inputs and bound
parameters by plan name). The worker validates the plan again, imports each
kernel file by path (`teeny_ir.backend.kernel_files.import_kernel`), allocates
one arena (`teeny_ir.backend.memory`: a byte tensor filled with NaN, once per
batch size, each buffer a dtype view at its plan offset; int64 status outputs set
to -1 before their first writer), launches in plan order, checks the status
outputs (`teeny_ir.runtime.checks`) and writes ``outputs.safetensors`` (``output_0 ...``)
and ``timings.json``; with ``"profile": true`` in the request also ``profile.json``,
each launch's ``[start, duration]`` in nanoseconds of ``time.perf_counter_ns``
taken around the kernel call alone (what Triton's interpreter spends on it).

With ``--serve WORKDIR`` the worker is a trainer's session (`serve`): it loads
the plan and imports its kernels once, then runs one request per ``run <batch>``
line on stdin (``run <batch> profile`` also writes ``profile.json``), answering
``ok`` or ``error`` on stdout, until ``quit``.

With ``--pool IDLE`` it is the pooled worker of one-shot runs
(`teeny_ir.runtime.backends.worker_pool`): each ``run "WORKDIR"`` line on
stdin is one run of `main` on that folder, its output sent to that run's
``worker.log``, answered ``start`` and ``done STATUS``.

A collective (`teeny_ir.backend.plan.CollectiveSpec`) over more than one
rank is the parent's to run, since the parent owns the process group: at the
first collective of a bucket (`teeny_ir.runtime.distributed.buckets`) the
serving worker writes the inputs of the bucket's collectives to
``collective.safetensors`` (``c<launch index>``), prints ``collective
<launch index>`` and waits for a line on stdin: ``resume`` once the parent has
written the reduced values to ``collective_result.safetensors`` (same keys),
which the worker copies into each collective's output before it goes on;
anything else ends the request (the parent's collective failed). A collective
over one rank is a copy, done here; a one-shot run refuses one over more.

A failure prints its traceback and then a line ``error: TYPE: MESSAGE`` on
stderr (the parent sends both streams to ``worker.log``), writes
``error.json`` - the error on one line, and which of torch and triton could not
be imported, if that is what failed - and exits with status 1. A status check that fails (bad input data, such as a
class index out of range) writes its one line with ``"check": true`` and no
traceback, and an arena that cannot be allocated at the request's batch
(`allocate_arena`: more than the machine's memory, or refused by the
allocator) its one line with ``"arena": true``; a serving worker stays
usable after either. The parent
reports that one line and the log's path, never the traceback itself.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import math
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from teeny_ir.backend import memory, triton_settings
from teeny_ir.backend.kernel_files import import_kernel
from teeny_ir.backend.plan import BATCH, CollectiveSpec, Plan, load_plan
from teeny_ir.core.expressions import eval_text
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.runtime.backends.interpreter import (
    COLLECTIVE_FILE,
    COLLECTIVE_RESULT_FILE,
    ERROR_FILE,
    OUTPUTS_FILE,
    PROFILE_FILE,
    PROGRESS_FILE,
    REQUEST_FILE,
    REQUIRED_MODULES,
    TENSORS_FILE,
    TIMINGS_FILE,
    TRACE_FILE,
    WORKER_MODULE,
)
from teeny_ir.runtime.checks import check_statuses, status_tensors
from teeny_ir.runtime.distributed import buckets, needs_group
from teeny_ir.runtime.errors import ArenaAllocationError, StatusCheckError, arena_message

Exchange = Callable[[int, dict[str, Any]], dict[str, Any]]
"""``exchange(first launch index, arrays by key) -> reduced arrays``: a
bucket's collectives run by the parent (`serve`)."""


class _Aborted(Exception):
    """The parent ended a request at a collective (its process group failed)."""


class _Unavailable(Exception):
    """A required module (torch, triton) that cannot be imported."""

    def __init__(self, module: str, cause: ImportError) -> None:
        super().__init__(f"cannot import {module}: {type(cause).__name__}: {cause}")
        self.module = module
        # Missing itself, not one of its own dependencies (that is a broken install).
        self.missing = (
            isinstance(cause, ModuleNotFoundError)
            and (cause.name or module).partition(".")[0] == module
        )
        self.cause = cause


class _Loaded:
    """A plan with its kernels imported, ready to run requests (once, or for
    every step of a trainer's session)."""

    def __init__(self, directory: Path, times: dict[str, float]) -> None:
        start = time.perf_counter()
        self.directory = directory
        self.plan = load_plan(directory)
        times["load plan"] = time.perf_counter() - start
        start = time.perf_counter()
        for module in REQUIRED_MODULES:
            try:
                importlib.import_module(module)
            except ImportError as err:
                raise _Unavailable(module, err) from err
        self.kernels = {
            k.name: import_kernel(directory / k.file, k.name) for k in self.plan.kernels
        }
        self.buckets = buckets(self.plan)
        times["import triton and kernels"] = time.perf_counter() - start
        self.arena: tuple[int, Any] | None = None
        """(batch, the arena's byte tensor): allocated once per batch size and
        reused by every run at that size (a trainer's steps)."""
        live = memory.intervals(self.plan)
        self.first_writes: dict[int, list[str]] = {}
        """Launch index -> the i64 buffers (status outputs) it writes first: each is
        set to -1 just before, so a status no kernel wrote reads as "not written"."""
        for buffer in self.plan.buffers:
            if buffer.dtype == "i64":
                self.first_writes.setdefault(live[buffer.name][0], []).append(buffer.name)

    def buffers(self, batch: int) -> dict[str, Any]:
        """Every buffer as a view of the arena at its offset (the arena filled with
        NaN when allocated, so a region no kernel wrote shows)."""
        import torch

        env = {BATCH: batch}
        layout = memory.layout(self.plan, batch)  # the placement at this batch
        if self.arena is None or self.arena[0] != batch:
            self.arena = None  # free the previous batch size's arena first
            self.arena = (batch, allocate_arena(layout.arena, batch))
        arena = self.arena[1]
        views: dict[str, Any] = {}
        for buffer in self.plan.buffers:
            shape = [d if isinstance(d, int) else eval_text(d, env) for d in buffer.shape]
            start = layout.offsets[buffer.name]
            size = math.prod(shape) * memory.BYTES[buffer.dtype]
            dtype = torch.int64 if buffer.dtype == "i64" else torch.float32
            views[buffer.name] = arena[start : start + size].view(dtype).view(shape)
        return views

    def execute(
        self,
        workdir: Path,
        batch: int,
        trace: bool,
        times: dict[str, float],
        profile: bool = False,
        exchange: Exchange | None = None,
    ) -> None:
        """Run the plan on ``workdir``'s tensors; write its outputs (and trace,
        and the launch times with ``profile``). ``exchange`` runs the
        collectives over more than one rank (a serving worker's parent)."""
        import torch
        from safetensors.numpy import load_file, save_file

        plan = self.plan
        start = time.perf_counter()
        tensors: dict[str, Any] = {
            name: torch.tensor(array) for name, array in load_file(workdir / TENSORS_FILE).items()
        }
        env = {BATCH: batch}
        tensors |= self.buffers(batch)
        for view in plan.views:
            # A channel slice: images batch_stride apart, each contiguous, offset
            # into the base's images (the plan loader proved it inside the base).
            shape = [d if isinstance(d, int) else eval_text(d, env) for d in view.shape]
            strides = [view.batch_stride] + [
                math.prod(shape[k + 1 :]) for k in range(1, len(shape))
            ]
            base = tensors[view.base]
            tensors[view.name] = torch.as_strided(
                base, shape, strides, storage_offset=base.storage_offset() + view.offset
            )
        times["allocate"] = time.perf_counter() - start

        start = time.perf_counter()
        traced: dict[str, Any] | None = {} if trace else None
        spans: list[tuple[int, int]] | None = [] if profile else None
        _launch_all(
            plan,
            self.kernels,
            tensors,
            env,
            workdir / PROGRESS_FILE,
            traced,
            self.first_writes,
            spans,
            (self.buckets, exchange),
        )
        times["launches"] = time.perf_counter() - start
        statuses = {name: tensors[name].tolist() for _, name, _ in status_tensors(plan)}
        check_statuses(plan, statuses, batch)

        outputs = {
            f"output_{i}": tensors[name].contiguous().numpy().copy()
            for i, name in enumerate(plan.outputs)
        }
        save_file(outputs, workdir / OUTPUTS_FILE)
        if traced is not None:
            save_file(traced, workdir / TRACE_FILE)
        if spans is not None:
            (workdir / PROFILE_FILE).write_text(json.dumps(spans), encoding="utf-8")
        (workdir / TIMINGS_FILE).write_text(json.dumps(times), encoding="utf-8")


def allocate_arena(nbytes: int, batch: int) -> Any:
    """The arena of a run at ``batch``: ``nbytes`` as a torch byte tensor filled
    with NaN. One that exceeds this machine's memory, or that the allocator
    refuses, is an `ArenaAllocationError` naming the bytes and the batch."""
    import torch

    from teeny_ir.runtime.backends.interpreter import physical_memory

    available = physical_memory()
    if available is not None and nbytes > available:
        reason = f"more than this machine's memory ({available} bytes)"
        raise ArenaAllocationError(arena_message(nbytes, batch, reason))
    try:
        arena = torch.empty(nbytes, dtype=torch.uint8)
        arena.view(torch.float32).fill_(float("nan"))
    except (RuntimeError, MemoryError) as err:  # torch's allocator: "not enough memory"
        lines = str(err).strip().splitlines()
        reason = f"which the interpreter worker could not allocate ({lines[0] if lines else err!r})"
        raise ArenaAllocationError(arena_message(nbytes, batch, reason)) from None
    return arena


def _check_interpreter() -> None:
    if not triton_settings.interpreter_is_on():
        raise RuntimeError(
            f"the worker needs {triton_settings.INTERPRET}=1 in its environment "
            "(start it through the interpreter backend)"
        )


def run(workdir: Path) -> None:
    """Execute the request in ``workdir`` (see the module docstring)."""
    _check_interpreter()
    times: dict[str, float] = {}
    request = json.loads((workdir / REQUEST_FILE).read_text(encoding="utf-8"))
    loaded = _Loaded(Path(request["plan"]), times)
    loaded.execute(
        workdir,
        int(request["batch"]),
        bool(request.get("trace")),
        times,
        profile=bool(request.get("profile")),
    )


def serve(workdir: Path) -> int:
    """A trainer's session: load the plan and its kernels once (``request.json``
    names the plan), then for each line ``run <batch>`` on stdin execute the
    tensors in ``workdir`` and answer ``ok`` or ``error`` on stdout (the error in
    ``error.json``, as a one-shot run writes it); ``quit`` or the end of stdin
    ends the session."""
    times: dict[str, float] = {}
    try:
        _check_interpreter()
        request = json.loads((workdir / REQUEST_FILE).read_text(encoding="utf-8"))
        loaded = _Loaded(Path(request["plan"]), times)
    except Exception as err:  # noqa: BLE001 - reported like a failing run
        _fail(workdir, err)
        print("error", flush=True)
        return 1
    print("ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            return 0
        try:
            loaded.execute(
                workdir,
                int(words[1]),
                False,
                {},
                profile="profile" in words[2:],
                exchange=lambda first, arrays: _exchange(workdir, first, arrays),
            )
        except _Aborted:
            return 0  # the parent's group failed: it ends the session
        except StatusCheckError as err:
            print(f"error: {err}", file=sys.stderr)
            _report(workdir, str(err), None, check=True)
            print("error", flush=True)
            continue
        except ArenaAllocationError as err:  # the session stays usable at another batch
            print(f"error: {err}", file=sys.stderr)
            _report(workdir, str(err), None, arena=True)
            print("error", flush=True)
            continue
        except Exception as err:  # noqa: BLE001 - reported to the parent in error.json
            _fail(workdir, err)
            print("error", flush=True)
            continue
        print("ok", flush=True)
    return 0


def _exchange(workdir: Path, first: int, arrays: dict[str, Any]) -> dict[str, Any]:
    """Hand a bucket's inputs to the parent and wait for the reduced values
    (see the module docstring); raises `_Aborted` when the parent says other
    than ``resume``."""
    from safetensors.numpy import load_file, save_file

    save_file(arrays, workdir / COLLECTIVE_FILE)
    print(f"collective {first}", flush=True)
    answer = sys.stdin.readline().strip()
    if answer != "resume":
        raise _Aborted(f"the parent answered '{answer}' at the collective of launch {first}")
    return load_file(workdir / COLLECTIVE_RESULT_FILE)


def _collectives(
    plan: Plan,
    indices: Sequence[int],
    tensors: dict[str, Any],
    exchange: Exchange | None,
) -> None:
    """One bucket of collectives: each input read, the bucket reduced (over
    one rank: the values themselves; else by ``exchange``), each result
    written into its output."""
    import torch

    entries = [plan.launches[i] for i in indices]
    assert all(isinstance(e, CollectiveSpec) for e in entries)
    specs = [e for e in entries if isinstance(e, CollectiveSpec)]
    arrays = {
        f"c{i}": tensors[spec.input].contiguous().numpy().copy()
        for i, spec in zip(indices, specs, strict=True)
    }
    if specs[0].world == 1:
        results = arrays  # the sum or the mean over one rank
    elif exchange is None:
        raise RuntimeError(needs_group(plan))
    else:
        results = exchange(indices[0], arrays)
    for i, spec in zip(indices, specs, strict=True):
        target = tensors[spec.output]
        target.copy_(torch.from_numpy(results[f"c{i}"]).reshape(target.shape))


def _fail(workdir: Path, err: Exception) -> None:
    """Print the traceback to the log and write ``error.json``."""
    traceback.print_exc()
    cause = err.cause if isinstance(err, _Unavailable) else err
    summary = f"{type(cause).__name__}: {cause}"
    print(f"error: {summary}", file=sys.stderr)
    _report(workdir, summary, err if isinstance(err, _Unavailable) else None)


def _launch_all(
    plan: Plan,
    kernels: dict[str, Callable[..., Any]],
    tensors: dict[str, Any],
    env: dict[str, int],
    progress: Path | None = None,
    traced: dict[str, Any] | None = None,
    first_writes: dict[int, list[str]] | None = None,
    spans: list[tuple[int, int]] | None = None,
    collectives: tuple[dict[int, tuple[int, ...]], Exchange | None] | None = None,
) -> None:
    """Every launch in plan order; ``spans`` gets each one's (start, duration)
    in ``perf_counter_ns`` nanoseconds, the kernel call alone (a bucket of
    collectives: the exchange, on its first collective; the others take 0).
    ``collectives``: the plan's buckets and the exchange that runs them."""
    specs = {k.name: k for k in plan.kernels}
    groups, exchange = collectives if collectives is not None else (buckets(plan), None)
    for done, launch in enumerate(plan.launches):
        if isinstance(launch, CollectiveSpec):
            start = time.perf_counter_ns()
            if done in groups:
                _collectives(plan, groups[done], tensors, exchange)
            if spans is not None:
                spans.append((start, time.perf_counter_ns() - start if done in groups else 0))
            if progress is not None:
                progress.write_text(f"{done + 1} {len(plan.launches)}", encoding="ascii")
            if traced is not None:
                traced[f"launch{done}_0"] = tensors[launch.output].contiguous().numpy().copy()
            continue
        for name in (first_writes or {}).get(done, ()):
            tensors[name].fill_(-1)  # a status output: -1 reads as "not written"
        spec = specs[launch.kernel]
        family = FAMILIES[spec.family]
        args: list[Any] = []
        for abi, arg in zip(family.args, launch.args, strict=True):
            if arg.tensor is not None:
                args.append(tensors[arg.tensor])
            else:
                value = eval_text(arg.expr or "", env)
                args.append(float(value) if abi.dtype.startswith("fp") else value)
        grid = tuple(eval_text(axis, env) for axis in launch.grid)
        kernel: Any = kernels[launch.kernel]
        start = time.perf_counter_ns()
        kernel[grid](
            *args, **spec.constexprs, num_warps=launch.num_warps, num_stages=launch.num_stages
        )
        if spans is not None:
            spans.append((start, time.perf_counter_ns() - start))
        if progress is not None:
            progress.write_text(f"{done + 1} {len(plan.launches)}", encoding="ascii")
        if traced is not None:  # each distinct output tensor, in ABI order
            written = [
                arg.tensor
                for abi, arg in zip(family.args, launch.args, strict=True)
                if abi.kind == "output" and arg.tensor is not None
            ]
            for k, name in enumerate(dict.fromkeys(written)):
                traced[f"launch{done}_{k}"] = tensors[name].contiguous().numpy().copy()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) == 2 and args[0] == "--serve":
        return serve(Path(args[1]))
    if len(args) == 2 and args[0] == "--pool":
        from teeny_ir.runtime.backends import worker_pool

        return worker_pool.serve(float(args[1]), main)
    if len(args) != 1:
        print(f"usage: python -m {WORKER_MODULE} [--serve] WORKDIR | --pool IDLE", file=sys.stderr)
        return 2
    workdir = Path(args[0])
    try:
        run(workdir)
    except StatusCheckError as err:  # bad input data, not a failure: no traceback
        print(f"error: {err}", file=sys.stderr)
        _report(workdir, str(err), None, check=True)
        return 1
    except ArenaAllocationError as err:  # too large a batch for this machine: no traceback
        print(f"error: {err}", file=sys.stderr)
        _report(workdir, str(err), None, arena=True)
        return 1
    except Exception as err:  # noqa: BLE001 - reported to the parent in error.json
        _fail(workdir, err)
        return 1
    return 0


def _report(
    workdir: Path,
    summary: str,
    unavailable: _Unavailable | None,
    *,
    check: bool = False,
    arena: bool = False,
) -> None:
    """Write ``error.json`` for the parent (best effort: the log has it all)."""
    lines = summary.strip().splitlines()
    data = {
        "error": lines[0] if lines else summary,
        "unavailable": unavailable.module if unavailable else None,
        "missing": bool(unavailable and unavailable.missing),
        "check": check,
        "arena": arena,
    }
    with contextlib.suppress(OSError):
        (workdir / ERROR_FILE).write_text(json.dumps(data), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
