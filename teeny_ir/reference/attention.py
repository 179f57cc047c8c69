"""Reference semantics of `dialects.graph.attention`: the attention forward
(``o`` and the row log-sum-exp ``lse``) and its backward, in float64, written
the plain way (the whole score matrix), against which the fused kernels are
checked."""

from __future__ import annotations

import numpy as np

from dialects.graph.attention import AttentionBackwardOp, AttentionOp
from teeny_ir.reference.common import Array, Weights
from teeny_ir.reference.semantics import semantics


def _logical(x: Array, flag: int) -> Array:
    """``x`` in the logical layout (``[*b, rows, features]``)."""
    array: Array = np.asarray(x, np.float64)
    return np.swapaxes(array, -1, -2) if flag else array


def _scores(op: AttentionOp | AttentionBackwardOp, q: Array, k: Array) -> Array:
    scores: Array = op.scale * np.matmul(q, np.swapaxes(k, -1, -2))
    return scores


def _lse(s: Array) -> Array:
    """``log sum exp`` over the last axis (max-shifted; NaN where a row is)."""
    m = np.max(s, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", over="ignore"):
        lse: Array = (m + np.log(np.sum(np.exp(s - m), axis=-1, keepdims=True)))[..., 0]
    return lse


@semantics(AttentionOp)
def _attention(op: AttentionOp, args: list[Array], weights: Weights) -> list[Array]:
    tq, tk, tv, to = op.transposed
    q, k, v = _logical(args[0], tq), _logical(args[1], tk), _logical(args[2], tv)
    s = _scores(op, q, k)
    lse = _lse(s)
    with np.errstate(invalid="ignore", over="ignore"):
        p = np.exp(s - lse[..., None])
    o = np.matmul(p, v)
    return [np.swapaxes(o, -1, -2) if to else o, lse]


@semantics(AttentionBackwardOp)
def _attention_backward(
    op: AttentionBackwardOp, args: list[Array], weights: Weights
) -> list[Array]:
    tq, tk, tv, to = op.transposed
    q, k, v = _logical(args[0], tq), _logical(args[1], tk), _logical(args[2], tv)
    o, lse, do = _logical(args[3], to), np.asarray(args[4], np.float64), _logical(args[5], to)
    with np.errstate(invalid="ignore", over="ignore"):
        p = np.exp(_scores(op, q, k) - lse[..., None])
    delta = np.sum(do * o, axis=-1, keepdims=True)
    dv = np.matmul(np.swapaxes(p, -1, -2), do)
    ds = p * (np.matmul(do, np.swapaxes(v, -1, -2)) - delta)
    dq = op.scale * np.matmul(ds, k)
    dk = op.scale * np.matmul(np.swapaxes(ds, -1, -2), q)
    return [np.swapaxes(g, -1, -2) if flag else g for g, flag in ((dq, tq), (dk, tk), (dv, tv))]
