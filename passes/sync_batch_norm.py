"""sync-batch-norm: batch statistics over every rank (PyTorch's SyncBatchNorm).

Data-parallel training normalises each rank's shard with its own batch
statistics unless the batch norms are synchronised. This pass rewrites every
training-form ``graph.batch_norm`` of @forward (train-mode makes them) into
graph ops whose statistics are the whole group's, as
``torch.nn.SyncBatchNorm`` computes them: for ``x`` [N, C, ...] on each of
``world`` ranks, with every sum per channel over every dimension but 1::

    count = all_reduce_sum(N * prod(spatial))              the global count
    mean  = all_reduce_sum(sum(x)) / count                 the global mean
    d     = x - mean
    var   = all_reduce_sum(sum(d * d)) / count             biased: normalises
    y     = d / sqrt(var + eps) * gamma + beta
    running_mean' = (1 - momentum) * running_mean + momentum * mean
    running_var'  = (1 - momentum) * running_var
                    + momentum * all_reduce_sum(sum(d * d)) / (count - 1)   unbiased

Two passes over the data (the global mean first, then the global mean of the
squared deviations from it), never ``E[x^2] - E[x]^2``. The count is the sum of
the ranks' counts: with a dynamic batch, each rank's is its run-time batch
(a sum of ones over it) times the spatial size, so shards of any size are
counted right; with a static batch, every rank runs the same shape, and the
count is the constant ``world * N * prod(spatial)``. The all-reduces are
``graph.all_reduce ... reduction sum``; everything else is existing graph ops
(`graph.reduce_sum` with ``keepdims``, pointwise ops, `graph.reshape`,
`graph.broadcast`, `graph.constant`), so insert-backward differentiates the
result with the ops' own rules: the all-reduce's adjoint is the all-reduce of
the cotangents, which gives SyncBatchNorm's all-reduced ``sum_dy`` and
``sum_dy_xmu``. Every op made from a batch norm takes its location.

The updated running statistics replace the batch norm's last two results
wherever they are used (train-mode returned them with ``{teeny.running =
"<weight>"}``: those results keep their places and attributes). Their
``graph.param`` ops, used by nothing but the batch norms' running-statistic
operands, are marked ``frozen``, as the torch importer marks buffers: read
by pointwise ops now, they would otherwise look trainable to insert-backward.

With ``world=1`` nothing changes (one rank's statistics are the group's). A
global count of 1 gives a non-finite unbiased variance, where PyTorch refuses
the batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, TensorType, UnitAttr, f32
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from dialects.graph.collective import AllReduceOp
from dialects.graph.constant import ConstantOp
from dialects.graph.elementwise import AddOp, DivOp, MulOp, SqrtOp, SubOp
from dialects.graph.norm import BatchNormOp
from dialects.graph.param import ParamOp
from dialects.graph.reduce import ReduceSumOp
from dialects.graph.structure import BroadcastOp, ReshapeOp
from passes.insert_backward import RUNNING_STAT_OPERANDS, forward_function
from teeny_ir.core.diagnostics import Diagnostic, DiagnosticError, Severity, loc_of


class _Emitter:
    """Inserts ops before one batch norm, each located at it; counts the all-reduces."""

    def __init__(self, block: Block, anchor: BatchNormOp) -> None:
        self.block = block
        self.anchor = anchor
        self.all_reduces = 0
        self._constants: dict[float, SSAValue] = {}

    def emit(self, op: Operation) -> SSAValue:
        op.location = self.anchor.location
        self.block.insert_op_before(op, self.anchor)
        self.all_reduces += isinstance(op, AllReduceOp)
        return op.results[0]

    def constant(self, value: float) -> SSAValue:
        """A scalar ``tensor<f32>`` constant (one per value)."""
        if value not in self._constants:
            self._constants[value] = self.emit(ConstantOp.from_values([value], []))
        return self._constants[value]


def _type(value: SSAValue) -> TensorType:
    assert isinstance(value.type, TensorType)  # verified graph values
    return value.type


def synchronise(block: Block, op: BatchNormOp, world: int) -> _Emitter:
    """Replace the training-form ``op`` by its synchronised decomposition over
    ``world`` ranks (see the module docstring); returns what was emitted."""
    e = _Emitter(block, op)
    x, gamma, beta, running_mean, running_var = op.operands
    shape = _type(x).get_shape()
    channels = shape[1]
    axes = [0, *range(2, len(shape))]
    kept = [1, channels, *([1] * (len(shape) - 2))]
    spatial = math.prod(shape[2:])

    def all_reduce_sum(value: SSAValue) -> SSAValue:
        return e.emit(AllReduceOp(value, "sum", world))

    if shape[0] == DYNAMIC_INDEX:
        ones = e.emit(BroadcastOp(e.constant(1.0), TensorType(f32, [DYNAMIC_INDEX]), x))
        local = e.emit(ReduceSumOp(ones, [0]))  # this rank's batch, at run time
        if spatial != 1:
            local = e.emit(MulOp(local, e.constant(float(spatial))))
        count = all_reduce_sum(local)
    else:  # every rank runs this static shape
        count = e.constant(float(world * shape[0] * spatial))

    total = all_reduce_sum(e.emit(ReduceSumOp(x, axes, keepdims=True)))
    mean = e.emit(DivOp(total, count))
    centered = e.emit(SubOp(x, mean))
    squares = e.emit(ReduceSumOp(e.emit(MulOp(centered, centered)), axes, keepdims=True))
    squares = all_reduce_sum(squares)
    var = e.emit(DivOp(squares, count))
    std = e.emit(SqrtOp(e.emit(AddOp(var, e.constant(op.eps)))))
    normalized = e.emit(DivOp(centered, std))
    scaled = e.emit(MulOp(normalized, e.emit(ReshapeOp(gamma, kept))))
    y = e.emit(AddOp(scaled, e.emit(ReshapeOp(beta, kept))))

    momentum = op.momentum
    unbiased = e.emit(DivOp(squares, e.emit(SubOp(count, e.constant(1.0)))))

    def update(running: SSAValue, batch: SSAValue) -> SSAValue:
        kept_part = e.emit(MulOp(running, e.constant(1.0 - momentum)))
        new_part = e.emit(MulOp(e.emit(ReshapeOp(batch, [channels])), e.constant(momentum)))
        return e.emit(AddOp(kept_part, new_part))

    new_mean = update(running_mean, mean)
    new_var = update(running_var, unbiased)
    for old, new in zip(op.results, (y, new_mean, new_var), strict=True):
        old.replace_all_uses_with(new)
    block.erase_op(op)
    return e


def _freeze_running_statistics(norms: list[BatchNormOp]) -> None:
    """Mark ``frozen`` each running-statistic ``graph.param`` of ``norms`` that
    nothing else reads (before the rewrite)."""
    for op in norms:
        for index in RUNNING_STAT_OPERANDS:
            owner = op.operands[index].owner
            if not isinstance(owner, ParamOp) or owner.frozen:
                continue
            if all(
                isinstance(use.operation, BatchNormOp) and use.index in RUNNING_STAT_OPERANDS
                for use in owner.result.uses
            ):
                owner.properties["frozen"] = UnitAttr()


@dataclass(frozen=True)
class SyncBatchNormPass(ModulePass):
    """Synchronise every training batch norm of @forward over world ranks (SyncBatchNorm).

    Expects graph ops after train-mode and before insert-backward. Each
    training-form ``graph.batch_norm`` becomes graph ops and three
    ``graph.all_reduce ... reduction sum`` (the count, the sum and the sum of
    squared deviations; two with a static batch, whose count is a constant):
    normalisation with the global mean and biased global variance, running
    statistics updated with the global mean and unbiased global variance, as
    ``torch.nn.SyncBatchNorm``. The updated statistics stay @forward's
    results with their ``teeny.running`` attributes; their ``graph.param``
    ops are marked ``frozen`` (no gradient). Every new op is located at its
    batch norm. ``world=1`` changes nothing. Option: ``world`` (the number of
    ranks, >= 1; default 1). Refuses, with located errors: ``world`` < 1 (at
    @forward) and an inference-form batch norm (run train-mode first).
    """

    name = "sync-batch-norm"
    anchors: ClassVar[tuple[str, ...]] = ("builtin.module",)

    world: int = 1
    """The number of ranks of the data-parallel group, >= 1."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        forward = forward_function(op, self.name)
        errors: list[Diagnostic] = []
        if self.world < 1:
            errors.append(
                Diagnostic(
                    Severity.ERROR,
                    f"{self.name}: expected world (the number of ranks) >= 1, got {self.world}",
                    loc_of(forward),
                )
            )
        norms: list[BatchNormOp] = []
        for block in forward.body.blocks:
            for norm in block.ops:
                if not isinstance(norm, BatchNormOp):
                    continue
                if not norm.training:
                    errors.append(
                        Diagnostic(
                            Severity.ERROR,
                            f"{self.name}: 'graph.batch_norm' is in inference form (running "
                            "statistics, nothing to synchronise): run train-mode first",
                            loc_of(norm),
                        )
                    )
                norms.append(norm)
        if errors:
            raise DiagnosticError(errors)
        all_reduces = 0
        if self.world > 1:
            _freeze_running_statistics(norms)
            for norm in norms:
                block = norm.parent_block()
                assert block is not None
                emitted = synchronise(block, norm, self.world)
                all_reduces += emitted.all_reduces
        sink = getattr(ctx, "_teeny_pass_statistics", None)
        if sink is not None:
            sink.add(
                "batch-norms", len(norms) if self.world > 1 else 0, "Number of batch norms synced"
            )
            sink.add("all-reduces", all_reduces, "Number of graph.all_reduce ops inserted")
