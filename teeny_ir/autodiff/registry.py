"""The VJP facet: how each graph op passes a gradient back to its operands.

A rule is registered per op class with ``@vjp(OpClass)`` in the autodiff module
named like the op's dialect module (``teeny_ir/autodiff/pool.py`` for
``dialects/graph/pool.py``); an op that has no gradient says why with
``not_differentiable(reason, OpClass)``. Pointwise-table ops need no rule of their
own: their VJPs live in the table (`teeny_ir.core.pointwise`), and
``teeny_ir/autodiff/elementwise.py`` registers, with `pointwise_vjp`, the one
rule that reads it. `VJPS` is a `teeny_ir.core.facets.Facet`: it finds the rule
modules itself (every module of this package but the ones below), and
``VJPS.lookup(op_class)`` answers with the facets' one contract. The
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

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from teeny_ir.core.facets import Facet, modules_of

if TYPE_CHECKING:
    from xdsl.ir import Operation, SSAValue

    from teeny_ir.autodiff.context import VjpContext

VjpRule = Callable[
    ["VjpContext", "Operation", "Sequence[SSAValue | None]"], "list[SSAValue | None]"
]

_NOT_RULE_MODULES = frozenset({"registry", "context", "policy"})
"""Modules of the package that register no rules, so the facet skips them."""


class VjpError(Exception):
    """A rule that cannot differentiate this form of its op (a fused convolution
    whose epilogue derivation it does not know): insert-backward reports the
    message at the op's location."""


VJPS: Facet[VjpRule] = Facet(
    "VJP", homes=lambda: modules_of(__package__, skip=_NOT_RULE_MODULES), pointwise=True
)
"""The VJP rule of every graph op."""

vjp = VJPS.register
"""``@vjp(*op_types)``: the decorated function is the VJP rule of ``op_types``."""
not_differentiable = VJPS.opt_out
"""``not_differentiable(reason, *op_types)``: ``op_types`` pass no gradient back,
and why (shown to the user when one stands between the loss and a parameter)."""
pointwise_vjp = VJPS.pointwise
"""``@pointwise_vjp``: the one VJP rule of every pointwise-table op (it reads the
op's entry: its ``derivative`` or ``vjp``)."""
