"""Lowering rule of the ``adamw_update`` family: a ``graph.adamw_update`` becomes
one launch of one program over the flat parameter (see the contract: in place,
the step forbids a wider grid). Its hyperparameters and the constants derived
from them travel as the ``hyper`` parameter slot, a literal computed here in
float64 and rounded once to f32."""

from __future__ import annotations

import math

from dialects.graph.optim import AdamwUpdateOp
from dialects.kernel import LaunchOp, ParamSlot
from teeny_ir.kernels.adamw_update.contract import HYPER, MAX_I32
from teeny_ir.kernels.lowering import (
    LoweringContext,
    Unlowerable,
    lowers,
    tensor_type,
)
from teeny_ir.kernels.sgd_update.lowering import literal
from teeny_ir.kernels.sgd_update.tiles import NUM_STAGES, NUM_WARPS, update_block


def _ln(beta: float) -> float:
    return math.log(beta) if beta > 0 else -math.inf


def hyper_values(op: AdamwUpdateOp) -> tuple[float, ...]:
    """The ``hyper`` slot's values, in `HYPER` order (float64, before rounding)."""
    values = {
        "lr": op.lr,
        "beta1": op.beta1,
        "beta2": op.beta2,
        "eps": op.eps,
        "decay": 1 - op.lr * op.weight_decay,
        "one_minus_beta1": 1 - op.beta1,
        "one_minus_beta2": 1 - op.beta2,
        "ln_beta1": _ln(op.beta1),
        "ln_beta2": _ln(op.beta2),
    }
    return tuple(values[name] for name in HYPER)


@lowers(AdamwUpdateOp)
def lower_adamw_update(ctx: LoweringContext, op: AdamwUpdateOp) -> LaunchOp:
    """One launch of one program; results: param', exp_avg', exp_avg_sq', step'."""
    numel = math.prod(tensor_type(op.param).get_shape())
    if numel > MAX_I32:
        raise Unlowerable(f"{numel} elements exceed the kernel's 32-bit limit")
    args = [
        ("p", "in0"),
        ("g", "in1"),
        ("m", "in2"),
        ("v", "in3"),
        ("step", "in4"),
        ("hyper", "param.hyper"),
        ("p_out", "out0"),
        ("m_out", "out1"),
        ("v_out", "out2"),
        ("step_out", "out3"),
        ("N", str(numel)),
    ]
    return LaunchOp(
        "adamw_update",
        [op.param, op.grad, op.exp_avg, op.exp_avg_sq, op.step],
        [tensor_type(result) for result in op.results],
        {"BLOCK": update_block(numel, ctx.profile)},
        [ParamSlot("hyper", (len(HYPER),), literal(hyper_values(op)))],
        args,
        ["1", "1", "1"],
        NUM_WARPS,
        NUM_STAGES,
    )
