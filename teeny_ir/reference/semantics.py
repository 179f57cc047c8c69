"""Which numpy semantics the reference interpreter runs for each op: its facet.

An op gets its semantics by decoration, in the module of this package named
like its dialect module (``dialects/graph/conv.py`` -> ``conv.py``)::

    @semantics(Conv2dOp)
    def _conv2d_op(op: Conv2dOp, args: list[Array], weights: Weights) -> list[Array]: ...

Ops of the pointwise table (`teeny_ir.core.pointwise`) get none: the table owns
their math, and the one rule declared with `pointwise_rule` evaluates every entry.
Ops that `run` executes itself are declared with `not_executed`, with the reason.
`SEMANTICS` is a `teeny_ir.core.facets.Facet`: it finds the semantics modules
itself (every module of this package but the ones below), so a new module is
picked up without being listed, and ``SEMANTICS.lookup(op_class)`` answers for
one op class with the facets' one contract.
"""

from __future__ import annotations

from teeny_ir.core.facets import Facet, modules_of
from teeny_ir.reference.common import Semantics

_PACKAGE = __name__.rpartition(".")[0]
_NOT_SEMANTICS_MODULES = frozenset({"semantics", "common", "__main__"})
"""Modules of the package that register nothing, so the facet skips them."""

SEMANTICS: Facet[Semantics] = Facet(
    "reference semantics",
    homes=lambda: modules_of(_PACKAGE, skip=_NOT_SEMANTICS_MODULES),
    pointwise=True,
)
"""The reference semantics of every graph op."""

semantics = SEMANTICS.register
"""``@semantics(*op_types)``: the decorated function is the semantics of
``op_types`` (several ops may share one rule, e.g. reshape and flatten)."""
not_executed = SEMANTICS.opt_out
"""``not_executed(reason, *op_types)``: `run` handles ``op_types`` itself
(``reason`` says how), so they count as covered without semantics of their own."""
pointwise_rule = SEMANTICS.pointwise
"""``@pointwise_rule``: the one semantics of every pointwise-table op."""


def missing(op_name: str) -> str:
    """What `run` reports for an op that has no semantics."""
    return f"the reference interpreter has no semantics for '{op_name}'"
