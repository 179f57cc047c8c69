"""Lowering rule of the ``max_pool2d_backward`` family: a
``graph.max_pool2d_backward`` becomes one launch over the dx elements, the
window geometry as constexprs. A window over 63 columns is refused: one row of
its windows would not fit the kernel's 63-bit word of windows."""

from __future__ import annotations

from dialects.graph.pool import MaxPool2dBackwardOp
from dialects.kernel import LaunchOp
from teeny_ir.kernels.lowering import (
    LoweringContext,
    Unlowerable,
    dim_expr,
    lowers,
    tensor_type,
)
from teeny_ir.kernels.max_pool2d_backward.contract import MAX_I32, MAX_WINDOW_COLUMNS
from teeny_ir.kernels.max_pool2d_backward.tiles import element_tiles, launch_config, residues


@lowers(MaxPool2dBackwardOp)
def lower_max_pool2d_backward(ctx: LoweringContext, op: MaxPool2dBackwardOp) -> LaunchOp:
    """Each dx element gathers dy from the windows whose argmax it is."""
    batch, channels, height, width = tensor_type(op.input).get_shape()
    out_h, out_w = tensor_type(op.grad).get_shape()[2:]
    if max(channels * height * width, channels * out_h * out_w) > MAX_I32:
        raise Unlowerable("an image of 2**31 or more elements exceeds the kernel's 32-bit offsets")
    if op.kernel[1] > MAX_WINDOW_COLUMNS:
        raise Unlowerable(
            f"a window of {op.kernel[1]} columns exceeds the kernel's {MAX_WINDOW_COLUMNS} "
            "(one row of windows per 63-bit word)"
        )
    top, left, _, _ = op.padding
    rh, gh, ih = residues(op.strides[0], op.dilation[0])
    rw, gw, iw = residues(op.strides[1], op.dilation[1])
    block = element_tiles(ctx.profile)
    num_warps, num_stages = launch_config()
    constexprs: dict[str, int | str] = {
        "KH": op.kernel[0],
        "KW": op.kernel[1],
        "SH": op.strides[0],
        "SW": op.strides[1],
        "DH": op.dilation[0],
        "DW": op.dilation[1],
        "PT": top,
        "PL": left,
        "RH": rh,
        "GH": gh,
        "IH": ih,
        "RW": rw,
        "GW": gw,
        "IW": iw,
        "BLOCK": block,
    }
    args = [
        ("x", "in0"),
        ("dy", "in1"),
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
        "max_pool2d_backward",
        [op.input, op.grad],
        [tensor_type(op.result)],
        constexprs,
        [],
        args,
        [f"cdiv({elements}, {block})", "1", "1"],
        num_warps,
        num_stages,
    )
