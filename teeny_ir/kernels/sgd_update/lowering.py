"""Lowering rule of the ``sgd_update`` family: a ``graph.sgd_update`` becomes one
launch over the flat parameter. Its hyperparameters travel as the ``hyper``
parameter slot, a literal ``(lr, momentum, weight_decay)`` (rounded to f32);
without a momentum buffer, ``buf`` and ``buf_out`` are bound to the parameter
and its result with ``HAS_MOMENTUM = 0`` (never touched)."""

from __future__ import annotations

import math

from dialects.graph.optim import SgdUpdateOp
from dialects.kernel import LaunchOp, ParamSlot
from teeny_ir.core.derivations import Derivation, f32_bits, f32_from_bits
from teeny_ir.kernels.lowering import (
    LoweringContext,
    Unlowerable,
    lowers,
    tensor_type,
)
from teeny_ir.kernels.sgd_update.contract import HYPER, MAX_I32
from teeny_ir.kernels.sgd_update.tiles import NUM_STAGES, NUM_WARPS, update_block


def literal(values: tuple[float, ...]) -> Derivation:
    """A [len(values)] literal slot of ``values`` rounded once to f32 (the IR then
    shows the values the kernel reads)."""
    rounded = tuple(f32_from_bits(f32_bits(value)) for value in values)
    return Derivation("literal", (), (len(values),), values=rounded)


@lowers(SgdUpdateOp)
def lower_sgd_update(ctx: LoweringContext, op: SgdUpdateOp) -> LaunchOp:
    """One launch of ``cdiv(N, BLOCK)`` programs; results: param', then buf'."""
    numel = math.prod(tensor_type(op.param).get_shape())
    block = update_block(numel, ctx.profile)
    if numel > MAX_I32:
        raise Unlowerable(f"{numel} elements exceed the kernel's 32-bit limit")
    has_momentum = op.momentum_buffer is not None
    operands = [op.param, op.grad]
    if op.momentum_buffer is not None:
        operands.append(op.momentum_buffer)
    values = {"lr": op.lr, "momentum": op.momentum, "weight_decay": op.weight_decay}
    args = [
        ("p", "in0"),
        ("g", "in1"),
        ("buf", "in2" if has_momentum else "in0"),
        ("hyper", "param.hyper"),
        ("p_out", "out0"),
        ("buf_out", "out1" if has_momentum else "out0"),
        ("N", str(numel)),
    ]
    return LaunchOp(
        "sgd_update",
        operands,
        [tensor_type(result) for result in op.results],
        {"HAS_MOMENTUM": int(has_momentum), "BLOCK": block},
        [ParamSlot("hyper", (len(HYPER),), literal(tuple(values[name] for name in HYPER)))],
        args,
        [f"cdiv({numel}, {block})", "1", "1"],
        NUM_WARPS,
        NUM_STAGES,
    )
