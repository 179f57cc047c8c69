"""Reference semantics of softmax, log-softmax, cross-entropy and the reductions,
and of their backward ops (PyTorch's formulas, in float64).

Softmax and log-softmax subtract the maximum along the axis first, so they
never overflow for finite input.
"""

from __future__ import annotations

import numpy as np

from dialects.graph.reduce import (
    CrossEntropyBackwardOp,
    CrossEntropyOp,
    LogSoftmaxBackwardOp,
    LogSoftmaxOp,
    ReduceMaxOp,
    ReduceMeanOp,
    ReduceMinOp,
    ReduceSumOp,
    SoftmaxBackwardOp,
    SoftmaxOp,
)
from teeny_ir.reference.common import Array, Weights, error
from teeny_ir.reference.semantics import semantics


def _log_softmax(x: Array, axis: int) -> Array:
    shifted = x - x.max(axis=axis, keepdims=True)
    result: Array = shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
    return result


def _check_targets(
    op: CrossEntropyOp | CrossEntropyBackwardOp, targets: Array, classes: int
) -> None:
    """Raise an error naming ``op`` (``cross_entropy``, ``cross_entropy_backward``)
    at the first target outside ``[0, classes)``."""
    out_of_range = np.flatnonzero((targets < 0) | (targets >= classes))
    if out_of_range.size:
        index = int(out_of_range[0])
        raise error(
            f"{op.name.removeprefix('graph.')} target {int(targets[index])} at index {index} "
            f"is out of range [0, {classes}) ({out_of_range.size} out of range in all)",
            op,
        )


@semantics(SoftmaxOp)
def _softmax_op(op: SoftmaxOp, args: list[Array], weights: Weights) -> list[Array]:
    x = np.asarray(args[0], np.float64)
    exp = np.exp(x - x.max(axis=op.axis, keepdims=True))
    return [exp / exp.sum(axis=op.axis, keepdims=True)]


@semantics(LogSoftmaxOp)
def _log_softmax_op(op: LogSoftmaxOp, args: list[Array], weights: Weights) -> list[Array]:
    return [_log_softmax(np.asarray(args[0], np.float64), op.axis)]


@semantics(CrossEntropyOp)
def _cross_entropy_op(op: CrossEntropyOp, args: list[Array], weights: Weights) -> list[Array]:
    logits, targets = args
    _check_targets(op, targets, logits.shape[1])
    log_probs = _log_softmax(np.asarray(logits, np.float64), axis=1)
    picked = log_probs[np.arange(targets.shape[0]), targets]
    return [np.asarray(-picked.mean())]


@semantics(ReduceSumOp)
def _reduce_sum_op(op: ReduceSumOp, args: list[Array], weights: Weights) -> list[Array]:
    return [np.asarray(args[0], np.float64).sum(axis=op.axes, keepdims=op.keepdims)]


@semantics(ReduceMeanOp)
def _reduce_mean_op(op: ReduceMeanOp, args: list[Array], weights: Weights) -> list[Array]:
    return [np.asarray(args[0], np.float64).mean(axis=op.axes, keepdims=op.keepdims)]


@semantics(ReduceMaxOp, ReduceMinOp)
def _reduce_extremum_op(
    op: ReduceMaxOp | ReduceMinOp, args: list[Array], weights: Weights
) -> list[Array]:
    # numpy's max and min propagate NaN, as torch.amax and torch.amin.
    reduce = np.max if isinstance(op, ReduceMaxOp) else np.min
    return [reduce(np.asarray(args[0], np.float64), axis=op.axes, keepdims=op.keepdims)]


@semantics(SoftmaxBackwardOp)
def _softmax_backward_op(op: SoftmaxBackwardOp, args: list[Array], weights: Weights) -> list[Array]:
    y, dy = (np.asarray(a, np.float64) for a in args)
    return [y * (dy - (dy * y).sum(axis=op.axis, keepdims=True))]


@semantics(LogSoftmaxBackwardOp)
def _log_softmax_backward_op(
    op: LogSoftmaxBackwardOp, args: list[Array], weights: Weights
) -> list[Array]:
    y, dy = (np.asarray(a, np.float64) for a in args)
    return [dy - np.exp(y) * dy.sum(axis=op.axis, keepdims=True)]


@semantics(CrossEntropyBackwardOp)
def _cross_entropy_backward_op(
    op: CrossEntropyBackwardOp, args: list[Array], weights: Weights
) -> list[Array]:
    logits, targets, grad = args
    batch, classes = logits.shape
    _check_targets(op, targets, classes)
    probs = np.exp(_log_softmax(np.asarray(logits, np.float64), axis=1))
    probs[np.arange(batch), targets] -= 1.0
    return [probs * (np.float64(grad) / batch)]
