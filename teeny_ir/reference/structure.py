"""Reference semantics of the data-movement ops: `graph.concat`, `graph.split`,
`graph.reshape`, `graph.flatten`, `graph.transpose` and `graph.broadcast`, in
float64.

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
    ReshapeOp,
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
