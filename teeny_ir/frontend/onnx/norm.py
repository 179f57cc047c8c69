"""BatchNormalization in inference form."""

from __future__ import annotations

from teeny_ir.frontend.onnx.context import Node, Value, onnx_op


@onnx_op("BatchNormalization", since=9)
def _batch_norm(node: Node) -> list[Value]:
    # Opset 14 added training_mode; 15 let the statistics have other types.
    attrs = node.attrs(epsilon=1e-5, momentum=0.9, training_mode=0)
    if attrs["training_mode"] != 0:
        raise node.refuse("unsupported attribute training_mode=1 (inference form only)")
    if node.num_outputs > 1:
        raise node.refuse("the running-statistics outputs (training form) are not supported")
    x, scale, bias, mean, var = (node.tensor(i) for i in range(5))
    # momentum only updates running statistics, which inference never does.
    return [node.b.batch_norm(x, scale, bias, mean, var, eps=float(attrs["epsilon"]))]
