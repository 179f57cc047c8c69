"""``teeny-run``: run an emitted launch plan on ``.npy`` inputs.

    teeny-run DIR --weights W.safetensors --input a.npy [--input b.npy ...] -o out.npz
              [--backend NAME] [--cuda-graphs] [--timing]
              [--profile] [--profile-out TRACE.json]

Inputs are given in ``@forward`` argument order; the ``.npz`` holds
``output_0 ... output_{N-1}`` in return order. The ``--backend`` choices are
the names in `teeny_ir.runtime.backends.BACKENDS` (default ``interpreter``).
``--cuda-graphs`` (with ``--backend cuda``) captures the launches as one CUDA
graph and replays it: one run gains no time from that (``--timing`` shows the
capture), it checks the path that ``load(DIR).session(..., graphs=True)``
replays many times.
``--profile`` prints a per-launch profile to stderr (each launch's family,
graph ops, grid, time and bytes read and written, then the totals per
family), drawn with rich when it is installed; ``--profile-out TRACE.json``
writes the same launches as a Chrome trace (Perfetto, chrome://tracing). The
profile is `teeny_ir.runtime.profile.Profile` (docs/profiling.md); the
outputs are the same as without it.
Exit codes: 0 success; 1 bad usage or input, or a backend that cannot run here
(one line ``teeny-run: error: ...``, never a traceback); 2 the interpreter
worker failed (one line: the worker's error and the path of its kept log,
which holds the full traceback). Weights the plan never reads are named in one
``teeny-run: warning: ...`` line (the runtime's `UnusedWeightsWarning`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, TextIO

from teeny_ir.core.diagnostics import DiagnosticError
from teeny_ir.core.files import (
    TEXT_INPUT_BYTES,
    OutputError,
    check_not_input,
    check_output,
    read_npy,
    read_regular,
    write_npz,
    write_text,
)
from teeny_ir.driver.cli import ArgumentParser, add_backend_argument, parse_args

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from teeny_ir.backend.plan import Plan
    from teeny_ir.runtime.profile import Profile

PROG = "teeny-run"


def _make_parser(stdout: TextIO) -> ArgumentParser:
    parser = ArgumentParser(
        stdout,
        prog=PROG,
        description="Run a launch plan written by emit-triton{out-dir=DIR}.",
    )
    parser.add_argument("directory", metavar="DIR", help="the emitted plan directory")
    parser.add_argument("--weights", required=True, metavar="W.safetensors")
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="X.npy",
        help="an input array, once per @forward argument, in order",
    )
    parser.add_argument("-o", dest="output", required=True, metavar="OUT.npz")
    add_backend_argument(parser)
    parser.add_argument(
        "--cuda-graphs",
        action="store_true",
        help="with --backend cuda: capture the launches as one CUDA graph and replay it "
        "(cuStreamBeginCapture, cuGraphInstantiate, cuGraphLaunch)",
    )
    parser.add_argument("--timing", action="store_true", help="print stage times to stderr")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="print each launch's family, graph ops, grid, time and bytes read and written, "
        "and the totals per family, to stderr",
    )
    parser.add_argument(
        "--profile-out",
        metavar="TRACE.json",
        help="write the launches as a Chrome trace (open it in https://ui.perfetto.dev "
        "or chrome://tracing)",
    )
    parser.add_argument(
        "--compare-reference",
        metavar="GRAPH.mlir",
        help="also run the graph module the plan was compiled from in the reference "
        "interpreter and name the first launch whose output diverges (exit 1 if one does)",
    )
    return parser


def run(argv: Sequence[str], stdout: TextIO, stderr: TextIO) -> int:
    """Run teeny-run in-process; returns the exit code."""
    from teeny_ir import runtime

    args = parse_args(_make_parser(stdout), argv, PROG, stderr)
    if isinstance(args, int):
        return args
    timings: dict[str, float] = {}
    profile = runtime.Profile() if args.profile or args.profile_out is not None else None
    try:
        with _warnings_to(stderr):
            diverged = _run(args, timings, stdout, stderr, profile)
    except DiagnosticError as err:  # the --compare-reference module is bad input
        for diagnostic in err.diagnostics:
            stderr.write(diagnostic.format() + "\n")
        return 1
    except (OutputError, runtime.PlanError, runtime.RuntimeInputError) as err:
        stderr.write(f"{PROG}: error: {_one_line(err)}\n")
        return 1
    except runtime.WorkerError as err:
        stderr.write(f"{PROG}: error: {_one_line(err)}\n")
        return 2
    except Exception as err:  # noqa: BLE001 - a bug of teeny_ir: one line, exit 2
        stderr.write(f"{PROG}: internal error: {type(err).__name__}: {_one_line(err)}\n")
        return 2
    if args.timing:
        width = max(len(stage) for stage in timings)
        for stage, seconds in timings.items():
            stderr.write(f"{PROG}: {stage:<{width}}  {seconds * 1000:10.1f} ms\n")
    if profile is not None and args.profile:
        profile.print_table(stderr)
    return 1 if diverged else 0


def _run(
    args: argparse.Namespace,
    timings: dict[str, float],
    stdout: TextIO,
    stderr: TextIO,
    profile: Profile | None = None,
) -> bool:
    """Run the plan and write its outputs (and ``--profile-out``'s trace, the
    run filling ``profile``); True when ``--compare-reference`` found a
    launch that diverges (reported on ``stderr``)."""
    from teeny_ir import runtime

    trace_out: str | None = args.profile_out
    for path in (*args.input, args.weights):
        check_not_input(args.output, path)
        if trace_out is not None:
            _check_trace_not_input(trace_out, path)
    check_output(args.output)
    if trace_out is not None:
        _check_trace_out(trace_out, args.output)
    if args.cuda_graphs and args.backend != "cuda":
        raise runtime.RuntimeInputError("--cuda-graphs needs --backend cuda")
    if profile is not None and args.cuda_graphs:
        raise runtime.RuntimeInputError(
            "--profile and --profile-out time each launch, which one CUDA graph replay "
            "cannot; drop --cuda-graphs to profile the launches"
        )
    if profile is not None and args.compare_reference is not None:
        raise runtime.RuntimeInputError(
            "--profile and --profile-out cannot be combined with --compare-reference"
        )
    # Before reading the inputs and weights, which may be large: a backend
    # that cannot run here fails in a moment.
    runtime.usable_backend(args.backend)
    start = time.perf_counter()
    executable = runtime.load(args.directory)
    for name in ("plan.json", *_plan_files(executable.plan)):
        check_not_input(args.output, os.path.join(executable.directory, name))
        if trace_out is not None:
            _check_trace_not_input(trace_out, os.path.join(executable.directory, name))
    timings["load plan"] = time.perf_counter() - start
    start = time.perf_counter()
    inputs = [read_npy(path) for path in args.input]
    weights = runtime.read_weights(args.weights)
    timings["read inputs and weights"] = time.perf_counter() - start
    report = None
    if args.compare_reference is not None:
        from teeny_ir.runtime.divergence import first_divergence

        module = _read_module(args.compare_reference)
        start = time.perf_counter()
        report = first_divergence(executable, module, weights, inputs)
        outputs = report.outputs
        timings["run and compare with the reference"] = time.perf_counter() - start
    else:
        outputs = executable.run(
            inputs, weights, args.backend, timings, graphs=args.cuda_graphs, profile=profile
        )
    start = time.perf_counter()
    write_npz(args.output, outputs, stdout)
    timings["write output"] = time.perf_counter() - start
    if trace_out is not None and profile is not None:
        start = time.perf_counter()
        text = json.dumps(profile.chrome_trace(), indent=1) + "\n"
        write_text(trace_out, text, stdout)
        timings["write profile"] = time.perf_counter() - start
    if report is None:
        return False
    stderr.write(f"{PROG}: {report.describe()}\n")
    return report.divergence is not None


def _check_trace_out(path: str, output: str) -> None:
    """``--profile-out`` is writable, and not the file or the stream of ``-o``."""
    if path == "-" and output == "-":
        raise OutputError("--profile-out - and -o - would both write to stdout")
    try:
        check_not_input(path, output)
    except OutputError:
        raise OutputError(f"--profile-out and -o name the same file '{path}'") from None
    check_output(path)


def _check_trace_not_input(path: str, input_path: str) -> None:
    """Refuse ``--profile-out`` naming an input file (compared by identity)."""
    try:
        check_not_input(path, input_path)
    except OutputError:
        raise OutputError(
            f"refusing to overwrite the input file '{input_path}' with --profile-out"
        ) from None


def _read_module(path: str) -> ModuleOp:
    """The graph module for --compare-reference (located errors if it is bad)."""
    import teeny_ir

    try:
        text = read_regular(path, TEXT_INPUT_BYTES).decode("utf-8")
    except (OSError, ValueError) as err:
        raise OutputError(
            f"cannot read '{path}': {getattr(err, 'strerror', None) or err}"
        ) from None
    return teeny_ir.parse_module(text, filename=path)


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split("\n"))


def _plan_files(plan: Plan) -> list[str]:
    """The files a plan names (kernel sources and cubins): never an output."""
    return [f for k in plan.kernels for f in (k.file, *(c.cubin for c in k.compiled))]


@contextlib.contextmanager
def _warnings_to(stderr: TextIO) -> Iterator[None]:
    """Print the runtime's `UnusedWeightsWarning` as one ``warning:`` line each,
    also when the run then fails; other warnings are left as they are."""
    from teeny_ir.runtime import UnusedWeightsWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnusedWeightsWarning)
        try:
            yield
        finally:
            for warning in caught:
                if issubclass(warning.category, UnusedWeightsWarning):
                    stderr.write(f"{PROG}: warning: {warning.message}\n")
                else:
                    warnings.showwarning(
                        warning.message, warning.category, warning.filename, warning.lineno
                    )


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point."""
    try:
        return run(sys.argv[1:] if argv is None else argv, sys.stdout, sys.stderr)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
