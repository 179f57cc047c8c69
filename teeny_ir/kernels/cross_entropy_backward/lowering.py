"""Lowering rule of the ``cross_entropy_backward`` family: a
``graph.cross_entropy_backward`` becomes one launch over row blocks with two
results, the gradient (the graph op's result) and a [3] i64 status that the
plan's runtime checks after the run (the family's `status_checks`): a target
out of range is an error naming this op and its location, never a read out of
bounds."""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType, i64

from dialects.graph.reduce import CrossEntropyBackwardOp
from dialects.kernel import LaunchOp
from teeny_ir.kernels.cross_entropy_backward.contract import MAX_I32, STATUS_SIZE
from teeny_ir.kernels.lowering import (
    LoweringContext,
    Unlowerable,
    batch_stride_expr,
    dim_expr,
    lowers,
    tensor_type,
)
from teeny_ir.kernels.softmax.tiles import launch_config, row_tiles

STATUS_TYPE = TensorType(i64, [STATUS_SIZE])


@lowers(CrossEntropyBackwardOp)
def lower_cross_entropy_backward(ctx: LoweringContext, op: CrossEntropyBackwardOp) -> LaunchOp:
    """The gradient of the mean loss, and the status of the targets."""
    rows, classes = tensor_type(op.logits).get_shape()
    if classes > MAX_I32:
        raise Unlowerable(f"{classes} classes exceed the kernel's 32-bit limit")
    block_rows, block_c = row_tiles(classes)
    num_warps, num_stages = launch_config()
    args = [
        ("logits", "in0"),
        ("targets", "in1"),
        ("g", "in2"),
        ("dlogits", "out0"),
        ("status", "out1"),
        ("N", dim_expr(rows)),
        ("C", str(classes)),
        ("logits_batch_stride", batch_stride_expr(op.logits)),
        ("dlogits_batch_stride", batch_stride_expr(op.result)),
    ]
    return LaunchOp(
        "cross_entropy_backward",
        [op.logits, op.targets, op.grad],
        [tensor_type(op.result), STATUS_TYPE],
        {"BLOCK_ROWS": block_rows, "BLOCK_C": block_c},
        [],
        args,
        [f"cdiv({dim_expr(rows)}, {block_rows})", "1", "1"],
        num_warps,
        num_stages,
    )
