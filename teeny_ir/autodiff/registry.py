"""The VJP registry: how each graph op passes a gradient back to its operands.

A rule is registered per op class with ``@vjp(OpClass)`` in the autodiff module
named like the op's dialect module (``teeny_ir/autodiff/pool.py`` for
``dialects/graph/pool.py``); an op that has no gradient says why with
``not_differentiable(reason, OpClass)``. Pointwise-table ops need no rule of their
own: their VJPs live in the table (`teeny_ir.core.pointwise`), and
``teeny_ir/autodiff/elementwise.py`` registers, with `pointwise_vjp`, the one
rule that reads it. Rule modules are found by discovery (`load`). The
conventions test asserts that every graph op has a rule or an opt-out.

A rule is ``rule(ctx, op, grads) -> grads of the operands``:

- ``ctx`` is the `VjpContext`: ``ctx.emit(op)`` inserts a new op into the
  backward (located at the forward op being differentiated) and returns it;
  ``ctx.value(v)`` is the forward value ``v`` as the backward may use it (kept,
  or recomputed: the save/recompute policy, `teeny_ir.autodiff.policy`);
  ``ctx.unbroadcast(g, type)`` sums a gradient over the dimensions numpy
  broadcasting added to an operand of ``type``; ``ctx.constant`` and
  ``ctx.scale`` build small helpers.
- ``grads`` has one entry per result of ``op``: the gradient of the loss with
  respect to it (an SSA value of the result's type), or None where the loss
  does not depend on that result.
- The rule returns one entry per operand: its gradient (of the operand's
  type), or None for an operand with no gradient (an integer target, a running
  statistic, or one the loss cannot reach).

Rules never see the loss, never accumulate (``insert-backward`` adds the
gradients of a value that fans out, in a fixed order) and never change the
forward ops.
"""

from __future__ import annotations

import functools
import importlib
import math
import pkgutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from xdsl.dialects.builtin import TensorType
    from xdsl.ir import Operation, SSAValue

    from teeny_ir.autodiff.context import VjpContext

VjpRule = Callable[
    ["VjpContext", "Operation", "Sequence[SSAValue | None]"], "list[SSAValue | None]"
]
R = TypeVar("R", bound=Callable[..., "list[SSAValue | None]"])

_NOT_RULE_MODULES = frozenset({"registry", "context", "policy"})
"""Modules of the package that register no rules, so `load` skips them."""


class VjpError(Exception):
    """A rule that cannot differentiate this form of its op (a fused convolution
    whose epilogue derivation it does not know): insert-backward reports the
    message at the op's location."""


_RULES: dict[type[Operation], VjpRule] = {}
_NOT_DIFFERENTIABLE: dict[type[Operation], str] = {}
_POINTWISE: list[VjpRule] = []


def vjp(*op_types: type[Operation]) -> Callable[[R], R]:
    """Register the decorated function as the VJP rule of ``op_types``."""

    def register(rule: R) -> R:
        for op_type in op_types:
            if op_type in _RULES or op_type in _NOT_DIFFERENTIABLE:
                raise RuntimeError(f"'{op_type.name}' has two VJP facets")
            _RULES[op_type] = rule
        return rule

    return register


def not_differentiable(reason: str, *op_types: type[Operation]) -> None:
    """Declare that ``op_types`` pass no gradient back, and why (shown to the
    user when one stands between the loss and a parameter)."""
    for op_type in op_types:
        if op_type in _RULES or op_type in _NOT_DIFFERENTIABLE:
            raise RuntimeError(f"'{op_type.name}' has two VJP facets")
        _NOT_DIFFERENTIABLE[op_type] = reason


def pointwise_vjp(rule: R) -> R:
    """Register the decorated function as the VJP rule of every pointwise-table
    op: one rule that reads the op's entry (its ``derivative`` or ``vjp``)."""
    if _POINTWISE:
        raise RuntimeError("two VJP rules claim the pointwise table")
    _POINTWISE.append(rule)
    return rule


@functools.cache
def load() -> tuple[str, ...]:
    """Import every rule module of the package once, in name order (discovery,
    not a list: a new module is picked up without being listed)."""
    names = sorted(
        info.name
        for info in pkgutil.iter_modules([str(Path(__file__).parent)])
        if info.name not in _NOT_RULE_MODULES
    )
    for name in names:
        importlib.import_module(f"{__package__}.{name}")
    return tuple(names)


def rule_for(op_type: type[Operation]) -> VjpRule | str | None:
    """The VJP rule of ``op_type``, the reason it has none (`not_differentiable`),
    or None when neither is registered (a gap: insert-backward refuses the op)."""
    from teeny_ir.core import pointwise

    load()
    if op_type in _RULES:
        return _RULES[op_type]
    if op_type in _NOT_DIFFERENTIABLE:
        return _NOT_DIFFERENTIABLE[op_type]
    if pointwise.lookup(op_type.name) is not None and _POINTWISE:
        return _POINTWISE[0]
    return None


def rules() -> dict[type[Operation], VjpRule]:
    load()
    return dict(_RULES)


def opt_outs() -> dict[type[Operation], str]:
    load()
    return dict(_NOT_DIFFERENTIABLE)


def per_sample_bytes(type_: TensorType) -> int:
    """Bytes of one sample of an f32 tensor: its image for a batched (``?``) one,
    all of it for a static one."""
    from xdsl.dialects.builtin import DYNAMIC_INDEX

    shape = type_.get_shape()
    if shape and shape[0] == DYNAMIC_INDEX:
        return 4 * math.prod(shape[1:])
    return 4 * math.prod(shape)
