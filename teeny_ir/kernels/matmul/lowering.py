"""Lowering rule of the ``matmul`` family: a ``graph.matmul`` becomes one launch
whose operands are both matrices (a weight operand too: the lowering driver
materialises a ``graph.param`` that a launch takes as an operand). The batch is
collapsed into at most two broadcast groups (`collapse_batch`); the epilogue's
scale is a ``fill(1.0)`` slot and its shift ``identity(bias)`` (the bias
fuse-epilogues may have folded in, which must be a ``graph.param``: the slot
reads it from the weights) or ``fill(0.0)``; ``ACTIVATION`` is the op's
activation. Operands must be contiguous (the family takes no batch-strided
views)."""

from __future__ import annotations

from dialects.graph.linear import MatmulOp
from dialects.graph.param import ParamOp
from dialects.kernel import LaunchOp, ParamSlot
from teeny_ir.core.derivations import fill, identity
from teeny_ir.core.symbols import BATCH
from teeny_ir.kernels.linear.tiles import GROUP_M, launch_config, pick_tiles
from teeny_ir.kernels.lowering import LoweringContext, Unlowerable, dim_expr, lowers, tensor_type
from teeny_ir.kernels.matmul.contract import BatchGroup, collapse_batch

_NO_GROUP = BatchGroup(1, False, 0, 0)


@lowers(MatmulOp)
def lower_matmul(ctx: LoweringContext, op: MatmulOp) -> LaunchOp:
    """A batched matmul as one ``matmul`` launch over every matrix of the batch."""
    a_shape = tensor_type(op.lhs).get_shape()
    b_shape = tensor_type(op.rhs).get_shape()
    y_shape = tensor_type(op.result).get_shape()
    try:
        groups = collapse_batch(a_shape, b_shape, y_shape)
    except ValueError as err:
        raise Unlowerable(str(err)) from None
    outer, inner = ([_NO_GROUP] * 2 + groups)[-2:]
    m, k, n = a_shape[-2], a_shape[-1], b_shape[-1]
    m_expr = dim_expr(m)
    dynamic_m = m_expr == BATCH
    block_m, block_n, block_k = pick_tiles(None if dynamic_m else m, n, k)
    num_warps, num_stages = launch_config(block_m, block_n)
    shift = fill(0.0, [n])
    if op.bias is not None:
        if not isinstance(bias := op.bias.owner, ParamOp):
            raise Unlowerable(
                "its bias is not a graph.param (the matmul family reads it through its "
                "shift slot, derived from weights)"
            )
        shift = identity(bias.param_name.data, [n])
    params = [
        ParamSlot("scale", (n,), fill(1.0, [n])),
        ParamSlot("shift", (n,), shift),
    ]
    constexprs: dict[str, int | str] = {
        "BLOCK_M": block_m,
        "BLOCK_N": block_n,
        "BLOCK_K": block_k,
        "GROUP_M": GROUP_M,
        "ACTIVATION": op.activation,
    }
    args = [
        ("a", "in0"),
        ("b", "in1"),
        ("scale", "param.scale"),
        ("shift", "param.shift"),
        ("y", "out0"),
        ("M", m_expr),
        ("N", str(n)),
        ("K", str(k)),
        ("G0", outer.size),
        ("G1", inner.size),
        ("a_stride0", str(outer.a_stride)),
        ("a_stride1", str(inner.a_stride)),
        ("b_stride0", str(outer.b_stride)),
        ("b_stride1", str(inner.b_stride)),
    ]
    matrices = [g.size for g in groups if g.size != "1"]
    tiles = [*matrices, f"cdiv({m_expr}, {block_m})", f"cdiv({n}, {block_n})"]
    grid = [" * ".join(tiles), "1", "1"]
    return LaunchOp(
        "matmul",
        [op.lhs, op.rhs],
        [tensor_type(op.result)],
        constexprs,
        params,
        args,
        grid,
        num_warps,
        num_stages,
    )
