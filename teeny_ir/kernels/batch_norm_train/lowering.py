"""Lowering rule of the ``batch_norm_train`` family: a ``graph.batch_norm`` with
the ``training`` property becomes one launch of ``cdiv(C, BLOCK_C)`` programs
(results: y, the updated running mean, the updated running variance).

Its gamma, beta and running statistics are operands (tensors: in a training
plan they are buffers the trainer updates, not parameter slots with
derivations); ``eps`` and ``momentum`` travel as the ``hyper`` slot, a literal
``(eps, momentum, 1 - momentum)`` from float64 rounded once to f32. The
inference form is the ``channel_affine`` family's. Refused: a dimension other
than the batch that is dynamic, an image or a batch stride past 32 bits, and a
static shape with a single value per channel (its unbiased variance divides by
0; the reference refuses it too)."""

from __future__ import annotations

import math

from xdsl.dialects.builtin import DYNAMIC_INDEX
from xdsl.ir import Operation, SSAValue

from dialects.graph.norm import BatchNormOp
from dialects.kernel import LaunchOp, ParamSlot
from teeny_ir.kernels.batch_norm_train.contract import HYPER, MAX_I32
from teeny_ir.kernels.batch_norm_train.tiles import bn_tiles, launch_config
from teeny_ir.kernels.lowering import (
    LoweringContext,
    Unlowerable,
    batch_stride_expr,
    dim_expr,
    lowers,
    tensor_type,
)
from teeny_ir.kernels.sgd_update.lowering import literal


def bn_dims(
    what: str, input: SSAValue, strided: dict[str, SSAValue]
) -> tuple[list[tuple[str, str]], int, int]:
    """The ``B``, ``C``, ``HW`` and batch-stride dim bindings of a batch norm
    kernel over ``input`` [B, C, ...] (``strided``: each batch-strided pointer's
    value), with ``C`` and ``HW``; raises `Unlowerable` past the kernels' 32-bit
    dims and for a single value per channel in a static shape."""
    shape = tuple(tensor_type(input).get_shape())
    if DYNAMIC_INDEX in shape[1:]:
        raise Unlowerable(f"the {what} family takes a dynamic batch only, not shape {shape}")
    batch, channels, plane = shape[0], shape[1], math.prod(shape[2:])
    if channels * plane > MAX_I32:
        raise Unlowerable(
            f"one image has {channels * plane} elements, above the {what} family's 32-bit "
            f"limit of {MAX_I32}"
        )
    if batch != DYNAMIC_INDEX and batch * plane == 1:
        raise Unlowerable(
            f"a batch norm in training mode needs more than 1 value per channel, got "
            f"{batch * plane} (shape {list(shape)})"
        )
    dims = [("B", dim_expr(batch)), ("C", str(channels)), ("HW", str(plane))]
    for name, value in strided.items():
        stride = batch_stride_expr(value)
        if int(stride) > MAX_I32:
            raise Unlowerable(
                f"the batch stride {stride} of {name} exceeds the {what} family's 32-bit limit"
            )
        dims.append((f"{name}_batch_stride", stride))
    return dims, channels, plane


def training(op: Operation) -> bool:
    """A ``graph.batch_norm`` in training form."""
    return isinstance(op, BatchNormOp) and op.training


@lowers(BatchNormOp, when=training)
def lower_batch_norm_train(ctx: LoweringContext, op: BatchNormOp) -> LaunchOp:
    """One launch; operands x, gamma, beta, running mean, running var."""
    dims, channels, plane = bn_dims("batch_norm_train", op.input, {"x": op.input, "y": op.result})
    block_c, block_r = bn_tiles(channels, plane, ctx.profile)
    num_warps, num_stages = launch_config()
    hyper = literal((op.eps, op.momentum, 1 - op.momentum))
    args = [
        ("x", "in0"),
        ("gamma", "in1"),
        ("beta", "in2"),
        ("running_mean", "in3"),
        ("running_var", "in4"),
        ("hyper", "param.hyper"),
        ("y", "out0"),
        ("mean_out", "out1"),
        ("var_out", "out2"),
        *dims,
    ]
    return LaunchOp(
        "batch_norm_train",
        [op.input, op.gamma, op.beta, op.running_mean, op.running_var],
        [tensor_type(result) for result in op.results],
        {"BLOCK_C": block_c, "BLOCK_R": block_r},
        [ParamSlot("hyper", (len(HYPER),), hyper)],
        args,
        [f"cdiv({channels}, {block_c})", "1", "1"],
        num_warps,
        num_stages,
    )
