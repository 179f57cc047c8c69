"""Lowering rules of the ``reduce_extremum`` family: ``graph.reduce_max`` and
``graph.reduce_min`` as one launch over the rows of the operand's row view, on
the same axes, arguments and tiles as the ``reduce`` family
(`teeny_ir.kernels.reduce.lowering.row_launch`)."""

from __future__ import annotations

from dialects.graph.reduce import ReduceMaxOp, ReduceMinOp
from dialects.kernel import LaunchOp
from teeny_ir.kernels.lowering import LoweringContext, lowers
from teeny_ir.kernels.reduce.lowering import row_launch


@lowers(ReduceMaxOp, ReduceMinOp)
def lower_reduce_extremum(ctx: LoweringContext, op: ReduceMaxOp | ReduceMinOp) -> LaunchOp:
    """The maximum or minimum over ``axes`` (``keepdims`` or not: the same elements)."""
    return row_launch(ctx, op, "reduce_extremum", ("MAX", int(isinstance(op, ReduceMaxOp))))
