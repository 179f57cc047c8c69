"""teeny_ir: a graph-IR compiler framework on xDSL, in the style of MLIR.

The package is lazy (PEP 562): importing it costs nothing, and each public
name imports its module on first use, so ``dialects`` and ``passes`` can import
teeny_ir's utility modules without a cycle.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from teeny_ir.core.diagnostics import DiagnosticError
    from teeny_ir.driver.pass_manager import PassManager
    from teeny_ir.frontend.graph_builder import GraphBuilder
    from teeny_ir.ir.parsing import parse_module, print_module

__all__ = ["DiagnosticError", "GraphBuilder", "PassManager", "parse_module", "print_module"]

_LAZY = {
    "DiagnosticError": "teeny_ir.core.diagnostics",
    "GraphBuilder": "teeny_ir.frontend.graph_builder",
    "PassManager": "teeny_ir.driver.pass_manager",
    "parse_module": "teeny_ir.ir.parsing",
    "print_module": "teeny_ir.ir.parsing",
}


_SUBMODULES = ("reference", "runtime")
"""Subpackages reachable as attributes (``teeny_ir.runtime.load(...)``) without
an explicit import; each loads on first use."""


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"teeny_ir.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'teeny_ir' has no attribute '{name}'")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY, *_SUBMODULES])
