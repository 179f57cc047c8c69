"""Lowering rule of the ``conv2d_backward_weight`` family: a
``graph.conv2d_backward_weight`` becomes one launch whose operands are the
forward input ``x`` and the gradient ``dy``; its result, the weight gradient,
is static, so the grid is a number while the batch ``B`` (a dim argument) sets
the length of each program's K loop. Tiles follow the lowering's tile
profile (``ctx.profile``, `teeny_ir.kernels.lowering.LoweringContext`:
lower-graph-to-kernel's ``profile`` option)."""

from __future__ import annotations

import math

from dialects.graph.conv import Conv2dBackwardWeightOp
from dialects.kernel import LaunchOp
from teeny_ir.kernels.conv2d_backward_weight.tiles import launch_config, pick_tiles
from teeny_ir.kernels.depthwise_conv_backward_weight.lowering import accepts as depthwise
from teeny_ir.kernels.lowering import (
    LoweringContext,
    batch_stride_expr,
    conv_dims,
    lowers,
    tensor_type,
)


@lowers(Conv2dBackwardWeightOp, when=lambda op: not depthwise(op))
def lower_conv2d_backward_weight(ctx: LoweringContext, op: Conv2dBackwardWeightOp) -> LaunchOp:
    """The weight gradient as one conv2d_backward_weight launch."""
    x_shape = tensor_type(op.input).get_shape()
    w_shape = tensor_type(op.result).get_shape()
    y_shape = tensor_type(op.grad).get_shape()
    c_out, group_in, kernel_h, kernel_w = w_shape
    out_h, out_w = y_shape[2:]
    groups = op.groups
    group_out = c_out // groups
    columns = group_in * kernel_h * kernel_w
    block_m, block_n, block_k = pick_tiles(group_out, columns, out_h * out_w, ctx.profile)
    num_warps, num_stages = launch_config(block_m, block_n)
    dims = {
        **conv_dims(x_shape, w_shape, y_shape, op.strides, op.padding, op.dilation, op.groups),
        "x_batch_stride": batch_stride_expr(op.input),
        "dy_batch_stride": batch_stride_expr(op.grad),
    }
    args = [
        ("x", "in0"),
        ("dy", "in1"),
        ("dw", "out0"),
        *((name, str(value)) for name, value in dims.items()),
    ]
    programs = math.ceil(group_out / block_m) * math.ceil(columns / block_n) * groups
    return LaunchOp(
        "conv2d_backward_weight",
        [op.input, op.grad],
        [tensor_type(op.result)],
        {"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": block_k},
        [],
        args,
        [str(programs), "1", "1"],
        num_warps,
        num_stages,
    )
