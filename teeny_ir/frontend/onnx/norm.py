"""BatchNormalization, in inference and training form; LayerNormalization as its
composition of reductions and elementwise ops."""

from __future__ import annotations

from xdsl.ir import SSAValue

from teeny_ir.frontend.onnx.context import Node, Value, dims, onnx_op


@onnx_op("BatchNormalization", since=9)
@onnx_op("BatchNormalization", since=14)  # training_mode
def _batch_norm(node: Node) -> list[Value]:
    # Opset 14 added training_mode; 15 let the statistics have other types.
    attrs = node.attrs(epsilon=1e-5, momentum=0.9, training_mode=0)
    x, scale, bias, mean, var = (node.tensor(i) for i in range(5))
    eps = float(attrs["epsilon"])
    if not attrs["training_mode"]:
        if node.num_outputs > 1:
            raise node.refuse("the running-statistics outputs need training_mode=1")
        # momentum only updates running statistics, which inference never does.
        return [node.b.batch_norm(x, scale, bias, mean, var, eps=eps)]
    # Training: normalised with the batch statistics. ONNX's running statistics
    # weigh the old ones by `momentum` (PyTorch's by 1 - momentum) and take the
    # biased batch variance (PyTorch the unbiased), so they are built here.
    momentum = float(attrs["momentum"])
    if not 0.0 <= momentum <= 1.0:
        raise node.refuse(f"unsupported attribute momentum={momentum} (not in [0, 1])")
    b = node.b
    y, _, _ = b.batch_norm(
        x, scale, bias, mean, var, eps=eps, momentum=1.0 - momentum, training=True
    )
    if node.num_outputs == 1:
        return [y]
    axes = [0, *range(2, len(dims(x)))]
    batch_mean = b.reduce_mean(x, axes, keepdims=True)
    centered = b.sub(x, batch_mean)
    batch_var = b.reduce_mean(b.mul(centered, centered), axes)
    return [
        y,
        _blend(node, mean, b.reduce_mean(x, axes), momentum),
        _blend(node, var, batch_var, momentum),
    ]


def _blend(node: Node, running: SSAValue, batch: SSAValue, momentum: float) -> SSAValue:
    """``running * momentum + batch * (1 - momentum)``, ONNX's update."""
    b = node.b
    old = b.mul(running, b.constant([momentum], [1]))
    return b.add(old, b.mul(batch, b.constant([1.0 - momentum], [1])))


@onnx_op("LayerNormalization", since=17)
def _layer_norm(node: Node) -> list[Value]:
    # Normalised over the axes from `axis` on: (x - mean) / sqrt(var + eps) * scale
    # + bias, with the biased variance; Mean and InvStdDev keep the reduced axes.
    attrs = node.attrs(axis=-1, epsilon=1e-5, stash_type=1)
    x = node.tensor(0)
    rank = len(dims(x))
    axis = int(attrs["axis"])
    if not -rank <= axis < rank:
        raise node.refuse(f"axis {axis} out of range for rank {rank}")
    axes = list(range(axis % rank, rank))
    if 0 in axes and dims(x)[0] < 0:
        raise node.refuse("normalising over the dynamic batch dimension")
    b = node.b
    mean = b.reduce_mean(x, axes, keepdims=True)
    centered = b.sub(x, mean)
    variance = b.reduce_mean(b.mul(centered, centered), axes, keepdims=True)
    inv_std = b.reciprocal(b.sqrt(b.add(variance, b.constant([float(attrs["epsilon"])], [1]))))
    y = b.mul(b.mul(centered, inv_std), node.tensor(1))
    if node.has_input(2):
        y = b.add(y, node.tensor(2))
    return [y, mean, inv_std]
