"""VJP facets of `graph.constant`: a constant has no gradient."""

from __future__ import annotations

from dialects.graph.constant import ConstantOp
from teeny_ir.autodiff.registry import not_differentiable

not_differentiable("a constant depends on nothing", ConstantOp)
