"""``teeny-opt``: IR in, passes, IR out - an mlir-opt for teeny_ir.

Exit codes: 0 success; 1 bad input, bad usage or a pass rejecting its input
(located diagnostics on stderr); 2 an internal error (a pass crashed or left
invalid IR; one line naming the pass). `run` is the in-process entry point
(lit runs RUN lines through it); `main` is the console script.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from teeny_ir.core.diagnostics import Diagnostic, DiagnosticError, SourceFile, engine_of
from teeny_ir.core.files import (
    TEXT_INPUT_BYTES,
    OutputError,
    check_not_input,
    check_output,
    read_regular,
    read_stream,
    write_text,
)
from teeny_ir.driver.cli import ArgumentParser, UsageError, parse_args

if TYPE_CHECKING:
    from teeny_ir.driver.pass_manager import Nest, PassManager
    from teeny_ir.driver.reproducer import CrashReproducer

PROG = "teeny-opt"


class _StoreOnce(argparse.Action):
    """Store an option's value, refusing a second occurrence (as LLVM's cl::opt does)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        if getattr(namespace, self.dest) is not None:
            raise UsageError(f"{option_string} may only occur once")
        setattr(namespace, self.dest, values)


def _bool_value(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got '{text}'")


def _seed_value(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got '{text}'") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got '{text}'")
    return value


def _tolerance_value(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"expected a positive number, got '{text}'")
    return value


def _make_parser(stdout: TextIO, with_pass_list: bool) -> ArgumentParser:
    parser = ArgumentParser(
        stdout,
        prog=PROG,
        description="Parse teeny_ir IR, run a pass pipeline on it and print the result.",
        epilog=_pass_listing() if with_pass_list else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,  # as LLVM's options: a prefix of a flag is not that flag
    )
    add = parser.add_argument
    add("input", nargs="?", default="-", help="input file ('-' for stdin, the default)")
    add("-o", "--output", default="-", help="output file ('-' for stdout, the default)")
    add(
        "--pass-pipeline",
        action=_StoreOnce,
        metavar="PIPELINE",
        help="MLIR textual pipeline: 'builtin.module(a,func.func(b{k=v}))'",
    )
    add(
        "-p",
        "--passes",
        action=_StoreOnce,
        metavar="PASSES",
        help="short form: 'a,b{k=v},func.func(c)' (nested in builtin.module)",
    )
    add("--dump-pass-pipeline", action="store_true", help="print the canonical pipeline to stderr")
    add(
        "--list-passes",
        action="store_true",
        help="list every pass and named pipeline with its options",
    )
    add("--split-input-file", action="store_true", help="process each '// -----' chunk on its own")
    add(
        "--verify-diagnostics",
        action="store_true",
        help="check '// expected-error {{...}}' annotations",
    )
    add(
        "--verify-each",
        nargs="?",
        const=True,
        default=True,
        type=_bool_value,
        metavar="BOOL",
        help="verify the IR after every pass (default true)",
    )
    add(
        "--verify-numerics-each",
        action="store_true",
        help="run the module in the reference interpreter before the pipeline and after "
        "every pass that changed it, on inputs and weights drawn from a seed; the first "
        "pass whose outputs leave the tolerance is an error (docs/numerics-check.md)",
    )
    add(
        "--verify-numerics-seed",
        type=_seed_value,
        metavar="N",
        help="seed of the inputs and weights --verify-numerics-each draws (default 0)",
    )
    add(
        "--verify-numerics-tol",
        type=_tolerance_value,
        metavar="TOL",
        help="tolerance of --verify-numerics-each: max|diff| <= TOL * max(1, max|ref|) "
        "(default 1e-4)",
    )
    add(
        "--mlir-print-ir-before-all",
        action="store_true",
        help="print the IR before every pass to stderr",
    )
    add(
        "--mlir-print-ir-after-all",
        action="store_true",
        help="print the IR after every pass to stderr",
    )
    add(
        "--mlir-print-ir-before",
        action="append",
        metavar="PASS",
        help="print the IR before the named passes (comma-separated, or repeat the flag)",
    )
    add(
        "--mlir-print-ir-after",
        action="append",
        metavar="PASS",
        help="print the IR after the named passes (comma-separated, or repeat the flag)",
    )
    add(
        "--mlir-print-ir-after-change",
        action="store_true",
        help="when printing the IR after a pass, only print it if the pass changed it",
    )
    add(
        "--mlir-print-ir-after-failure",
        action="store_true",
        help="when printing the IR after a pass, only print it if the pass failed",
    )
    add(
        "--view-op-graph",
        action=_StoreOnce,
        nargs="?",
        const="",
        metavar="OPTIONS",
        help="append the view-op-graph pass to the pipeline: the module as Graphviz DOT on "
        "stderr; --view-op-graph='max-label-len=40 out=g.svg' sets its options, which the "
        "--view-op-graph-before/after graphs use too (docs/op-graph.md)",
    )
    add(
        "--view-op-graph-before",
        action="append",
        metavar="PASS",
        help="draw the op graph before the named passes (comma-separated, or repeat the flag)",
    )
    add(
        "--view-op-graph-after",
        action="append",
        metavar="PASS",
        help="draw the op graph after the named passes (comma-separated, or repeat the flag)",
    )
    add("--mlir-timing", action="store_true", help="print a per-pass wall-time table to stderr")
    add(
        "--mlir-output-format",
        choices=("text", "json"),
        default="text",
        help="format of the --mlir-timing report (default text)",
    )
    add(
        "--mlir-pass-statistics",
        action="store_true",
        help="print each pass's statistics (ops created, erased, modified, ...) to stderr",
    )
    add(
        "--mlir-pass-statistics-display",
        choices=("pipeline", "list"),
        default="pipeline",
        help="statistics as the pipeline's tree (default) or merged by pass name",
    )
    add(
        "--mlir-pass-pipeline-crash-reproducer",
        action=_StoreOnce,
        metavar="FILE",
        help="when a pass fails or crashes, write the IR before it and the pass to FILE",
    )
    add(
        "--run-reproducer",
        action="store_true",
        help="run the pipeline stored in the input's reproducer trailer",
    )
    add("--mlir-print-op-generic", action="store_true", help="print ops in the generic form")
    add("--mlir-print-debuginfo", action="store_true", help="print op locations")
    add("--allow-unregistered-dialect", action="store_true", help="accept ops of unknown dialects")
    add(
        "--no-cache",
        action="store_true",
        help="compile every kernel variant afresh: no compile-cache lookups or stores "
        "(the cache lives in TEENY_CACHE_DIR, else the user cache folder)",
    )
    add("--version", action="store_true", help="print the versions of teeny_ir and xDSL")
    return parser


def _pass_listing() -> str:
    from teeny_ir.driver import pass_registry, pipelines
    from teeny_ir.driver.pass_options import options_of

    lines = ["passes:"]
    for name in pass_registry.names():
        entry = pass_registry.lookup(name)
        assert entry is not None
        lines.append(f"  {name:<24} {entry.summary()}")
        lines.append(f"  {'':<24} anchors: {', '.join(entry.anchors())}")
        for info in options_of(entry.load()):
            lines.append(
                f"  {'':<24}   {info.name}={info.type_text()}{_default_text(info.default)}"
            )
        for alias in pass_registry.aliases_of(name):
            lines.append(f"  {'':<24} alias: {alias} (an old name, still accepted)")
    lines.append("named pipelines:")
    for named in pipelines.PIPELINES.values():
        lines.append(f"  {named.name:<24} {named.summary}")
        lines.append(f"  {'':<24} = {named.text}")
    return "\n".join(lines) + "\n"


def _default_text(default: object) -> str:
    """How an option's default reads in the pass listing."""
    if default is None:
        return ""
    if isinstance(default, bool):
        return f" (default: {str(default).lower()})"
    if isinstance(default, tuple):
        items = ",".join(str(v) for v in default)
        return f" (default: {items or 'none'})"
    if default == "":
        return ' (default: "")'
    return f" (default: {default})"


@dataclass
class _Outcome:
    """What processing the input produced."""

    chunks: list[str] = field(default_factory=list[str])
    diagnostics: list[Diagnostic] = field(default_factory=list[Diagnostic])
    failed: bool = False
    internal_error: str | None = None


def run(argv: Sequence[str], stdin: object, stdout: TextIO, stderr: TextIO) -> int:
    """Run teeny-opt in-process; ``stdin`` is a binary stream. Returns the exit code."""
    argv = _view_op_graph_flag(list(argv))
    parser = _make_parser(stdout, with_pass_list="-h" in argv or "--help" in argv)
    args = parse_args(parser, argv, PROG, stderr)
    if isinstance(args, int):
        return args

    if args.version:
        stdout.write(_version_text())
        return 0
    if args.list_passes:
        stdout.write(_pass_listing())
        return 0
    if args.pass_pipeline is not None and args.passes is not None:
        stderr.write(f"{PROG}: error: give --pass-pipeline or -p, not both\n")
        return 1
    if args.run_reproducer and (args.pass_pipeline is not None or args.passes is not None):
        stderr.write(
            f"{PROG}: error: --run-reproducer runs the reproducer's own pipeline: "
            "give no --pass-pipeline or -p\n"
        )
        return 1
    try:
        print_before = _pass_names(args.mlir_print_ir_before, "--mlir-print-ir-before")
        print_after = _pass_names(args.mlir_print_ir_after, "--mlir-print-ir-after")
        graph_before = _pass_names(args.view_op_graph_before, "--view-op-graph-before")
        graph_after = _pass_names(args.view_op_graph_after, "--view-op-graph-after")
    except UsageError as err:
        stderr.write(f"{PROG}: error: {err}\n")
        return 1

    from teeny_ir.driver.pass_manager import Instrumentation, PassManager
    from teeny_ir.ir.verifier import describe_op

    timing = None
    if args.mlir_timing:
        from teeny_ir.driver.instrumentation import Timing

        timing = Timing()
    statistics = None
    if args.mlir_pass_statistics:
        from teeny_ir.driver.instrumentation import PassStatistics

        statistics = PassStatistics()
    numerics_given = args.verify_numerics_seed is not None or args.verify_numerics_tol is not None
    if numerics_given and not args.verify_numerics_each:
        stderr.write(
            f"{PROG}: error: --verify-numerics-seed and --verify-numerics-tol need "
            "--verify-numerics-each\n"
        )
        return 1
    numerics = None
    if args.verify_numerics_each:
        from teeny_ir.driver.numerics_check import DEFAULT_SEED, DEFAULT_TOL, NumericsChecker

        seed, tol = args.verify_numerics_seed, args.verify_numerics_tol
        numerics = NumericsChecker(
            DEFAULT_SEED if seed is None else seed,
            DEFAULT_TOL if tol is None else tol,
            timing=timing,
        )
    reproducer = None
    if args.mlir_pass_pipeline_crash_reproducer is not None:
        from teeny_ir.driver.reproducer import CrashReproducer

        reproducer = CrashReproducer(args.mlir_pass_pipeline_crash_reproducer)
    instrumentation = Instrumentation(
        verify_each=args.verify_each,
        print_before_all=args.mlir_print_ir_before_all,
        print_after_all=args.mlir_print_ir_after_all,
        dump_stream=stderr,
        timing=timing,
        describe_op=None if args.verify_diagnostics else describe_op,
        print_before=print_before,
        print_after=print_after,
        print_after_change=args.mlir_print_ir_after_change,
        print_after_failure=args.mlir_print_ir_after_failure,
        print_generic=args.mlir_print_op_generic,
        print_debuginfo=args.mlir_print_debuginfo,
        statistics=statistics,
        reproducer=reproducer,
        extra=[] if numerics is None else [numerics],
    )
    manager: PassManager | None = None
    if args.pass_pipeline is not None or args.passes is not None:
        try:
            if args.pass_pipeline is not None:
                manager = PassManager.parse(args.pass_pipeline, instrumentation, form="full")
            else:
                manager = PassManager.parse(args.passes, instrumentation, form="short")
        except DiagnosticError as err:
            for diagnostic in err.diagnostics:
                stderr.write(f"{PROG}: {diagnostic.header()}\n")
            return 1
    graphed = _view_op_graph(args, manager, instrumentation, graph_before, graph_after, stdout)
    if isinstance(graphed, str):
        stderr.write(f"{PROG}: error: {graphed}\n")
        return 1
    manager = graphed
    if args.dump_pass_pipeline and not args.run_reproducer:
        stderr.write((manager.pipeline_string() if manager else "builtin.module()") + "\n")
        if args.input == "-" and getattr(stdin, "isatty", lambda: False)():
            return 0

    try:
        check_not_input(args.output, args.input)
        if reproducer is not None:
            from teeny_ir.driver.reproducer import check_not_input as check_reproducer

            check_reproducer(reproducer.path, args.input)
        _check_outside_out_dirs(manager, args.output, reproducer)
        check_output(args.output)
        data = _read_input(args.input, stdin)
    except OutputError as err:
        stderr.write(f"{PROG}: error: {err}\n")
        return 1

    filename = "-" if args.input == "-" else args.input
    display = data
    if args.run_reproducer:
        replay = _prepare_replay(data, filename, instrumentation)
        if isinstance(replay, list):
            source = SourceFile(_decoded_for_display(data), filename)
            for diagnostic in replay:
                stderr.write(diagnostic.format([source]) + "\n")
            return 1
        manager, data = replay
        graphed = _view_op_graph(args, manager, instrumentation, graph_before, graph_after, stdout)
        if isinstance(graphed, str):
            stderr.write(f"{PROG}: error: {graphed}\n")
            return 1
        manager = graphed if graphed is not None else manager
        if args.dump_pass_pipeline:
            stderr.write(manager.pipeline_string() + "\n")
        try:
            _check_outside_out_dirs(manager, args.output, reproducer)
        except OutputError as err:
            stderr.write(f"{PROG}: error: {err}\n")
            return 1

    if args.no_cache:
        from teeny_ir.backend import cache

        with cache.disabled():
            outcome = _process(data, filename, args, manager, instrumentation)
    else:
        outcome = _process(data, filename, args, manager, instrumentation)
    if outcome.internal_error is not None:
        stderr.write(f"{PROG}: {outcome.internal_error}\n")
        _write_reproducer(reproducer, stdout, stderr)
        return 2

    source = SourceFile(_decoded_for_display(display), filename)
    for diagnostic in outcome.diagnostics:
        stderr.write(diagnostic.format([source]) + "\n")
    if statistics is not None:
        stderr.write(statistics.report(_root_of(manager), args.mlir_pass_statistics_display))
    if outcome.failed:
        _write_reproducer(reproducer, stdout, stderr)
        return 1

    output_start = time.perf_counter()
    text = "// -----\n".join(outcome.chunks) if args.split_input_file else "".join(outcome.chunks)
    try:
        write_text(args.output, text, stdout)
    except OutputError as err:
        stderr.write(f"{PROG}: error: {err}\n")
        return 1
    if timing is not None:
        timing.add(("Output",), time.perf_counter() - output_start)
        stderr.write(timing.report(args.mlir_output_format))
    return 0


def _version_text() -> str:
    from importlib import metadata

    def version(distribution: str) -> str:
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            return "unknown"

    return f"{PROG} (teeny_ir) {version('teeny-ir')}\n  xDSL {version('xdsl')}\n"


def _pass_names(values: list[str] | None, flag: str) -> frozenset[str]:
    """The registered pass names in ``--flag=a,b --flag=c`` (raises `UsageError`)."""
    if not values:
        return frozenset()
    from teeny_ir.driver import pass_registry
    from teeny_ir.driver.pass_options import did_you_mean

    names: set[str] = set()
    for value in values:
        for name in value.split(","):
            name = name.strip()
            if pass_registry.lookup(name) is None:
                known = pass_registry.names()
                raise UsageError(
                    f"{flag}: unknown pass '{name}' (valid: {', '.join(known)})"
                    + did_you_mean(name, known)
                )
            names.add(pass_registry.canonical_name(name))  # the IR printer sees pass names
    return frozenset(names)


def _view_op_graph_flag(argv: list[str]) -> list[str]:
    """``--view-op-graph`` alone as ``--view-op-graph=``: as LLVM's optional values,
    its options come only after ``=``, so the next argument (the input) stays one."""
    if "--" in argv:
        end = argv.index("--")
        return [*_view_op_graph_flag(argv[:end]), *argv[end:]]
    return ["--view-op-graph=" if arg == "--view-op-graph" else arg for arg in argv]


def _view_op_graph(
    args: argparse.Namespace,
    manager: PassManager | None,
    instrumentation: object,
    before: frozenset[str],
    after: frozenset[str],
    stdout: TextIO,
) -> PassManager | str | None:
    """The pipeline with ``--view-op-graph``'s pass appended (a manager running only
    it when there is no pipeline), ``--view-op-graph-before/after`` registered (and
    the streams every view-op-graph pass writes to), the graphs' outputs checked
    before anything runs; or the error line."""
    from teeny_ir.driver.instrumentation import OpGraphViewer
    from teeny_ir.driver.pass_manager import ROOT_ANCHOR, Instrumentation, Nest, PassManager

    assert isinstance(instrumentation, Instrumentation)
    viewer = next((h for h in instrumentation.extra if isinstance(h, OpGraphViewer)), None)
    if viewer is None:
        stream = instrumentation.dump_stream or sys.stderr
        viewer = OpGraphViewer(stream, stdout, before=before, after=after)
        instrumentation.extra.append(viewer)
    if args.view_op_graph is not None:
        try:
            parsed = PassManager.parse(f"view-op-graph{{{args.view_op_graph}}}", form="short")
        except DiagnosticError as err:
            return f"--view-op-graph: {err.diagnostics[0].message}"
        graph = parsed.root.children[0] if len(parsed.root.children) == 1 else None
        if graph is None or isinstance(graph, Nest) or graph.name != "view-op-graph":
            return f"--view-op-graph: expected options 'key=value ...', got '{args.view_op_graph}'"
        viewer.graph = graph
        if manager is None:
            manager = PassManager(Nest(ROOT_ANCHOR, []), instrumentation)
        manager.root.children.append(graph)
    graphs = [] if manager is None else manager.root.children
    drawn = [g for g in graphs if not isinstance(g, Nest) and g.name == "view-op-graph"]
    if drawn:
        try:
            _check_outside_out_dirs(manager, "-", None)
            type(drawn[0]).check_outputs(  # type: ignore[attr-defined]
                drawn, args.input, args.output, args.split_input_file
            )
        except OutputError as err:
            return str(err)
    return manager


def _prepare_replay(
    data: bytes, filename: str, instrumentation: object
) -> tuple[PassManager, bytes] | list[Diagnostic]:
    """``--run-reproducer``: the pipeline of the input's trailer, and the input
    with the trailer blanked out; or the located errors that stop the run."""
    from teeny_ir.driver.pass_manager import Instrumentation, PassManager
    from teeny_ir.driver.reproducer import read_trailer, relocate
    from teeny_ir.ir.parsing import decode_source

    assert isinstance(instrumentation, Instrumentation)
    try:
        text = decode_source(data, filename)
        source = SourceFile(text, filename)
        config = read_trailer(source)
        try:
            manager = PassManager.parse(config.pipeline, instrumentation, form="full")
        except DiagnosticError as err:
            raise relocate(err, config, source) from None
    except DiagnosticError as err:
        return err.diagnostics
    if config.verify_each is not None:
        instrumentation.verify_each = config.verify_each
    return manager, config.blanked(text).encode("utf-8")


def _write_reproducer(reproducer: CrashReproducer | None, stdout: TextIO, stderr: TextIO) -> None:
    """Write the crash reproducer if a pass failed, and say where (one line)."""
    if reproducer is None or reproducer.text is None:
        return
    try:
        reproducer.write(stdout)
    except OutputError as err:
        stderr.write(f"{PROG}: error: crash reproducer: {err}\n")
        return
    stderr.write(f"{PROG}: note: reproducer generated at '{reproducer.path}'\n")


def _root_of(manager: PassManager | None) -> Nest:
    from teeny_ir.driver.pass_manager import ROOT_ANCHOR, Nest

    return manager.root if manager is not None else Nest(ROOT_ANCHOR, [])


def _read_input(path: str, stdin: object) -> bytes:
    """The input's bytes: stdin, or a regular file (a FIFO or a device is
    refused, never waited on), at most `TEXT_INPUT_BYTES` of either."""
    if path == "-":
        buffer = getattr(stdin, "buffer", stdin)
        return read_stream(buffer, TEXT_INPUT_BYTES)  # type: ignore[arg-type]
    try:
        return read_regular(path, TEXT_INPUT_BYTES)
    except (OSError, ValueError) as err:
        raise OutputError(
            f"cannot read '{path}': {getattr(err, 'strerror', None) or err}"
        ) from None


def _out_dirs(nest: Nest | None) -> list[str]:
    """The out-dirs of the pipeline's emit-triton passes, nests included."""
    from teeny_ir.driver.pass_manager import Nest

    found: list[str] = []
    for child in [] if nest is None else nest.children:
        if isinstance(child, Nest):
            found.extend(_out_dirs(child))
        elif child.name == "emit-triton" and (out_dir := getattr(child, "out_dir", "")):
            found.append(str(out_dir))
    return found


def _check_outside_out_dirs(
    manager: PassManager | None, output: str, reproducer: CrashReproducer | None
) -> None:
    """Refuse, before anything runs, ``-o``, the crash reproducer or a
    view-op-graph ``out=`` inside (or naming) an emit-triton out-dir of the
    pipeline: the emission replaces that directory, the file would replace
    part of the emission. Both sides are compared resolved (`os.path.realpath`)."""
    from teeny_ir.driver.pass_manager import Nest

    if manager is None:
        return
    dirs = [(d, os.path.realpath(d)) for d in _out_dirs(manager.root) if "\0" not in d]
    if not dirs:
        return
    files: list[tuple[str, str]] = [("-o", output)]
    if reproducer is not None:
        files.append(("the crash reproducer", reproducer.path))

    def graphs(nest: Nest) -> Iterator[str]:
        for child in nest.children:
            if isinstance(child, Nest):
                yield from graphs(child)
            elif child.name == "view-op-graph" and (out := getattr(child, "out", "")):
                yield str(out)

    files.extend(("view-op-graph out=", out) for out in graphs(manager.root))
    for what, path in files:
        if path in ("", "-") or "\0" in path:
            continue
        resolved = os.path.realpath(path)
        for given, real in dirs:
            if resolved == real or resolved.startswith(real.rstrip(os.sep) + os.sep):
                raise OutputError(
                    f"{what} '{path}' is inside emit-triton's out-dir '{given}', which the "
                    "emission replaces; write it outside the out-dir"
                )


def _decoded_for_display(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _process(
    data: bytes, filename: str, args: argparse.Namespace, manager: object, instrumentation: object
) -> _Outcome:
    from teeny_ir.driver.verify_diagnostics import check_expectations, split_input_file
    from teeny_ir.ir.parsing import decode_source

    outcome = _Outcome()
    try:
        text = decode_source(data, filename)
    except DiagnosticError as err:
        _record(outcome, err.diagnostics)
        return outcome
    chunks = split_input_file(text) if args.split_input_file else [(text, 1)]
    for chunk, first_line in chunks:
        printed, diagnostics, internal = _process_chunk(
            chunk, first_line, filename, args, manager, instrumentation
        )
        if internal is not None:
            outcome.internal_error = internal
            return outcome
        if args.verify_diagnostics:
            diagnostics = check_expectations(chunk, first_line, filename, diagnostics)
        _record(outcome, diagnostics)
        if printed is not None:
            outcome.chunks.append(printed)
    return outcome


def _record(outcome: _Outcome, diagnostics: list[Diagnostic]) -> None:
    from teeny_ir.core.diagnostics import Severity

    outcome.diagnostics.extend(diagnostics)
    if any(d.severity is Severity.ERROR for d in diagnostics):
        outcome.failed = True


def _process_chunk(
    text: str,
    first_line: int,
    filename: str,
    args: argparse.Namespace,
    manager: object,
    instrumentation: object,
) -> tuple[str | None, list[Diagnostic], str | None]:
    """Parse, verify, run the pipeline and print one chunk.

    Returns (printed IR or None, diagnostics, internal-error line or None).
    """
    from teeny_ir.driver.pass_manager import Instrumentation, PassInternalError, PassManager
    from teeny_ir.ir.context import make_context
    from teeny_ir.ir.parsing import parse_source, print_module
    from teeny_ir.ir.verifier import describe_op, verify_ops

    assert isinstance(instrumentation, Instrumentation)
    timing = instrumentation.timing
    ctx = make_context(allow_unregistered=args.allow_unregistered_dialect)
    engine = engine_of(ctx)

    start = time.perf_counter()
    try:
        module = parse_source(SourceFile(text, filename, first_line), ctx)
    except DiagnosticError as err:
        return None, err.diagnostics, None
    if timing is not None:
        timing.add(("Parser",), time.perf_counter() - start)

    start = time.perf_counter()
    errors = verify_ops(module, None if args.verify_diagnostics else describe_op)
    if timing is not None:
        timing.add(("Verifier",), time.perf_counter() - start)
    if errors:
        return None, errors, None

    if manager is not None:
        assert isinstance(manager, PassManager)
        try:
            manager.run(module, ctx)
        except DiagnosticError as err:
            return None, [*engine.take(), *err.diagnostics], None
        except PassInternalError as err:
            return None, [], f"error: {err}"

    printed = print_module(
        module, generic=args.mlir_print_op_generic, debuginfo=args.mlir_print_debuginfo
    )
    return printed, engine.take(), None


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point."""
    # A large model's IR is ~10^5 long-lived objects: at the default threshold
    # (700 allocations) the cyclic collector rescans them thousands of times,
    # about a tenth of compiling a 10k-op graph. The process is short-lived.
    gc.set_threshold(100_000, 50, 100)
    try:
        return run(sys.argv[1:] if argv is None else argv, sys.stdin, sys.stdout, sys.stderr)
    except BrokenPipeError:
        # Reader went away (`teeny-opt x | head`): not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
