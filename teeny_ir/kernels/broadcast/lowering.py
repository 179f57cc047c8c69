"""Lowering rule of the ``broadcast`` family: a ``graph.broadcast`` becomes one
copy launch over the result's rank-6 view, the input read through broadcasting
strides (the ``elementwise`` family's). The batch source operand, if any, only
gives the run-time batch, which every launch knows as ``B``: it is not read."""

from __future__ import annotations

from dialects.graph.structure import BroadcastOp
from dialects.kernel import LaunchOp
from teeny_ir.kernels.broadcast.contract import RANK, padded
from teeny_ir.kernels.elementwise.lowering import broadcast_strides
from teeny_ir.kernels.lowering import (
    LoweringContext,
    Unlowerable,
    count_expr,
    dim_expr,
    lowers,
    tensor_type,
)

BLOCK = 1024
NUM_WARPS, NUM_STAGES = 4, 1
"""A copy has no loop to pipeline."""


@lowers(BroadcastOp)
def lower_broadcast(ctx: LoweringContext, op: BroadcastOp) -> LaunchOp:
    """``x`` stretched to the result's shape."""
    shape = tensor_type(op.input).get_shape()
    output = tensor_type(op.result).get_shape()
    if len(output) > RANK:
        raise Unlowerable(f"rank {len(output)} exceeds the broadcast family's {RANK}")
    strides = broadcast_strides(shape, output)
    numel, sizes = count_expr(output), [dim_expr(d) for d in padded(output)]
    args = [
        ("x", "in0"),
        ("out", "out0"),
        ("numel", numel),
        *((f"size{k}", sizes[k]) for k in range(1, RANK)),
        *((f"x_stride{k}", s) for k, s in enumerate(strides)),
    ]
    return LaunchOp(
        "broadcast",
        [op.input],
        [tensor_type(op.result)],
        {"BLOCK": BLOCK},
        [],
        args,
        [f"cdiv({numel}, {BLOCK})", "1", "1"],
        NUM_WARPS,
        NUM_STAGES,
    )
