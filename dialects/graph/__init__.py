"""The `graph` dialect: whole-tensor neural-network ops, teeny_ir's input language.

Values are builtin ``tensor<...xf32>`` types. Only dimension 0 (the batch) of an
activation may be dynamic (``?``, xDSL's ``DYNAMIC_INDEX``); parameters are fully
static, and every dimension size is at least 1. Each op verifies its operands and
checks its result type against the inferred one; the shape rules are pure
functions (`dialects.graph.shapes`) that the builders use too.

Every op is pure (no memory effects), so `cse` and `dce` apply to graph programs.
Optional properties are absent when they hold their default; the custom assembly
formats print only the properties that are present, so text round-trips exactly.

Each module of this package holds one group of ops; import an op from its module
(``from dialects.graph.conv import Conv2dOp``). The dialect's op list is
assembled here, once, from the modules: an op is listed by defining it.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from xdsl.ir import Dialect, Operation
from xdsl.irdl import IRDLOperation

_SHARED_MODULES = ("shapes",)
"""Modules of this package that define no ops."""


def _ops() -> list[type[Operation]]:
    """Every op class defined in this package's modules, module by module in name
    order and in definition order within a module."""
    found: list[type[Operation]] = []
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda m: m.name):
        if info.name in _SHARED_MODULES:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        found += [
            value
            for value in vars(module).values()
            if isinstance(value, type)
            and issubclass(value, IRDLOperation)
            and value.__module__ == module.__name__
            and isinstance(vars(value).get("name"), str)
        ]
    return found


Graph = Dialect("graph", _ops(), [])
