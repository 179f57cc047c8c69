"""Lowering rule of the ``reshape_copy`` family: a ``graph.reshape`` or
``graph.flatten`` whose shapes are static and whose dimension 0 changes is one
copy launch over the result.

Such a reshape is not a view: the plan has one batch symbol, and a view keeps
each image in its place (`teeny_ir.kernels.views`, whose rule serves every
other reshape, the predicate `moves_static_batch` telling them apart). With
static shapes there is no batch to keep, only the elements in row-major order,
which the launch copies, reading a batch-strided source in place.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from dialects.graph.structure import FlattenOp
from dialects.graph.structure import ReshapeOp as GraphReshapeOp
from dialects.kernel import LaunchOp
from teeny_ir.core.symbols import DYNAMIC
from teeny_ir.kernels.lowering import (
    LoweringContext,
    Unlowerable,
    batch_stride_expr,
    count_expr,
    lowers,
    tensor_type,
)
from teeny_ir.kernels.reshape_copy.contract import MAX_I32, STRIDES

if TYPE_CHECKING:
    from xdsl.dialects.builtin import TensorType
    from xdsl.ir import Operation, SSAValue

BLOCK = 1024
NUM_WARPS, NUM_STAGES = 4, 1
"""A copy has no loop to pipeline."""


def moves_static_batch(op: Operation) -> bool:
    """Whether the reshape ``op`` has static shapes and changes dimension 0 (or
    has a rank-0 side, which has no dimension 0 to keep): the reshapes this
    family copies and that are not views."""
    source = tensor_type(op.operands[0]).get_shape()
    result = tensor_type(op.results[0]).get_shape()
    if DYNAMIC in source or DYNAMIC in result:
        return False
    return not source or not result or source[0] != result[0]


@lowers(GraphReshapeOp, FlattenOp, when=moves_static_batch)
def lower_reshape_copy(ctx: LoweringContext, op: Operation) -> LaunchOp:
    """One launch copying the source's elements into the result's shape."""
    return copy_launch(op.operands[0], tensor_type(op.results[0]))


def copy_launch(source: SSAValue, result: TensorType) -> LaunchOp:
    """The launch copying static ``source`` into a new tensor of ``result``'s
    static type (as many elements): a reshape that is no view, or a weight or
    constant returned by a function (a result is a buffer a launch writes)."""
    shape = tensor_type(source).get_shape()
    numel = math.prod(shape)
    if numel > MAX_I32:
        raise Unlowerable(
            f"a reshape of {numel} elements exceeds the reshape_copy family's 32-bit count"
        )
    return LaunchOp(
        "reshape_copy",
        [source],
        [result],
        {"BLOCK": BLOCK},
        [],
        [
            ("x", "in0"),
            ("y", "out0"),
            ("numel", str(numel)),
            ("X_IMAGE", count_expr(shape[1:])),
            (STRIDES["x"], batch_stride_expr(source)),
        ],
        [f"cdiv({numel}, {BLOCK})", "1", "1"],
        NUM_WARPS,
        NUM_STAGES,
    )
