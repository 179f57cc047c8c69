"""insert-backward: append ``d loss / d p`` for every trainable parameter of @forward.

A generic reverse walk over the VJP registry (`teeny_ir.autodiff.registry`):
the ops of @forward, last to first; each op some of whose operands depend on
a trainable parameter hands the gradients of its results to its rule, which
emits the gradients of its operands (`teeny_ir.autodiff.context.VjpContext`).
A value that fans out gets the sum of its users' contributions, added in the
order the walk meets them (so the result is the same every time). The loss is
@forward's first result, a scalar ``tensor<f32>``, seeded with 1.

Trainable parameters are the f32 ``graph.param`` ops, by weight name, except
those used only as a batch norm's running statistics. Each gets one result,
``d loss / d p`` (zero when the loss does not reach it), with the result
attribute ``{teeny.grad = "<name>"}``, in first-declaration order after the
function's existing results, which stay in place.

What the backward reads from the forward is decided in one place, the
save/recompute policy (`teeny_ir.autodiff.policy`): convolution, matrix
product, normalisation, pool and reduction outputs are kept, pointwise ops are
recomputed. ``--mlir-pass-statistics`` reports the bytes kept per sample.

An op on the way from a parameter to the loss without a VJP rule, or declared
not differentiable, is a located error naming it (never a silent stop); every
such op is reported, and the module is left as it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from dialects.graph.constant import ConstantOp
from dialects.graph.conv import FusedConv2dOp
from dialects.graph.norm import BatchNormOp
from dialects.graph.param import ParamOp
from teeny_ir.autodiff.context import VjpContext
from teeny_ir.autodiff.registry import VJPS, VjpError
from teeny_ir.core.diagnostics import Diagnostic, DiagnosticError, Severity, loc_of
from teeny_ir.core.facets import OptOut

GRAD_ATTR = "teeny.grad"
"""The result attribute naming the parameter a gradient result belongs to."""
RUNNING_STAT_OPERANDS = (3, 4)
"""Operands of `BatchNormOp` that are running statistics (no gradient)."""


def _error(message: str, where: Operation) -> Diagnostic:
    return Diagnostic(Severity.ERROR, message, loc_of(where))


def forward_function(module: ModuleOp, pass_name: str) -> FuncOp:
    """The module's @forward (a located `DiagnosticError` if there is none)."""
    for op in module.ops:
        if isinstance(op, FuncOp) and op.sym_name.data == "forward":
            return op
    raise DiagnosticError([_error(f"{pass_name} expects a function @forward", module)])


@dataclass
class Trainable:
    """A trainable weight: its type, and the ``graph.param`` ops that read it
    (none when only a fused convolution's derivation does)."""

    type: TensorType
    ops: list[ParamOp]
    where: Operation | None = None
    """The op that first reads it (a fused convolution, for a folded bias)."""


def trainable_params(function: FuncOp) -> dict[str, Trainable]:
    """Weight name -> `Trainable`, in first-use order: every f32 parameter except
    frozen ones and those used only as batch-norm running statistics, and every weight a fused
    convolution reads through an ``identity`` derivation (its bias, folded in
    by fuse-epilogues)."""
    found: dict[str, Trainable] = {}
    stats: set[str] = set()
    used_otherwise: set[str] = set()
    for op in function.walk():
        if isinstance(op, FusedConv2dOp):
            for derivation in (op.scale.data, op.shift.data):
                if derivation.kind == "identity":
                    (name,) = derivation.sources
                    found.setdefault(name, Trainable(TensorType(f32, derivation.shape), [], op))
                    used_otherwise.add(name)
            continue
        if not isinstance(op, ParamOp):
            continue
        type_ = op.result.type
        if not isinstance(type_, TensorType) or type_.element_type != f32 or op.frozen:
            continue
        name = op.param_name.data
        found.setdefault(name, Trainable(type_, [])).ops.append(op)
        for use in op.result.uses:
            if isinstance(use.operation, BatchNormOp) and use.index in RUNNING_STAT_OPERANDS:
                stats.add(name)
            else:
                used_otherwise.add(name)
    return {n: t for n, t in found.items() if n not in stats or n in used_otherwise}


def _depends_on(function: FuncOp, sources: set[SSAValue]) -> set[SSAValue]:
    """Every value computed from one of ``sources`` (the sources included)."""
    reached = set(sources)
    for op in function.body.block.ops:
        if any(operand in reached for operand in op.operands):
            reached.update(op.results)
    return reached


@dataclass
class _Backward:
    """The gradient contributions collected so far, by forward value."""

    ctx: VjpContext
    contributions: dict[SSAValue, list[SSAValue]]

    def total(self, value: SSAValue) -> SSAValue | None:
        """The sum of ``value``'s contributions, in the order they came."""
        parts = self.contributions.get(value)
        if not parts:
            return None
        total = parts[0]
        for part in parts[1:]:
            total = self.ctx.add(total, part)
        return total


def differentiate(function: FuncOp) -> tuple[list[Diagnostic], int]:
    """Insert the backward into ``function`` (in place); returns the errors (the
    function must then be discarded) and the bytes per sample the backward keeps."""
    block = function.body.block
    ret = block.last_op
    assert isinstance(ret, ReturnOp)
    loss_type = ret.arguments[0].type if ret.arguments else None
    if loss_type != TensorType(f32, []):
        found = "nothing" if loss_type is None else str(loss_type)
        return [
            _error(
                "insert-backward expects @forward's first result to be the loss, a scalar "
                f"tensor<f32>, got {found}",
                ret,
            )
        ], 0
    params = trainable_params(function)
    needs = _depends_on(function, {op.result for t in params.values() for op in t.ops})
    needs |= {
        result
        for op in block.ops
        if isinstance(op, FusedConv2dOp) and _reads_trainable(op, params)
        for result in op.results
    }
    needs = _depends_on(function, needs)
    forward_ops = [op for op in block.ops if op is not ret]
    ctx = VjpContext(block, ret)
    ctx.location = ret.location
    seed = ctx.emit(ConstantOp.from_values([1.0], [])).result
    backward = _Backward(ctx, {ret.arguments[0]: [seed]})
    errors: list[Diagnostic] = []
    for op in reversed(forward_ops):
        if isinstance(op, ParamOp) or not any(v in needs for v in op.operands):
            continue
        grads = [backward.total(result) for result in op.results]
        if all(g is None for g in grads):
            continue
        rule = VJPS.lookup(type(op))
        if rule is None:
            errors.append(
                _error(
                    f"insert-backward: no VJP rule for '{op.name}' (cannot differentiate it)", op
                )
            )
            continue
        if isinstance(rule, OptOut):
            errors.append(
                _error(f"insert-backward: '{op.name}' is not differentiable: {rule.reason}", op)
            )
            continue
        ctx.location = op.location
        try:
            operand_grads = rule(ctx, op, grads)
        except VjpError as err:
            errors.append(_error(f"insert-backward: cannot differentiate '{op.name}': {err}", op))
            continue
        _collect(op, operand_grads, needs, backward)
    if errors:
        return errors, 0
    ctx.location = ret.location
    results: list[SSAValue] = []
    for name, trainable in params.items():
        parts = [g for op in trainable.ops if (g := backward.total(op.result)) is not None]
        parts += ctx.param_grads.get(name, [])
        total = parts[0] if parts else ctx.zeros(trainable.type)
        for part in parts[1:]:
            total = ctx.add(total, part)
        results.append(total)
    _declare(block, params)
    _append_results(function, ret, results, [{GRAD_ATTR: name} for name in params])
    _sweep(block, seed)
    return [], sum(ctx.saved.values())


def _declare(block: Block, params: dict[str, Trainable]) -> None:
    """A ``graph.param`` for each trainable weight that only a derivation reads (a
    fused convolution's bias), so that every gradient result names a parameter
    the function declares (apply-optimizer updates it)."""
    first = block.first_op
    assert first is not None
    for name, trainable in params.items():
        if not trainable.ops:
            param = ParamOp(name, trainable.type)
            if trainable.where is not None:
                param.location = trainable.where.location
            block.insert_op_before(param, first)
            trainable.ops.append(param)


def _reads_trainable(op: FusedConv2dOp, params: dict[str, Trainable]) -> bool:
    """Whether a fused convolution's derivations read a trainable weight."""
    return any(source in params for d in (op.scale.data, op.shift.data) for source in d.sources)


def _collect(
    op: Operation,
    operand_grads: Sequence[SSAValue | None],
    needs: set[SSAValue],
    backward: _Backward,
) -> None:
    """Record the rule's operand gradients (those of operands that need one)."""
    if len(operand_grads) != len(op.operands):
        raise AssertionError(
            f"the VJP rule of '{op.name}' returned {len(operand_grads)} gradients for "
            f"{len(op.operands)} operands"
        )
    for operand, grad in zip(op.operands, operand_grads, strict=True):
        if grad is None or operand not in needs:
            continue
        if grad.type != operand.type:
            raise AssertionError(
                f"the VJP rule of '{op.name}' gave a gradient of type {grad.type} for an "
                f"operand of type {operand.type}"
            )
        backward.contributions.setdefault(operand, []).append(grad)


def _append_results(
    function: FuncOp,
    ret: ReturnOp,
    values: Sequence[SSAValue],
    attrs: Sequence[dict[str, str]],
) -> None:
    """Append ``values`` to the function's results, each with its result attributes."""
    old = list(ret.arguments)
    new_ret = ReturnOp(*old, *values)
    new_ret.location = ret.location
    block = function.body.block
    block.insert_op_before(new_ret, ret)
    block.erase_op(ret)
    inputs = function.function_type.inputs.data
    outputs = [*function.function_type.outputs.data, *(v.type for v in values)]
    function.function_type = FunctionType.from_lists(list(inputs), outputs)
    existing = (
        list(function.res_attrs.data)
        if function.res_attrs is not None
        else [DictionaryAttr({}) for _ in old]
    )
    added = [DictionaryAttr({k: StringAttr(v) for k, v in a.items()}) for a in attrs]
    function.res_attrs = ArrayAttr([*existing, *added])


def _sweep(block: object, seed: SSAValue) -> None:
    """Erase the backward ops nothing uses (a rule's gradient for an operand that
    needs none), last to first."""
    assert seed.owner is not None
    parent = seed.owner.parent_block()
    assert parent is not None
    ops: list[Operation] = []
    started = False
    for op in parent.ops:
        started = started or op is seed.owner
        if started and not isinstance(op, ReturnOp):
            ops.append(op)
    for op in reversed(ops):
        if all(not result.uses for result in op.results):
            parent.erase_op(op)


@dataclass(frozen=True)
class InsertBackwardPass(ModulePass):
    """Append d loss / d p for every trainable parameter of @forward.

    Expects graph ops, @forward's first result the loss (a scalar
    ``tensor<f32>``), best after train-mode, split-bias and
    fuse-epilogues{mode=training}. Produces one result per trainable
    parameter (every f32 ``graph.param`` but the batch-norm running
    statistics), ``{teeny.grad = "<name>"}``, after the existing results; the
    backward ops take the locations of the forward ops they differentiate.
    Refuses, naming each op with its location: an op on the way from a
    parameter to the loss without a VJP rule or not differentiable, and a
    first result that is not a scalar loss. Leaves the module as it was then.
    """

    name = "insert-backward"
    anchors: ClassVar[tuple[str, ...]] = ("builtin.module",)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        forward = forward_function(op, self.name)
        clone = forward.clone()
        errors, saved = differentiate(clone)
        if errors:
            clone.erase(safe_erase=False)
            raise DiagnosticError(errors)
        parent = forward.parent_block()
        assert parent is not None
        parent.insert_op_before(clone, forward)
        parent.erase_op(forward)
        sink = getattr(ctx, "_teeny_pass_statistics", None)
        if sink is not None:
            sink.add(
                "saved-bytes-per-sample",
                saved,
                "Bytes of forward values the backward keeps, per sample",
            )
