"""Lowering rule of the ``implicit_gemm_conv`` family: a ``graph.fused_conv2d``
whose algorithm is ``implicit-gemm`` becomes one launch, its weight the conv
weight as it is ([C_OUT, C_IN / groups, KH, KW]) and its scale and shift
derivations as parameter slots. The geometry is passed as dim arguments. A
residual operand becomes the launch's second operand (``r = in1``, and the
last dim ``HAS_RESIDUAL = "1"``: a runtime argument, so the variant is the
same with and without a residual); without one ``r`` is bound to the input,
which the kernel then never reads (``HAS_RESIDUAL = "0"``). Every activation
operand and the result pass their batch stride (a view's, or one image's
size)."""

from __future__ import annotations

from xdsl.ir import Operation

from dialects.graph.conv import FusedConv2dOp
from dialects.kernel import LaunchOp, ParamSlot
from teeny_ir.core.derivations import identity
from teeny_ir.kernels.implicit_gemm_conv.tiles import launch_config
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
    return isinstance(op, FusedConv2dOp) and op.algorithm == "implicit-gemm"


@lowers(FusedConv2dOp, when=_accepts)
def lower_implicit_gemm_conv(ctx: LoweringContext, op: FusedConv2dOp) -> LaunchOp:
    """An ``implicit-gemm`` fused convolution as one implicit_gemm_conv launch."""
    if op.tiles is None:
        raise Unlowerable("no tiles selected (run select-conv-algorithm first)")
    epilogue = conv_epilogue(op)
    batch, c_in, height, width = tensor_type(op.input).get_shape()
    _, c_out, out_h, out_w = tensor_type(op.result).get_shape()
    weight_shape = tensor_type(op.weight).get_shape()
    groups = op.groups
    block_m, block_n, block_k = op.tiles
    num_warps, num_stages = launch_config(block_m, block_n)
    top, left, _, _ = op.padding
    params = [
        ParamSlot("w", tuple(weight_shape), identity(epilogue.weight, weight_shape)),
        *epilogue.slots,
    ]
    constexprs: dict[str, int | str] = {
        "BLOCK_M": block_m,
        "BLOCK_N": block_n,
        "BLOCK_K": block_k,
        "ACTIVATION": op.activation,
    }
    dims = {
        "B": dim_expr(batch),
        "C_IN": c_in,
        "H": height,
        "W": width,
        "C_OUT": c_out,
        "OH": out_h,
        "OW": out_w,
        "KH": weight_shape[2],
        "KW": weight_shape[3],
        "STRIDE_H": op.strides[0],
        "STRIDE_W": op.strides[1],
        "PAD_T": top,
        "PAD_L": left,
        "DIL_H": op.dilation[0],
        "DIL_W": op.dilation[1],
        "GROUPS": groups,
        "x_batch_stride": batch_stride_expr(op.input),
        "r_batch_stride": epilogue.r_batch_stride,
        "y_batch_stride": batch_stride_expr(op.result),
        "HAS_RESIDUAL": epilogue.has_residual,
    }
    args = [
        ("x", "in0"),
        ("w", "param.w"),
        ("scale", "param.scale"),
        ("shift", "param.shift"),
        ("r", epilogue.r_binding),
        ("y", "out0"),
        *((name, str(value)) for name, value in dims.items()),
    ]
    grid = [
        f"cdiv({dim_expr(batch)} * {out_h * out_w}, {block_m})",
        f"cdiv({c_out // groups}, {block_n})",
        str(groups),
    ]
    return LaunchOp(
        "implicit_gemm_conv",
        epilogue.operands,
        [tensor_type(op.result)],
        constexprs,
        params,
        args,
        grid,
        num_warps,
        num_stages,
    )
