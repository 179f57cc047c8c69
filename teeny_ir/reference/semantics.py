"""Which numpy semantics the reference interpreter runs for each op.

An op gets its semantics by decoration, in the module of this package named
like its dialect module (``dialects/graph/conv.py`` -> ``conv.py``)::

    @semantics(Conv2dOp)
    def _conv2d_op(op: Conv2dOp, args: list[Array], weights: Weights) -> list[Array]: ...

Ops of the pointwise table (`teeny_ir.core.pointwise`) get none: the table owns
their math, and the one rule declared with `pointwise_rule` evaluates every entry.
Ops that `run` executes itself are declared with `not_executed`, with the reason.
The semantics modules are found by `load_modules`, so a new module is picked up
without being listed; `semantics_for` answers for one op class.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from xdsl.ir import Operation

from teeny_ir.core import pointwise
from teeny_ir.reference.common import Semantics

_PACKAGE = __name__.rpartition(".")[0]
_NOT_SEMANTICS_MODULES = frozenset({"semantics", "common", "__main__"})
"""Modules of the package that register nothing, so `load_modules` skips them."""

_SEMANTICS: dict[type[Operation], Semantics] = {}
_NOT_EXECUTED: dict[type[Operation], str] = {}
_POINTWISE_RULE: list[Semantics] = []

F = TypeVar("F", bound=Semantics)


def _claim(op_types: tuple[type[Operation], ...]) -> None:
    """Each op has exactly one definition, so a second claim is a bug to report
    at import, not a silent override; checked for all ``op_types`` before any is
    registered, so a failed claim registers nothing."""
    for index, op_type in enumerate(op_types):
        if op_type in _SEMANTICS or op_type in _NOT_EXECUTED or op_type in op_types[:index]:
            raise RuntimeError(f"two reference semantics for '{op_type.name}'")
        if pointwise.lookup(op_type.name) is not None:
            raise RuntimeError(
                f"'{op_type.name}' is in the pointwise table, which owns its reference semantics"
            )


def semantics(*op_types: type[Operation]) -> Callable[[F], F]:
    """Register the decorated function as the semantics of ``op_types`` (several
    ops may share one rule, e.g. reshape and flatten); returns it unchanged."""

    def register(function: F) -> F:
        _claim(op_types)
        _SEMANTICS.update(dict.fromkeys(op_types, function))
        return function

    return register


def not_executed(reason: str, *op_types: type[Operation]) -> None:
    """Declare that `run` handles ``op_types`` itself (``reason`` says how), so
    they count as covered without semantics of their own."""
    _claim(op_types)
    _NOT_EXECUTED.update(dict.fromkeys(op_types, reason))


def pointwise_rule(function: F) -> F:
    """Register the decorated function as the semantics of every pointwise-table
    op: one rule that reads the op's entry, so the math is written only there."""
    if _POINTWISE_RULE:
        raise RuntimeError("two reference rules for the pointwise table")
    _POINTWISE_RULE.append(function)
    return function


@functools.cache
def load_modules() -> tuple[str, ...]:
    """Import every semantics module of the package once, in name order (their
    decorators register them); returns their names. Discovery, not a list, so
    adding a module is the whole change."""
    names = sorted(
        info.name
        for info in pkgutil.iter_modules([str(Path(__file__).parent)])
        if info.name not in _NOT_SEMANTICS_MODULES
    )
    for name in names:
        importlib.import_module(f"{_PACKAGE}.{name}")
    return tuple(names)


def semantics_for(op_type: type[Operation]) -> Semantics | str:
    """The semantics the interpreter runs for ``op_type``; otherwise a string:
    why `run` needs none (`not_executed`), or that there is none, as `run`
    reports it."""
    load_modules()
    if op_type in _SEMANTICS:
        return _SEMANTICS[op_type]
    if op_type in _NOT_EXECUTED:
        return _NOT_EXECUTED[op_type]
    if _POINTWISE_RULE and pointwise.lookup(op_type.name) is not None:
        return _POINTWISE_RULE[0]
    return f"the reference interpreter has no semantics for '{op_type.name}'"
