"""``conv2d`` and ``convolution`` (2-D, not transposed) as `graph.conv2d`."""

from __future__ import annotations

from teeny_ir.frontend.torch.context import Call, Value, aten_op, dims


def _padding(call: Call, kernel: list[int], dilation: list[int]) -> list[int]:
    """[top, left, bottom, right] from torch's symmetric ``padding`` (or "same",
    "valid" of the ``conv2d.padding`` form)."""
    padding = call.arg("padding")
    if padding == "valid":
        return [0, 0, 0, 0]
    if padding == "same":
        total = [d * (k - 1) for k, d in zip(kernel, dilation, strict=True)]
        # torch puts the odd pixel at the end (bottom, right).
        return [total[0] // 2, total[1] // 2, total[0] - total[0] // 2, total[1] - total[1] // 2]
    pad = call.ints("padding", 2)
    return [pad[0], pad[1], pad[0], pad[1]]


@aten_op("aten.conv2d", "aten.convolution")
def _conv(call: Call) -> Value:
    x, w = call.tensor("input"), call.tensor("weight")
    if len(dims(x)) != 4 or len(dims(w)) != 4:
        raise call.refuse(f"only 2-D convolutions are supported (input rank {len(dims(x))})")
    if call.name.startswith("aten.convolution"):
        if call.arg("transposed"):
            raise call.refuse("transposed convolutions are not supported")
        if any(call.ints("output_padding")):
            raise call.refuse("output_padding is not supported")
    strides, dilation = call.ints("stride", 2), call.ints("dilation", 2)
    kernel = list(dims(w)[2:])
    padding = _padding(call, kernel, dilation)
    bias = call.tensor("bias") if call.has("bias") else None
    return call.b.conv2d(
        x,
        w,
        bias,
        strides=strides,
        padding=padding,
        dilation=dilation,
        groups=call.integer("groups"),
    )
