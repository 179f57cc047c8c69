"""Reference semantics of the pooling and resampling ops and of the pools'
backward ops (float64, PyTorch's rules)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dialects.graph.pool import (
    AvgPool2dBackwardOp,
    AvgPool2dOp,
    GlobalAvgPool2dOp,
    MaxPool2dBackwardOp,
    MaxPool2dOp,
    UpsampleNearest2dOp,
    infer_pool2d_shape,
)
from teeny_ir.reference.common import Array, Weights
from teeny_ir.reference.semantics import semantics


def _taps(
    shape: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    out: Sequence[int],
) -> tuple[tuple[tuple[int, int], ...], list[tuple[slice, ...]]]:
    """How to pad an input of ``shape`` [N, C, H, W]: by ``padding`` [top, left,
    bottom, right], and past the bottom/right edge as far as ceil-mode windows
    reach (numpy pad widths); and each kernel tap's strided index into the
    padded input, a ``[N, C, H_out, W_out]`` view, in row-major tap order."""
    top, left, bottom, right = padding
    ends = [
        max(pad_end, (o - 1) * s + d * (k - 1) + 1 - size - pad_begin)
        for o, s, d, k, size, pad_begin, pad_end in zip(
            out, strides, dilation, kernel, shape[2:], (top, left), (bottom, right), strict=True
        )
    ]
    widths = ((0, 0), (0, 0), (top, ends[0]), (left, ends[1]))
    taps: list[tuple[slice, ...]] = []
    for p in range(kernel[0]):
        for q in range(kernel[1]):
            row, col = p * dilation[0], q * dilation[1]
            taps.append(
                (
                    slice(None),
                    slice(None),
                    slice(row, row + (out[0] - 1) * strides[0] + 1, strides[0]),
                    slice(col, col + (out[1] - 1) * strides[1] + 1, strides[1]),
                )
            )
    return widths, taps


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
    ``fill`` (see `_taps`)."""
    widths, taps = _taps(x.shape, kernel, strides, padding, dilation, out)
    x_pad = np.pad(np.asarray(x, np.float64), widths, constant_values=fill)
    return [x_pad[tap] for tap in taps]


def _scatter(
    shape: Sequence[int],
    widths: tuple[tuple[int, int], ...],
    taps: list[tuple[slice, ...]],
    contributions: list[Array],
) -> Array:
    """The input-shaped sum of each tap's ``[N, C, H_out, W_out]`` contribution,
    added at the positions the tap reads (the padding is dropped)."""
    padded = np.zeros(
        [size + begin + end for size, (begin, end) in zip(shape, widths, strict=True)],
        np.float64,
    )
    for tap, contribution in zip(taps, contributions, strict=True):
        padded[tap] += contribution  # one tap reads distinct positions: no collisions
    (top, _), (left, _) = widths[2], widths[3]
    return padded[:, :, top : top + shape[2], left : left + shape[3]]


def _out_shape(
    op: MaxPool2dOp | AvgPool2dOp | MaxPool2dBackwardOp | AvgPool2dBackwardOp, x: Array
) -> tuple[int, int]:
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


def _avg_divisor(op: AvgPool2dOp | AvgPool2dBackwardOp, shape: Sequence[int]) -> Array:
    """Each output window's divisor ``[H_out, W_out]`` (PyTorch's rule)."""
    out = _out_shape(op, np.empty(shape))
    top, left, bottom, right = op.padding
    include = op.count_include_pad
    rows = _window_counts(out[0], shape[2], op.kernel[0], op.strides[0], top, bottom, include)
    cols = _window_counts(out[1], shape[3], op.kernel[1], op.strides[1], left, right, include)
    return np.outer(rows, cols)


@semantics(AvgPool2dOp)
def _avg_pool2d_op(op: AvgPool2dOp, args: list[Array], weights: Weights) -> list[Array]:
    x = args[0]
    out = _out_shape(op, x)
    total = np.add.reduce(_windows(x, op.kernel, op.strides, op.padding, (1, 1), out, 0.0))
    return [total / _avg_divisor(op, x.shape)]


@semantics(AvgPool2dBackwardOp)
def _avg_pool2d_backward_op(
    op: AvgPool2dBackwardOp, args: list[Array], weights: Weights
) -> list[Array]:
    """Each window's ``dy / divisor`` spread over its taps inside the input."""
    dy = np.asarray(args[0], np.float64)
    shape = (dy.shape[0], *op.result.type.get_shape()[1:])
    out = dy.shape[2:]
    widths, taps = _taps(shape, op.kernel, op.strides, op.padding, (1, 1), out)
    share = dy / _avg_divisor(op, shape)
    return [_scatter(shape, widths, taps, [share] * len(taps))]


@semantics(MaxPool2dBackwardOp)
def _max_pool2d_backward_op(
    op: MaxPool2dBackwardOp, args: list[Array], weights: Weights
) -> list[Array]:
    """Each window's gradient to its argmax, as PyTorch's CPU kernel picks it:
    the taps inside the input in row-major order, the first maximum on ties,
    a NaN always taking over (so the last NaN wins)."""
    x = np.asarray(args[0], np.float64)
    dy = np.asarray(args[1], np.float64)
    out = dy.shape[2:]
    widths, taps = _taps(x.shape, op.kernel, op.strides, op.padding, op.dilation, out)
    x_pad = np.pad(x, widths, constant_values=-np.inf)
    inside = np.pad(np.ones(x.shape, bool), widths, constant_values=False)
    best = np.full(dy.shape, -np.inf)
    found = np.zeros(dy.shape, bool)
    choice = np.full(dy.shape, -1)
    for index, tap in enumerate(taps):
        value, valid = x_pad[tap], inside[tap]
        # PyTorch starts each window's index at its first tap inside the input
        take = valid & (~found | (value > best) | np.isnan(value))
        best = np.where(take, value, best)
        choice = np.where(take, index, choice)
        found |= valid
    contributions = [np.where(choice == index, dy, 0.0) for index in range(len(taps))]
    return [_scatter(x.shape, widths, taps, contributions)]


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
