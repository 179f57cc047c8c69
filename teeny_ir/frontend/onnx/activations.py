"""Activations: Relu, Sigmoid, Tanh, LeakyRelu, HardSigmoid, Gelu, HardSwish, Clip; and Dropout
(inference: the identity)."""

from __future__ import annotations

import numpy as np

from teeny_ir.frontend.onnx.context import Node, Value, onnx_op


@onnx_op("Relu", since=6)
def _relu(node: Node) -> list[Value]:
    node.attrs()
    return [node.b.relu(node.tensor(0))]


@onnx_op("Sigmoid", since=6)
def _sigmoid(node: Node) -> list[Value]:
    node.attrs()
    return [node.b.sigmoid(node.tensor(0))]


@onnx_op("Tanh", since=6)
def _tanh(node: Node) -> list[Value]:
    node.attrs()
    return [node.b.tanh(node.tensor(0))]


@onnx_op("LeakyRelu", since=6)
def _leaky_relu(node: Node) -> list[Value]:
    attrs = node.attrs(alpha=0.01)
    return [node.b.leaky_relu(node.tensor(0), float(attrs["alpha"]))]


@onnx_op("HardSigmoid", since=6)
def _hard_sigmoid(node: Node) -> list[Value]:
    # max(0, min(1, alpha * x + beta)): exactly a scale, a shift and a clamp.
    attrs = node.attrs(alpha=0.2, beta=0.5)
    b = node.b
    scaled = b.mul(node.tensor(0), b.constant([float(attrs["alpha"])], [1]))
    shifted = b.add(scaled, b.constant([float(attrs["beta"])], [1]))
    return [b.hardtanh(shifted, 0.0, 1.0)]


@onnx_op("Gelu", since=20)
def _gelu(node: Node) -> list[Value]:
    attrs = node.attrs(approximate="none")
    if attrs["approximate"] not in ("none", "tanh"):
        raise node.refuse(f"unsupported attribute approximate={attrs['approximate']}")
    return [node.b.gelu(node.tensor(0), attrs["approximate"])]


@onnx_op("Clip", since=6)
def _clip_6(node: Node) -> list[Value]:
    # Bounds as attributes, defaulting to float32's lowest and highest values.
    largest = float(np.finfo(np.float32).max)
    attrs = node.attrs(min=-largest, max=largest)
    low, high = float(attrs["min"]), float(attrs["max"])
    return [node.b.hardtanh(node.tensor(0), min(low, high), high)]


@onnx_op("Clip", since=11)
def _clip(node: Node) -> list[Value]:
    # `min` and `max` are optional inputs since opset 11 (attributes before):
    # min(max(x, min), max), so every value is max when min > max.
    node.attrs()
    x = node.tensor(0)
    low = node.value(1) if node.has_input(1) else None
    high = node.value(2) if node.has_input(2) else None
    scalar = [isinstance(v, np.ndarray) and v.size == 1 for v in (low, high)]
    if low is None and high is None:
        return [x]
    if all(scalar):
        assert isinstance(low, np.ndarray) and isinstance(high, np.ndarray)
        lo, hi = float(low.reshape(-1)[0]), float(high.reshape(-1)[0])
        return [node.b.hardtanh(x, min(lo, hi), hi)]
    if high is None and scalar[0] and float(np.asarray(low).reshape(-1)[0]) == 0.0:
        return [node.b.relu(x)]
    y = x
    if low is not None:
        y = node.b.maximum(y, node.tensor(1))
    if high is not None:
        y = node.b.minimum(y, node.tensor(2))
    return [y]


@onnx_op("Dropout", since=7)
@onnx_op("Dropout", since=10)
def _dropout_7(node: Node) -> list[Value]:
    # Inference: the input itself; ratio is an attribute before opset 12.
    node.attrs(ratio=0.5)
    if node.num_outputs > 1:
        raise node.refuse("the mask output is not supported")
    return [node.value(0)]


@onnx_op("Dropout", since=12)
def _dropout(node: Node) -> list[Value]:
    # Inference: the input itself; ratio only matters in training mode.
    node.attrs(seed=0)
    if node.num_outputs > 1:
        raise node.refuse("the mask output is not supported")
    training = node.has_input(2) and bool(node.const(2, "training_mode").reshape(-1)[0])
    ratio = float(node.const(1, "ratio").reshape(-1)[0]) if node.has_input(1) else 0.5
    if training and ratio != 0.0:
        # A random mask: the graph dialect has no random numbers (ratio 0 keeps all).
        raise node.refuse(f"training_mode=True with ratio {ratio} (inference only)")
    return [node.value(0)]


@onnx_op("HardSwish", since=14)
def _hard_swish(node: Node) -> list[Value]:
    # ONNX's x * max(0, min(1, x / 6 + 1 / 2)) is graph.hardswish's x * clip(x + 3, 0, 6) / 6.
    node.attrs()
    return [node.b.hardswish(node.tensor(0))]
