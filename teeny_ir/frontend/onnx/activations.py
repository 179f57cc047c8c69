"""Activations: Relu, Sigmoid, Tanh, LeakyRelu, HardSigmoid, Gelu, HardSwish, Clip; and Dropout
(inference: the identity)."""

from __future__ import annotations

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


@onnx_op("Clip", since=11)
def _clip(node: Node) -> list[Value]:
    # `min` and `max` are optional inputs since opset 11 (attributes before).
    node.attrs()
    x = node.tensor(0)
    low = node.const(1, "min") if node.has_input(1) else None
    high = node.const(2, "max") if node.has_input(2) else None
    if low is None and high is None:
        return [x]
    if high is None:
        assert low is not None
        if float(low.reshape(-1)[0]) != 0.0 or low.size != 1:
            raise node.refuse("a Clip with only a non-zero min (graph.hardtanh needs both bounds)")
        return [node.b.relu(x)]
    if low is None or low.size != 1 or high.size != 1:
        raise node.refuse("a Clip without a scalar min and max")
    lo, hi = float(low.reshape(-1)[0]), float(high.reshape(-1)[0])
    # min(max(x, lo), hi): every value is hi when lo > hi.
    return [node.b.hardtanh(x, min(lo, hi), hi)]


@onnx_op("Dropout", since=12)
def _dropout(node: Node) -> list[Value]:
    # Inference: the input itself; ratio only matters in training mode.
    node.attrs(seed=0)
    if node.num_outputs > 1:
        raise node.refuse("the mask output is not supported")
    if node.has_input(2) and bool(node.const(2, "training_mode").reshape(-1)[0]):
        raise node.refuse("training_mode=True is not supported (inference only)")
    return [node.value(0)]


@onnx_op("HardSwish", since=14)
def _hard_swish(node: Node) -> list[Value]:
    # ONNX's x * max(0, min(1, x / 6 + 1 / 2)) is graph.hardswish's x * clip(x + 3, 0, 6) / 6.
    node.attrs()
    return [node.b.hardswish(node.tensor(0))]
