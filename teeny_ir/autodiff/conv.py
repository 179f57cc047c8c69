"""VJP rules of the convolutions, `graph.conv2d` and `graph.fused_conv2d`.

With ``dy`` the gradient of the output (PyTorch's ``convolution_backward``):
the input gradient is `Conv2dBackwardDataOp` (a transposed convolution), the
weight gradient `Conv2dBackwardWeightOp` and the bias gradient ``dy`` summed
over N, H and W. A fused convolution is differentiated in the form
fuse-epilogues makes in training mode - scale ``fill(1.0)``, shift
``identity(bias)`` or ``fill(0.0)`` -: its pre-activation is recomputed with an
unfused `Conv2dOp` (and `BiasAddOp`), the activation's derivative applied with
`ActivationGradOp`, and the bias gradient reported with `VjpContext.param_grad`
(the bias is a weight the shift derivation reads, not an operand).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from dialects.graph.conv import (
    Conv2dBackwardDataOp,
    Conv2dBackwardWeightOp,
    Conv2dOp,
    ConvOptionsOp,
    FusedConv2dOp,
)
from dialects.graph.reduce import ReduceSumOp
from teeny_ir.autodiff.context import VjpContext
from teeny_ir.autodiff.registry import VjpError, not_differentiable, vjp
from teeny_ir.core import pointwise
from teeny_ir.core.derivations import Derivation


def _type(value: SSAValue) -> TensorType:
    assert isinstance(value.type, TensorType)
    return value.type


def _options(op: ConvOptionsOp) -> dict[str, object]:
    """The forward op's window options, as the backward ops' builders take them
    (absent ones stay absent)."""
    present = op.properties
    return {
        "strides": op.strides if "strides" in present else None,
        "padding": op.padding if "padding" in present else None,
        "dilation": op.dilation if "dilation" in present else None,
        "groups": op.groups if "groups" in present else None,
    }


def _input_and_weight_grads(
    ctx: VjpContext, op: ConvOptionsOp, x: SSAValue, w: SSAValue, dy: SSAValue
) -> tuple[SSAValue, SSAValue]:
    """``(dx, dw)`` of ``conv2d(x, w)`` with ``op``'s options, given the output
    gradient ``dy``; ``x`` and ``w`` are the forward operands."""
    options = _options(op)
    dx = ctx.emit(
        Conv2dBackwardDataOp(dy, ctx.value(w), _type(x), **options)  # type: ignore[arg-type]
    ).result
    dw = ctx.emit(
        Conv2dBackwardWeightOp(ctx.value(x), dy, _type(w), **options)  # type: ignore[arg-type]
    ).result
    return dx, dw


def _channel_sum(ctx: VjpContext, dy: SSAValue) -> SSAValue:
    """``dy`` [N, C, H, W] summed over N, H and W: a bias gradient [C]."""
    return ctx.emit(ReduceSumOp(dy, [0, 2, 3])).result


@vjp(Conv2dOp)
def _conv2d(
    ctx: VjpContext, op: Conv2dOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    """``y = conv2d(x, w) + b``: ``dx = conv2d_backward_data(dy, w)``,
    ``dw = conv2d_backward_weight(x, dy)``, ``db = sum_{n, h, w} dy``."""
    (g,) = grads
    if g is None:
        return [None] * len(op.operands)
    dx, dw = _input_and_weight_grads(ctx, op, op.input, op.weight, g)
    if op.bias is None:
        return [dx, dw]
    return [dx, dw, _channel_sum(ctx, g)]


def _is_fill(derivation: Derivation, value: float) -> bool:
    return derivation.kind == "fill" and derivation.value == value


def _bias_name(op: FusedConv2dOp) -> str | None:
    """The weight the shift reads (``identity(name)``), None for ``fill(0.0)``;
    raises `VjpError` for any other epilogue."""
    scale, shift = op.scale.data, op.shift.data
    if not _is_fill(scale, 1.0):
        raise VjpError(
            f"cannot differentiate graph.fused_conv2d with scale {scale.kind}"
            f"{list(scale.sources) or ''}: only the training-mode fusion "
            "(scale fill(1.0); no batch-norm fold) is supported"
        )
    if _is_fill(shift, 0.0):
        return None
    if shift.kind == "identity":
        return shift.sources[0]
    raise VjpError(
        f"cannot differentiate graph.fused_conv2d with shift {shift.kind}"
        f"{list(shift.sources) or ''}: only identity(bias) or fill(0.0) is supported "
        "(the training-mode fusion of a conv bias)"
    )


@vjp(FusedConv2dOp)
def _fused_conv2d(
    ctx: VjpContext, op: FusedConv2dOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    """``y = act(conv2d(x, w) + bias) [+ residual]``: the residual's gradient is
    ``dy``; with ``z = conv2d(x, w) + bias`` recomputed, ``dz = act'(z) * dy``
    (`ActivationGradOp`; ``dy`` without an activation), then the convolution's
    rule on ``dz``; the bias gradient ``sum_{n, h, w} dz`` goes to the weight
    named by the shift, through `VjpContext.param_grad`."""
    (g,) = grads
    bias = _bias_name(op)
    if g is None:
        return [None] * len(op.operands)
    dz = g
    if pointwise.derivative_at_output(op.activation) and op.residual is None:
        # relu'(z) = [z > 0] = [relu(z) > 0]: the kept output serves (a residual,
        # added after the activation, would hide it).
        dz = ctx.activation_grad(ctx.value(op.result), g, op.activation)
    if op.activation != pointwise.NO_ACTIVATION and dz is g:
        # The pre-activation, recomputed as the same fused convolution (its
        # algorithm and tiles kept) without the activation and the residual:
        # one launch once lowered.
        properties = {k: v for k, v in op.properties.items() if k != "activation"}
        pre = FusedConv2dOp.create(
            operands=[ctx.value(op.input), ctx.value(op.weight)],
            result_types=[op.result.type],
            properties=properties,
            attributes=dict(op.attributes),
        )
        z = ctx.emit(pre).results[0]
        dz = ctx.activation_grad(z, g, op.activation)
    dx, dw = _input_and_weight_grads(ctx, op, op.input, op.weight, dz)
    if bias is not None:
        ctx.param_grad(bias, _channel_sum(ctx, dz))
    if op.residual is None:
        return [dx, dw]
    return [dx, dw, g]


not_differentiable(
    "the derivative of a convolution's gradient (second order) is not supported",
    Conv2dBackwardDataOp,
    Conv2dBackwardWeightOp,
)
