"""Reverse-mode differentiation of graph programs (the training stage).

`teeny_ir.autodiff.registry` holds the VJP facet (`VJPS`): ``@vjp(Op)`` rules, one
module per graph dialect module (``autodiff/conv.py`` for
``dialects/graph/conv.py``), and ``not_differentiable(reason, Op)`` opt-outs;
`VjpContext` is what a rule builds its gradient ops with. The
``insert-backward`` pass (``passes/insert_backward.py``) walks a function in
reverse over the facet.
"""
