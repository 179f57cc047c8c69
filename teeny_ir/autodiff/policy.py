"""The save/recompute policy of the backward: the one place that decides which
forward values the backward keeps alive and which it computes again.

The default, as the design asks: keep the outputs of convolutions, matrix
products, normalisations, pools and reductions (expensive to recompute, or
needed exactly), recompute pointwise ops (one cheap pass over kept values, so
their outputs need not stay alive until the backward reaches them). Block
arguments, parameters and constants are free: they are alive anyway.
"""

from __future__ import annotations

from xdsl.ir import Operation

from dialects.graph.constant import ConstantOp
from dialects.graph.param import ParamOp
from teeny_ir.core import pointwise


def is_free(op: Operation) -> bool:
    """Whether ``op``'s results cost nothing to keep: parameters and constants."""
    return isinstance(op, ParamOp | ConstantOp)


def recompute(op: Operation) -> bool:
    """Whether the backward recomputes ``op`` instead of keeping its results:
    the pointwise-table ops."""
    return pointwise.lookup(op.name) is not None
