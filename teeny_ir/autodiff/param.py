"""VJP facets of `graph.param`: a parameter is a leaf. insert-backward collects
the gradient that reaches it (and, through `VjpContext.param_grad`, what reaches
it through a derivation) and appends it as a ``teeny.grad`` result."""

from __future__ import annotations

from dialects.graph.param import ParamOp
from teeny_ir.autodiff.registry import not_differentiable

not_differentiable("a parameter is a leaf: its gradient is a result", ParamOp)
