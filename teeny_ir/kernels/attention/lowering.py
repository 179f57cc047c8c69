"""Lowering rule of the ``attention`` family: a ``graph.attention`` becomes one
launch of ``G * cdiv(N, BLOCK_M)`` programs, ``G`` the product of the batch
dimensions (an expression over ``B`` when dimension 0 is dynamic). The layout
flags become element strides (`layout_strides`), so no transpose is
materialised around the attention; the scale is the one-float slot ``scale``
(``fill(scale)``). Refused: a head dimension above 256 and a matrix past the
kernel's 32-bit offsets (rows times a head block past 2**31). Operands must be contiguous (the family takes no
batch-strided views)."""

from __future__ import annotations

import math

from dialects.graph.attention import AttentionOp, logical_shape
from dialects.kernel import LaunchOp, ParamSlot
from teeny_ir.core.derivations import fill
from teeny_ir.core.symbols import DYNAMIC, batch_times
from teeny_ir.kernels.attention.contract import MAX_I32, layout_strides
from teeny_ir.kernels.attention.tiles import MAX_HEAD_DIM, attention_tiles, launch_config
from teeny_ir.kernels.lowering import LoweringContext, Unlowerable, lowers, tensor_type


def matrices_expr(batch: tuple[int, ...]) -> str:
    """The number of matrices of batch dimensions ``batch`` (only the first may
    be dynamic) as an expression over ``B``."""
    static = math.prod(d for d in batch if d != DYNAMIC)
    return batch_times(static) if DYNAMIC in batch else str(static)


@lowers(AttentionOp)
def lower_attention(ctx: LoweringContext, op: AttentionOp) -> LaunchOp:
    """One ``attention`` launch over every matrix of the batch; results ``o``, ``lse``."""
    flags = op.transposed
    q = logical_shape(tuple(tensor_type(op.q).get_shape()), flags[0])
    v = logical_shape(tuple(tensor_type(op.v).get_shape()), flags[2])
    n, dk = q[-2:]
    m, dv = v[-2:]
    for what, size in (("Dk", dk), ("Dv", dv)):
        if size > MAX_HEAD_DIM:
            raise Unlowerable(
                f"head dimension {what} = {size} exceeds the attention kernel's "
                f"{MAX_HEAD_DIM} (one head block holds the whole head)"
            )
    block_m, block_n, block_dk, block_dv = attention_tiles(n, m, dk, dv, ctx.profile)
    # Row offsets reach the padded extents (masked lanes too) times a head block.
    reach = (max(n, m) + max(block_m, block_n)) * max(block_dk, block_dv)
    if reach > MAX_I32:
        raise Unlowerable(
            f"{max(n, m)} rows of heads up to {max(block_dk, block_dv)} wide exceed the "
            "attention kernel's 32-bit offsets"
        )
    num_warps, num_stages = launch_config(block_dk, block_dv, ctx.profile)
    matrices = matrices_expr(tuple(q[:-2]))
    strides = [
        (f"{name}_{axis}", str(stride))
        for name, rows, features, flag in zip(
            "qkvo", (n, m, m, n), (dk, dk, dv, dv), flags, strict=True
        )
        for axis, stride in zip(("sr", "sd"), layout_strides(rows, features, flag), strict=True)
    ]
    args = [
        ("q", "in0"),
        ("k", "in1"),
        ("v", "in2"),
        ("scale", "param.scale"),
        ("o", "out0"),
        ("lse", "out1"),
        ("G", matrices),
        ("N", str(n)),
        ("M", str(m)),
        ("DK", str(dk)),
        ("DV", str(dv)),
        *strides,
    ]
    tiles = [] if matrices == "1" else [matrices]
    grid = " * ".join([*tiles, f"cdiv({n}, {block_m})"])
    return LaunchOp(
        "attention",
        [op.q, op.k, op.v],
        [tensor_type(op.output), tensor_type(op.lse)],
        {"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_DK": block_dk, "BLOCK_DV": block_dv},
        [ParamSlot("scale", (1,), fill(op.scale, [1]))],
        args,
        [grid, "1", "1"],
        num_warps,
        num_stages,
    )
