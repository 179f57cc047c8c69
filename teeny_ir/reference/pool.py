"""Reference semantics of the pooling and resampling ops (float64, PyTorch's rules)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dialects.graph.pool import (
    AvgPool2dOp,
    GlobalAvgPool2dOp,
    MaxPool2dOp,
    UpsampleNearest2dOp,
    infer_pool2d_shape,
)
from teeny_ir.reference.common import Array, Weights
from teeny_ir.reference.semantics import semantics


def _windows(
    x: Array,
    kernel: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    out: Sequence[int],
    fill: float,
) -> list[Array]:
    """Every kernel tap's strided view ``[N, C, H_out, W_out]`` of ``x`` padded with
    ``fill``: by ``padding`` [top, left, bottom, right], and past the bottom/right
    edge as far as ceil-mode windows reach."""
    top, left, bottom, right = padding
    ends = [
        max(pad_end, (o - 1) * s + d * (k - 1) + 1 - size - pad_begin)
        for o, s, d, k, size, pad_begin, pad_end in zip(
            out, strides, dilation, kernel, x.shape[2:], (top, left), (bottom, right), strict=True
        )
    ]
    x_pad = np.pad(
        np.asarray(x, np.float64),
        ((0, 0), (0, 0), (top, ends[0]), (left, ends[1])),
        constant_values=fill,
    )
    views: list[Array] = []
    for p in range(kernel[0]):
        for q in range(kernel[1]):
            row, col = p * dilation[0], q * dilation[1]
            views.append(
                x_pad[
                    :,
                    :,
                    row : row + (out[0] - 1) * strides[0] + 1 : strides[0],
                    col : col + (out[1] - 1) * strides[1] + 1 : strides[1],
                ]
            )
    return views


def _out_shape(op: MaxPool2dOp | AvgPool2dOp, x: Array) -> tuple[int, int]:
    shape = infer_pool2d_shape(
        x.shape, op.kernel, op.strides, op.padding, op.dilation, op.ceil_mode
    )
    return shape[2], shape[3]


@semantics(MaxPool2dOp)
def _max_pool2d_op(op: MaxPool2dOp, args: list[Array], weights: Weights) -> list[Array]:
    x = args[0]
    views = _windows(x, op.kernel, op.strides, op.padding, op.dilation, _out_shape(op, x), -np.inf)
    return [np.maximum.reduce(views)]


def _window_counts(
    out: int, size: int, kernel: int, stride: int, pad_begin: int, pad_end: int, include_pad: bool
) -> Array:
    """PyTorch's per-axis divisor of each window: its length clipped to the padded
    input (``include_pad``) or to the input alone."""
    start = np.arange(out) * stride - pad_begin
    if include_pad:
        return np.minimum(start + kernel, size + pad_end) - start
    return np.minimum(start + kernel, size) - np.maximum(start, 0)


@semantics(AvgPool2dOp)
def _avg_pool2d_op(op: AvgPool2dOp, args: list[Array], weights: Weights) -> list[Array]:
    x = args[0]
    out = _out_shape(op, x)
    top, left, bottom, right = op.padding
    total = np.add.reduce(_windows(x, op.kernel, op.strides, op.padding, (1, 1), out, 0.0))
    include = op.count_include_pad
    rows = _window_counts(out[0], x.shape[2], op.kernel[0], op.strides[0], top, bottom, include)
    cols = _window_counts(out[1], x.shape[3], op.kernel[1], op.strides[1], left, right, include)
    return [total / np.outer(rows, cols)]


@semantics(GlobalAvgPool2dOp)
def _global_avg_pool2d_op(
    op: GlobalAvgPool2dOp, args: list[Array], weights: Weights
) -> list[Array]:
    return [np.asarray(args[0], np.float64).mean(axis=(2, 3), keepdims=True)]


@semantics(UpsampleNearest2dOp)
def _upsample_nearest2d_op(
    op: UpsampleNearest2dOp, args: list[Array], weights: Weights
) -> list[Array]:
    scale_h, scale_w = op.scales
    return [np.repeat(np.repeat(np.asarray(args[0], np.float64), scale_h, 2), scale_w, 3)]
