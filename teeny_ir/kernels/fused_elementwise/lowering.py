"""Lowering rule of the ``fused_elementwise`` family: a `graph.fused_pointwise`
without a trailing reduction (``fused_reduce`` takes those) as one launch over its (left-padded rank-6) output, each input read through
broadcasting strides and its batch stride, so a split's part may be read and a
concat's operand written in place (`teeny_ir.kernels.views`)."""

from __future__ import annotations

from dialects.graph.fused_pointwise import FusedPointwiseOp
from dialects.kernel import LaunchOp
from teeny_ir.core.pointwise_program import MAX_INPUTS
from teeny_ir.kernels.elementwise.contract import RANK, padded
from teeny_ir.kernels.fused_elementwise.contract import BATCH_STRIDES, INPUTS, broadcast_strides
from teeny_ir.kernels.lowering import (
    LoweringContext,
    Unlowerable,
    batch_stride_expr,
    count_expr,
    dim_expr,
    lowers,
    tensor_type,
)

BLOCK = 1024
NUM_WARPS, NUM_STAGES = 4, 1
"""A pointwise kernel has no loop to pipeline."""


def _no_reduction(op: FusedPointwiseOp) -> bool:
    return op.reduction is None


@lowers(FusedPointwiseOp, when=_no_reduction)
def lower_fused_pointwise(ctx: LoweringContext, op: FusedPointwiseOp) -> LaunchOp:
    """One launch; unused input pointers are bound to ``in0`` with its dims."""
    program = op.program
    result = tensor_type(op.result)
    output = result.get_shape()
    for value in (*op.inputs, op.result):
        rank = len(tensor_type(value).get_shape())
        if rank > RANK:
            raise Unlowerable(f"rank {rank} exceeds the fused_elementwise family's {RANK}")
    if len(op.inputs) > MAX_INPUTS:
        raise Unlowerable(f"{len(op.inputs)} inputs exceed the family's {MAX_INPUTS}")
    numel, sizes = count_expr(output), [dim_expr(d) for d in padded(output)]
    args: list[tuple[str, str]] = []
    dims: list[tuple[str, str]] = []
    for k, name in enumerate(INPUTS):
        source = k if k < len(op.inputs) else 0
        value = op.inputs[source]
        shape = tensor_type(value).get_shape()
        args.append((name, f"in{source}"))
        strides = broadcast_strides(shape, output)
        dims += [(f"{name}_stride{d}", str(s)) for d, s in enumerate(strides)]
        dims.append((f"{name}_image", count_expr(shape[1:])))
        dims.append((BATCH_STRIDES[name], batch_stride_expr(value)))
    return LaunchOp(
        "fused_elementwise",
        list(op.inputs),
        [result],
        {"PROGRAM": program.text(), "INPUTS": program.inputs, "BLOCK": BLOCK},
        [],
        [
            *args,
            ("out", "out0"),
            ("numel", numel),
            *((f"size{k}", sizes[k]) for k in range(1, RANK)),
            *dims,
            ("out_image", count_expr(output[1:])),
            (BATCH_STRIDES["out"], batch_stride_expr(op.result)),
        ],
        [f"cdiv({numel}, {BLOCK})", "1", "1"],
        NUM_WARPS,
        NUM_STAGES,
    )
