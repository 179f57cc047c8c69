"""A per-launch profile of one plan run: `Profile`, one `LaunchRecord` per launch.

Pass an empty `Profile` to ``load(DIR).run(inputs, weights, profile=...)`` (or
to `teeny_ir.runtime.RunSession.run`); the run fills it in plan order: each
launch's index, kernel, family, the graph ops it implements (its ``sources``,
the provenance `emit-triton` records), its phase (training plans), its grid at
the run's batch, its start and duration, and the bytes it reads and writes.
``teeny-run --profile`` prints `Profile.table` and ``--profile-out FILE.json``
writes `Profile.chrome_trace` (docs/profiling.md).

The times are what the backend can measure: on the ``interpreter`` backend
``time.perf_counter_ns`` around each launch in the worker, that is the time
Triton's interpreter takes to run the kernel on the CPU (no GPU time at all);
on the ``cuda`` backend two CUDA events around each ``cuLaunchKernel`` on the
stream, the kernel's time on the GPU. Starts count from the first launch's
start; the launches of one run never overlap (one stream, plan order).

The bytes come from the plan and the family contract, not from the kernel's
actual memory traffic (`launch_bytes`): every distinct tensor bound to an
``input`` or ``param`` argument is read, every one bound to an ``output``
argument written (a tensor bound to both, updated in place, counts in both),
each with its elements at the run's batch times its element size, or fewer
when the family's footprint, evaluated at the launch's dims, says the kernel
touches fewer (a convolution's residual operand, which a launch whose dim
``HAS_RESIDUAL`` is 0 never reads, has footprint 0). Caches, re-reads of a
tile and partial reads are not modelled.

A collective (a data-parallel plan's ``all_reduce``) has a record too, its
family ``all_reduce``, its grid ``(0, 0, 0)`` (shown as ``-``): its time is
what the backend measured around it (the interpreter: the exchange with the
process group, the whole bucket's time on its first collective and 0 on the
others; cuda: CUDA events around it on the stream), its bytes the tensor read
and the tensor written.

Only the standard library and teeny_ir's own modules are imported (rich only
inside `print_table`, when it is installed).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from teeny_ir.backend import memory
from teeny_ir.backend.plan import BATCH, CollectiveSpec, LaunchSpec, Plan
from teeny_ir.core.expressions import eval_text, evaluate, parse_cached
from teeny_ir.kernels.families import FAMILIES

if TYPE_CHECKING:
    from teeny_ir.backend.plan import KernelSpec

__all__ = ["CLOCKS", "FamilyTotal", "LaunchRecord", "Profile", "launch_bytes"]

CLOCKS = {
    "interpreter": "Triton-interpreter time on the CPU (time.perf_counter_ns around each "
    "launch in the worker), not GPU time",
    "cuda": "GPU time (CUDA events around each cuLaunchKernel on the stream)",
}
"""What a backend's launch times measure, by backend name."""
OPS_SHOWN = 40
"""Characters of a launch's graph ops the table shows before '...'."""
_READ_KINDS = ("input", "param")
_WRITE_KINDS = ("output",)


@dataclass(frozen=True)
class LaunchRecord:
    """One launch of a profiled run."""

    index: int
    """Its position in the plan's launches."""
    kernel: str
    family: str
    ops: tuple[str, ...]
    """The graph ops it implements (``graph.conv2d``, ...), from its ``sources``."""
    locs: tuple[str, ...]
    """Their source locations (``file:line:col``; empty where unknown), one per op."""
    phase: str
    """``forward``, ``backward`` or ``update`` in a training plan; empty otherwise."""
    grid: tuple[int, int, int]
    """The grid at the run's batch."""
    start_ns: int
    """Nanoseconds from the first launch's start."""
    duration_ns: int
    bytes_read: int
    bytes_written: int
    collective: bool = False
    """A collective (an all-reduce over the ranks), not a kernel launch."""

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.duration_ns


@dataclass(frozen=True)
class FamilyTotal:
    """The launches of one family in a profile, summed."""

    family: str
    launches: int
    duration_ns: int
    share: float
    """Its part of the profile's `Profile.total_ns` (0 to 1; 0 when that is 0)."""
    bytes_read: int
    bytes_written: int


@dataclass
class Profile:
    """A run's launches (`LaunchRecord`, plan order); empty until a run fills it.

    A run given a profile replaces what it held: one profile describes one run."""

    backend: str = ""
    batch: int = 0
    function: str = ""
    """The plan's function (``forward``)."""
    records: list[LaunchRecord] = field(default_factory=list)

    @property
    def clock(self) -> str:
        """What the times measure (`CLOCKS`)."""
        return CLOCKS.get(self.backend, "")

    @property
    def total_ns(self) -> int:
        """The launches' durations, summed."""
        return sum(record.duration_ns for record in self.records)

    def fill(
        self, plan: Plan, batch: int, backend: str, spans: Sequence[tuple[int, int]]
    ) -> None:
        """Set the records from a run of ``plan`` at ``batch`` on ``backend``:
        ``spans`` holds each launch's (start, duration) in nanoseconds, in plan
        order, the starts on any one clock (they are made relative to the first)."""
        if len(spans) != len(plan.launches):
            raise ValueError(f"{len(spans)} launch times for {len(plan.launches)} launches")
        kernels = {kernel.name: kernel for kernel in plan.kernels}
        sizes = launch_bytes(plan, batch)
        origin = spans[0][0] if spans else 0
        env = {BATCH: batch}
        self.backend, self.batch, self.function = backend, batch, plan.function
        self.records = []
        for index, (launch, (start, duration), (read, written)) in enumerate(
            zip(plan.launches, spans, sizes, strict=True)
        ):
            if isinstance(launch, CollectiveSpec):
                self.records.append(
                    LaunchRecord(
                        index=index,
                        kernel=launch.collective,
                        family=launch.collective,
                        ops=tuple(source.op for source in launch.sources),
                        locs=tuple(source.loc for source in launch.sources),
                        phase=launch.phase,
                        grid=(0, 0, 0),
                        start_ns=start - origin,
                        duration_ns=duration,
                        bytes_read=read,
                        bytes_written=written,
                        collective=True,
                    )
                )
                continue
            grid = tuple(eval_text(axis, env) for axis in launch.grid)
            self.records.append(
                LaunchRecord(
                    index=index,
                    kernel=launch.kernel,
                    family=kernels[launch.kernel].family,
                    ops=tuple(source.op for source in launch.sources),
                    locs=tuple(source.loc for source in launch.sources),
                    phase=launch.phase,
                    grid=(grid[0], grid[1], grid[2]),
                    start_ns=start - origin,
                    duration_ns=duration,
                    bytes_read=read,
                    bytes_written=written,
                )
            )

    def families(self) -> list[FamilyTotal]:
        """One total per family, the most time first (then by name)."""
        grouped: dict[str, list[LaunchRecord]] = {}
        for record in self.records:
            grouped.setdefault(record.family, []).append(record)
        total = self.total_ns
        found = [
            FamilyTotal(
                family=family,
                launches=len(records),
                duration_ns=(spent := sum(r.duration_ns for r in records)),
                share=spent / total if total else 0.0,
                bytes_read=sum(r.bytes_read for r in records),
                bytes_written=sum(r.bytes_written for r in records),
            )
            for family, records in grouped.items()
        ]
        return sorted(found, key=lambda t: (-t.duration_ns, t.family))

    # --- the Chrome trace ---------------------------------------------------------

    def chrome_trace(self) -> dict[str, Any]:
        """The profile in the Chrome trace event format (chrome://tracing,
        https://ui.perfetto.dev): one complete event (``"ph": "X"``) per
        launch, named by its kernel, ``cat`` its family, ``ts`` and ``dur`` in
        microseconds, ``args`` the launch's index, family, ops, locations,
        phase, grid and bytes; before them two metadata events (``"ph": "M"``)
        naming the process and the thread. ``otherData`` holds the backend,
        the batch, the function and what the clock measures."""
        pid, tid = 1, 1
        label = f"{self.function or 'plan'} on {self.backend or '?'} (B={self.batch})"
        events: list[dict[str, Any]] = [
            {"name": "process_name", "ph": "M", "pid": pid, "tid": tid}
            | {"args": {"name": f"teeny-run {label}"}},
            {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid}
            | {"args": {"name": "launches (plan order)"}},
        ]
        for record in self.records:
            args: dict[str, Any] = {
                "index": record.index,
                "family": record.family,
                "ops": list(record.ops),
                "locs": list(record.locs),
                "grid": list(record.grid),
                "bytes_read": record.bytes_read,
                "bytes_written": record.bytes_written,
            }
            if record.phase:
                args["phase"] = record.phase
            events.append(
                {"name": record.kernel, "cat": record.family, "ph": "X"}
                | {"ts": record.start_ns / 1000, "dur": record.duration_ns / 1000}
                | {"pid": pid, "tid": tid, "args": args}
            )
        other = {"backend": self.backend, "batch": self.batch, "function": self.function}
        return {
            "traceEvents": events,
            "displayTimeUnit": "ms",
            "otherData": other | {"clock": self.clock},
        }

    # --- the table ------------------------------------------------------------------

    def launch_rows(self) -> tuple[list[str], list[list[str]]]:
        """The per-launch table: its header and one row of text per launch."""
        phases = any(record.phase for record in self.records)
        header = ["#", "family", *(["phase"] if phases else []), "graph ops", "grid"]
        unit, time = self._time_unit()
        header += [f"time {unit}", "bytes read", "bytes written"]
        rows = [
            [
                str(record.index),
                record.family,
                *([record.phase] if phases else []),
                _clip(", ".join(record.ops), OPS_SHOWN),
                "-" if record.collective else "x".join(str(axis) for axis in record.grid),
                time(record.duration_ns),
                f"{record.bytes_read:,}",
                f"{record.bytes_written:,}",
            ]
            for record in self.records
        ]
        return header, rows

    def family_rows(self) -> tuple[list[str], list[list[str]]]:
        """The per-family totals: header, one row per family, then a ``total`` row."""
        unit, time = self._time_unit()
        header = ["family", "launches", f"time {unit}", "share", "bytes read", "bytes written"]
        rows = [
            [
                total.family,
                str(total.launches),
                time(total.duration_ns),
                f"{100 * total.share:.1f}%",
                f"{total.bytes_read:,}",
                f"{total.bytes_written:,}",
            ]
            for total in self.families()
        ]
        records = self.records
        rows.append(
            [
                "total",
                str(len(records)),
                time(self.total_ns),
                "100.0%" if self.total_ns else "0.0%",
                f"{sum(r.bytes_read for r in records):,}",
                f"{sum(r.bytes_written for r in records):,}",
            ]
        )
        return header, rows

    def _time_unit(self) -> tuple[str, Callable[[int], str]]:
        """The tables' time column: milliseconds (3 decimals) once a launch
        takes 10 ms or more (the interpreter), else microseconds (1 decimal)."""
        longest = max((record.duration_ns for record in self.records), default=0)
        if longest >= 10_000_000:
            return "ms", lambda ns: f"{ns / 1e6:,.3f}"
        return "us", lambda ns: f"{ns / 1e3:,.1f}"

    def title(self) -> list[str]:
        """Two lines: what was run, and what the times are."""
        count = len(self.records)
        noun = "launch" if count == 1 else "launches"
        return [
            f"{self.function or 'plan'}: {count} {noun} on the {self.backend or '?'} "
            f"backend at B={self.batch}",
            f"times: {self.clock or 'unknown clock'}",
        ]

    def table(self) -> str:
        """The per-launch table and the per-family totals as plain text."""
        parts = [*self.title(), "", _plain(*self.launch_rows()), "", _plain(*self.family_rows())]
        return "\n".join(parts) + "\n"

    def print_table(self, stream: TextIO, use_rich: bool | None = None) -> None:
        """Write the tables to ``stream``: with rich (`Profile.table`'s rows in
        two rich tables) when it is installed, or as `table`'s plain text;
        ``use_rich`` False forces plain text, True needs rich."""
        if use_rich is not False:
            try:
                from rich.console import Console
                from rich.table import Table
            except ImportError:  # rich comes with the interp extra: plain text without it
                if use_rich:
                    raise
            else:
                console = Console(file=stream, highlight=False)
                if not console.is_terminal:  # a file or a pipe: no 80-column limit
                    console = Console(file=stream, highlight=False, width=160)
                for line in self.title():
                    console.print(line, markup=False)
                for (header, rows), title in (
                    (self.launch_rows(), "launches"),
                    (self.family_rows(), "per family"),
                ):
                    table = Table(title=title, title_justify="left")
                    for index, name in enumerate(header):
                        numeric = _numeric(name)
                        table.add_column(
                            name,
                            justify="right" if numeric else "left",
                            no_wrap=numeric or index == 0,
                            overflow="ellipsis",
                        )
                    for row, after in zip(rows, [*rows[1:], None], strict=True):
                        total_next = after is not None and after[0] == "total"
                        table.add_row(*row, end_section=total_next)
                    console.print(table)
                return
        stream.write(self.table())


def _numeric(column: str) -> bool:
    """Whether a table column holds numbers (right-aligned)."""
    return column.startswith("time ") or column in _NUMERIC


_NUMERIC = frozenset({"#", "grid", "bytes read", "bytes written", "launches", "share"})


def launch_bytes(plan: Plan, batch: int) -> list[tuple[int, int]]:
    """Per launch, in plan order: (bytes read, bytes written) at ``batch``, by
    the family contract (see the module docstring)."""
    sizes = tensor_elements(plan, batch)
    dtypes = {spec.name: spec.dtype for spec in (*plan.inputs, *plan.buffers)}
    kernels = {kernel.name: kernel for kernel in plan.kernels}
    found: list[tuple[int, int]] = []
    for launch in plan.launches:
        if isinstance(launch, CollectiveSpec):  # one tensor read, one written
            found.append(
                (sizes[launch.input] * memory.BYTES["f32"], sizes[launch.output] * memory.BYTES["f32"])
            )
            continue
        kernel = kernels[launch.kernel]
        read: dict[str, int] = {}
        written: dict[str, int] = {}
        for name, kind, elements in _touched(kernel, launch, sizes, batch):
            for kinds, seen in ((_READ_KINDS, read), (_WRITE_KINDS, written)):
                if kind in kinds:
                    seen[name] = max(seen.get(name, 0), elements)
        read_bytes, written_bytes = (
            sum(n * memory.BYTES[dtypes.get(t, "f32")] for t, n in seen.items())
            for seen in (read, written)
        )
        found.append((read_bytes, written_bytes))
    return found


def tensor_elements(plan: Plan, batch: int) -> dict[str, int]:
    """Every tensor a launch may bind (input, parameter, buffer, view) -> its
    elements at ``batch``."""
    env = {BATCH: batch}
    shapes: list[tuple[str, Sequence[int | str]]] = [
        (spec.name, spec.shape) for spec in (*plan.inputs, *plan.buffers)
    ]
    shapes += [(view.name, view.shape) for view in plan.views]
    shapes += [(param.name, param.shape) for param in plan.params]
    return {
        name: math.prod(d if isinstance(d, int) else eval_text(d, env) for d in shape)
        for name, shape in shapes
    }


def _touched(
    kernel: KernelSpec, launch: LaunchSpec, sizes: Mapping[str, int], batch: int
) -> list[tuple[str, str, int]]:
    """(tensor, argument kind, elements the launch may touch in it) per pointer
    argument: the tensor's elements, or its footprint when that is smaller."""
    family = FAMILIES[kernel.family]
    env: dict[str, int] = {BATCH: batch}
    env |= {name: value for name, value in kernel.constexprs.items() if isinstance(value, int)}
    for abi, arg in zip(family.args, launch.args, strict=True):
        if abi.kind == "dim" and arg.expr is not None:
            env[abi.name] = eval_text(arg.expr, {BATCH: batch})
    touched: list[tuple[str, str, int]] = []
    for abi, arg in zip(family.args, launch.args, strict=True):
        if arg.tensor is None:
            continue
        elements = sizes[arg.tensor]
        footprint = family.footprints.get(abi.name)
        if footprint is not None:
            elements = min(elements, evaluate(parse_cached(footprint), env))
        touched.append((arg.tensor, abi.kind, max(elements, 0)))
    return touched


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _plain(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell: numbers right-aligned, text left."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        padded = [
            cell.rjust(width) if _numeric(name) else cell.ljust(width)
            for cell, width, name in zip(cells, widths, header, strict=True)
        ]
        return "  ".join(padded).rstrip()

    rule = "  ".join("-" * width for width in widths)
    body = [line(row) for row in rows]
    if rows and rows[-1][0] == "total" and "launches" in header:
        body.insert(len(body) - 1, rule)
    return "\n".join([line(header), rule, *body])
