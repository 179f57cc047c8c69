"""The pass manager: nested pipelines, run under instrumentation hooks.

A pipeline is a tree, as in MLIR: the root runs on ``builtin.module``; a
nested ``func.func(...)`` runs its passes, in order, on each function directly
inside the module. Each pass declares the ops it may be anchored on; nesting
it elsewhere is rejected when the pipeline is parsed.

Failures are sorted into two kinds, as the driver's exit codes need:
- `DiagnosticError`: the input was rejected (bad pipeline text, or a pass
  emitted errors / raised `PassFailedException`) - exit 1;
- `PassInternalError`: a pass raised anything else, or left invalid IR - exit 2.

Verify-each, IR dumps, timing, statistics and crash reproducers are
instrumentations (`teeny_ir.driver.instrumentation`): hooks called before each
pass, after it and after it failed. `Instrumentation` holds the driver's
choices and builds them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TextIO

from teeny_ir.core.diagnostics import (
    Diagnostic,
    DiagnosticError,
    Severity,
    SourceLoc,
    engine_of,
    loc_of,
)
from teeny_ir.driver.pass_options import OptionError, build_pass, did_you_mean, spec_of
from teeny_ir.driver.pipeline_syntax import (
    NestedSpec,
    PassSpec,
    PipelineSyntaxError,
    format_pipeline,
    parse_any,
    parse_pass_list,
    parse_pipeline,
)

if TYPE_CHECKING:
    from xdsl.context import Context
    from xdsl.ir import Operation
    from xdsl.passes import ModulePass

    from teeny_ir.driver.instrumentation import (
        PassInstrumentation,
        PassRun,
        PassStatistics,
        Timing,
    )
    from teeny_ir.driver.reproducer import CrashReproducer

ROOT_ANCHOR = "builtin.module"
NESTABLE = {"func.func": ROOT_ANCHOR}
"""Op anchors a pipeline may nest, and the anchor each must sit directly in."""


class PassInternalError(Exception):
    """A pass crashed or left invalid IR: a bug in the compiler, not the input."""

    def __init__(self, pass_name: str, detail: str) -> None:
        self.pass_name = pass_name
        self.detail = detail
        super().__init__(f"internal error in pass '{pass_name}': {detail}")


@dataclass
class Nest:
    """Passes to run, in order, on every op named ``anchor`` (or on the root)."""

    anchor: str
    children: list[ModulePass | Nest]


@dataclass
class Instrumentation:
    """What the driver asked to see while the pipeline runs; `hooks` turns it into
    the `PassInstrumentation` list the pass manager calls (see
    `teeny_ir.driver.instrumentation`)."""

    verify_each: bool = True
    print_before_all: bool = False
    print_after_all: bool = False
    dump_stream: TextIO | None = None
    timing: Timing | None = None
    describe_op: Callable[[Operation], str] | None = None
    """Render an op for "see current operation" notes (None: no note)."""
    print_before: frozenset[str] = frozenset()
    """Passes (by name) to print the IR before (``--mlir-print-ir-before``)."""
    print_after: frozenset[str] = frozenset()
    """Passes (by name) to print the IR after (``--mlir-print-ir-after``)."""
    print_after_change: bool = False
    print_after_failure: bool = False
    print_generic: bool = False
    """Print IR dumps in the generic form (``--mlir-print-op-generic``)."""
    print_debuginfo: bool = False
    """Print locations in IR dumps (``--mlir-print-debuginfo``)."""
    statistics: PassStatistics | None = None
    reproducer: CrashReproducer | None = None
    extra: list[PassInstrumentation] = field(default_factory=list)
    """More instrumentations, called inside timing and outside everything else."""

    def hooks(self) -> list[PassInstrumentation]:
        """The instrumentations, outermost first: timing, `extra`, statistics,
        the crash reproducer, IR printing, then the verifier (innermost, so that
        it runs first after a pass and a pass leaving invalid IR has failed for
        all the others)."""
        from teeny_ir.driver.instrumentation import IRPrinter, TimingInstrumentation, Verifier

        hooks: list[PassInstrumentation] = []
        if self.timing is not None:
            hooks.append(TimingInstrumentation(self.timing))
        hooks.extend(self.extra)
        if self.statistics is not None:
            hooks.append(self.statistics)
        if self.reproducer is not None:
            self.reproducer.verify_each = self.verify_each
            hooks.append(self.reproducer)
        printing = (
            self.print_before_all
            or self.print_after_all
            or self.print_before
            or self.print_after
            or self.print_after_failure
        )
        if printing and self.dump_stream is not None:
            hooks.append(
                IRPrinter(
                    self.dump_stream,
                    before_all=self.print_before_all,
                    after_all=self.print_after_all,
                    before=self.print_before,
                    after=self.print_after,
                    after_change=self.print_after_change,
                    after_failure=self.print_after_failure,
                    generic=self.print_generic,
                    debuginfo=self.print_debuginfo,
                )
            )
        if self.verify_each:
            hooks.append(Verifier(self.timing))
        return hooks


class PassManager:
    """A parsed pipeline that runs on modules (``PassManager.parse(text).run(m)``)."""

    def __init__(self, root: Nest, instrumentation: Instrumentation | None = None) -> None:
        self.root = root
        self.instrumentation = instrumentation or Instrumentation()

    @classmethod
    def parse(
        cls,
        text: str,
        instrumentation: Instrumentation | None = None,
        *,
        form: Literal["any", "full", "short"] = "any",
    ) -> PassManager:
        """Parse MLIR pipeline text: the full form ``builtin.module(...)`` (as
        ``--pass-pipeline`` takes it), or the short form ``a,b{k=v},func.func(c)``
        nested in ``builtin.module`` (as ``-p`` takes it); ``any`` accepts both.
        Named pipelines (`teeny_ir.driver.pipelines`) expand in place. Raises
        `DiagnosticError` naming the bad pass, option or anchor."""
        try:
            if form == "short":
                spec = parse_pass_list(text)
            else:
                spec = parse_pipeline(text) if form == "full" else parse_any(text)
                if spec.anchor != ROOT_ANCHOR and form == "any":
                    spec = parse_pass_list(text)
                elif spec.anchor != ROOT_ANCHOR:
                    raise _pipeline_error(
                        f"a pipeline must be anchored on '{ROOT_ANCHOR}', not "
                        f"'{spec.anchor}' (use -p for the short form)"
                    )
        except PipelineSyntaxError as err:
            raise _pipeline_error(err.message, err.column) from None
        return cls(_build_nest(spec, expanding=()), instrumentation)

    def add_instrumentation(self, hook: PassInstrumentation) -> None:
        """Call ``hook`` around every pass of later runs (inside timing, outside
        statistics, IR printing and the verifier)."""
        self.instrumentation.extra.append(hook)

    def pipeline_string(self) -> str:
        """The canonical textual pipeline; it parses back to the same pipeline."""
        return format_pipeline(_to_spec(self.root))

    def run(self, module: Operation, ctx: Context | None = None) -> None:
        """Run the pipeline on ``module`` in place (raises DiagnosticError or
        PassInternalError; warnings and remarks land in ``engine_of(ctx)``)."""
        if ctx is None:
            from teeny_ir.ir.context import make_context

            ctx = make_context()
        if module.name != self.root.anchor:
            raise DiagnosticError.single(
                f"pipeline anchored on '{self.root.anchor}' cannot run on '{module.name}'",
                loc_of(module),
            )
        from teeny_ir.driver.instrumentation import PipelineRun

        hooks = self.instrumentation.hooks()
        run = _Run(hooks, module, ctx)
        whole = PipelineRun(self.root, module, ())
        for hook in hooks:
            hook.run_before_pipeline(whole)
        run.nest(self.root, module, (), (), (self.root.anchor,))
        for hook in reversed(hooks):
            hook.run_after_pipeline(whole)


@dataclass
class _Run:
    """One run of a pipeline on one root op."""

    hooks: list[PassInstrumentation]
    root: Operation
    ctx: Context

    def nest(
        self,
        nest: Nest,
        op: Operation,
        key: tuple[int, ...],
        path: tuple[str, ...],
        anchors: tuple[str, ...],
    ) -> None:
        from teeny_ir.driver.instrumentation import PassRun, PipelineRun

        for index, child in enumerate(nest.children):
            if isinstance(child, Nest):
                nested = PipelineRun(child, op, (*path, f"'{child.anchor}' Pipeline"))
                for hook in self.hooks:
                    hook.run_before_pipeline(nested)
                for target in _ops_named(op, child.anchor):
                    self.nest(child, target, (*key, index), nested.path, (*anchors, child.anchor))
                for hook in reversed(self.hooks):
                    hook.run_after_pipeline(nested)
            else:
                run = PassRun(
                    child, op, self.root, self.ctx, (*key, index), (*path, child.name), anchors
                )
                self.pass_(run)

    def pass_(self, run: PassRun) -> None:
        from xdsl.utils.exceptions import PassFailedException

        for hook in self.hooks:
            hook.run_before_pass(run)
        engine = engine_of(self.ctx)
        errors_before = sum(d.severity is Severity.ERROR for d in engine.diagnostics)
        failure: DiagnosticError | PassInternalError | None = None
        start = time.perf_counter()
        try:
            run.pass_.apply(self.ctx, run.op)  # type: ignore[arg-type]  # anchored passes get their op
        except DiagnosticError as err:
            engine.extend(err.diagnostics)
        except PassFailedException as err:
            engine.error(f"pass '{run.name}' failed: {err}", run.op)
        except Exception as err:  # noqa: BLE001 - a crashing pass is an internal error
            failure = PassInternalError(run.name, f"{type(err).__name__}: {err}")
            failure.__cause__ = err
        run.seconds = time.perf_counter() - start
        if failure is None and (
            sum(d.severity is Severity.ERROR for d in engine.diagnostics) > errors_before
        ):
            failure = DiagnosticError(engine.take())
        not_told = len(self.hooks)
        if failure is None:
            for index in reversed(range(len(self.hooks))):
                try:
                    self.hooks[index].run_after_pass(run)
                except (DiagnosticError, PassInternalError) as err:
                    failure, not_told = err, index
                    break
        if failure is not None:
            for hook in reversed(self.hooks[:not_told]):
                hook.run_after_pass_failed(run, failure)
            raise failure


def __getattr__(name: str) -> object:
    # `Timing` lived here before the instrumentation module; imported on first use
    # so that start-up does not pay for the instrumentation module.
    if name == "Timing":
        from teeny_ir.driver.instrumentation import Timing

        return Timing
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")


def _ops_named(op: Operation, name: str) -> Iterator[Operation]:
    """Ops called ``name`` directly inside ``op``'s regions (snapshot first:
    passes may replace them)."""
    found = [
        child
        for region in op.regions
        for block in region.blocks
        for child in block.ops
        if child.name == name
    ]
    yield from found


def _pipeline_error(message: str, column: int = 0) -> DiagnosticError:
    return DiagnosticError(
        [Diagnostic(Severity.ERROR, message, SourceLoc("<pipeline>", 1, column + 1))]
    )


def _build_nest(spec: NestedSpec, expanding: tuple[str, ...]) -> Nest:
    from teeny_ir.driver import pass_registry, pipelines

    children: list[ModulePass | Nest] = []
    for element in spec.elements:
        if isinstance(element, NestedSpec):
            parent = NESTABLE.get(element.anchor)
            if parent is None:
                raise _pipeline_error(
                    f"unknown op anchor '{element.anchor}' (valid nested anchors: "
                    f"{', '.join(sorted(NESTABLE))})" + did_you_mean(element.anchor, NESTABLE),
                    element.column,
                )
            if parent != spec.anchor:
                raise _pipeline_error(
                    f"'{element.anchor}' cannot be nested in '{spec.anchor}'",
                    element.column,
                )
            children.append(_build_nest(element, expanding))
            continue
        named = pipelines.PIPELINES.get(element.name)
        if named is not None:
            children.extend(_expand_named(element, spec, expanding))
            continue
        entry = pass_registry.lookup(element.name)
        if entry is None:
            known = [*pass_registry.names(), *pipelines.PIPELINES]
            raise _pipeline_error(
                f"unknown pass or pipeline '{element.name}' (valid: {', '.join(sorted(known))})"
                + did_you_mean(element.name, known),
                element.column,
            )
        anchors = entry.anchors()
        if spec.anchor not in anchors:
            raise _pipeline_error(
                f"pass '{element.name}' cannot run on '{spec.anchor}' "
                f"(it may be anchored on: {', '.join(anchors)})",
                element.column,
            )
        try:
            children.append(build_pass(entry.load(), element))
        except OptionError as err:
            raise _pipeline_error(str(err), element.column) from None
    return Nest(spec.anchor, children)


def _expand_named(
    element: PassSpec, spec: NestedSpec, expanding: tuple[str, ...]
) -> list[ModulePass | Nest]:
    from teeny_ir.driver import pipelines

    if element.name in expanding:
        raise _pipeline_error(f"named pipeline '{element.name}' refers to itself")
    if spec.anchor != ROOT_ANCHOR:
        raise _pipeline_error(f"named pipeline '{element.name}' must be used at the top level")
    try:
        inner = pipelines.PIPELINES[element.name].expand(element.options)
    except OptionError as err:
        raise _pipeline_error(str(err), element.column) from None
    return _build_nest(inner, (*expanding, element.name)).children


def _to_spec(nest: Nest) -> NestedSpec:
    elements: list[PassSpec | NestedSpec] = []
    for child in nest.children:
        elements.append(_to_spec(child) if isinstance(child, Nest) else spec_of(child))
    return NestedSpec(nest.anchor, tuple(elements))
