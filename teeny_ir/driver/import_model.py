"""``teeny-import``: an ONNX model or a torch.export program as a graph-dialect
module and its weights.

    teeny-import MODEL.onnx -o OUT.mlir
    teeny-import MODEL.pt2 -o OUT.mlir     # a torch.export.save file

Writes ``OUT.mlir`` (the module, ``func.func @forward``) and ``OUT.safetensors``
(its weights, by `graph.param` name; written, empty, when there are none), each
replaced atomically (`teeny_ir.core.files`). Exit codes: 0 success; 1 a model
that cannot be imported (one located line naming the node, its op type and what
is unsupported), a missing or non-ONNX file, a ``.pt2`` file that is not a
torch.export program, or an output that cannot be written (a directory, a missing
folder, a device or FIFO, the input itself); never a traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TextIO

from teeny_ir.core.diagnostics import DiagnosticError
from teeny_ir.core.files import (
    OutputError,
    check_not_input,
    check_output,
    check_regular,
    write_bytes,
    write_text,
)
from teeny_ir.driver.cli import ArgumentParser, parse_args

PROG = "teeny-import"


def _make_parser(stdout: TextIO) -> ArgumentParser:
    parser = ArgumentParser(
        stdout,
        prog=PROG,
        description="Import an ONNX model or a torch.export program (.pt2) as a "
        "graph-dialect module and its weights.",
    )
    parser.add_argument(
        "model", metavar="MODEL.onnx", help="the ONNX model file, or a torch.export .pt2 file"
    )
    parser.add_argument(
        "-o",
        dest="output",
        required=True,
        metavar="OUT.mlir",
        help="the module; its weights go to OUT.safetensors beside it",
    )
    return parser


def weights_path(output: str) -> str:
    """Where the weights of ``-o OUT.mlir`` go: ``OUT.safetensors``."""
    stem, _ = os.path.splitext(output)
    return stem + ".safetensors"


def run(argv: Sequence[str], stdout: TextIO, stderr: TextIO) -> int:
    """Run teeny-import in-process; returns the exit code."""
    args = parse_args(_make_parser(stdout), argv, PROG, stderr)
    if isinstance(args, int):
        return args
    try:
        _import(args.model, args.output, stdout)
    except DiagnosticError as err:
        for diagnostic in err.diagnostics:
            stderr.write(diagnostic.header() + "\n")
        return 1
    except OutputError as err:
        stderr.write(f"{PROG}: error: {' '.join(str(err).split())}\n")
        return 1
    except Exception as err:  # noqa: BLE001 - a bug of teeny_ir: one line, exit 2
        stderr.write(
            f"{PROG}: internal error: {type(err).__name__}: {' '.join(str(err).split())}\n"
        )
        return 2
    return 0


def _import(model: str, output: str, stdout: TextIO) -> None:
    weights_file = weights_path(output)
    if output == "-":
        raise OutputError("-o - is not supported: the weights need a file beside the module")
    if weights_file == output:
        raise OutputError(f"-o '{output}' leaves no room for the weights: name it OUT.mlir")
    if os.path.exists(output) and not os.path.isfile(output) and not os.path.isdir(output):
        # A device or FIFO: its OUT.safetensors would land beside it (in /dev).
        raise OutputError(
            f"-o '{output}' is not a regular file: the weights are written beside the "
            "module, so give a file path"
        )
    for path in (output, weights_file):
        check_not_input(path, model)
        check_output(path)
    try:
        check_regular(model)  # never a FIFO to hang on or a device to read forever
    except FileNotFoundError:
        raise OutputError(f"cannot read '{model}': no such file") from None
    except (OSError, ValueError) as err:
        raise OutputError(
            f"cannot read '{model}': {getattr(err, 'strerror', None) or err}"
        ) from None
    import teeny_ir

    if model.endswith(".pt2"):
        from teeny_ir.frontend.torch import import_exported, load

        imported = import_exported(load(model), filename=model)
    else:
        from teeny_ir.frontend.onnx import import_onnx

        imported = import_onnx(model)
    text = teeny_ir.print_module(imported.module)
    from safetensors.numpy import save

    data = save(imported.weights)
    write_text(output, text if text.endswith("\n") else text + "\n", stdout)
    write_bytes(weights_file, data, stdout)


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point."""
    try:
        return run(sys.argv[1:] if argv is None else argv, sys.stdout, sys.stderr)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
