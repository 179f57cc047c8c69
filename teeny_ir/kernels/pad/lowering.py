"""Lowering rule of the ``pad`` family: ``graph.pad`` as one launch over the
output, or a ``kernel.reshape`` view when it pads nothing.

Each begin pad becomes its non-negative parts (``before`` pads, ``crop``
crops); end pads need no argument (the output's size bounds the index). The
constant mode's value travels in the ``value`` parameter slot, a literal
rounded once to f32; the other modes bind the same slot and never read it.
"""

from __future__ import annotations

from dialects.graph.structure import PadOp
from dialects.kernel import LaunchOp, ParamSlot, ReshapeOp
from teeny_ir.core.derivations import Derivation, f32_bits, f32_from_bits
from teeny_ir.kernels.lowering import (
    LoweringContext,
    Unlowerable,
    batch_stride_expr,
    count_expr,
    dim_expr,
    lowers,
    tensor_type,
)
from teeny_ir.kernels.pad.contract import DIMS, MAX_I32, MAX_RANK, MODES, STRIDES

BLOCK = 1024
NUM_WARPS, NUM_STAGES = 4, 1
"""A copy has no loop to pipeline."""


@lowers(PadOp)
def lower_pad(ctx: LoweringContext, op: PadOp) -> LaunchOp | ReshapeOp:
    """A view when every pad and interior is 0, else one launch over the output."""
    source, result = tensor_type(op.input), tensor_type(op.result)
    shape, sizes = source.get_shape(), result.get_shape()
    if not any(op.pads) and not any(op.interior):
        return ReshapeOp(op.input, result)
    if len(shape) > MAX_RANK:
        raise Unlowerable(f"a pad of rank {len(shape)} exceeds the pad family's {MAX_RANK}")
    rest = MAX_RANK - len(shape)
    begins = list(op.begins) + [0] * rest
    if any(size + max(-b, 0) > MAX_I32 for size, b in zip(sizes, begins, strict=False)):
        raise Unlowerable("a pad whose source indices exceed the kernel's 32-bit indices")
    out = [dim_expr(d) for d in sizes] + ["1"] * rest
    ins = [dim_expr(d) for d in shape] + ["1"] * rest
    steps = [inner + 1 for inner in op.interior] + [1] * rest
    numel = count_expr(sizes)
    fill = f32_from_bits(f32_bits(op.value))
    return LaunchOp(
        "pad",
        [op.input],
        [result],
        {"MODE": MODES.index(op.mode), "BLOCK": BLOCK},
        [ParamSlot("value", (1,), Derivation("literal", (), (1,), values=(fill,)))],
        [
            ("x", "in0"),
            ("value", "param.value"),
            ("y", "out0"),
            ("numel", numel),
            ("IMAGE_IN", count_expr(shape[1:])),
            *((f"size{k}", out[k]) for k in DIMS[1:]),
            *((f"n{k}", ins[k]) for k in DIMS),
            *((f"before{k}", str(max(begins[k], 0))) for k in DIMS),
            *((f"crop{k}", str(max(-begins[k], 0))) for k in DIMS),
            *((f"step{k}", str(steps[k])) for k in DIMS),
            (STRIDES["x"], batch_stride_expr(op.input)),
        ],
        [f"cdiv({numel}, {BLOCK})", "1", "1"],
        NUM_WARPS,
        NUM_STAGES,
    )
