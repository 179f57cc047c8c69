"""``python -m teeny_ir.reference``: run a graph-dialect model with the numpy
reference interpreter.

    python -m teeny_ir.reference MODEL.mlir --weights W.safetensors
        --input a.npy [--input b.npy ...] -o out.npz

Inputs are given in ``@forward`` argument order; the ``.npz`` holds
``output_0 ... output_{N-1}`` in return order (as ``teeny-run`` writes them, so
the two can be compared). Exit codes: 0 success; 1 bad usage or input: located
diagnostics for the model (parse and verifier errors, inputs or weights that
do not fit it) or one line ``teeny_ir.reference: error: ...``, never a
traceback; 2 an internal error of the interpreter (one line).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from teeny_ir.core.diagnostics import DiagnosticError, SourceFile
from teeny_ir.core.files import OutputError, check_not_input
from teeny_ir.driver.cli import ArgumentParser, parse_args

PROG = "teeny_ir.reference"


def _make_parser(stdout: TextIO) -> ArgumentParser:
    parser = ArgumentParser(
        stdout,
        prog=f"python -m {PROG}",
        description="Run @forward of a graph-dialect model with the reference interpreter.",
    )
    parser.add_argument("model", metavar="MODEL.mlir", help="the model (graph dialect)")
    parser.add_argument("--weights", required=True, metavar="W.safetensors")
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="X.npy",
        help="an input array, once per @forward argument, in order",
    )
    parser.add_argument("-o", dest="output", required=True, metavar="OUT.npz")
    return parser


def run(argv: Sequence[str], stdout: TextIO, stderr: TextIO) -> int:
    """Run the command in-process; returns the exit code."""
    from teeny_ir import reference, runtime
    from teeny_ir.core.files import read_npy, write_npz
    from teeny_ir.ir.parsing import parse_module

    args = parse_args(_make_parser(stdout), argv, PROG, stderr)
    if isinstance(args, int):
        return args
    source: SourceFile | None = None
    try:
        for path in (args.model, args.weights, *args.input):
            check_not_input(args.output, path)
        data = _read_model(args.model)
        source = SourceFile(data.decode("utf-8", errors="replace"), args.model)
        module = parse_module(data, args.model)
        inputs = [read_npy(path) for path in args.input]
        weights = runtime.read_weights(args.weights)
        outputs = reference.run(module, weights, inputs)
        write_npz(args.output, outputs, stdout)
    except DiagnosticError as err:
        for diagnostic in err.diagnostics:
            stderr.write(diagnostic.format([source] if source else []) + "\n")
        return 1
    except (OutputError, runtime.RuntimeInputError) as err:
        stderr.write(f"{PROG}: error: {err}\n")
        return 1
    except Exception as err:  # noqa: BLE001 - a bug in the interpreter: one line, exit 2
        stderr.write(f"{PROG}: internal error: {type(err).__name__}: {err}\n")
        return 2
    return 0


def _read_model(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as err:
        raise OutputError(f"cannot read '{path}': {err.strerror or err}") from None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m teeny_ir.reference``."""
    try:
        return run(sys.argv[1:] if argv is None else argv, sys.stdout, sys.stderr)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
