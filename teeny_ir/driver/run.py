"""``teeny-run``: run an emitted launch plan on ``.npy`` inputs.

    teeny-run DIR --weights W.safetensors --input a.npy [--input b.npy ...] -o out.npz
              [--backend NAME] [--cuda-graphs] [--timing]

Inputs are given in ``@forward`` argument order; the ``.npz`` holds
``output_0 ... output_{N-1}`` in return order. The ``--backend`` choices are
the names in `teeny_ir.runtime.backends.BACKENDS` (default ``interpreter``).
``--cuda-graphs`` (with ``--backend cuda``) captures the launches as one CUDA
graph and replays it: one run gains no time from that (``--timing`` shows the
capture), it checks the path that ``load(DIR).session(..., graphs=True)``
replays many times.
Exit codes: 0 success; 1 bad usage or input, or a backend that cannot run here
(one line ``teeny-run: error: ...``, never a traceback); 2 the interpreter
worker failed (one line: the worker's error and the path of its kept log,
which holds the full traceback). Weights the plan never reads are named in one
``teeny-run: warning: ...`` line (the runtime's `UnusedWeightsWarning`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, TextIO

from teeny_ir.core.diagnostics import DiagnosticError
from teeny_ir.core.files import OutputError, check_not_input, check_output, read_npy, write_npz
from teeny_ir.driver.cli import ArgumentParser, add_backend_argument, parse_args

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from teeny_ir.backend.plan import Plan

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
    try:
        with _warnings_to(stderr):
            diverged = _run(args, timings, stdout, stderr)
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
    return 1 if diverged else 0


def _run(
    args: argparse.Namespace, timings: dict[str, float], stdout: TextIO, stderr: TextIO
) -> bool:
    """Run the plan and write its outputs; True when ``--compare-reference``
    found a launch that diverges (reported on ``stderr``)."""
    from teeny_ir import runtime

    for path in (*args.input, args.weights):
        check_not_input(args.output, path)
    check_output(args.output)
    if args.cuda_graphs and args.backend != "cuda":
        raise runtime.RuntimeInputError("--cuda-graphs needs --backend cuda")
    # Before reading the inputs and weights, which may be large: a backend
    # that cannot run here fails in a moment.
    runtime.usable_backend(args.backend)
    start = time.perf_counter()
    executable = runtime.load(args.directory)
    for name in ("plan.json", *_plan_files(executable.plan)):
        check_not_input(args.output, os.path.join(executable.directory, name))
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
        outputs = executable.run(inputs, weights, args.backend, timings, graphs=args.cuda_graphs)
    start = time.perf_counter()
    write_npz(args.output, outputs, stdout)
    timings["write output"] = time.perf_counter() - start
    if report is None:
        return False
    stderr.write(f"{PROG}: {report.describe()}\n")
    return report.divergence is not None


def _read_module(path: str) -> ModuleOp:
    """The graph module for --compare-reference (located errors if it is bad)."""
    import teeny_ir

    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as err:
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
