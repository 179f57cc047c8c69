"""Reference semantics of `graph.conv2d`, `graph.fused_conv2d` and the
convolution backward ops (`graph.conv2d_backward_data`, `graph.conv2d_backward_weight`),
in float64.

The fused convolution evaluates its recorded scale and shift derivations with
`teeny_ir.core.derivations.evaluate` (the single implementation of the BN fold),
its epilogue activation from the pointwise table, and then adds its residual
operand, if any (after the activation, in float64, before the one rounding).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType

from dialects.graph.conv import (
    Conv2dBackwardDataOp,
    Conv2dBackwardWeightOp,
    Conv2dOp,
    FusedConv2dOp,
)
from teeny_ir.core import pointwise
from teeny_ir.core.derivations import evaluate
from teeny_ir.reference.common import Array, Weights, channel
from teeny_ir.reference.semantics import semantics


def _window(start: int, count: int, stride: int) -> slice:
    """The ``count`` positions ``start + k * stride`` of one kernel tap."""
    return slice(start, start + (count - 1) * stride + 1, stride)


def _columns(
    x: Array,
    kernel: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> Array:
    """im2col of the zero-padded input: [N, G, C_in / G, KH, KW, H_out, W_out] (float64)."""
    top, left, bottom, right = padding
    x64 = np.pad(np.asarray(x, np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    batch, channels, height, width = x64.shape
    kernel_h, kernel_w = kernel
    out_h = (height - dilation[0] * (kernel_h - 1) - 1) // strides[0] + 1
    out_w = (width - dilation[1] * (kernel_w - 1) - 1) // strides[1] + 1
    columns = np.empty((batch, channels, kernel_h, kernel_w, out_h, out_w))
    for p in range(kernel_h):
        for q in range(kernel_w):
            rows = _window(p * dilation[0], out_h, strides[0])
            cols = _window(q * dilation[1], out_w, strides[1])
            columns[:, :, p, q] = x64[:, :, rows, cols]
    return columns.reshape(batch, groups, channels // groups, kernel_h, kernel_w, out_h, out_w)


def _conv2d(
    x: Array,
    w: Array,
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> Array:
    """Grouped, strided, dilated, per-side padded cross-correlation (float64, im2col)."""
    w64 = np.asarray(w, np.float64)
    out_channels, group_channels, kernel_h, kernel_w = w64.shape
    columns = _columns(x, (kernel_h, kernel_w), strides, padding, dilation, groups)
    batch, out_h, out_w = columns.shape[0], columns.shape[5], columns.shape[6]
    grouped_w = w64.reshape(groups, out_channels // groups, group_channels, kernel_h, kernel_w)
    y: Array = np.einsum("ngcpqhw,gocpq->ngohw", columns, grouped_w, optimize=True)
    return y.reshape(batch, out_channels, out_h, out_w)


def _conv2d_backward_data(
    dy: Array,
    w: Array,
    input_shape: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> Array:
    """The input gradient of `_conv2d` (col2im of ``w^T dy``), of ``input_shape``
    with the batch taken from ``dy`` (float64)."""
    dy64 = np.asarray(dy, np.float64)
    w64 = np.asarray(w, np.float64)
    batch, out_channels, out_h, out_w = dy64.shape
    _, group_channels, kernel_h, kernel_w = w64.shape
    _, channels, height, width = input_shape
    top, left, bottom, right = padding
    dx = np.zeros((batch, channels, height + top + bottom, width + left + right))
    grouped_dy = dy64.reshape(batch, groups, out_channels // groups, out_h, out_w)
    grouped_w = w64.reshape(groups, out_channels // groups, group_channels, kernel_h, kernel_w)
    for p in range(kernel_h):
        for q in range(kernel_w):
            tap = np.einsum("ngohw,goc->ngchw", grouped_dy, grouped_w[..., p, q], optimize=True)
            rows = _window(p * dilation[0], out_h, strides[0])
            cols = _window(q * dilation[1], out_w, strides[1])
            dx[:, :, rows, cols] += tap.reshape(batch, channels, out_h, out_w)
    result: Array = dx[:, :, top : top + height, left : left + width]
    return result


def _conv2d_backward_weight(
    x: Array,
    dy: Array,
    weight_shape: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> Array:
    """The weight gradient of `_conv2d`: ``dy`` contracted with the im2col of the
    input over the batch and output positions (float64)."""
    out_channels, group_channels, kernel_h, kernel_w = weight_shape
    columns = _columns(x, (kernel_h, kernel_w), strides, padding, dilation, groups)
    dy64 = np.asarray(dy, np.float64)
    batch, _, out_h, out_w = dy64.shape
    grouped_dy = dy64.reshape(batch, groups, out_channels // groups, out_h, out_w)
    dw: Array = np.einsum("ngcpqhw,ngohw->gocpq", columns, grouped_dy, optimize=True)
    return dw.reshape(out_channels, group_channels, kernel_h, kernel_w)


@semantics(Conv2dOp)
def _conv2d_op(op: Conv2dOp, args: list[Array], weights: Weights) -> list[Array]:
    y = _conv2d(args[0], args[1], op.strides, op.padding, op.dilation, op.groups)
    if len(args) == 3:
        y = y + channel(args[2], 4)
    return [y]


@semantics(FusedConv2dOp)
def _fused_conv2d_op(op: FusedConv2dOp, args: list[Array], weights: Weights) -> list[Array]:
    y = _conv2d(args[0], args[1], op.strides, op.padding, op.dilation, op.groups)
    scale = evaluate(op.scale.data, weights)
    shift = evaluate(op.shift.data, weights)
    y = channel(scale, 4) * y + channel(shift, 4)
    if op.activation != pointwise.NO_ACTIVATION:
        y = pointwise.BY_NAME[op.activation].evaluate(np, [y], {})
    if op.residual is not None:
        y = y + np.asarray(args[2], np.float64)
    return [y]


@semantics(Conv2dBackwardDataOp)
def _conv2d_backward_data_op(
    op: Conv2dBackwardDataOp, args: list[Array], weights: Weights
) -> list[Array]:
    assert isinstance(op.result.type, TensorType)  # verified
    shape = op.result.type.get_shape()
    return [
        _conv2d_backward_data(
            args[0], args[1], shape, op.strides, op.padding, op.dilation, op.groups
        )
    ]


@semantics(Conv2dBackwardWeightOp)
def _conv2d_backward_weight_op(
    op: Conv2dBackwardWeightOp, args: list[Array], weights: Weights
) -> list[Array]:
    assert isinstance(op.result.type, TensorType)  # verified
    shape = op.result.type.get_shape()
    return [
        _conv2d_backward_weight(
            args[0], args[1], shape, op.strides, op.padding, op.dilation, op.groups
        )
    ]
