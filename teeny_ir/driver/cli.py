"""What teeny_ir's drivers share: the argparse of `teeny_ir.core.cli` (usage
errors exit 1, help on the given stream) and the ``--backend`` argument."""

from __future__ import annotations

import argparse

from teeny_ir.core.cli import ArgumentParser, UsageError, parse_args

__all__ = ["ArgumentParser", "UsageError", "add_backend_argument", "parse_args"]


def add_backend_argument(parser: argparse.ArgumentParser) -> None:
    """``--backend NAME``: the names of `teeny_ir.runtime.backends.BACKENDS`
    (read when the parser is made), ``interpreter`` by default, each backend's
    description in the help."""
    from teeny_ir.runtime import backends

    parser.add_argument(
        "--backend",
        choices=tuple(backends.BACKENDS),
        default="interpreter",
        help="; ".join(f"{name}: {b.description}" for name, b in backends.BACKENDS.items()),
    )
