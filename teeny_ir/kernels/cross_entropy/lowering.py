"""Lowering rule of the ``cross_entropy`` family: a ``graph.cross_entropy``
becomes one launch with two results, the loss (the graph op's result) and a
[3] i64 status that the plan's runtime checks after the run (the family's
`status_checks`): a target out of range is an error naming this op and its
location, never a read out of bounds."""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType, i64

from dialects.graph.reduce import CrossEntropyOp
from dialects.kernel import LaunchOp
from teeny_ir.kernels.cross_entropy.contract import MAX_I32, STATUS_SIZE
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


@lowers(CrossEntropyOp)
def lower_cross_entropy(ctx: LoweringContext, op: CrossEntropyOp) -> LaunchOp:
    """The mean loss over the rows, and the status of the targets."""
    rows, classes = tensor_type(op.logits).get_shape()
    if classes > MAX_I32:
        raise Unlowerable(f"{classes} classes exceed the kernel's 32-bit limit")
    block_rows, block_c = row_tiles(classes)
    num_warps, num_stages = launch_config()
    args = [
        ("logits", "in0"),
        ("targets", "in1"),
        ("loss", "out0"),
        ("status", "out1"),
        ("N", dim_expr(rows)),
        ("C", str(classes)),
        ("logits_batch_stride", batch_stride_expr(op.logits)),
    ]
    return LaunchOp(
        "cross_entropy",
        [op.logits, op.targets],
        [tensor_type(op.result), STATUS_TYPE],
        {"BLOCK_ROWS": block_rows, "BLOCK_C": block_c},
        [],
        args,
        ["1", "1", "1"],
        num_warps,
        num_stages,
    )
