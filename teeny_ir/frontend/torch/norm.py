"""Batch norm in its inference form: ``batch_norm`` (``training=False``) and
``_native_batch_norm_legit_no_training`` (what ``run_decompositions`` writes).

A training-mode batch norm (an export of a module left in ``train()``) is refused:
the running-statistic updates would be buffer mutations, which this slice does
not map; ``module.eval()`` before exporting gives the inference form.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from teeny_ir.frontend.torch.context import Call, Value, aten_op, dims


def _affine(call: Call, name: str, fill: float, channels: int) -> SSAValue:
    """``weight``/``bias`` of the norm, or the identity's ones/zeros when None."""
    if call.has(name):
        return call.tensor(name)
    return call.b.constant([fill], [channels])


def _norm(call: Call, momentum: float, eps: float) -> SSAValue:
    x = call.tensor("input")
    if len(dims(x)) != 4:
        raise call.refuse(f"only 4-D inputs (N, C, H, W) are supported (rank {len(dims(x))})")
    if not call.has("running_mean") or not call.has("running_var"):
        raise call.refuse("a batch norm without running statistics normalises by the batch")
    channels = dims(x)[1]
    return call.b.batch_norm(
        x,
        _affine(call, "weight", 1.0, channels),
        _affine(call, "bias", 0.0, channels),
        call.tensor("running_mean"),
        call.tensor("running_var"),
        eps=eps,
        momentum=momentum,
    )


_TRAINING = "training-mode batch norm is not supported: export the module after module.eval()"


@aten_op("aten.batch_norm")
def _batch_norm(call: Call) -> Value:
    if call.arg("training"):
        raise call.refuse(_TRAINING)
    return _norm(call, call.number("momentum"), call.number("eps"))


@aten_op("aten._native_batch_norm_legit_no_training")
def _native_no_training(call: Call) -> Value:
    # Results 1 and 2 (the saved mean and inverse std) are empty in this form.
    return [_norm(call, call.number("momentum"), call.number("eps")), None, None]


@aten_op("aten._native_batch_norm_legit", "aten._native_batch_norm_legit_functional")
def _native(call: Call) -> Value:
    if call.arg("training"):
        raise call.refuse(_TRAINING)
    return [_norm(call, call.number("momentum"), call.number("eps")), None, None]
