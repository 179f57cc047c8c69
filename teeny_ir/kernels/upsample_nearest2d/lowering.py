"""Lowering rule of the ``upsample_nearest2d`` family: one launch per
``graph.upsample_nearest2d``, its scales as constexprs and the operand's and
result's batch strides as dims."""

from __future__ import annotations

from dialects.graph.pool import UpsampleNearest2dOp
from dialects.kernel import LaunchOp
from teeny_ir.kernels.lowering import (
    LoweringContext,
    batch_stride_expr,
    dim_expr,
    lowers,
    tensor_type,
)
from teeny_ir.kernels.upsample_nearest2d.tiles import launch_config


@lowers(UpsampleNearest2dOp)
def lower_upsample_nearest2d(ctx: LoweringContext, op: UpsampleNearest2dOp) -> LaunchOp:
    """``y[n, c, i, j] = x[n, c, i // sh, j // sw]`` as one launch."""
    batch, channels, height, width = tensor_type(op.input).get_shape()
    out_h, out_w = tensor_type(op.result).get_shape()[2:]
    block, num_warps, num_stages = launch_config()
    args = [
        ("x", "in0"),
        ("y", "out0"),
        ("N", dim_expr(batch)),
        ("C", str(channels)),
        ("H", str(height)),
        ("W", str(width)),
        ("OH", str(out_h)),
        ("OW", str(out_w)),
        ("x_batch_stride", batch_stride_expr(op.input)),
        ("y_batch_stride", batch_stride_expr(op.result)),
    ]
    outputs = f"{dim_expr(batch)} * {channels * out_h * out_w}"
    return LaunchOp(
        "upsample_nearest2d",
        [op.input],
        [tensor_type(op.result)],
        {"SH": op.scales[0], "SW": op.scales[1], "BLOCK": block},
        [],
        args,
        [f"cdiv({outputs}, {block})", "1", "1"],
        num_warps,
        num_stages,
    )
