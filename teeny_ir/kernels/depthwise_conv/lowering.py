"""Lowering rule of the ``depthwise_conv`` family: a ``graph.fused_conv2d``
whose algorithm is ``depthwise`` becomes one launch, its weight the conv weight
as it is ([C, 1, KH, KW]) and its scale and shift derivations as parameter
slots; the geometry is passed as dim arguments. A residual operand becomes the
launch's second operand (``r = in1``, and the last dim ``HAS_RESIDUAL = "1"``:
a runtime argument, so the variant is the same with and without a residual);
without one ``r`` is bound to the input, which the kernel then never reads
(``HAS_RESIDUAL = "0"``). Every activation operand and the result pass their
batch stride (a view's, or one image's size)."""

from __future__ import annotations

from xdsl.ir import Operation

from dialects.graph.conv import FusedConv2dOp
from dialects.kernel import LaunchOp, ParamSlot
from teeny_ir.core.derivations import identity
from teeny_ir.kernels.depthwise_conv.tiles import launch_config
from teeny_ir.kernels.lowering import (
    LoweringContext,
    Unlowerable,
    batch_stride_expr,
    conv_epilogue,
    dim_expr,
    lowers,
    tensor_type,
)


def _accepts(op: Operation) -> bool:
    return isinstance(op, FusedConv2dOp) and op.algorithm == "depthwise"


@lowers(FusedConv2dOp, when=_accepts)
def lower_depthwise_conv(ctx: LoweringContext, op: FusedConv2dOp) -> LaunchOp:
    """A ``depthwise`` fused convolution as one depthwise_conv launch."""
    if op.tiles is None:
        raise Unlowerable("no tiles selected (run select-conv-algorithm first)")
    epilogue = conv_epilogue(op)
    batch, channels, height, width = tensor_type(op.input).get_shape()
    _, c_out, out_h, out_w = tensor_type(op.result).get_shape()
    weight_shape = tensor_type(op.weight).get_shape()
    if not (op.groups == channels == c_out and weight_shape[1] == 1):
        raise Unlowerable(
            f"not depthwise: groups {op.groups}, {channels} input and {c_out} output channels"
        )
    block_p, block_c, block_t = op.tiles
    num_warps, num_stages = launch_config(block_p, block_c, block_t)
    top, left, _, _ = op.padding
    params = [
        ParamSlot("w", tuple(weight_shape), identity(epilogue.weight, weight_shape)),
        *epilogue.slots,
    ]
    constexprs: dict[str, int | str] = {
        "BLOCK_P": block_p,
        "BLOCK_C": block_c,
        "BLOCK_T": block_t,
        "ACTIVATION": op.activation,
    }
    dims = {
        "B": dim_expr(batch),
        "C": str(channels),
        "H": str(height),
        "W": str(width),
        "OH": str(out_h),
        "OW": str(out_w),
        "KH": str(weight_shape[2]),
        "KW": str(weight_shape[3]),
        "STRIDE_H": str(op.strides[0]),
        "STRIDE_W": str(op.strides[1]),
        "PAD_T": str(top),
        "PAD_L": str(left),
        "DIL_H": str(op.dilation[0]),
        "DIL_W": str(op.dilation[1]),
        "x_batch_stride": batch_stride_expr(op.input),
        "r_batch_stride": epilogue.r_batch_stride,
        "y_batch_stride": batch_stride_expr(op.result),
        "HAS_RESIDUAL": str(epilogue.has_residual),
    }
    args = [
        ("x", "in0"),
        ("w", "param.w"),
        ("scale", "param.scale"),
        ("shift", "param.shift"),
        ("r", epilogue.r_binding),
        ("y", "out0"),
        *dims.items(),
    ]
    grid = [
        f"cdiv({dim_expr(batch)} * {out_h * out_w}, {block_p})",
        f"cdiv({channels}, {block_c})",
        "1",
    ]
    return LaunchOp(
        "depthwise_conv",
        epilogue.operands,
        [tensor_type(op.result)],
        constexprs,
        params,
        args,
        grid,
        num_warps,
        num_stages,
    )
