"""Conv, and the spatial attributes the conv and pool handlers share."""

from __future__ import annotations

from typing import Any

from teeny_ir.frontend.onnx.context import Node, Value, dims, onnx_op


def spatial(node: Node, attrs: dict[str, Any], kernel: list[int]) -> tuple[list[int], list[int]]:
    """``pads`` (ONNX order [top, left, bottom, right], ours too) and ``strides`` of a
    2-D conv or pool; ``auto_pad`` other than NOTSET or VALID is refused."""
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad not in ("NOTSET", "VALID"):
        raise node.refuse(f"unsupported attribute auto_pad={auto_pad}")
    pads = list(attrs["pads"] or [0, 0, 0, 0])
    if auto_pad == "VALID" and any(pads):
        raise node.refuse("auto_pad=VALID with non-zero pads")
    strides = list(attrs["strides"] or [1, 1])
    if len(kernel) != 2 or len(pads) != 4 or len(strides) != 2:
        raise node.refuse("only 2-D (N, C, H, W) forms are supported")
    return pads, strides


@onnx_op("Conv", since=11)
def _conv(node: Node) -> list[Value]:
    attrs = node.attrs(
        auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None, pads=None, strides=None
    )
    x, w = node.tensor(0), node.tensor(1)
    if len(dims(x)) != 4:
        raise node.refuse(f"only 2-D convolutions are supported (input rank {len(dims(x))})")
    kernel = list(dims(w)[2:])
    if attrs["kernel_shape"] is not None and list(attrs["kernel_shape"]) != kernel:
        raise node.refuse(f"kernel_shape {attrs['kernel_shape']} differs from the weight's")
    pads, strides = spatial(node, attrs, kernel)
    dilation = list(attrs["dilations"] or [1, 1])
    bias = node.tensor(2) if node.has_input(2) else None
    return [
        node.b.conv2d(
            x, w, bias, strides=strides, padding=pads, dilation=dilation, groups=attrs["group"]
        )
    ]
