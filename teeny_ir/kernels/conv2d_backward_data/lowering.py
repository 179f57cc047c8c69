"""Lowering rule of the ``conv2d_backward_data`` family: a
``graph.conv2d_backward_data`` becomes one launch whose operands are the
gradient ``dy`` and the weight ``w`` (a ``graph.param`` weight is materialised
as a ``kernel.param`` operand by the lowering driver). The geometry is passed as
dim arguments. Tiles follow the lowering's tile profile (``ctx.profile``,
`teeny_ir.kernels.lowering.LoweringContext`: lower-graph-to-kernel's ``profile``)."""

from __future__ import annotations

from dialects.graph.conv import Conv2dBackwardDataOp
from dialects.kernel import LaunchOp
from teeny_ir.kernels.conv2d_backward_data.tiles import launch_config, pick_tiles
from teeny_ir.kernels.depthwise_conv_backward_data.lowering import accepts as depthwise
from teeny_ir.kernels.lowering import (
    LoweringContext,
    batch_stride_expr,
    conv_dims,
    dim_expr,
    lowers,
    tensor_type,
)


@lowers(Conv2dBackwardDataOp, when=lambda op: not depthwise(op))
def lower_conv2d_backward_data(ctx: LoweringContext, op: Conv2dBackwardDataOp) -> LaunchOp:
    """The input gradient as one conv2d_backward_data launch."""
    x_shape = tensor_type(op.result).get_shape()
    w_shape = tensor_type(op.weight).get_shape()
    y_shape = tensor_type(op.grad).get_shape()
    batch, _, height, width = x_shape
    c_out, group_in, kernel_h, kernel_w = w_shape
    groups = op.groups
    block_m, block_n, block_k = pick_tiles(
        height * width, group_in, c_out // groups * kernel_h * kernel_w, ctx.profile
    )
    num_warps, num_stages = launch_config(block_m, block_n)
    dims = {
        **conv_dims(x_shape, w_shape, y_shape, op.strides, op.padding, op.dilation, op.groups),
        "dy_batch_stride": batch_stride_expr(op.grad),
        "dx_batch_stride": batch_stride_expr(op.result),
    }
    args = [
        ("dy", "in0"),
        ("w", "in1"),
        ("dx", "out0"),
        *((name, str(value)) for name, value in dims.items()),
    ]
    tiles = f"cdiv({group_in}, {block_n}) * {groups}"
    grid = [f"cdiv({dim_expr(batch)} * {height * width}, {block_m}) * {tiles}", "1", "1"]
    return LaunchOp(
        "conv2d_backward_data",
        [op.grad, op.weight],
        [tensor_type(op.result)],
        {
            "BLOCK_M": block_m,
            "BLOCK_N": block_n,
            "BLOCK_K": block_k,
            "UNIT_STRIDE": int(tuple(op.strides) == (1, 1)),
        },
        [],
        args,
        grid,
        num_warps,
        num_stages,
    )
