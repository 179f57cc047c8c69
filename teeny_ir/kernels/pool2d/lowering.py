"""Lowering rules of the ``pool2d`` family: ``graph.max_pool2d``,
``graph.avg_pool2d`` and ``graph.global_avg_pool2d``, each as one launch with the
window geometry as constexprs and the operand's and result's batch strides as
dims."""

from __future__ import annotations

from dialects.graph.pool import AvgPool2dOp, GlobalAvgPool2dOp, MaxPool2dOp
from dialects.kernel import LaunchOp
from teeny_ir.kernels.lowering import (
    LoweringContext,
    batch_stride_expr,
    dim_expr,
    lowers,
    tensor_type,
)
from teeny_ir.kernels.pool2d.tiles import global_tiles, launch_config, window_tiles

_NO_WINDOW: dict[str, int] = {
    "KH": 1,
    "KW": 1,
    "SH": 1,
    "SW": 1,
    "DH": 1,
    "DW": 1,
    "PT": 0,
    "PL": 0,
    "PB": 0,
    "PR": 0,
}
"""The window constexprs of a global pool, which ignores them."""


def _launch(
    op: MaxPool2dOp | AvgPool2dOp | GlobalAvgPool2dOp, constexprs: dict[str, int | str]
) -> LaunchOp:
    batch, channels, height, width = tensor_type(op.input).get_shape()
    out_h, out_w = tensor_type(op.result).get_shape()[2:]
    num_warps, num_stages = launch_config()
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
    grid = [f"cdiv({outputs}, {constexprs['BLOCK']})", "1", "1"]
    return LaunchOp(
        "pool2d",
        [op.input],
        [tensor_type(op.result)],
        constexprs,
        [],
        args,
        grid,
        num_warps,
        num_stages,
    )


def _window(
    ctx: LoweringContext, op: MaxPool2dOp | AvgPool2dOp, is_max: bool, count_pad: bool
) -> dict[str, int | str]:
    top, left, bottom, right = op.padding
    block, block_hw = window_tiles(ctx.profile)
    return {
        "GLOBAL": 0,
        "IS_MAX": int(is_max),
        "COUNT_PAD": int(count_pad),
        "KH": op.kernel[0],
        "KW": op.kernel[1],
        "SH": op.strides[0],
        "SW": op.strides[1],
        "DH": op.dilation[0],
        "DW": op.dilation[1],
        "PT": top,
        "PL": left,
        "PB": bottom,
        "PR": right,
        "BLOCK": block,
        "BLOCK_HW": block_hw,
    }


@lowers(MaxPool2dOp)
def lower_max_pool2d(ctx: LoweringContext, op: MaxPool2dOp) -> LaunchOp:
    """A max pool: -inf padding, NaN-propagating max over the unrolled window."""
    return _launch(op, _window(ctx, op, is_max=True, count_pad=True))


@lowers(AvgPool2dOp)
def lower_avg_pool2d(ctx: LoweringContext, op: AvgPool2dOp) -> LaunchOp:
    """An average pool with PyTorch's divisor (``count_include_pad`` or not)."""
    return _launch(op, _window(ctx, op, is_max=False, count_pad=op.count_include_pad))


@lowers(GlobalAvgPool2dOp)
def lower_global_avg_pool2d(ctx: LoweringContext, op: GlobalAvgPool2dOp) -> LaunchOp:
    """The mean of each plane, reduced in blocks over ``H * W``."""
    height, width = tensor_type(op.input).get_shape()[2:]
    block, block_hw = global_tiles(height * width)
    constexprs: dict[str, int | str] = {"GLOBAL": 1, "IS_MAX": 0, "COUNT_PAD": 1, **_NO_WINDOW}
    constexprs |= {"BLOCK": block, "BLOCK_HW": block_hw}
    return _launch(op, constexprs)
