"""VJP facets of the optimizer updates: they run after the backward pass."""

from __future__ import annotations

from dialects.graph.optim import AdamwUpdateOp, SgdUpdateOp
from teeny_ir.autodiff.registry import not_differentiable

not_differentiable(
    "an optimizer update runs after the backward pass: it is never differentiated",
    SgdUpdateOp,
    AdamwUpdateOp,
)
