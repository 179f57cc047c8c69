"""Pass instrumentation: hooks the pass manager calls around every pass.

As MLIR's ``PassInstrumentation``, an instrumentation overrides the hooks it
needs (each one does nothing by default):

- ``run_before_pipeline(run)`` / ``run_after_pipeline(run)``: around the whole
  pipeline (``run.path == ()``) and around each nested pipeline, once over all
  of the ops it is anchored on (``run.path`` ends with ``"'func.func' Pipeline"``);
  not called after a pipeline that failed;
- ``run_before_pass(run)``: before a pass runs on one op;
- ``run_after_pass(run)``: after it succeeded; raising `DiagnosticError` or
  `PassInternalError` here turns the run into a failure (the verifier does);
- ``run_after_pass_failed(run, error)``: after it failed; ``error`` is what the
  pass manager is about to raise.

Before-hooks are called in registration order, after-hooks in reverse order
(as in MLIR, the first instrumentation wraps all the others). The pass
manager measures the pass's own wall time (``run.seconds``, ``apply`` only) so
that no hook's work is charged to the pass.

The instrumentations here back teeny-opt's flags: `TimingInstrumentation`
(``--mlir-timing``), `IRPrinter` (``--mlir-print-ir-*``), `PassStatistics`
(``--mlir-pass-statistics``) and `Verifier` (``--verify-each``);
`teeny_ir.driver.reproducer.CrashReproducer` writes crash reproducers.

Passes report their own statistics through the context, without importing
this module (passes sit below the driver): while statistics are collected,
``getattr(ctx, STATISTICS_ATTR, None)`` is an object with
``add(name, value=1, description="")``; it is None otherwise. `statistics`
is the same lookup for code that may import the driver.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TextIO

if TYPE_CHECKING:
    from xdsl.context import Context
    from xdsl.ir import Attribute, Operation, SSAValue
    from xdsl.passes import ModulePass

    from teeny_ir.core.diagnostics import DiagnosticError
    from teeny_ir.driver.pass_manager import Nest, PassInternalError

ROOT_ANCHOR = "builtin.module"

STATISTICS_ATTR = "_teeny_pass_statistics"
"""The context attribute holding the statistics of the pass being run."""


@dataclass
class PassRun:
    """One execution of one pass on one op."""

    pass_: ModulePass
    op: Operation
    """The op the pass runs on (the root, or a function of a nested pipeline)."""
    root: Operation
    """The op the whole pipeline runs on."""
    ctx: Context
    key: tuple[int, ...]
    """The pass's position in the pipeline tree (child indices from the root)."""
    path: tuple[str, ...]
    """Its row in the timing report: enclosing pipelines, then the pass name."""
    anchors: tuple[str, ...]
    """The anchors of the pipelines it is nested in, outermost first."""
    seconds: float = 0.0
    """Wall time of the pass itself (set before the after-hooks run)."""

    @property
    def name(self) -> str:
        return self.pass_.name


@dataclass
class PipelineRun:
    """One run of a pipeline: the whole one, or a nested one over its ops."""

    nest: Nest
    op: Operation
    """The op the pipeline runs on, or that holds the ops a nested one runs on."""
    path: tuple[str, ...]
    """Its timing row (``()`` for the whole pipeline)."""


class PassInstrumentation:
    """Base class: override the hooks you need (see the module docstring). Each
    default does nothing, as MLIR's ``PassInstrumentation`` hooks do."""

    def run_before_pipeline(self, run: PipelineRun) -> None:
        """Called before a (nested) pipeline starts on ``run.op``."""

    def run_after_pipeline(self, run: PipelineRun) -> None:
        """Called after a (nested) pipeline finished on ``run.op``."""

    def run_before_pass(self, run: PassRun) -> None:
        """Called before each pass runs (in registration order)."""

    def run_after_pass(self, run: PassRun) -> None:
        """Called after a pass succeeded (in reverse registration order); raising
        turns the run into a failure."""

    def run_after_pass_failed(
        self, run: PassRun, error: DiagnosticError | PassInternalError
    ) -> None:
        """Called after a pass failed, with the error the driver will report."""


# --- timing --------------------------------------------------------------------------------

_BAR = "===" + "-" * 73 + "==="


@dataclass
class Timing:
    """Wall time per named stage; nested stages are indented in the report."""

    rows: dict[tuple[str, ...], float] = field(default_factory=dict[tuple[str, ...], float])

    def add(self, path: tuple[str, ...], seconds: float) -> None:
        self.rows[path] = self.rows.get(path, 0.0) + seconds

    def _total(self) -> float:
        return sum(s for p, s in self.rows.items() if len(p) == 1) or 1e-12

    def report(self, output_format: Literal["text", "json"] = "text") -> str:
        """MLIR's ``--mlir-timing`` table (``--mlir-output-format=text``) or its
        JSON form (``--mlir-output-format=json``)."""
        if output_format == "json":
            return self.report_json()
        total = self._total()
        lines = [
            _BAR,
            "                         ... Execution time report ...",
            _BAR,
            f"  Total Execution Time: {total:.4f} seconds",
            "",
            "  ----Wall Time----  ----Name----",
        ]
        for path, seconds in self.rows.items():
            indent = "  " * (len(path) - 1)
            lines.append(f"  {seconds:8.4f} ({100 * seconds / total:5.1f}%)  {indent}{path[-1]}")
        lines.append(f"  {total:8.4f} (100.0%)  Total")
        return "\n".join(lines) + "\n"

    def report_json(self) -> str:
        """mlir-opt's ``--mlir-timing --mlir-output-format=json`` report: a JSON
        array with one object per top-level row (nested rows in ``passes``,
        each list closed by an empty object, as mlir-opt writes it), then
        ``Rest`` and ``Total``."""
        import json

        total = self._total()
        children: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
        for path in self.rows:
            children.setdefault(path[:-1], []).append(path)

        def timing(seconds: float) -> str:
            return (
                f'{{"wall": {{"duration": {seconds:8.4f}, '
                f'"percentage": {100 * seconds / total:5.1f}}}'
            )

        lines = ["["]

        def entry(path: tuple[str, ...]) -> None:
            indent = "  " * (len(path) - 1)
            name = json.dumps(path[-1])
            lines.append(f'{indent}{timing(self.rows[path])}, "name": {name}, "passes": [')
            for child in children.get(path, []):
                entry(child)
            lines.append(f"{indent}{{}}]}},")

        for path in children.get((), []):
            entry(path)
        rest = max(0.0, total - sum(self.rows[p] for p in children.get((), [])))
        lines.append(f'{timing(rest)}, "name": "Rest"}},')
        lines.append(f'{timing(total)}, "name": "Total"}}')
        lines.append("]")
        return "\n".join(lines) + "\n"


class TimingInstrumentation(PassInstrumentation):
    """Records a row per pass and per nested pipeline (rows appear in run order)."""

    def __init__(self, timing: Timing) -> None:
        self.timing = timing
        self._starts: list[float] = []

    def run_before_pipeline(self, run: PipelineRun) -> None:
        if run.path:
            self.timing.add(run.path, 0.0)  # row order = run order
        self._starts.append(time.perf_counter())

    def run_after_pipeline(self, run: PipelineRun) -> None:
        start = self._starts.pop()
        if run.path:
            self.timing.add(run.path, time.perf_counter() - start)

    def run_before_pass(self, run: PassRun) -> None:
        self.timing.add(run.path, 0.0)

    def run_after_pass(self, run: PassRun) -> None:
        self.timing.add(run.path, run.seconds)

    def run_after_pass_failed(
        self, run: PassRun, error: DiagnosticError | PassInternalError
    ) -> None:
        self.timing.add(run.path, run.seconds)
        self._starts.clear()  # the enclosing pipelines end here


# --- verify-each ---------------------------------------------------------------------------


class Verifier(PassInstrumentation):
    """Verifies the op a pass ran on after it succeeded (``--verify-each``);
    invalid IR is an internal error naming the pass. Register it last, so that
    it runs first among the after-hooks."""

    def __init__(self, timing: Timing | None = None) -> None:
        self.timing = timing

    def run_after_pass(self, run: PassRun) -> None:
        from teeny_ir.driver.pass_manager import PassInternalError
        from teeny_ir.ir.verifier import verify_ops

        start = time.perf_counter()
        problems = verify_ops(run.op)
        if self.timing is not None:
            self.timing.add((*run.path[:-1], "(verifier)"), time.perf_counter() - start)
        if problems:
            raise PassInternalError(run.name, f"left invalid IR: {problems[0].header()}")


# --- IR printing ---------------------------------------------------------------------------


@dataclass
class IRPrinter(PassInstrumentation):
    """``--mlir-print-ir-before[-all]``, ``--mlir-print-ir-after[-all]`` and their
    modifiers, with mlir-opt's semantics: ``after_change`` prints after a pass
    only if the printed IR differs from before it; ``after_failure`` prints
    after a pass only when it failed (and, alone, after any pass that fails).
    A failed pass selected for printing after is dumped as ``After <pass> Failed``."""

    stream: TextIO
    before_all: bool = False
    after_all: bool = False
    before: frozenset[str] = frozenset()
    after: frozenset[str] = frozenset()
    after_change: bool = False
    after_failure: bool = False
    generic: bool = False
    debuginfo: bool = False
    _before_text: list[str | None] = field(default_factory=list[str | None], repr=False)

    def prints_before(self, name: str) -> bool:
        return self.before_all or name in self.before

    def prints_after(self, name: str) -> bool:
        return self.after_all or self.after_failure or name in self.after

    def run_before_pass(self, run: PassRun) -> None:
        if self.prints_before(run.name):
            self._dump(f"Before {run.name}", run.op, self._print(run.op))
        remember = self.after_change and self.prints_after(run.name) and not self.after_failure
        self._before_text.append(self._print(run.op) if remember else None)

    def run_after_pass(self, run: PassRun) -> None:
        before = self._before_text.pop() if self._before_text else None
        if not self.prints_after(run.name) or self.after_failure:
            return
        text = self._print(run.op)
        if self.after_change and text == before:
            return
        self._dump(f"After {run.name}", run.op, text)

    def run_after_pass_failed(
        self, run: PassRun, error: DiagnosticError | PassInternalError
    ) -> None:
        if self._before_text:
            self._before_text.pop()
        if self.prints_after(run.name):
            self._dump(f"After {run.name} Failed", run.op, self._print(run.op, failed=True))

    def _print(self, op: Operation, failed: bool = False) -> str:
        from teeny_ir.ir.parsing import print_module

        try:
            return print_module(op, generic=self.generic, debuginfo=self.debuginfo)
        except Exception as err:  # a crashed pass may leave unprintable IR
            if not failed:
                raise
            return f"// the IR could not be printed: {type(err).__name__}: {err}\n"

    def _dump(self, title: str, op: Operation, text: str) -> None:
        scope = ""
        if op.name != ROOT_ANCHOR:
            symbol = op.attributes.get("sym_name") or op.properties.get("sym_name")
            label = f": @{symbol.data}" if symbol is not None and hasattr(symbol, "data") else ""
            scope = f" ('{op.name}' operation{label})"
        self.stream.write(f"// -----// IR Dump {title}{scope} //----- //\n")
        self.stream.write(text)
        self.stream.write("\n")


# --- op graphs -----------------------------------------------------------------------------


@dataclass
class OpGraphViewer(PassInstrumentation):
    """``--view-op-graph-before`` / ``--view-op-graph-after``: the op graph of the op
    a named pass runs on (the module, or a function of a nested pipeline), drawn by
    the view-op-graph pass's writer with ``graph``'s options, before or after the
    pass; titled ``before <pass>`` / ``after <pass>``. With ``out=FILE`` each graph
    goes to FILE with its point before the extension, ``plan.after-fuse-pointwise.dot``
    (``.<function>`` for a nested pass, ``-2``... for a later run of the same point).

    It also sends every view-op-graph pass of the pipeline to ``stream`` (``stdout``
    for ``out=-``) and titles its graph with the pass it follows,
    ``view-op-graph (after fuse-pointwise)``."""

    stream: TextIO
    stdout: TextIO
    graph: ModulePass | None = None
    """A view-op-graph pass: the options (None: its defaults)."""
    before: frozenset[str] = frozenset()
    after: frozenset[str] = frozenset()
    _last: str = field(default="", repr=False)
    _used: set[str] = field(default_factory=set[str], repr=False)

    def run_before_pass(self, run: PassRun) -> None:
        if run.name == "view-op-graph":
            follows = f"after {self._last}" if self._last else "input"
            drawer: Any = run.pass_
            drawer.route(run.ctx, self.stream, self.stdout, f"view-op-graph ({follows})")
        if run.name in self.before:
            self._draw("before", run)

    def run_after_pass(self, run: PassRun) -> None:
        if run.name in self.after:
            self._draw("after", run)
        if run.name != "view-op-graph":
            self._last = run.name

    def _draw(self, when: str, run: PassRun) -> None:
        drawer: Any = self.graph
        if drawer is None:
            from teeny_ir.driver import pass_registry

            entry = pass_registry.lookup("view-op-graph")
            assert entry is not None
            drawer = self.graph = entry.load()()
        title, tag = f"{when} {run.name}", f"{when}-{run.name}"
        if run.op.name != ROOT_ANCHOR:
            symbol = run.op.attributes.get("sym_name") or run.op.properties.get("sym_name")
            name = getattr(symbol, "data", "")
            title += f" ('{run.op.name}' operation: @{name})" if name else f" ('{run.op.name}')"
            tag += f".{drawer.file_tag(name)}" if name else ""
        out = drawer.out
        if out and out != "-":
            path, count = drawer.point_path(out, tag), 1
            while path in self._used:
                count += 1
                path = drawer.point_path(out, f"{tag}-{count}")
            self._used.add(path)
            out = path
        drawer.route(run.ctx, self.stream, self.stdout, title)
        drawer.write(drawer.draw(run.op, title), run.ctx, run.op, out)


# --- statistics ----------------------------------------------------------------------------

BUILTIN_STATISTICS = (
    ("ops-created", "Number of operations created"),
    ("ops-erased", "Number of operations erased"),
    ("ops-modified", "Number of operations modified in place"),
)
"""Counted for every pass by diffing the ops it ran on (net effect of one run)."""


class StatisticsSink:
    """What a running pass adds its statistics to (``getattr(ctx, STATISTICS_ATTR)``)."""

    def __init__(self, counters: dict[str, list[int | str]]) -> None:
        self._counters = counters

    def add(self, name: str, value: int = 1, description: str = "") -> None:
        """Add ``value`` to the statistic ``name`` of the running pass (created at 0,
        with ``description``, on first use)."""
        counter = self._counters.setdefault(name, [0, description])
        counter[0] = int(counter[0]) + value
        if description and not counter[1]:
            counter[1] = description


def statistics(ctx: Context) -> StatisticsSink | None:
    """The statistics of the pass running with ``ctx``, or None when nobody collects them."""
    sink = getattr(ctx, STATISTICS_ATTR, None)
    return sink if isinstance(sink, StatisticsSink) else None


_OpState = tuple[
    "Operation",
    "tuple[SSAValue, ...]",
    "tuple[Attribute, ...]",
    "dict[str, Attribute]",
    "dict[str, Attribute]",
    "tuple[object, ...]",
    "Attribute",
]


def _state(op: Operation) -> _OpState:
    return (
        op,
        tuple(op.operands),
        tuple(result.type for result in op.results),
        dict(op.attributes),
        dict(op.properties),
        tuple(op.successors),
        op.location,
    )


def _modified(old: _OpState, new: _OpState) -> bool:
    if len(old[1]) != len(new[1]) or any(a is not b for a, b in zip(old[1], new[1], strict=True)):
        return True
    if len(old[5]) != len(new[5]) or any(a is not b for a, b in zip(old[5], new[5], strict=True)):
        return True
    return old[2] != new[2] or old[3] != new[3] or old[4] != new[4] or old[6] != new[6]


class PassStatistics(PassInstrumentation):
    """``--mlir-pass-statistics``: per pass of the pipeline, the ops it created,
    erased and modified (a kept op whose operands, result types, attributes,
    properties, successors or location changed), summed over every op it ran
    on, plus the statistics the pass added itself."""

    def __init__(self) -> None:
        self.counters: dict[tuple[int, ...], dict[str, list[int | str]]] = {}
        self._snapshots: list[tuple[dict[int, _OpState], object]] = []

    def _of(self, key: tuple[int, ...]) -> dict[str, list[int | str]]:
        counters = self.counters.get(key)
        if counters is None:
            counters = {name: [0, description] for name, description in BUILTIN_STATISTICS}
            self.counters[key] = counters
        return counters

    def run_before_pass(self, run: PassRun) -> None:
        # The snapshot holds every op, so no id() is reused while the pass runs.
        before = {id(op): _state(op) for op in run.op.walk()}
        self._snapshots.append((before, getattr(run.ctx, STATISTICS_ATTR, None)))
        setattr(run.ctx, STATISTICS_ATTR, StatisticsSink(self._of(run.key)))

    def run_after_pass(self, run: PassRun) -> None:
        before, outer = self._snapshots.pop()
        setattr(run.ctx, STATISTICS_ATTR, outer)
        created = modified = 0
        kept = 0
        for op in run.op.walk():
            old = before.get(id(op))
            if old is None or old[0] is not op:
                created += 1
                continue
            kept += 1
            if _modified(old, _state(op)):
                modified += 1
        counters = self._of(run.key)
        for name, value in (
            ("ops-created", created),
            ("ops-erased", len(before) - kept),
            ("ops-modified", modified),
        ):
            counters[name][0] = int(counters[name][0]) + value

    def run_after_pass_failed(
        self, run: PassRun, error: DiagnosticError | PassInternalError
    ) -> None:
        _, outer = self._snapshots.pop()
        setattr(run.ctx, STATISTICS_ATTR, outer)

    def report(self, root: Nest, display: Literal["pipeline", "list"] = "pipeline") -> str:
        """mlir-opt's ``Pass statistics report``: the pipeline's tree (``pipeline``)
        or every pass once, merged by name and sorted (``list``)."""
        from teeny_ir.driver.pass_manager import Nest

        title = "... Pass statistics report ..."
        lines = [_BAR, " " * ((80 - len(title)) // 2) + title, _BAR]
        if display == "pipeline":

            def walk(nest: Nest, key: tuple[int, ...], indent: int) -> None:
                for index, child in enumerate(nest.children):
                    if isinstance(child, Nest):
                        lines.append(" " * indent + f"'{child.anchor}' Pipeline")
                        walk(child, (*key, index), indent + 2)
                    else:
                        _entry(lines, indent, child.name, self._of((*key, index)))

            walk(root, (), 0)
        else:
            merged: dict[str, dict[str, list[int | str]]] = {}

            def collect(nest: Nest, key: tuple[int, ...]) -> None:
                for index, child in enumerate(nest.children):
                    if isinstance(child, Nest):
                        collect(child, (*key, index))
                        continue
                    into = merged.setdefault(child.name, {})
                    for name, (value, description) in self._of((*key, index)).items():
                        counter = into.setdefault(name, [0, description])
                        counter[0] = int(counter[0]) + int(value)

            collect(root, ())
            for name in sorted(merged):
                _entry(lines, 2, name, merged[name])
        return "\n".join(lines) + "\n\n"


def _entry(lines: list[str], indent: int, name: str, counters: dict[str, list[int | str]]) -> None:
    """One pass and its statistics, sorted by name, as MLIR's ``printPassEntry``."""
    lines.append(" " * indent + name)
    if not counters:
        return
    width = max(len(str(value)) for value, _ in counters.values())
    name_width = max(len(stat) for stat in counters)
    for stat in sorted(counters):
        value, description = counters[stat]
        lines.append(
            " " * (indent + 2) + f"(S) {value:>{width}} {stat:<{name_width}} - {description}"
        )
