"""Lowering rule of the ``slice`` family: ``graph.slice`` as one gathering
launch, or as a ``kernel.reshape`` view when it keeps every element in place
(the input's own shape with step 1, or any step on a dimension of size 1).

The op's normalised starts and steps become the contract's non-negative
quantities: a dimension of step ``t < 0`` reads its ``m`` elements from the
lowest index ``start + (m - 1) * t`` upwards, mirrored (its ``FLIP`` bit), so
``x_offset`` is the logical index of the lowest element read on every
dimension and each stride is ``|t|`` times the contiguous row-major one.
"""

from __future__ import annotations

from dialects.graph.structure import SliceOp
from dialects.kernel import LaunchOp, ReshapeOp
from teeny_ir.kernels.lowering import (
    LoweringContext,
    Unlowerable,
    batch_stride_expr,
    count_expr,
    dim_expr,
    lowers,
    tensor_type,
)
from teeny_ir.kernels.slice.contract import DIMS, MAX_RANK, STRIDES
from teeny_ir.kernels.transpose.contract import contiguous_strides

BLOCK = 1024
NUM_WARPS, NUM_STAGES = 4, 1
"""A copy has no loop to pipeline."""


@lowers(SliceOp)
def lower_slice(ctx: LoweringContext, op: SliceOp) -> LaunchOp | ReshapeOp:
    """A view of an unchanged input, else one launch over the output."""
    source, result = tensor_type(op.input), tensor_type(op.result)
    shape, sizes = source.get_shape(), result.get_shape()
    if sizes == shape and all(
        step == 1 or size == 1 for step, size in zip(op.steps, shape, strict=True)
    ):
        return ReshapeOp(op.input, result)  # every start is then 0: the input itself
    if len(shape) > MAX_RANK:
        raise Unlowerable(f"a slice of rank {len(shape)} exceeds the slice family's {MAX_RANK}")
    # Image-relative strides: the batch dimension's is one image, whatever the layout.
    strides = contiguous_strides([d if k else 1 for k, d in enumerate(shape)])
    offset, flip, x_strides = 0, 0, ["0"] * MAX_RANK
    for k, (start, step, count) in enumerate(zip(op.starts, op.steps, sizes, strict=True)):
        x_strides[k] = str(abs(step) * strides[k])
        if step < 0:
            flip |= 1 << k
            start += (count - 1) * step
        offset += start * strides[k]
    out = [dim_expr(d) for d in sizes] + ["1"] * (MAX_RANK - len(sizes))
    numel = count_expr(sizes)
    return LaunchOp(
        "slice",
        [op.input],
        [result],
        {"FLIP": flip, "BLOCK": BLOCK},
        [],
        [
            ("x", "in0"),
            ("y", "out0"),
            ("numel", numel),
            ("IMAGE_IN", count_expr(shape[1:])),
            *((f"size{k}", out[k]) for k in DIMS[1:]),
            ("x_offset", str(offset)),
            *((f"x_stride{k}", x_strides[k]) for k in DIMS),
            (STRIDES["x"], batch_stride_expr(op.input)),
        ],
        [f"cdiv({numel}, {BLOCK})", "1", "1"],
        NUM_WARPS,
        NUM_STAGES,
    )
