"""Lowering rules of the ``channel_affine`` family: ``y = act(x * scale[c] +
shift[c])`` per channel (dimension 1), scale and shift as parameter slots.

- An inference ``graph.batch_norm`` that fuse-epilogues did not fold into a
  convolution (none before it): scale ``bn_scale(gamma, var; eps)``, shift
  ``bn_shift(gamma, beta, mean, var; eps)``, the derivations the convolution
  fusion uses, and ``ACTIVATION`` its ``activation`` (the epilogue activation
  fuse-epilogues may have folded in). Its statistics and affine weights must
  be ``graph.param`` ops. The rule is conditional: it takes only the inference
  form; a training-form batch norm (the ``training`` property) is the
  ``batch_norm_train`` family's.
- A ``graph.bias_add`` whose bias is a ``graph.param``: scale ``fill(1.0)``,
  shift ``identity(bias)``, no activation (``ACTIVATION = "none"``). One whose
  bias is an activation stays an ``elementwise`` add
  (`teeny_ir.kernels.elementwise.lowering`).

The operand's and the result's batch strides are dims, so either may be a
batch-strided view."""

from __future__ import annotations

import math

from xdsl.ir import Operation, SSAValue

from dialects.graph.elementwise import BiasAddOp
from dialects.graph.norm import BatchNormOp
from dialects.graph.param import ParamOp
from dialects.kernel import LaunchOp, ParamSlot
from teeny_ir.core import pointwise
from teeny_ir.core.derivations import Derivation, bn_scale, bn_shift, fill, identity
from teeny_ir.kernels.channel_affine.contract import MAX_I32
from teeny_ir.kernels.channel_affine.tiles import launch_config
from teeny_ir.kernels.lowering import (
    LoweringContext,
    Unlowerable,
    batch_stride_expr,
    dim_expr,
    lowers,
    tensor_type,
)


def channel_affine_launch(
    op: Operation,
    input: SSAValue,
    scale: Derivation,
    shift: Derivation,
    activation: str = pointwise.NO_ACTIVATION,
) -> LaunchOp:
    """One launch of ``y = activation(input * scale[c] + shift[c])`` replacing
    ``op`` (whose first result is ``y``)."""
    result = op.results[0]
    shape = tensor_type(input).get_shape()
    batch, channels = shape[0], shape[1]
    inner = math.prod(shape[2:])
    if channels * inner > MAX_I32:
        raise Unlowerable(
            f"one image has {channels * inner} elements, above the channel_affine "
            f"family's 32-bit limit of {MAX_I32}"
        )
    block, num_warps, num_stages = launch_config()
    args = [
        ("x", "in0"),
        ("scale", "param.scale"),
        ("shift", "param.shift"),
        ("y", "out0"),
        ("B", dim_expr(batch)),
        ("C", str(channels)),
        ("INNER", str(inner)),
        ("x_batch_stride", batch_stride_expr(input)),
        ("y_batch_stride", batch_stride_expr(result)),
    ]
    elements = f"{dim_expr(batch)} * {channels * inner}"
    return LaunchOp(
        "channel_affine",
        [input],
        [tensor_type(result)],
        {"ACTIVATION": activation, "BLOCK": block},
        [
            ParamSlot("scale", (channels,), scale),
            ParamSlot("shift", (channels,), shift),
        ],
        args,
        [f"cdiv({elements}, {block})", "1", "1"],
        num_warps,
        num_stages,
    )


def _weight(value: SSAValue, role: str) -> str:
    """The weight name of a ``graph.param`` operand, or why the op cannot lower."""
    owner = value.owner
    if not isinstance(owner, ParamOp):
        raise Unlowerable(
            f"its {role} is not a graph.param (channel_affine reads it through a "
            "parameter slot, derived from weights)"
        )
    return owner.param_name.data


def inference(op: Operation) -> bool:
    """A ``graph.batch_norm`` in inference form (running statistics)."""
    return isinstance(op, BatchNormOp) and not op.training


@lowers(BatchNormOp, when=inference)
def lower_batch_norm(ctx: LoweringContext, op: BatchNormOp) -> LaunchOp:
    """An inference batch norm as ``act(x * bn_scale + bn_shift)``."""
    gamma = _weight(op.gamma, "gamma")
    beta = _weight(op.beta, "beta")
    mean = _weight(op.running_mean, "running mean")
    var = _weight(op.running_var, "running variance")
    channels = tensor_type(op.input).get_shape()[1]
    return channel_affine_launch(
        op,
        op.input,
        bn_scale(gamma, var, op.eps, channels),
        bn_shift(gamma, beta, mean, var, op.eps, channels),
        op.activation,
    )


def param_bias(op: Operation) -> bool:
    """A ``graph.bias_add`` whose bias is a ``graph.param``."""
    return isinstance(op, BiasAddOp) and isinstance(op.bias.owner, ParamOp)


@lowers(BiasAddOp, when=param_bias)
def lower_bias_add(ctx: LoweringContext, op: BiasAddOp) -> LaunchOp:
    """``x + bias`` as ``x * 1 + bias``, the bias a parameter slot."""
    channels = tensor_type(op.input).get_shape()[1]
    return channel_affine_launch(
        op,
        op.input,
        fill(1.0, [channels]),
        identity(_weight(op.bias, "bias"), [channels]),
    )
