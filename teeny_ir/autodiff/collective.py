"""VJP rule of `graph.all_reduce` (`dialects.graph.collective`).

An all-reduce is its own adjoint. With ``y = sum_r x_r`` on every rank and the
loss the sum of the ranks' losses, ``d loss / d x_r = sum_r' dy_r'``: the
same all-reduce (``sum``) of the ranks' cotangents; for ``mean``, ``y`` is
scaled by ``1 / world``, and so is the adjoint, the ``mean`` all-reduce. The
backward all-reduce keeps the forward's ``reduction`` and ``world``. Every
rank's backward runs it in the same place (the ranks differentiate one
program), so the ranks' calls pair up as the forward's do.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from dialects.graph.collective import AllReduceOp
from teeny_ir.autodiff.context import VjpContext
from teeny_ir.autodiff.registry import vjp


@vjp(AllReduceOp)
def _all_reduce(
    ctx: VjpContext, op: AllReduceOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    (grad,) = grads
    if grad is None:
        return [None]
    return [ctx.emit(AllReduceOp(grad, op.reduction, op.world)).result]
