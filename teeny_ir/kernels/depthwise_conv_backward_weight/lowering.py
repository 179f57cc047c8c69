"""Lowering rule of the ``depthwise_conv_backward_weight`` family: a
``graph.conv2d_backward_weight`` of a depthwise convolution (`accepts`:
``groups == C_IN == C_OUT``, as for the input gradient,
`teeny_ir.kernels.depthwise_conv_backward_data.lowering`) becomes one launch
whose operands are the forward input ``x`` and the gradient ``dy``; every
other weight gradient stays ``conv2d_backward_weight``'s. Its result, the
weight gradient, is static, so the grid is numbers while the batch ``B`` (a
dim argument) sets the length of each program's reduction. Tiles follow the
lowering's tile profile (``ctx.profile``,
`teeny_ir.kernels.lowering.LoweringContext`)."""

from __future__ import annotations

import math

from xdsl.ir import Operation

from dialects.graph.conv import Conv2dBackwardWeightOp
from dialects.kernel import LaunchOp
from teeny_ir.kernels.conv_algorithms import is_depthwise
from teeny_ir.kernels.depthwise_conv_backward_data.lowering import depthwise_dims, refusal
from teeny_ir.kernels.depthwise_conv_backward_weight.tiles import launch_config, pick_tiles
from teeny_ir.kernels.lowering import (
    LoweringContext,
    Unlowerable,
    batch_stride_expr,
    lowers,
    tensor_type,
)


def accepts(op: Operation) -> bool:
    """Whether ``op`` is the weight gradient of a depthwise convolution (one group
    per channel, one output channel per input channel): this family's, not
    ``conv2d_backward_weight``'s. A channel multiplier is not depthwise here."""
    if not isinstance(op, Conv2dBackwardWeightOp):
        return False
    channels = tensor_type(op.input).get_shape()[1]
    return is_depthwise(channels, tensor_type(op.result).get_shape()[0], op.groups)


@lowers(Conv2dBackwardWeightOp, when=accepts)
def lower_depthwise_conv_backward_weight(
    ctx: LoweringContext, op: Conv2dBackwardWeightOp
) -> LaunchOp:
    """A depthwise weight gradient as one depthwise_conv_backward_weight launch."""
    if not accepts(op):
        raise Unlowerable(f"not the weight gradient of a depthwise convolution: {refusal(op)}")
    x_shape = tensor_type(op.input).get_shape()
    w_shape = tensor_type(op.result).get_shape()
    y_shape = tensor_type(op.grad).get_shape()
    channels, taps = w_shape[0], w_shape[2] * w_shape[3]
    dims = {
        **depthwise_dims(op, x_shape, w_shape, y_shape),
        "x_batch_stride": batch_stride_expr(op.input),
        "dy_batch_stride": batch_stride_expr(op.grad),
    }
    block_p, block_c, block_t = pick_tiles(y_shape[2] * y_shape[3], channels, taps, ctx.profile)
    num_warps, num_stages = launch_config(block_p, block_c, block_t)
    args = [
        ("x", "in0"),
        ("dy", "in1"),
        ("dw", "out0"),
        *((name, str(value)) for name, value in dims.items()),
    ]
    grid = [str(math.ceil(channels / block_c)), str(math.ceil(taps / block_t)), "1"]
    return LaunchOp(
        "depthwise_conv_backward_weight",
        [op.input, op.grad],
        [tensor_type(op.result)],
        {"BLOCK_P": block_p, "BLOCK_C": block_c, "BLOCK_T": block_t},
        [],
        args,
        grid,
        num_warps,
        num_stages,
    )
