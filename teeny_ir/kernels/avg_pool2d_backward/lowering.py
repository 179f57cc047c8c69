"""Lowering rule of the ``avg_pool2d_backward`` family: a
``graph.avg_pool2d_backward`` becomes one launch over the dx elements, the
window geometry and the divisor rule as constexprs."""

from __future__ import annotations

from dialects.graph.pool import AvgPool2dBackwardOp
from dialects.kernel import LaunchOp
from teeny_ir.kernels.avg_pool2d_backward.contract import MAX_I32
from teeny_ir.kernels.avg_pool2d_backward.tiles import element_tiles, launch_config
from teeny_ir.kernels.lowering import (
    LoweringContext,
    Unlowerable,
    dim_expr,
    lowers,
    tensor_type,
)


@lowers(AvgPool2dBackwardOp)
def lower_avg_pool2d_backward(ctx: LoweringContext, op: AvgPool2dBackwardOp) -> LaunchOp:
    """Each dx element gathers ``dy / divisor`` from the windows that contain it."""
    batch, channels, height, width = tensor_type(op.result).get_shape()
    out_h, out_w = tensor_type(op.grad).get_shape()[2:]
    if max(channels * height * width, channels * out_h * out_w) > MAX_I32:
        raise Unlowerable("an image of 2**31 or more elements exceeds the kernel's 32-bit offsets")
    top, left, bottom, right = op.padding
    block = element_tiles(ctx.profile)
    num_warps, num_stages = launch_config()
    constexprs: dict[str, int | str] = {
        "COUNT_PAD": int(op.count_include_pad),
        "KH": op.kernel[0],
        "KW": op.kernel[1],
        "SH": op.strides[0],
        "SW": op.strides[1],
        "PT": top,
        "PL": left,
        "PB": bottom,
        "PR": right,
        "BLOCK": block,
    }
    args = [
        ("dy", "in0"),
        ("dx", "out0"),
        ("N", dim_expr(batch)),
        ("C", str(channels)),
        ("H", str(height)),
        ("W", str(width)),
        ("OH", str(out_h)),
        ("OW", str(out_w)),
    ]
    elements = f"{dim_expr(batch)} * {channels * height * width}"
    return LaunchOp(
        "avg_pool2d_backward",
        [op.grad],
        [tensor_type(op.result)],
        constexprs,
        [],
        args,
        [f"cdiv({elements}, {block})", "1", "1"],
        num_warps,
        num_stages,
    )
