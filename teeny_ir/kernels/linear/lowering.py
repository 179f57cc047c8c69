"""Lowering rule of the ``linear`` family: a ``graph.linear`` (with the bias and
activation fuse-epilogues may have folded into it) becomes one launch. The
weight and the bias are parameter slots (``w`` = ``identity(weight)``,
``scale`` = ``fill(1.0)``, ``shift`` = ``identity(bias)`` or ``fill(0.0)``), so
the launch's one operand is the input. The input and the result pass their
batch stride (a view's, or one image's size)."""

from __future__ import annotations

import math

from xdsl.dialects.builtin import DYNAMIC_INDEX
from xdsl.ir import SSAValue

from dialects.graph.linear import LinearOp
from dialects.graph.param import ParamOp
from dialects.kernel import LaunchOp, ParamSlot
from teeny_ir.core.derivations import fill, identity
from teeny_ir.kernels.linear.tiles import GROUP_M, launch_config, pick_tiles
from teeny_ir.kernels.lowering import (
    LoweringContext,
    Unlowerable,
    batch_stride_expr,
    dim_expr,
    lowers,
    tensor_type,
)


def _weight_name(value: SSAValue, role: str) -> str:
    owner = value.owner
    if not isinstance(owner, ParamOp):
        raise Unlowerable(f"its {role} is not a graph.param")
    return owner.param_name.data


@lowers(LinearOp)
def lower_linear(ctx: LoweringContext, op: LinearOp) -> LaunchOp:
    """A linear layer as one ``linear`` launch over all ``B * ROWS`` input rows."""
    shape = tensor_type(op.input).get_shape()
    n = tensor_type(op.result).get_shape()[-1]
    k = shape[-1]
    rows = math.prod(shape[1:-1])
    weight = _weight_name(op.weight, "weight")
    bias = None if op.bias is None else _weight_name(op.bias, "bias")
    batch = dim_expr(shape[0])
    block_m, block_n, block_k = pick_tiles(
        None if shape[0] == DYNAMIC_INDEX else shape[0] * rows, n, k
    )
    num_warps, num_stages = launch_config(block_m, block_n)
    params = [
        ParamSlot("w", (n, k), identity(weight, [n, k])),
        ParamSlot("scale", (n,), fill(1.0, [n])),
        ParamSlot("shift", (n,), fill(0.0, [n]) if bias is None else identity(bias, [n])),
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
        ("y", "out0"),
        ("B", batch),
        ("ROWS", str(rows)),
        ("K", str(k)),
        ("N", str(n)),
        ("x_batch_stride", batch_stride_expr(op.input)),
        ("y_batch_stride", batch_stride_expr(op.result)),
    ]
    total = batch if rows == 1 else f"{batch} * {rows}"
    grid = [f"cdiv({total}, {block_m}) * cdiv({n}, {block_n})", "1", "1"]
    return LaunchOp(
        "linear",
        [op.input],
        [tensor_type(op.result)],
        constexprs,
        params,
        args,
        grid,
        num_warps,
        num_stages,
    )
