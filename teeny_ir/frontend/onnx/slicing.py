"""Slicing and padding graph tensors: Slice's graph-tensor case (its handler,
which folds constants, is in `teeny_ir.frontend.onnx.constants`) and Pad.

A step-1 Slice that cuts one axis stays what it was, the middle piece of a
`graph.split` (along the channels, lowering makes that a view of the input, no
copy); any other slice is one `graph.slice`. Pad is `graph.pad`, folded with
numpy when its data is a constant.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX
from xdsl.ir import SSAValue

from dialects.graph.structure import PAD_MODES, WHOLE_BATCH_END, slice_bounds
from teeny_ir.frontend.onnx.context import Node, Value, dims, onnx_op, tidy


def slice_tensor(
    node: Node, x: SSAValue, starts: list[int], ends: list[int], axes: list[int], steps: list[int]
) -> SSAValue:
    """Slice's result on a graph tensor: one `graph.slice` (clamped as ONNX
    clamps), or, for a step-1 cut of a single axis, a piece of a `graph.split`."""
    shape = dims(x)
    cut: list[tuple[int, int, int]] = []  # (axis, first, count) of the axes not kept whole
    refused = False  # what `GraphBuilder.slice` refuses, with its own message
    for start, end, axis, step in zip(starts, ends, axes, steps, strict=True):
        if not -len(shape) <= axis < len(shape) or step == 0:
            refused = True
        elif shape[axis] == DYNAMIC_INDEX:
            refused |= not ((start, step) == (0, 1) and end >= WHOLE_BATCH_END)
        else:
            first, count = slice_bounds(shape[axis], start, end, step)
            if (first, count, step) != (0, shape[axis], 1):
                cut.append((axis % len(shape), first, count))
    steps_1 = all(step == 1 for step in steps)
    if not refused and steps_1 and not cut:
        return x
    if not refused and steps_1 and len(cut) == 1 and cut[0][2] > 0:
        ((axis, first, count),) = cut
        sizes = [n for n in (first, count, shape[axis] - first - count) if n]
        return node.b.split(x, sizes, axis)[1 if first else 0]
    return node.b.slice(x, starts, ends, axes, steps)


def _axes(node: Node, rank: int) -> list[int]:
    """Pad's axes (opset 18): every axis when absent, negative ones counted from the end."""
    if not node.has_input(3):
        return list(range(rank))
    axes = []
    for axis in node.ints(3, "axes"):
        if not -rank <= axis < rank:
            raise node.refuse(f"axis {axis} is out of range for rank {rank}")
        if axis % rank in axes:
            raise node.refuse(f"axis {axis % rank} is listed twice")
        axes.append(axis % rank)
    return axes


@onnx_op("Pad", since=11)  # pads and constant_value became inputs
@onnx_op("Pad", since=18)  # the axes input; 19 adds mode 'wrap' (refused below)
def _pad(node: Node) -> list[Value]:
    mode = node.attrs(mode="constant")["mode"]
    if mode not in PAD_MODES:
        raise node.refuse(f"mode '{mode}' is not supported ({', '.join(PAD_MODES)} are)")
    data = node.value(0)
    rank = data.ndim if isinstance(data, np.ndarray) else len(dims(data))
    axes = _axes(node, rank)
    given = node.ints(1, "pads")
    if len(given) != 2 * len(axes):
        raise node.refuse(f"expected {2 * len(axes)} pads (2 per axis), got {len(given)}")
    pads = [0] * (2 * rank)
    for index, axis in enumerate(axes):
        pads[axis], pads[rank + axis] = given[index], given[len(axes) + index]
    value = 0.0
    if node.has_input(2) and mode == "constant":
        constant = np.asarray(node.const(2, "constant_value")).reshape(-1)
        value = float(constant[0]) if constant.size else 0.0
    if isinstance(data, SSAValue):
        return [node.b.pad(data, pads, mode, value)]
    # Fold: pad by the positive parts, then crop by the negative ones (graph.pad's order).
    widths = [(max(pads[k], 0), max(pads[rank + k], 0)) for k in range(rank)]
    if mode == "constant":
        padded = np.pad(data, widths, mode="constant", constant_values=value)
    else:
        padded = np.pad(data, widths, mode=mode)
    crop = tuple(
        slice(max(-pads[k], 0), padded.shape[k] - max(-pads[rank + k], 0)) for k in range(rank)
    )
    return [tidy(np.asarray(padded[crop], dtype=data.dtype))]
