"""Lowering rule of the ``transpose`` family: ``graph.transpose`` as one copy
launch, or as a ``kernel.reshape`` view where the permutation keeps every
image's elements in the same order.

The view rule: a permutation that only moves dimensions of size 1 (the others
keep their relative order) and keeps dimension 0's size leaves the bytes as
they are, in another shape, so it is `is_view`. Every other permutation copies,
the output contiguous and the input read through its batch stride.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DYNAMIC_INDEX

from dialects.graph.structure import TransposeOp
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
from teeny_ir.kernels.transpose.contract import DIMS, MAX_RANK, STRIDES, contiguous_strides

BLOCK = 1024
NUM_WARPS, NUM_STAGES = 4, 1
"""A copy has no loop to pipeline."""


def is_view(shape: Sequence[int], perm: Sequence[int]) -> bool:
    """Whether permuting ``shape`` by ``perm`` keeps the row-major order of the
    elements and dimension 0's size: then each image is the same elements in
    the same order, and the transpose is a reshape."""
    moved = [p for p in perm if shape[p] != 1]
    return moved == sorted(moved) and shape[perm[0]] == shape[0]


@lowers(TransposeOp)
def lower_transpose(ctx: LoweringContext, op: TransposeOp) -> LaunchOp | ReshapeOp:
    """A view where `is_view`, else one launch over the output."""
    source, result = tensor_type(op.input), tensor_type(op.result)
    shape, perm = source.get_shape(), list(op.perm)
    if DYNAMIC_INDEX in shape and perm[0] != 0:
        raise Unlowerable(
            "a transpose that moves the dynamic batch out of dimension 0 has no kernel "
            f"(perm {perm}): the plan has one batch symbol, and every shape keeps it "
            "at dimension 0"
        )
    if is_view(shape, perm):
        return ReshapeOp(op.input, result)
    if len(shape) > MAX_RANK:
        raise Unlowerable(
            f"a transpose of rank {len(shape)} exceeds the transpose family's {MAX_RANK}"
        )
    out = [dim_expr(d) for d in result.get_shape()]
    out += ["1"] * (MAX_RANK - len(out))
    # Image-relative strides: the batch dimension's is one image, whatever the layout.
    image = [d if k else 1 for k, d in enumerate(shape)]
    strides = contiguous_strides(image)
    x_strides = [str(strides[perm[k]]) if k < len(perm) else "0" for k in DIMS]
    numel = count_expr(shape)
    return LaunchOp(
        "transpose",
        [op.input],
        [result],
        {"BLOCK": BLOCK},
        [],
        [
            ("x", "in0"),
            ("y", "out0"),
            ("numel", numel),
            ("IMAGE_IN", count_expr(shape[1:])),
            *((f"size{k}", out[k]) for k in DIMS[1:]),
            *((f"x_stride{k}", x_strides[k]) for k in DIMS),
            (STRIDES["x"], batch_stride_expr(op.input)),
        ],
        [f"cdiv({numel}, {BLOCK})", "1", "1"],
        NUM_WARPS,
        NUM_STAGES,
    )
