"""Conv, and the window attributes the conv and pool handlers share (`window`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.ir import SSAValue

from teeny_ir.frontend.onnx.context import Node, Value, dims, onnx_op


@dataclass(frozen=True)
class Window:
    """A conv's or pool's window in the 2-D form of the graph ops: a 1-D input
    (N, C, L) is viewed as (N, C, 1, L), its window as 1 x k."""

    x: SSAValue
    """The input, as (N, C, H, W)."""
    kernel: list[int]
    pads: list[int]
    """[top, left, bottom, right] (ONNX's order for 2-D, and ours)."""
    strides: list[int]
    dilation: list[int]
    one_d: bool

    def restore(self, node: Node, y: SSAValue) -> SSAValue:
        """The 2-D result ``y`` back in the input's rank."""
        if not self.one_d:
            return y
        shape = dims(y)
        return node.b.reshape(y, [0 if shape[0] < 0 else shape[0], shape[1], shape[3]])


def window(node: Node, attrs: dict[str, Any], x: SSAValue, kernel: list[int]) -> Window:
    """The window of a 1-D or 2-D conv or pool over ``x`` with ``kernel``, from its
    ``pads``, ``strides``, ``dilations`` and ``auto_pad`` (SAME_UPPER and
    SAME_LOWER computed from the input size, as ONNX defines them)."""
    shape = dims(x)
    spatial_rank = len(shape) - 2
    if spatial_rank not in (1, 2) or len(kernel) != spatial_rank:
        raise node.refuse(f"only 1-D and 2-D forms are supported (input rank {len(shape)})")
    strides = list(attrs.get("strides") or [1] * spatial_rank)
    dilation = list(attrs.get("dilations") or [1] * spatial_rank)
    pads = list(attrs.get("pads") or [0] * 2 * spatial_rank)
    if (
        len(strides) != spatial_rank
        or len(dilation) != spatial_rank
        or len(pads) != 2 * spatial_rank
    ):
        raise node.refuse("strides, dilations and pads do not match the input's rank")
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * 2 * spatial_rank
        for axis in range(spatial_rank):
            size = shape[2 + axis]
            out = -(-size // strides[axis])
            span = dilation[axis] * (kernel[axis] - 1) + 1
            total = max(0, (out - 1) * strides[axis] + span - size)
            small, large = total // 2, total - total // 2
            upper = auto_pad == "SAME_UPPER"
            pads[axis], pads[spatial_rank + axis] = (small, large) if upper else (large, small)
    elif auto_pad == "VALID":
        pads = [0] * 2 * spatial_rank
    elif auto_pad != "NOTSET":
        raise node.refuse(f"unsupported attribute auto_pad={auto_pad}")
    if spatial_rank == 2:
        return Window(x, kernel, pads, strides, dilation, False)
    batch = 0 if shape[0] < 0 else shape[0]
    x4 = node.b.reshape(x, [batch, shape[1], 1, shape[2]])
    return Window(
        x4, [1, kernel[0]], [0, pads[0], 0, pads[1]], [1, strides[0]], [1, dilation[0]], True
    )


@onnx_op("Conv", since=11)
def _conv(node: Node) -> list[Value]:
    attrs = node.attrs(
        auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None, pads=None, strides=None
    )
    x, weight = node.tensor(0), node.value(1)
    kernel = list(weight.shape[2:] if isinstance(weight, np.ndarray) else dims(weight)[2:])
    if attrs["kernel_shape"] is not None and list(attrs["kernel_shape"]) != kernel:
        raise node.refuse(f"kernel_shape {attrs['kernel_shape']} differs from the weight's")
    win = window(node, attrs, x, kernel)
    if win.one_d and isinstance(weight, np.ndarray):
        # An initializer stays a param (kernels read weights through one), seen as
        # [O, C, 1, k] under its own name.
        w = node.materialise(weight.reshape(*weight.shape[:2], 1, weight.shape[2]), "weight")
    elif win.one_d:
        shape = dims(node.tensor(1))
        w = node.b.reshape(node.tensor(1), [shape[0], shape[1], 1, shape[2]])
    else:
        w = node.tensor(1)
    bias = node.tensor(2) if node.has_input(2) else None
    y = node.b.conv2d(
        win.x,
        w,
        bias,
        strides=win.strides,
        padding=win.pads,
        dilation=win.dilation,
        groups=attrs["group"],
    )
    return [win.restore(node, y)]
