"""Lowering rule of the ``attention_backward`` family: a
``graph.attention_backward`` becomes one launch (operands q, k, v, o, lse, do;
results dq, dk, dv) over ``G`` matrices, the product of the batch dimensions
(an expression over ``B`` when dimension 0 is dynamic). Each operand's layout
flag becomes its two stride dims; the scale travels as the one-float ``scale``
slot (``fill``, rounded once to f32). Refused: a head dimension above 256 (the
kernel's one head tile) and a matrix past 32-bit offsets."""

from __future__ import annotations

from dialects.graph.attention import AttentionBackwardOp, logical_shape
from dialects.kernel import LaunchOp, ParamSlot
from teeny_ir.core.derivations import fill
from teeny_ir.kernels.attention_backward.contract import LAYOUT_OPERANDS, layout_strides
from teeny_ir.kernels.attention_backward.tiles import MAX_HEAD, launch_config, pick_tiles
from teeny_ir.kernels.lowering import (
    LoweringContext,
    Unlowerable,
    count_expr,
    lowers,
    tensor_type,
)

MAX_I32 = 2**31 - 1


@lowers(AttentionBackwardOp)
def lower_attention_backward(ctx: LoweringContext, op: AttentionBackwardOp) -> LaunchOp:
    """One launch: role 0 writes dk and dv per key block, role 1 dq per query block."""
    flags = op.transposed
    q_shape = tuple(tensor_type(op.q).get_shape())
    n, dk = logical_shape(q_shape, flags[0])[-2:]
    m, dv = logical_shape(tuple(tensor_type(op.v).get_shape()), flags[2])[-2:]
    for name, size in (("Dk", dk), ("Dv", dv)):
        if size > MAX_HEAD:
            raise Unlowerable(
                f"its head dimension {name} = {size} exceeds {MAX_HEAD}, the largest the "
                "attention_backward kernel holds in one tile"
            )
    if max(n * dk, m * dk, m * dv, n * dv) > MAX_I32:
        raise Unlowerable("a matrix of q, k, v or o exceeds the kernel's 32-bit offsets")
    block_m, block_n, block_dk, block_dv = pick_tiles(n, m, dk, dv, ctx.profile)
    num_warps, num_stages = launch_config(block_dk, block_dv, ctx.profile)
    matrices = count_expr(q_shape[:-2])
    strides = []
    for name, (rows, features), flag in zip(
        LAYOUT_OPERANDS, ((n, dk), (m, dk), (m, dv), (n, dv)), flags, strict=True
    ):
        row_stride, feature_stride = layout_strides(rows, features, flag)
        strides += [(f"{name}_sr", str(row_stride)), (f"{name}_sd", str(feature_stride))]
    args = [
        ("q", "in0"),
        ("k", "in1"),
        ("v", "in2"),
        ("o", "in3"),
        ("lse", "in4"),
        ("do", "in5"),
        ("scale", "param.scale"),
        ("dq", "out0"),
        ("dk", "out1"),
        ("dv", "out2"),
        ("G", matrices),
        ("N", str(n)),
        ("M", str(m)),
        ("DK", str(dk)),
        ("DV", str(dv)),
        *strides,
    ]
    tiles = max(-(-n // block_m), -(-m // block_n))
    grid = matrices if tiles == 1 else f"{matrices} * {tiles}"
    return LaunchOp(
        "attention_backward",
        [op.q, op.k, op.v, op.output, op.lse, op.output_grad],
        [tensor_type(result) for result in op.results],
        {"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_DK": block_dk, "BLOCK_DV": block_dv},
        [ParamSlot("scale", (1,), fill(op.scale, [1]))],
        args,
        [grid, "2", "1"],
        num_warps,
        num_stages,
    )
