"""Batch norm: the inference form, ``batch_norm`` (``training=False``) and
``_native_batch_norm_legit_no_training`` (what ``run_decompositions`` writes), as
the inference `graph.batch_norm`; and the training form of a module exported in
``train()``, ``_native_batch_norm_legit_functional`` (``training=True``, what the
importer's functionalisation writes), as the training `graph.batch_norm`, whose
updated running statistics are results 3 and 4 (the program's buffer mutations).

A training batch norm left in place (``batch_norm`` or the in-place
``_native_batch_norm_legit`` with ``training=True``) would update its running
statistics unseen, so it is refused.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from teeny_ir.frontend.torch.context import Call, Value, aten_op, dims


def _affine(call: Call, name: str, fill: float, channels: int) -> SSAValue:
    """``weight``/``bias`` of the norm, or the identity's ones/zeros when None."""
    if call.has(name):
        return call.tensor(name)
    return call.b.constant([fill], [channels])


def _operands(call: Call) -> tuple[SSAValue, SSAValue, SSAValue, SSAValue, SSAValue]:
    """input, weight, bias, running mean and running var, checked."""
    x = call.tensor("input")
    if len(dims(x)) != 4:
        raise call.refuse(f"only 4-D inputs (N, C, H, W) are supported (rank {len(dims(x))})")
    if not call.has("running_mean") or not call.has("running_var"):
        raise call.refuse("a batch norm without running statistics normalises by the batch")
    channels = dims(x)[1]
    return (
        x,
        _affine(call, "weight", 1.0, channels),
        _affine(call, "bias", 0.0, channels),
        call.tensor("running_mean"),
        call.tensor("running_var"),
    )


def _norm(call: Call, momentum: float, eps: float) -> SSAValue:
    return call.b.batch_norm(*_operands(call), eps=eps, momentum=momentum)


_TRAINING = (
    "a training-mode batch norm that updates its running statistics in place is not "
    "supported: export the module after module.eval(), or import the functional form "
    "(ExportedProgram.run_decompositions)"
)


@aten_op("aten.batch_norm")
def _batch_norm(call: Call) -> Value:
    if call.arg("training"):
        raise call.refuse(_TRAINING)
    return _norm(call, call.number("momentum"), call.number("eps"))


@aten_op("aten._native_batch_norm_legit_no_training")
def _native_no_training(call: Call) -> Value:
    # Results 1 and 2 (the saved mean and inverse std) are empty in this form.
    return [_norm(call, call.number("momentum"), call.number("eps")), None, None]


@aten_op("aten._native_batch_norm_legit")
def _native(call: Call) -> Value:
    if call.arg("training"):
        raise call.refuse(_TRAINING)
    return [_norm(call, call.number("momentum"), call.number("eps")), None, None]


@aten_op("aten._native_batch_norm_legit_functional")
def _native_functional(call: Call) -> Value:
    # Results: the output, the saved mean and inverse std (backward-only, not
    # mapped), then the updated running mean and var, which only training computes.
    momentum, eps = call.number("momentum"), call.number("eps")
    if not call.arg("training"):
        unchanged = [call.tensor("running_mean"), call.tensor("running_var")]
        return [_norm(call, momentum, eps), None, None, *unchanged]
    y, mean, var = call.b.batch_norm(*_operands(call), eps=eps, momentum=momentum, training=True)
    return [y, None, None, mean, var]
