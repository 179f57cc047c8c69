"""What teeny_ir's command-line tools share: argparse that reports a usage error
as exit 1 (not argparse's 2, which means an internal error here) and writes
help to the stream it is given (so the tools also run in-process). Here, below
every layer, so that the compiler's tools (``teeny-opt``, ``teeny-run``, ...) and
the backend's (``teeny-plan``) use the same one."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import NoReturn, TextIO


class UsageError(Exception):
    """A command line argparse could not make sense of."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse that raises `UsageError` and prints help on ``stdout``."""

    def __init__(self, stdout: TextIO, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._stdout = stdout

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)

    def _print_message(self, message: str, file: object = None) -> None:
        if message:
            self._stdout.write(message)


def parse_args(
    parser: argparse.ArgumentParser, argv: Sequence[str], prog: str, stderr: TextIO
) -> argparse.Namespace | int:
    """The parsed arguments, or the exit code to return: 1 after a one-line
    usage error, 0 after ``--help``."""
    try:
        return parser.parse_args(list(argv))
    except UsageError as err:
        stderr.write(f"{prog}: error: {err}\n")
        return 1
    except SystemExit as exit_:  # --help
        return exit_.code if isinstance(exit_.code, int) else 0
