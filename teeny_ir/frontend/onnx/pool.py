"""Pools: MaxPool, AveragePool, GlobalAveragePool."""

from __future__ import annotations

from teeny_ir.frontend.onnx.context import Node, Value, dims, onnx_op
from teeny_ir.frontend.onnx.conv import spatial


def _check_rank(node: Node, rank: int) -> None:
    if rank != 4:
        raise node.refuse(f"only 2-D (N, C, H, W) pools are supported (input rank {rank})")


@onnx_op("MaxPool", since=11)
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
    x = node.tensor(0)
    _check_rank(node, len(dims(x)))
    kernel = list(attrs["kernel_shape"])
    pads, strides = spatial(node, attrs, kernel)
    return [
        node.b.max_pool2d(
            x,
            kernel,
            strides=strides,
            padding=pads,
            dilation=list(attrs["dilations"] or [1, 1]),
            ceil_mode=bool(attrs["ceil_mode"]),
        )
    ]


@onnx_op("AveragePool", since=11)
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
    x = node.tensor(0)
    _check_rank(node, len(dims(x)))
    kernel = list(attrs["kernel_shape"])
    pads, strides = spatial(node, attrs, kernel)
    return [
        node.b.avg_pool2d(
            x,
            kernel,
            strides=strides,
            padding=pads,
            ceil_mode=bool(attrs["ceil_mode"]),
            count_include_pad=bool(attrs["count_include_pad"]),
        )
    ]


@onnx_op("GlobalAveragePool", since=1)
def _global_avg_pool(node: Node) -> list[Value]:
    node.attrs()
    x = node.tensor(0)
    _check_rank(node, len(dims(x)))
    return [node.b.global_avg_pool2d(x)]
