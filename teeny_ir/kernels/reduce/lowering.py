"""Lowering rules of the ``reduce`` family: ``graph.reduce_sum`` and
``graph.reduce_mean`` as one launch over the rows of the operand's row view.

The reduced axes other than the batch (axis 0, which the kernel folds into its
loop over images) must form one contiguous run once the axes of size 1 are left
out (those may be reduced or kept freely): ``axes [0, 1, 3]`` of ``[B, C, 1, W]``
is the batch and the run ``[1, 4)``. Any other set of axes (``axes [1, 3]`` of
``[B, C, H, W]`` with ``H > 1``) is refused, naming the axis kept between them."""

from __future__ import annotations

import math

from xdsl.ir import Operation

from dialects.graph.reduce import ReduceMeanOp, ReduceSumOp, ReductionOp
from dialects.kernel import LaunchOp
from teeny_ir.kernels.lowering import (
    LoweringContext,
    Unlowerable,
    batch_stride_expr,
    lowers,
    tensor_type,
)
from teeny_ir.kernels.softmax.lowering import rows_expr, view_dims
from teeny_ir.kernels.softmax.rows import MAX_I32
from teeny_ir.kernels.softmax.tiles import launch_config, reduce_tiles


def reduced_run(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[bool, int, int]:
    """How the row view sees the reduction over ``axes`` of ``shape``: whether the
    batch (axis 0) is reduced, and the run ``[first, last)`` of the other reduced
    axes of size other than 1 (``[rank, rank)`` if there is none). Raises
    `Unlowerable` if an axis of size other than 1 inside that run is kept."""
    sized = sorted(axis for axis in axes if axis and shape[axis] != 1)
    batch = 0 in axes and shape[0] != 1
    if not sized:
        return batch, len(shape), len(shape)
    first, last = sized[0], sized[-1] + 1
    kept = [k for k in range(first, last) if k not in axes and shape[k] != 1]
    if kept:
        raise Unlowerable(
            f"the reduce family reduces the batch and one contiguous run of the other axes, "
            f"but axes {sorted(axes)} keep axis {kept[0]} of size {shape[kept[0]]} between "
            f"{sized[0]} and {sized[-1]}"
        )
    return batch, first, last


def row_launch(
    ctx: LoweringContext, op: Operation, family: str, combine: tuple[str, int]
) -> LaunchOp:
    """The launch of a reduction ``op`` over its ``axes`` by ``family`` (``reduce``
    or ``reduce_extremum``: the same row view, arguments and tiles), with the
    family's combining constexpr ``combine`` (``("MEAN", 1)``, ``("MAX", 0)``)."""
    assert isinstance(op, ReductionOp)
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
        family,
        [op.input],
        [tensor_type(op.result)],
        {combine[0]: combine[1], "BLOCK_ROWS": block_rows, "BLOCK_R": block_r},
        [],
        args,
        [f"cdiv({rows_expr(dims)}, {block_rows})", "1", "1"],
        num_warps,
        num_stages,
    )


@lowers(ReduceSumOp)
def lower_reduce_sum(ctx: LoweringContext, op: ReduceSumOp) -> LaunchOp:
    """The sum over ``axes`` (``keepdims`` or not: the same elements)."""
    return row_launch(ctx, op, "reduce", ("MEAN", 0))


@lowers(ReduceMeanOp)
def lower_reduce_mean(ctx: LoweringContext, op: ReduceMeanOp) -> LaunchOp:
    """The sum over ``axes`` divided by the product of their sizes."""
    return row_launch(ctx, op, "reduce", ("MEAN", 1))
