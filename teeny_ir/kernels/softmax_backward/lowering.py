"""Lowering rules of the ``softmax_backward`` family: ``graph.softmax_backward``
and ``graph.log_softmax_backward`` along any axis, each as one launch over the
rows of the operands' row view (the softmax family's), with each tensor's batch
stride as a dim."""

from __future__ import annotations

from dialects.graph.reduce import LogSoftmaxBackwardOp, SoftmaxBackwardOp
from dialects.kernel import LaunchOp
from teeny_ir.kernels.lowering import LoweringContext, batch_stride_expr, lowers, tensor_type
from teeny_ir.kernels.softmax.lowering import rows_expr, view_dims
from teeny_ir.kernels.softmax.tiles import launch_config, row_tiles


def _lower(op: SoftmaxBackwardOp | LogSoftmaxBackwardOp, log: bool) -> LaunchOp:
    shape = tuple(tensor_type(op.output).get_shape())
    axis = op.axis
    run = (axis, axis + 1) if axis else (len(shape), len(shape))
    dims = view_dims(shape, axis == 0, *run)
    block_rows, block_r = row_tiles(int(dict(dims)["R"]))
    num_warps, num_stages = launch_config()
    args = [
        ("y", "in0"),
        ("dy", "in1"),
        ("dx", "out0"),
        *dims,
        ("y_batch_stride", batch_stride_expr(op.output)),
        ("dy_batch_stride", batch_stride_expr(op.output_grad)),
        ("dx_batch_stride", batch_stride_expr(op.result)),
    ]
    return LaunchOp(
        "softmax_backward",
        [op.output, op.output_grad],
        [tensor_type(op.result)],
        {"LOG": int(log), "BLOCK_ROWS": block_rows, "BLOCK_R": block_r},
        [],
        args,
        [f"cdiv({rows_expr(dims)}, {block_rows})", "1", "1"],
        num_warps,
        num_stages,
    )


@lowers(SoftmaxBackwardOp)
def lower_softmax_backward(ctx: LoweringContext, op: SoftmaxBackwardOp) -> LaunchOp:
    """``y * (dy - sum(dy * y))`` along ``axis``."""
    return _lower(op, log=False)


@lowers(LogSoftmaxBackwardOp)
def lower_log_softmax_backward(ctx: LoweringContext, op: LogSoftmaxBackwardOp) -> LaunchOp:
    """``dy - exp(y) * sum(dy)`` along ``axis``."""
    return _lower(op, log=True)
