"""The xDSL context every teeny_ir entry point parses into.

Dialects are registered by name and loaded on first use, so parsing a file
that only uses `func` and `graph` never imports any other dialect module.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.context import Context
from xdsl.ir import Dialect


def _builtin() -> Dialect:
    from xdsl.dialects.builtin import Builtin

    return Builtin


def _derive() -> Dialect:
    from dialects.derive import Derive

    return Derive


def _func() -> Dialect:
    from xdsl.dialects.func import Func

    return Func


def _arith() -> Dialect:
    from xdsl.dialects.arith import Arith

    return Arith


def _graph() -> Dialect:
    from dialects.graph import Graph

    return Graph


def _kernel() -> Dialect:
    from dialects.kernel import Kernel

    return Kernel


DIALECTS: dict[str, Callable[[], Dialect]] = {
    "arith": _arith,
    "builtin": _builtin,
    "derive": _derive,
    "func": _func,
    "graph": _graph,
    "kernel": _kernel,
}
"""Dialect name -> loader."""


def make_context(*, allow_unregistered: bool = False) -> Context:
    """A fresh context with every teeny_ir dialect registered lazily."""
    ctx = Context(allow_unregistered=allow_unregistered)
    for name, load in DIALECTS.items():
        ctx.register_dialect(name, load)
    return ctx
