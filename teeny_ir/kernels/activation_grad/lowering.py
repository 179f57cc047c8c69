"""Lowering rule of the ``activation_grad`` family: a ``graph.activation_grad``
becomes one launch over the flat index of its operands."""

from __future__ import annotations

from dialects.graph.elementwise import ActivationGradOp
from dialects.kernel import LaunchOp
from teeny_ir.core import pointwise
from teeny_ir.kernels.activation_grad.contract import MAX_I32
from teeny_ir.kernels.lowering import (
    LoweringContext,
    Unlowerable,
    count_expr,
    lowers,
    tensor_type,
)

BLOCK = 1024
INTERPRETER_BLOCK = 16384
"""The ``interpreter`` tile profile's: its cost is per program, not per element."""
NUM_WARPS, NUM_STAGES = 4, 1
"""A pointwise kernel has no loop to pipeline."""


def activation_spelling(op: ActivationGradOp) -> str:
    """The pointwise entry (with its options) whose derivative the launch renders."""
    entry = pointwise.BY_NAME[op.activation]
    return pointwise.spell(entry, pointwise.options_of(entry, op))


@lowers(ActivationGradOp)
def lower_activation_grad(ctx: LoweringContext, op: ActivationGradOp) -> LaunchOp:
    """``activation'(x) * dy`` elementwise."""
    if pointwise.BY_NAME[op.activation].derivative_triton is None:
        raise Unlowerable(f"the pointwise table has no derivative_triton for '{op.activation}'")
    shape = tensor_type(op.input).get_shape()
    static = 1
    for size in shape:
        static *= max(size, 1)
    if static > MAX_I32:
        raise Unlowerable("more than 2**31 - 1 elements exceed the kernel's 32-bit limit")
    numel = count_expr(shape)
    block = INTERPRETER_BLOCK if ctx.profile == "interpreter" else BLOCK
    return LaunchOp(
        "activation_grad",
        [op.input, op.grad],
        [tensor_type(op.result)],
        {"ACTIVATION": activation_spelling(op), "BLOCK": block},
        [],
        [("x", "in0"), ("dy", "in1"), ("dx", "out0"), ("numel", numel)],
        [f"cdiv({numel}, {block})", "1", "1"],
        NUM_WARPS,
        NUM_STAGES,
    )
