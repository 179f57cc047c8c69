"""Lowering rules of the ``reduce_extremum`` family: ``graph.reduce_max`` and
``graph.reduce_min`` as one launch over the rows of the operand's row view, on
the same axes the ``reduce`` family takes (`teeny_ir.kernels.reduce.lowering`)."""

from __future__ import annotations

import math

from dialects.graph.reduce import ReduceMaxOp, ReduceMinOp
from dialects.kernel import LaunchOp
from teeny_ir.kernels.lowering import (
    LoweringContext,
    Unlowerable,
    batch_stride_expr,
    lowers,
    tensor_type,
)
from teeny_ir.kernels.reduce.lowering import reduced_run
from teeny_ir.kernels.softmax.lowering import rows_expr, view_dims
from teeny_ir.kernels.softmax.rows import MAX_I32
from teeny_ir.kernels.softmax.tiles import launch_config, reduce_tiles


@lowers(ReduceMaxOp, ReduceMinOp)
def lower_reduce_extremum(ctx: LoweringContext, op: ReduceMaxOp | ReduceMinOp) -> LaunchOp:
    """The maximum or minimum over ``axes`` (``keepdims`` or not: the same elements)."""
    shape = tuple(tensor_type(op.input).get_shape())
    out = tuple(tensor_type(op.result).get_shape())
    dims = view_dims(shape, *reduced_run(shape, tuple(op.axes)))
    y_image = math.prod(out[1:])
    if y_image > MAX_I32:
        raise Unlowerable("a result image of more than 2**31 - 1 elements exceeds the row kernels")
    values = dict(dims)
    block_rows, block_r = reduce_tiles(
        int(values["OUTER"]) * int(values["INNER"]),
        int(values["R"]),
        values["RB"] != "1",
        ctx.profile,
    )
    num_warps, num_stages = launch_config()
    args = [
        ("x", "in0"),
        ("y", "out0"),
        *dims,
        ("Y_IMAGE", str(y_image)),
        ("x_batch_stride", batch_stride_expr(op.input)),
        ("y_batch_stride", batch_stride_expr(op.result)),
    ]
    return LaunchOp(
        "reduce_extremum",
        [op.input],
        [tensor_type(op.result)],
        {"MAX": int(isinstance(op, ReduceMaxOp)), "BLOCK_ROWS": block_rows, "BLOCK_R": block_r},
        [],
        args,
        [f"cdiv({rows_expr(dims)}, {block_rows})", "1", "1"],
        num_warps,
        num_stages,
    )
