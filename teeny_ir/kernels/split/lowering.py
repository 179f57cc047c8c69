"""Lowering rule of the ``split`` family: ``graph.split`` into 1 to 4 parts as one
launch with one result per part."""

from __future__ import annotations

from dialects.graph.structure import SplitOp
from dialects.kernel import LaunchOp
from teeny_ir.kernels.concat.lowering import BLOCK, NUM_STAGES, NUM_WARPS, check_parts, row_dims
from teeny_ir.kernels.concat.rows import PARTS
from teeny_ir.kernels.lowering import lowers, tensor_type


@lowers(SplitOp)
def lower_split(op: SplitOp) -> LaunchOp:
    """One launch over the source; output slots past the op's are bound to ``out0``
    with ``INNER_k = 0`` (never written)."""
    outputs = list(op.outputs)
    check_parts(len(outputs), "parts", "split")
    (numel, (_, inner), *inners) = row_dims(op.input, outputs, op.axis)
    pointers = [(f"y{k}", f"out{k if k < len(outputs) else 0}") for k in PARTS]
    return LaunchOp(
        "split",
        [op.input],
        [tensor_type(v) for v in outputs],
        {"N_OUTPUTS": len(outputs), "BLOCK": BLOCK},
        [],
        [("x", "in0"), *pointers, numel, ("INNER_IN", inner), *inners],
        [f"cdiv({numel[1]}, {BLOCK})", "1", "1"],
        NUM_WARPS,
        NUM_STAGES,
    )
