"""Lowering rule of the ``fused_reduce`` family: a `graph.fused_pointwise` with
a trailing reduction as one launch over the rows of its operand's row view (the
``reduce`` family's, `teeny_ir.kernels.reduce.lowering.reduced_run`), each
input read through its flags and batch stride (so a split's part is read in
place). `unfusable` is the rule fuse-pointwise asks before it absorbs a
reduction, so that every fused reduction it makes lowers."""

from __future__ import annotations

import math
from collections.abc import Sequence

from dialects.graph.fused_pointwise import FusedPointwiseOp, program_shape
from dialects.graph.shapes import format_shape
from dialects.kernel import LaunchOp
from teeny_ir.core.pointwise_program import MAX_INPUTS
from teeny_ir.kernels.fused_reduce.contract import INPUTS, flags
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


def unfusable(
    inputs: Sequence[Sequence[int]], operand: Sequence[int], axes: Sequence[int]
) -> str | None:
    """Why a program over inputs of ``inputs`` shapes (its value of shape
    ``operand``) and a reduction over ``axes`` cannot be one ``fused_reduce``
    launch, or None when it can."""
    for index, shape in enumerate(inputs):
        if flags(shape, operand) is None:
            return (
                f"input {index} of shape {format_shape(shape)} broadcasts inside an image of "
                f"the reduced operand {format_shape(operand)}"
            )
    if not operand:
        return "the reduced operand is a scalar"
    try:
        batch, first, last = reduced_run(tuple(operand), tuple(axes))
        view_dims(tuple(operand), batch, first, last)
    except Unlowerable as err:
        return str(err)
    return None


def _has_reduction(op: FusedPointwiseOp) -> bool:
    return op.reduction is not None


@lowers(FusedPointwiseOp, when=_has_reduction)
def lower_fused_reduce(ctx: LoweringContext, op: FusedPointwiseOp) -> LaunchOp:
    """One launch; unused input pointers are bound to ``in0`` with its dims."""
    reduction = op.reduction
    assert reduction is not None
    program = op.program
    if len(op.inputs) > MAX_INPUTS:
        raise Unlowerable(f"{len(op.inputs)} inputs exceed the family's {MAX_INPUTS}")
    shapes = [tuple(tensor_type(v).get_shape()) for v in op.inputs]
    operand = program_shape(program, shapes)
    reason = unfusable(shapes, operand, reduction.axes)
    if reason is not None:
        raise Unlowerable(reason)
    dims = view_dims(tuple(operand), *reduced_run(tuple(operand), reduction.axes))
    out = tuple(tensor_type(op.result).get_shape())
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
    pointers: list[tuple[str, str]] = []
    input_dims: list[tuple[str, str]] = []
    for k, name in enumerate(INPUTS):
        source = k if k < len(op.inputs) else 0
        found = flags(shapes[source], operand)
        assert found is not None  # unfusable said so
        per_image, per_element = found
        pointers.append((name, f"in{source}"))
        input_dims += [
            (f"{name}_batch_stride", batch_stride_expr(op.inputs[source])),
            (f"{name}_per_image", str(per_image)),
            (f"{name}_per_element", str(per_element)),
        ]
    return LaunchOp(
        "fused_reduce",
        list(op.inputs),
        [tensor_type(op.result)],
        {
            "PROGRAM": program.text(),
            "INPUTS": program.inputs,
            "MEAN": int(reduction.kind == "mean"),
            "BLOCK_ROWS": block_rows,
            "BLOCK_R": block_r,
        },
        [],
        [
            *pointers,
            ("y", "out0"),
            *dims,
            ("Y_IMAGE", str(y_image)),
            ("y_batch_stride", batch_stride_expr(op.result)),
            *input_dims,
        ],
        [f"cdiv({rows_expr(dims)}, {block_rows})", "1", "1"],
        num_warps,
        num_stages,
    )
