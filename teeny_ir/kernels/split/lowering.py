"""Lowering rule of the ``split`` family: ``graph.split`` into 1 to 4 parts as one
launch with one result per part."""

from __future__ import annotations

from dialects.graph.structure import SplitOp
from dialects.kernel import LaunchOp
from teeny_ir.kernels.concat.lowering import (
    BLOCK,
    NUM_STAGES,
    NUM_WARPS,
    check_parts,
    image_dims,
    row_dims,
    slot,
)
from teeny_ir.kernels.concat.rows import PARTS
from teeny_ir.kernels.lowering import LoweringContext, batch_stride_expr, lowers, tensor_type
from teeny_ir.kernels.split.contract import STRIDES


@lowers(SplitOp)
def lower_split(ctx: LoweringContext, op: SplitOp) -> LaunchOp:
    """One launch over the source; output slots past the op's are bound to ``out0``
    with ``INNER_k = 0`` (never written)."""
    outputs = list(op.outputs)
    check_parts(len(outputs), "parts", "split")
    (numel, (_, inner), *inners) = row_dims(op.input, outputs, op.axis)
    ((_, image), *images) = image_dims(op.input, outputs)
    pointers = [(f"y{k}", f"out{slot(outputs, k)}") for k in PARTS]
    strides = [(STRIDES["x"], batch_stride_expr(op.input))]
    strides += [(STRIDES[f"y{k}"], batch_stride_expr(outputs[slot(outputs, k)])) for k in PARTS]
    return LaunchOp(
        "split",
        [op.input],
        [tensor_type(v) for v in outputs],
        {"N_OUTPUTS": len(outputs), "BLOCK": BLOCK},
        [],
        [
            ("x", "in0"),
            *pointers,
            numel,
            ("INNER_IN", inner),
            *inners,
            ("IMAGE_IN", image),
            *images,
            *strides,
        ],
        [f"cdiv({numel[1]}, {BLOCK})", "1", "1"],
        NUM_WARPS,
        NUM_STAGES,
    )
