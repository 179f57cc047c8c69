"""Reference semantics of `graph.conv2d` and `graph.fused_conv2d`, in float64.

The fused convolution evaluates its recorded scale and shift derivations with
`teeny_ir.core.derivations.evaluate` (the single implementation of the BN fold),
its epilogue activation from the pointwise table, and then adds its residual
operand, if any (after the activation, in float64, before the one rounding).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dialects.graph.conv import Conv2dOp, FusedConv2dOp
from teeny_ir.core import pointwise
from teeny_ir.core.derivations import evaluate
from teeny_ir.reference.common import Array, Weights, channel
from teeny_ir.reference.semantics import semantics


def _conv2d(
    x: Array,
    w: Array,
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> Array:
    """Grouped, strided, dilated, per-side padded cross-correlation (float64, im2col)."""
    top, left, bottom, right = padding
    x64 = np.pad(np.asarray(x, np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    w64 = np.asarray(w, np.float64)
    batch, channels, height, width = x64.shape
    out_channels, group_channels, kernel_h, kernel_w = w64.shape
    out_h = (height - dilation[0] * (kernel_h - 1) - 1) // strides[0] + 1
    out_w = (width - dilation[1] * (kernel_w - 1) - 1) // strides[1] + 1
    columns = np.empty((batch, channels, kernel_h, kernel_w, out_h, out_w))
    for p in range(kernel_h):
        for q in range(kernel_w):
            rows = slice(
                p * dilation[0], p * dilation[0] + (out_h - 1) * strides[0] + 1, strides[0]
            )
            cols = slice(
                q * dilation[1], q * dilation[1] + (out_w - 1) * strides[1] + 1, strides[1]
            )
            columns[:, :, p, q] = x64[:, :, rows, cols]
    columns = columns.reshape(batch, groups, group_channels, kernel_h, kernel_w, out_h, out_w)
    grouped_w = w64.reshape(groups, out_channels // groups, group_channels, kernel_h, kernel_w)
    y: Array = np.einsum("ngcpqhw,gocpq->ngohw", columns, grouped_w, optimize=True)
    return y.reshape(batch, out_channels, out_h, out_w)


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
