"""Lowering rule of the ``depthwise_conv_backward_data`` family: a
``graph.conv2d_backward_data`` of a depthwise convolution (`accepts`:
``groups == C_IN == C_OUT``, the test select-conv-algorithm's ``depthwise``
makes, `teeny_ir.kernels.conv_algorithms.is_depthwise`) becomes one launch whose
operands are the gradient ``dy`` and the weight ``w`` (a ``graph.param`` weight
is materialised as a ``kernel.param`` operand by the lowering driver); every
other input gradient stays ``conv2d_backward_data``'s. The geometry is passed
as dim arguments. A program's tile is the forward depthwise convolution's
(input positions x channels, gathering taps: its tile rule,
`teeny_ir.kernels.depthwise_conv.tiles`, serves both), for the lowering's tile
profile (``ctx.profile``, `teeny_ir.kernels.lowering.LoweringContext`)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation

from dialects.graph.conv import Conv2dBackwardDataOp, Conv2dBackwardWeightOp
from dialects.kernel import LaunchOp
from teeny_ir.kernels.conv_algorithms import is_depthwise
from teeny_ir.kernels.depthwise_conv.tiles import launch_config, pick_depthwise_tile_sizes
from teeny_ir.kernels.depthwise_conv_backward_data.contract import GEOMETRY
from teeny_ir.kernels.lowering import (
    LoweringContext,
    Unlowerable,
    batch_stride_expr,
    conv_dims,
    dim_expr,
    lowers,
    tensor_type,
)


def accepts(op: Operation) -> bool:
    """Whether ``op`` is the input gradient of a depthwise convolution (one group
    per channel, one output channel per input channel): this family's, not
    ``conv2d_backward_data``'s. A channel multiplier (``C_OUT = k * C_IN``,
    ``k > 1``) is not depthwise here, as in the forward."""
    if not isinstance(op, Conv2dBackwardDataOp):
        return False
    channels = tensor_type(op.result).get_shape()[1]
    return is_depthwise(channels, tensor_type(op.weight).get_shape()[0], op.groups)


def refusal(op: Conv2dBackwardDataOp | Conv2dBackwardWeightOp) -> str:
    """What makes ``op`` not depthwise, in words (groups and channels)."""
    if isinstance(op, Conv2dBackwardDataOp):
        c_in, c_out = tensor_type(op.result).get_shape()[1], tensor_type(op.weight).get_shape()[0]
    else:
        c_in, c_out = tensor_type(op.input).get_shape()[1], tensor_type(op.result).get_shape()[0]
    return f"groups {op.groups}, {c_in} input and {c_out} output channels"


def depthwise_dims(
    op: Conv2dBackwardDataOp | Conv2dBackwardWeightOp,
    x: Sequence[int],
    w: Sequence[int],
    y: Sequence[int],
) -> dict[str, int | str]:
    """The dim arguments both depthwise backward families share, in their ABI
    order (``B`` to ``DIL_W``), from NCHW ``x`` (the input or its gradient),
    ``w`` [C, 1, KH, KW] (the weight or its gradient), ``y`` (the output's
    gradient) and ``op``'s options; raises `Unlowerable` past 32-bit offsets
    (`conv_dims`)."""
    conv = conv_dims(x, w, y, op.strides, op.padding, op.dilation, op.groups)
    return {
        "B": conv["B"],
        "C": conv["C_IN"],
        **{name: conv[name] for name in ("H", "W", "OH", "OW", "KH", "KW", *GEOMETRY)},
    }


@lowers(Conv2dBackwardDataOp, when=accepts)
def lower_depthwise_conv_backward_data(ctx: LoweringContext, op: Conv2dBackwardDataOp) -> LaunchOp:
    """A depthwise input gradient as one depthwise_conv_backward_data launch."""
    if not accepts(op):
        raise Unlowerable(f"not the input gradient of a depthwise convolution: {refusal(op)}")
    x_shape = tensor_type(op.result).get_shape()
    w_shape = tensor_type(op.weight).get_shape()
    batch, channels, height, width = x_shape
    dims = {
        **depthwise_dims(op, x_shape, w_shape, tensor_type(op.grad).get_shape()),
        "dy_batch_stride": batch_stride_expr(op.grad),
        "dx_batch_stride": batch_stride_expr(op.result),
    }
    # The forward's tile, dx in the output's place: input positions (the batch
    # folded in) x channels, gathering taps.
    block_p, block_c, block_t = pick_depthwise_tile_sizes(
        height * width, channels, w_shape[2] * w_shape[3], ctx.profile
    )
    num_warps, num_stages = launch_config(block_p, block_c, block_t)
    args = [
        ("dy", "in0"),
        ("w", "in1"),
        ("dx", "out0"),
        *((name, str(value)) for name, value in dims.items()),
    ]
    grid = [
        f"cdiv({dim_expr(batch)} * {height * width}, {block_p})",
        f"cdiv({channels}, {block_c})",
        "1",
    ]
    return LaunchOp(
        "depthwise_conv_backward_data",
        [op.grad, op.weight],
        [tensor_type(op.result)],
        {
            "BLOCK_P": block_p,
            "BLOCK_C": block_c,
            "BLOCK_T": block_t,
            "UNIT_STRIDE": int(tuple(op.strides) == (1, 1)),
        },
        [],
        args,
        grid,
        num_warps,
        num_stages,
    )
