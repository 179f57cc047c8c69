"""Lowering rule of the ``conv1x1_gemm`` family: a ``graph.fused_conv2d`` whose
algorithm is ``gemm`` (1x1, stride 1, no padding, one group) becomes one launch,
its weight reshaped to [C_OUT, C_IN] and its scale and shift derivations as
parameter slots. A residual operand becomes the launch's second operand
(``r = in1``, and the last dim ``HAS_RESIDUAL = "1"``: a runtime argument, so
the variant is the same with and without a residual); without one ``r`` is
bound to the input, which the kernel then never reads (``HAS_RESIDUAL =
"0"``). Every activation operand and the result pass their batch stride (a
view's, or one image's size)."""

from __future__ import annotations

from xdsl.ir import Operation

from dialects.graph.conv import FusedConv2dOp
from dialects.kernel import LaunchOp, ParamSlot
from teeny_ir.core.derivations import reshape
from teeny_ir.kernels.conv1x1_gemm.tiles import GROUP_M, launch_config
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
    """``gemm`` convolutions, and unselected ones (to say what is missing)."""
    return isinstance(op, FusedConv2dOp) and op.algorithm in (None, "gemm")


@lowers(FusedConv2dOp, when=_accepts)
def lower_fused_conv(ctx: LoweringContext, op: FusedConv2dOp) -> LaunchOp:
    """A ``gemm`` fused convolution as one conv1x1_gemm launch."""
    if op.algorithm is None or op.tiles is None:
        raise Unlowerable("no algorithm selected (run select-conv-algorithm first)")
    epilogue = conv_epilogue(op)
    batch, c_in, height, width = tensor_type(op.input).get_shape()
    c_out = tensor_type(op.result).get_shape()[1]
    spatial = height * width
    block_m, block_n, block_k = op.tiles
    num_warps, num_stages = launch_config(block_m, block_n)
    params = [
        ParamSlot("w", (c_out, c_in), reshape(epilogue.weight, (c_out, c_in))),
        *epilogue.slots,
    ]
    constexprs: dict[str, int | str] = {
        "BLOCK_M": block_m,
        "BLOCK_N": block_n,
        "BLOCK_K": block_k,
        "GROUP_M": GROUP_M,
        "ACTIVATION": op.activation,
    }
    args = [
        ("x", "in0"),
        ("w", "param.w"),
        ("scale", "param.scale"),
        ("shift", "param.shift"),
        ("r", epilogue.r_binding),
        ("y", "out0"),
        ("B", dim_expr(batch)),
        ("C_IN", str(c_in)),
        ("C_OUT", str(c_out)),
        ("M", str(spatial)),
        ("x_batch_stride", batch_stride_expr(op.input)),
        ("r_batch_stride", epilogue.r_batch_stride),
        ("y_batch_stride", batch_stride_expr(op.result)),
        ("HAS_RESIDUAL", str(epilogue.has_residual)),
    ]
    grid = [f"{dim_expr(batch)} * cdiv({spatial}, {block_m}) * cdiv({c_out}, {block_n})", "1", "1"]
    return LaunchOp(
        "conv1x1_gemm",
        epilogue.operands,
        [tensor_type(op.result)],
        constexprs,
        params,
        args,
        grid,
        num_warps,
        num_stages,
    )
