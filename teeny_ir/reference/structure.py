"""Reference semantics of the data-movement ops: `graph.concat`, `graph.split`,
`graph.reshape`, `graph.flatten`, `graph.transpose`, `graph.broadcast`,
`graph.slice` and `graph.pad`, in float64.

Shapes come from the (verified) result types, with the run-time batch in place
of ``?``, so the interpreter never re-derives a shape rule.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType
from xdsl.ir import SSAValue

from dialects.graph.structure import (
    BroadcastOp,
    ConcatOp,
    FlattenOp,
    PadOp,
    ReshapeOp,
    SliceOp,
    SplitOp,
    TransposeOp,
)
from teeny_ir.reference.common import Array, Weights
from teeny_ir.reference.semantics import semantics


def _concrete_shape(value: SSAValue, batch: int) -> tuple[int, ...]:
    """``value``'s static shape with the run-time ``batch`` in place of ``?``."""
    assert isinstance(value.type, TensorType)  # verified
    return tuple(batch if size == DYNAMIC_INDEX else size for size in value.type.get_shape())


@semantics(ConcatOp)
def _concat_op(op: ConcatOp, args: list[Array], weights: Weights) -> list[Array]:
    return [np.concatenate([np.asarray(a, np.float64) for a in args], axis=op.axis)]


@semantics(SplitOp)
def _split_op(op: SplitOp, args: list[Array], weights: Weights) -> list[Array]:
    offsets = np.cumsum(op.sizes)[:-1]
    return list(np.split(np.asarray(args[0], np.float64), offsets, axis=op.axis))


@semantics(ReshapeOp, FlattenOp)
def _view(op: ReshapeOp | FlattenOp, args: list[Array], weights: Weights) -> list[Array]:
    """Reshape and flatten: the same row-major elements in the result's shape."""
    x = np.asarray(args[0], np.float64)
    return [x.reshape(_concrete_shape(op.result, x.shape[0]))]


@semantics(TransposeOp)
def _transpose_op(op: TransposeOp, args: list[Array], weights: Weights) -> list[Array]:
    return [np.transpose(np.asarray(args[0], np.float64), op.perm)]


@semantics(BroadcastOp)
def _broadcast_op(op: BroadcastOp, args: list[Array], weights: Weights) -> list[Array]:
    """The input stretched to the result's shape; a dynamic batch is the batch
    source's (when given) or the input's dimension 0."""
    x = np.asarray(args[0], np.float64)
    batch = args[1].shape[0] if len(args) > 1 else (x.shape[0] if x.ndim else 1)
    return [np.broadcast_to(x, _concrete_shape(op.result, batch)).copy()]


def slice_indices(size: int, start: int, step: int, count: int) -> np.ndarray:
    """The indices `graph.slice` reads on one dimension."""
    return start + step * np.arange(count)


def pad_indices(
    size: int, begin: int, count: int, mode: str, interior: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """``(source, inside)`` of `graph.pad` on one dimension of ``size``: for each
    of the ``count`` output positions ``o``, the input index it reads and
    whether it reads one (constant mode: False where it holds the value).

    The raw source index is ``o - begin``; constant mode reads it (divided by
    ``interior + 1``) when in range, edge clamps it, reflect folds it into
    ``[0, size)`` as a triangle wave of period ``2 * (size - 1)`` (numpy's
    ``reflect``, which reflects again past the far edge)."""
    raw = np.arange(count) - begin
    if mode == "edge":
        return np.clip(raw, 0, size - 1), np.ones(count, bool)
    if mode == "reflect":
        period = max(2 * (size - 1), 1)
        folded = np.abs(raw) % period
        return np.minimum(folded, period - folded), np.ones(count, bool)
    stride = interior + 1
    inside = (raw >= 0) & (raw % stride == 0) & (raw // stride < size)
    return np.where(inside, raw // stride, 0), inside


@semantics(SliceOp)
def _slice_op(op: SliceOp, args: list[Array], weights: Weights) -> list[Array]:
    x = np.asarray(args[0], np.float64)
    shape = _concrete_shape(op.result, x.shape[0])
    index = [
        slice_indices(size, start, step, count)
        for size, start, step, count in zip(x.shape, op.starts, op.steps, shape, strict=True)
    ]
    return [x[np.ix_(*index)]]


@semantics(PadOp)
def _pad_op(op: PadOp, args: list[Array], weights: Weights) -> list[Array]:
    """Every output element reads its source index per dimension (`pad_indices`);
    constant mode fills ``value`` where any dimension reads none."""
    x = np.asarray(args[0], np.float64)
    shape = _concrete_shape(op.result, x.shape[0])
    found = [
        pad_indices(size, begin, count, op.mode, inner)
        for size, begin, count, inner in zip(x.shape, op.begins, shape, op.interior, strict=True)
    ]
    y = x[np.ix_(*(source for source, _ in found))]
    inside = np.ones((), bool)
    for dim, (_, mask) in enumerate(found):
        inside = inside & mask.reshape((-1,) + (1,) * (len(shape) - dim - 1))
    return [np.where(inside, y, op.value)]
