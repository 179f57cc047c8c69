"""``softmax``/``log_softmax`` (and their ``_softmax`` forms) and ``mean``/``sum``
over dimension lists (None or empty: every dimension), with ``keepdim``."""

from __future__ import annotations

from teeny_ir.frontend.torch.context import Call, Value, aten_op, axis, rank_of


def _dim(call: Call) -> int:
    return axis(call, call.integer("dim"), rank_of(call.tensor("self")))


def _check_dtype(call: Call) -> None:
    """Refuse a ``dtype`` argument other than float32 (the forms without one pass)."""
    if call.has("dtype") and str(call.arg("dtype")) != "torch.float32":
        raise call.refuse(f"unsupported dtype {call.arg('dtype')}: graph ops compute f32")


@aten_op("aten.softmax", "aten._softmax")
def _softmax(call: Call) -> Value:
    _check_dtype(call)
    return call.b.softmax(call.tensor("self"), _dim(call))


@aten_op("aten.log_softmax", "aten._log_softmax")
def _log_softmax(call: Call) -> Value:
    _check_dtype(call)
    return call.b.log_softmax(call.tensor("self"), _dim(call))


@aten_op("aten.mean", "aten.sum")
def _reduce(call: Call) -> Value:
    _check_dtype(call)
    x = call.tensor("self")
    rank = rank_of(x)
    given = call.arg("dim") if call.has("dim") else []
    dims = call.ints("dim") if given else list(range(rank))
    axes = sorted({axis(call, d, rank) for d in dims})
    keepdim = bool(call.arg("keepdim")) if call.has("keepdim") else False
    if call.name.startswith("aten.mean"):
        return call.b.reduce_mean(x, axes, keepdims=keepdim)
    return call.b.reduce_sum(x, axes, keepdims=keepdim)
