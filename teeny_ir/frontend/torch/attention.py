"""``scaled_dot_product_attention`` (and the CPU flash form a decomposed export
records) as `graph.attention`.

The math form that ``torch.export`` keeps when a model writes the attention
out (``softmax(q @ k^T * scale) @ v``, YOLO11's C2PSA) needs no rule here: its
ops import one by one and fuse-attention makes the same `graph.attention`.
"""

from __future__ import annotations

import math

from teeny_ir.frontend.torch.context import Call, Value, aten_op, dims


def _operands(call: Call) -> tuple[Value, Value, Value, float]:
    """q, k, v and the scale, refusing what `graph.attention` does not compute."""
    q, k, v = call.tensor("query"), call.tensor("key"), call.tensor("value")
    if call.has("attn_mask"):
        raise call.refuse("an attention mask is not supported")
    if call.has("dropout_p") and call.number("dropout_p") != 0.0:
        raise call.refuse("attention dropout is not supported (export in eval mode)")
    if call.has("is_causal") and call.arg("is_causal"):
        raise call.refuse("causal attention is not supported")
    if call.has("enable_gqa") and call.arg("enable_gqa"):
        raise call.refuse("grouped-query attention (enable_gqa) is not supported")
    shapes = [dims(x) for x in (q, k, v)]
    if any(len(shape) < 2 for shape in shapes):
        raise call.refuse("q, k and v must be of rank >= 2")
    if not shapes[0][:-2] == shapes[1][:-2] == shapes[2][:-2]:
        raise call.refuse(
            "q, k and v must share their batch dimensions (broadcasting is not supported)"
        )
    scale = call.number("scale") if call.has("scale") else 1.0 / math.sqrt(shapes[0][-1])
    return q, k, v, scale


@aten_op("aten.scaled_dot_product_attention")
def _sdpa(call: Call) -> Value:
    q, k, v, scale = _operands(call)
    output, _ = call.b.attention(q, k, v, scale)
    return output


@aten_op("aten._scaled_dot_product_flash_attention_for_cpu")
def _sdpa_flash_cpu(call: Call) -> Value:
    # Results (output, logsumexp): the same pair graph.attention computes.
    q, k, v, scale = _operands(call)
    output, lse = call.b.attention(q, k, v, scale)
    return [output, lse]
