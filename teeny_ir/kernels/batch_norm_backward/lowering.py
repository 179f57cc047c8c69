"""Lowering rule of the ``batch_norm_backward`` family: a
``graph.batch_norm_backward`` becomes one launch of ``cdiv(C, BLOCK_C)`` programs
(results: dx, dgamma, dbeta). Its operands x, gamma and dy are tensors; ``eps``
travels as the [1] ``hyper`` slot (rounded once to f32). The dims, the tiles
and the refusals are ``batch_norm_train``'s (`bn_dims`, `bn_tiles`)."""

from __future__ import annotations

from dialects.graph.norm import BatchNormBackwardOp
from dialects.kernel import LaunchOp, ParamSlot
from teeny_ir.kernels.batch_norm_backward.contract import HYPER
from teeny_ir.kernels.batch_norm_train.lowering import bn_dims
from teeny_ir.kernels.batch_norm_train.tiles import bn_tiles, launch_config
from teeny_ir.kernels.lowering import LoweringContext, lowers, tensor_type
from teeny_ir.kernels.sgd_update.lowering import literal


@lowers(BatchNormBackwardOp)
def lower_batch_norm_backward(ctx: LoweringContext, op: BatchNormBackwardOp) -> LaunchOp:
    """One launch; operands x, gamma, dy."""
    dims, channels, plane = bn_dims(
        "batch_norm_backward",
        op.input,
        {"x": op.input, "dy": op.grad, "dx": op.input_grad},
    )
    block_c, block_r = bn_tiles(channels, plane, ctx.profile)
    num_warps, num_stages = launch_config()
    args = [
        ("x", "in0"),
        ("gamma", "in1"),
        ("dy", "in2"),
        ("hyper", "param.hyper"),
        ("dx", "out0"),
        ("dgamma", "out1"),
        ("dbeta", "out2"),
        *dims,
    ]
    return LaunchOp(
        "batch_norm_backward",
        [op.input, op.gamma, op.grad],
        [tensor_type(result) for result in op.results],
        {"BLOCK_C": block_c, "BLOCK_R": block_r},
        [ParamSlot("hyper", (len(HYPER),), literal((op.eps,)))],
        args,
        [f"cdiv({channels}, {block_c})", "1", "1"],
        num_warps,
        num_stages,
    )
