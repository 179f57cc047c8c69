"""Lowering rules of the ``softmax`` family: ``graph.softmax`` and
``graph.log_softmax`` along any axis, each as one launch over the rows of the
operand's row view, with the operand's and result's batch strides as dims."""

from __future__ import annotations

import math

from dialects.graph.reduce import LogSoftmaxOp, SoftmaxOp
from dialects.kernel import LaunchOp
from teeny_ir.core.symbols import BATCH, batch_times
from teeny_ir.kernels.lowering import (
    LoweringContext,
    Unlowerable,
    batch_stride_expr,
    dim_expr,
    lowers,
    tensor_type,
)
from teeny_ir.kernels.softmax.rows import MAX_EXTENT, MAX_I32
from teeny_ir.kernels.softmax.tiles import launch_config, row_tiles


def view_dims(shape: tuple[int, ...], batch: bool, first: int, last: int) -> list[tuple[str, str]]:
    """``N``, ``RB``, ``OUTER``, ``R``, ``INNER`` of ``shape`` reduced over the batch
    (if ``batch``) and the axes ``[first, last)`` (as
    `teeny_ir.kernels.softmax.rows.row_dims`), as expressions over the batch ``B``;
    raises `Unlowerable` past the 32-bit limits of the row kernels."""
    if math.prod(shape[1:]) > MAX_I32:
        raise Unlowerable("an image of more than 2**31 - 1 elements exceeds the row kernels")
    batch_size = dim_expr(shape[0])
    static = {
        "OUTER": math.prod(shape[1:first]),
        "R": math.prod(shape[first:last]),
        "INNER": math.prod(shape[last:]),
    }
    if static["R"] > MAX_EXTENT:
        raise Unlowerable(
            f"rows of R = {static['R']} elements exceed the row kernels' {MAX_EXTENT}"
        )
    return [
        ("N", "1" if batch else batch_size),
        ("RB", batch_size if batch else "1"),
        *((name, str(value)) for name, value in static.items()),
    ]


def rows_expr(dims: list[tuple[str, str]]) -> str:
    """``N * OUTER * INNER`` as an expression over ``B``."""
    values = dict(dims)
    static = int(values["OUTER"]) * int(values["INNER"])
    if values["N"] == BATCH:
        return batch_times(static)
    return str(int(values["N"]) * static)


def _lower(op: SoftmaxOp | LogSoftmaxOp, log: bool) -> LaunchOp:
    shape = tuple(tensor_type(op.input).get_shape())
    axis = op.axis
    run = (axis, axis + 1) if axis else (len(shape), len(shape))
    dims = view_dims(shape, axis == 0, *run)
    block_rows, block_r = row_tiles(int(dict(dims)["R"]))
    num_warps, num_stages = launch_config()
    args = [
        ("x", "in0"),
        ("y", "out0"),
        *dims,
        ("x_batch_stride", batch_stride_expr(op.input)),
        ("y_batch_stride", batch_stride_expr(op.result)),
    ]
    return LaunchOp(
        "softmax",
        [op.input],
        [tensor_type(op.result)],
        {"LOG": int(log), "BLOCK_ROWS": block_rows, "BLOCK_R": block_r},
        [],
        args,
        [f"cdiv({rows_expr(dims)}, {block_rows})", "1", "1"],
        num_warps,
        num_stages,
    )


@lowers(SoftmaxOp)
def lower_softmax(ctx: LoweringContext, op: SoftmaxOp) -> LaunchOp:
    """``exp(x - max) / sum(exp(x - max))`` along ``axis``."""
    return _lower(op, log=False)


@lowers(LogSoftmaxOp)
def lower_log_softmax(ctx: LoweringContext, op: LogSoftmaxOp) -> LaunchOp:
    """``x - max - log(sum(exp(x - max)))`` along ``axis``."""
    return _lower(op, log=True)
