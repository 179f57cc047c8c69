"""Pools: MaxPool, AveragePool, GlobalAveragePool."""

from __future__ import annotations

from teeny_ir.frontend.onnx.context import Node, Value, dims, onnx_op
from teeny_ir.frontend.onnx.conv import window


@onnx_op("MaxPool", since=11)
@onnx_op("MaxPool", since=12)
def _max_pool(node: Node) -> list[Value]:
    attrs = node.attrs(
        auto_pad="NOTSET",
        ceil_mode=0,
        dilations=None,
        kernel_shape=None,
        pads=None,
        storage_order=0,
        strides=None,
    )
    if node.num_outputs > 1:
        raise node.refuse("the Indices output is not supported")
    if attrs["storage_order"] != 0:
        raise node.refuse("unsupported attribute storage_order=1")
    win = window(node, attrs, node.tensor(0), list(attrs["kernel_shape"]))
    y = node.b.max_pool2d(
        win.x,
        win.kernel,
        strides=win.strides,
        padding=win.pads,
        dilation=win.dilation,
        ceil_mode=bool(attrs["ceil_mode"]),
    )
    return [win.restore(node, y)]


@onnx_op("AveragePool", since=11)
@onnx_op("AveragePool", since=19)  # dilations
def _avg_pool(node: Node) -> list[Value]:
    attrs = node.attrs(
        auto_pad="NOTSET",
        ceil_mode=0,
        count_include_pad=0,
        dilations=None,
        kernel_shape=None,
        pads=None,
        strides=None,
    )
    if any(d != 1 for d in attrs["dilations"] or []):
        raise node.refuse(f"unsupported attribute dilations={attrs['dilations']}")
    win = window(node, attrs, node.tensor(0), list(attrs["kernel_shape"]))
    y = node.b.avg_pool2d(
        win.x,
        win.kernel,
        strides=win.strides,
        padding=win.pads,
        ceil_mode=bool(attrs["ceil_mode"]),
        count_include_pad=bool(attrs["count_include_pad"]),
    )
    return [win.restore(node, y)]


@onnx_op("GlobalAveragePool", "GlobalMaxPool", since=1)
def _global_pool(node: Node) -> list[Value]:
    # The mean (maximum) over every spatial axis, kept as size 1: any rank >= 3.
    node.attrs()
    x = node.tensor(0)
    rank = len(dims(x))
    if rank < 3:
        raise node.refuse(f"expected an (N, C, ...) input (rank {rank})")
    if node.op_type == "GlobalAveragePool" and rank == 4:
        return [node.b.global_avg_pool2d(x)]
    reduce = node.b.reduce_mean if node.op_type == "GlobalAveragePool" else node.b.reduce_max
    return [reduce(x, list(range(2, rank)), keepdims=True)]
