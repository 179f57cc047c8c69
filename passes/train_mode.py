"""train-mode: PyTorch's ``model.train()`` for a graph program.

Every inference-form ``graph.batch_norm`` (one result, the running statistics
as its normalisation) becomes its training form: it normalises with the batch
mean and the biased batch variance and also yields the updated running
statistics, ``(1 - momentum) * running + momentum * batch`` (the variance
unbiased), with the op's own momentum. Those two results are appended to
@forward's results with the result attributes ``{teeny.running = "<name>"}``
naming the running-mean and running-variance weights, in op order, after the
existing results (which stay in place).

A batch norm with an ``activation`` (fuse-epilogues folds one only in
inference mode, so run train-mode first) is split back into the training
batch norm and the activation op.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from dialects.graph.norm import BatchNormOp
from dialects.graph.param import ParamOp
from passes.insert_backward import _append_results, forward_function
from teeny_ir.core import pointwise
from teeny_ir.core.diagnostics import Diagnostic, DiagnosticError, Severity, loc_of

RUNNING_ATTR = "teeny.running"
"""The result attribute naming the running statistic a result updates."""


def _weight_name(value: SSAValue) -> str | None:
    owner = value.owner
    return owner.param_name.data if isinstance(owner, ParamOp) else None


def _errors(function: FuncOp) -> list[Diagnostic]:
    """A located error for each inference batch norm whose running statistics
    are not ``graph.param`` ops (their updates would have no name)."""
    found = []
    for op in function.body.block.ops:
        if not isinstance(op, BatchNormOp) or op.training:
            continue
        for what, value in (("running mean", op.operands[3]), ("running variance", op.operands[4])):
            if _weight_name(value) is None:
                found.append(
                    Diagnostic(
                        Severity.ERROR,
                        f"train-mode: the {what} of 'graph.batch_norm' is not a graph.param, "
                        "so its update cannot be named",
                        loc_of(op),
                    )
                )
    return found


def to_training(function: FuncOp) -> None:
    """Rewrite ``function``'s inference batch norms in place (see the module)."""
    block = function.body.block
    ret = block.last_op
    assert isinstance(ret, ReturnOp)
    updates: list[SSAValue] = []
    names: list[dict[str, str]] = []
    for op in list(block.ops):
        if not isinstance(op, BatchNormOp) or op.training:
            continue
        trained = BatchNormOp(
            *op.operands,
            eps=op.eps_attr.value.data if "eps" in op.properties else None,
            momentum=op.momentum_attr.value.data if "momentum" in op.properties else None,
            training=True,
        )
        trained.attributes.update(op.attributes)
        trained.location = op.location
        block.insert_op_before(trained, op)
        value: SSAValue = trained.results[0]
        if op.activation_attr is not None:
            activation = _activation(op.activation_attr.data, value)
            activation.location = op.location
            block.insert_op_before(activation, op)
            value = activation.results[0]
        op.results[0].replace_all_uses_with(value)
        block.erase_op(op)
        for index, result in ((3, trained.results[1]), (4, trained.results[2])):
            name = _weight_name(trained.operands[index])
            assert name is not None
            updates.append(result)
            names.append({RUNNING_ATTR: name})
    if updates:
        _append_results(function, ret, updates, names)


def _activation(name: str, value: SSAValue) -> Operation:
    """The graph op of the epilogue activation ``name`` applied to ``value``."""
    from dialects.graph import Graph

    entry = pointwise.BY_NAME[name]
    op_class = next(op for op in Graph.operations if op.name == entry.op)
    return op_class(value)  # type: ignore[call-arg, arg-type]


@dataclass(frozen=True)
class TrainModePass(ModulePass):
    """Turn every inference batch norm of @forward into its training form, as
    PyTorch's model.train().

    Expects graph ops. Each inference-form ``graph.batch_norm`` becomes the
    training form (batch statistics; the updated running mean and variance as
    two more results, appended to @forward's results with
    ``{teeny.running = "<weight name>"}``); an ``activation`` it carries
    becomes its own op again. Refuses, with a located error for each: a batch
    norm whose running statistics are not ``graph.param`` ops.
    """

    name = "train-mode"
    anchors: ClassVar[tuple[str, ...]] = ("builtin.module",)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        forward = forward_function(op, self.name)
        errors = _errors(forward)
        if errors:
            raise DiagnosticError(errors)
        to_training(forward)
