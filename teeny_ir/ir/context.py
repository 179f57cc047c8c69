"""The xDSL context every teeny_ir entry point parses into.

Dialects are registered by name and loaded on first use, so parsing a file
that only uses `func` and `graph` never imports any other dialect module.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.context import Context
from xdsl.ir import Dialect

_DIALECT_OBJECTS: dict[str, tuple[str, str]] = {
    "arith": ("xdsl.dialects.arith", "Arith"),
    "builtin": ("xdsl.dialects.builtin", "Builtin"),
    "derive": ("dialects.derive", "Derive"),
    "func": ("xdsl.dialects.func", "Func"),
    "graph": ("dialects.graph", "Graph"),
    "kernel": ("dialects.kernel", "Kernel"),
}
"""Dialect name -> (module, attribute) of its `Dialect` object. Named, not
imported: this layer sits below the dialects it registers."""


def _loader(module: str, attribute: str) -> Callable[[], Dialect]:
    def load() -> Dialect:
        dialect: Dialect = getattr(importlib.import_module(module), attribute)
        return dialect

    return load


DIALECTS: dict[str, Callable[[], Dialect]] = {
    name: _loader(*where) for name, where in _DIALECT_OBJECTS.items()
}
"""Dialect name -> loader."""


def make_context(*, allow_unregistered: bool = False) -> Context:
    """A fresh context with every teeny_ir dialect registered lazily."""
    ctx = Context(allow_unregistered=allow_unregistered)
    for name, load in DIALECTS.items():
        ctx.register_dialect(name, load)
    return ctx
