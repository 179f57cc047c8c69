"""VJP rules of the pooling and resampling ops (`dialects.graph.pool`).

- `graph.max_pool2d`: `graph.max_pool2d_backward` on the kept input (each
  window's gradient to its first maximum, as PyTorch).
- `graph.avg_pool2d`: `graph.avg_pool2d_backward` (the gradient needs only the
  input's type, so the input is not kept alive).
- `graph.global_avg_pool2d`: ``dy / (H * W)`` broadcast over [H, W]: a
  `graph.div` by a [H, W] constant filled with ``H * W`` (exact in f32, unlike
  its reciprocal).
- `graph.upsample_nearest2d`: the sum over each scale_h x scale_w block, an
  `graph.avg_pool2d` with kernel = scales, times ``scale_h * scale_w``.

The backward ops themselves are not differentiable (no second-order gradients).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from dialects.graph.pool import (
    AvgPool2dBackwardOp,
    AvgPool2dOp,
    GlobalAvgPool2dOp,
    MaxPool2dBackwardOp,
    MaxPool2dOp,
    UpsampleNearest2dOp,
)
from teeny_ir.autodiff.context import VjpContext
from teeny_ir.autodiff.registry import not_differentiable, vjp


@vjp(MaxPool2dOp)
def _max_pool2d(
    ctx: VjpContext, op: MaxPool2dOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    (grad,) = grads
    if grad is None:
        return [None]
    return [ctx.emit(MaxPool2dBackwardOp.of(op, ctx.value(op.input), grad)).result]


@vjp(AvgPool2dOp)
def _avg_pool2d(
    ctx: VjpContext, op: AvgPool2dOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    (grad,) = grads
    if grad is None:
        return [None]
    return [ctx.emit(AvgPool2dBackwardOp.of(op, grad)).result]


@vjp(GlobalAvgPool2dOp)
def _global_avg_pool2d(
    ctx: VjpContext, op: GlobalAvgPool2dOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    (grad,) = grads
    if grad is None:
        return [None]
    input_type = op.input.type
    assert isinstance(input_type, TensorType)
    height, width = input_type.get_shape()[2:]
    return [ctx.div(grad, ctx.constant(float(height * width), [height, width]))]


@vjp(UpsampleNearest2dOp)
def _upsample_nearest2d(
    ctx: VjpContext, op: UpsampleNearest2dOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    (grad,) = grads
    if grad is None:
        return [None]
    scale_h, scale_w = op.scales
    if scale_h == scale_w == 1:
        return [grad]
    mean = ctx.emit(AvgPool2dOp(grad, kernel=[scale_h, scale_w])).result
    return [ctx.scale(mean, float(scale_h * scale_w))]


not_differentiable(
    "a backward op: second-order gradients are not supported",
    MaxPool2dBackwardOp,
    AvgPool2dBackwardOp,
)
