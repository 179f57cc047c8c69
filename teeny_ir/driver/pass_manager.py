"""The pass manager: nested pipelines, verify-each, IR dumps and timing.

A pipeline is a tree, as in MLIR: the root runs on ``builtin.module``; a
nested ``func.func(...)`` runs its passes, in order, on each function directly
inside the module. Each pass declares the ops it may be anchored on; nesting
it elsewhere is rejected when the pipeline is parsed.

Failures are sorted into two kinds, as the driver's exit codes need:
- `DiagnosticError`: the input was rejected (bad pipeline text, or a pass
  emitted errors / raised `PassFailedException`) - exit 1;
- `PassInternalError`: a pass raised anything else, or left invalid IR - exit 2.
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
class Timing:
    """Wall time per named stage; nested stages are indented in the report."""

    rows: dict[tuple[str, ...], float] = field(default_factory=dict[tuple[str, ...], float])

    def add(self, path: tuple[str, ...], seconds: float) -> None:
        self.rows[path] = self.rows.get(path, 0.0) + seconds

    def report(self) -> str:
        """MLIR's ``--mlir-timing`` table."""
        total = sum(s for p, s in self.rows.items() if len(p) == 1) or 1e-12
        bar = "===" + "-" * 73 + "==="
        lines = [
            bar,
            "                         ... Execution time report ...",
            bar,
            f"  Total Execution Time: {total:.4f} seconds",
            "",
            "  ----Wall Time----  ----Name----",
        ]
        for path, seconds in self.rows.items():
            indent = "  " * (len(path) - 1)
            lines.append(f"  {seconds:8.4f} ({100 * seconds / total:5.1f}%)  {indent}{path[-1]}")
        lines.append(f"  {total:8.4f} (100.0%)  Total")
        return "\n".join(lines) + "\n"


@dataclass
class Instrumentation:
    """What the driver asked to see while the pipeline runs."""

    verify_each: bool = True
    print_before_all: bool = False
    print_after_all: bool = False
    dump_stream: TextIO | None = None
    timing: Timing | None = None
    describe_op: Callable[[Operation], str] | None = None
    """Render an op for "see current operation" notes (None: no note)."""


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
        self._run_nest(self.root, module, ctx, ())

    def _run_nest(self, nest: Nest, op: Operation, ctx: Context, path: tuple[str, ...]) -> None:
        for child in nest.children:
            if isinstance(child, Nest):
                nested_path = (*path, f"'{child.anchor}' Pipeline")
                self._time(nested_path, time.perf_counter())  # row order = run order
                start = time.perf_counter()
                for target in _ops_named(op, child.anchor):
                    self._run_nest(child, target, ctx, nested_path)
                self._time(nested_path, start)
            else:
                self._run_pass(child, op, ctx, (*path, child.name))

    def _time(self, path: tuple[str, ...], start: float) -> None:
        if self.instrumentation.timing is not None:
            self.instrumentation.timing.add(path, time.perf_counter() - start)

    def _run_pass(
        self, pass_: ModulePass, op: Operation, ctx: Context, path: tuple[str, ...]
    ) -> None:
        from xdsl.utils.exceptions import PassFailedException

        inst = self.instrumentation
        if inst.print_before_all:
            self._dump("Before", pass_, op)
        engine = engine_of(ctx)
        errors_before = sum(d.severity is Severity.ERROR for d in engine.diagnostics)
        start = time.perf_counter()
        try:
            pass_.apply(ctx, op)  # type: ignore[arg-type]  # anchored passes get their op
        except DiagnosticError as err:
            engine.extend(err.diagnostics)
        except PassFailedException as err:
            engine.error(f"pass '{pass_.name}' failed: {err}", op)
        except Exception as err:
            raise PassInternalError(pass_.name, f"{type(err).__name__}: {err}") from err
        self._time(path, start)
        if sum(d.severity is Severity.ERROR for d in engine.diagnostics) > errors_before:
            raise DiagnosticError(engine.take())
        if inst.verify_each:
            from teeny_ir.ir.verifier import verify_ops

            start = time.perf_counter()
            problems = verify_ops(op)
            self._time((*path[:-1], "(verifier)"), start)
            if problems:
                raise PassInternalError(pass_.name, f"left invalid IR: {problems[0].header()}")
        if inst.print_after_all:
            self._dump("After", pass_, op)

    def _dump(self, when: str, pass_: ModulePass, op: Operation) -> None:
        from teeny_ir.ir.parsing import print_module

        stream = self.instrumentation.dump_stream
        if stream is None:
            return
        scope = ""
        if op.name != ROOT_ANCHOR:
            symbol = op.attributes.get("sym_name") or op.properties.get("sym_name")
            label = f": @{symbol.data}" if symbol is not None and hasattr(symbol, "data") else ""
            scope = f" ('{op.name}' operation{label})"
        stream.write(f"// -----// IR Dump {when} {pass_.name}{scope} //----- //\n")
        stream.write(print_module(op))
        stream.write("\n")


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

    if element.options:
        raise _pipeline_error(f"named pipeline '{element.name}' takes no options")
    if element.name in expanding:
        raise _pipeline_error(f"named pipeline '{element.name}' refers to itself")
    if spec.anchor != ROOT_ANCHOR:
        raise _pipeline_error(f"named pipeline '{element.name}' must be used at the top level")
    inner = parse_any(pipelines.PIPELINES[element.name].text)
    return _build_nest(inner, (*expanding, element.name)).children


def _to_spec(nest: Nest) -> NestedSpec:
    elements: list[PassSpec | NestedSpec] = []
    for child in nest.children:
        elements.append(_to_spec(child) if isinstance(child, Nest) else spec_of(child))
    return NestedSpec(nest.anchor, tuple(elements))
