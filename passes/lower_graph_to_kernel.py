"""lower-graph-to-kernel: graph ops become `kernel.launch` ops (and views) with a
weight table.

A thin driver over the lowering facet (`teeny_ir.kernels.lowering`): each op's
rule comes from the kernel family that registered it, or the op's declared
reason for having none; `teeny_ir.kernels.views` then makes channel splits and
concats views where safe.

Each function is planned completely before anything changes: every op that
cannot be lowered is reported (one located diagnostic each) and the module is
left untouched; otherwise the launches replace their graph ops in place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import (
    FusedLoc,
    LocationAttr,
    ModuleOp,
    NameLoc,
    StringAttr,
    TensorType,
    UnknownLoc,
    f32,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from dialects.graph.constant import ConstantOp
from dialects.graph.conv import FusedConv2dOp
from dialects.graph.param import ParamOp
from dialects.kernel import ConcatOp, LaunchOp, ReshapeOp, SliceOp, WeightOp
from dialects.kernel import ParamOp as KernelParamOp
from teeny_ir.core.derivations import Derivation
from teeny_ir.core.diagnostics import Diagnostic, DiagnosticError, Severity, loc_of
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.lowering import LoweringContext, Unlowerable, lower, tensor_type
from teeny_ir.kernels.reshape_copy.lowering import copy_launch
from teeny_ir.kernels.tiles import TileProfile, check_profile
from teeny_ir.kernels.views import form_views

PHASE_ATTRS = ("teeny.backward", "teeny.update")
"""Discardable attributes a launch keeps from its graph op: the training phase."""


_KEPT = (ReturnOp, WeightOp, LaunchOp, ParamOp, KernelParamOp, SliceOp, ReshapeOp, ConcatOp)
"""Ops the pass keeps as they are (kernel IR already, weights, the return)."""


@dataclass
class _Plan:
    """The lowering of one function, built before anything in it changes."""

    launches: list[tuple[Operation, Operation]]
    """(graph op, its kernel.launch or view op)."""
    weights: list[WeightOp]
    params: list[ParamOp]
    errors: list[Diagnostic]
    materialized: list[tuple[ParamOp, KernelParamOp]] = field(
        default_factory=list[tuple[ParamOp, KernelParamOp]]
    )
    """Weights that launches take as operands, each with the kernel.param that
    replaces it."""
    copies: list[tuple[ReturnOp, int, LaunchOp]] = field(
        default_factory=list[tuple[ReturnOp, int, LaunchOp]]
    )
    """Results that are a weight or a constant, each with the copy launch that
    writes the result buffer: (the return, the operand index, the launch)."""

    def discard(self) -> None:
        for _, launch in self.launches:
            launch.erase(safe_erase=False)  # drops its uses of the graph values
        for _, _, copy in self.copies:
            copy.erase(safe_erase=False)

    def origins(self) -> dict[LaunchOp, Operation]:
        return {new: old for old, new in self.launches if isinstance(new, LaunchOp)}

    def apply(self, entry: Block) -> None:
        first = entry.first_op
        for op in [*self.weights, *(value for _, value in self.materialized)]:
            if first is None:
                entry.add_op(op)
            else:
                entry.insert_op_before(op, first)
        for old, launch in self.launches:
            assert old.parent is not None
            old.parent.insert_op_before(launch, old)
            # A launch may have results beyond the op's: status outputs that
            # the runtime checks (`KernelFamily.status_checks`), used by nothing.
            replacements = launch.results[: len(old.results)]
            for result, replacement in zip(old.results, replacements, strict=True):
                result.replace_all_uses_with(replacement)
            old.parent.erase_op(old)
        for ret, index, copy in self.copies:
            assert ret.parent is not None
            ret.parent.insert_op_before(copy, ret)
            ret.operands[index] = copy.results[0]
        for param, value in self.materialized:
            param.result.replace_all_uses_with(value.result)
        for param in self.params:
            assert param.parent is not None
            param.parent.erase_op(param)


def _error(op: Operation, reason: str) -> Diagnostic:
    return Diagnostic(Severity.ERROR, f"cannot lower '{op.name}' to a kernel: {reason}", loc_of(op))


def summary(errors: list[Diagnostic]) -> Diagnostic | None:
    """One unlocated line counting the refusals per (op, reason), most frequent
    first, when more than one op was refused: a model with 39 convolutions of
    an unsupported kind reads as 39 located errors and one count."""
    if len(errors) < 2:
        return None
    counts: dict[str, int] = {}
    for error in errors:
        what = error.message.removeprefix("cannot lower ").replace(" to a kernel: ", ": ", 1)
        counts[what] = counts.get(what, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    parts = "; ".join(f"{count} x {what}" for what, count in ranked)
    return Diagnostic(
        Severity.ERROR, f"lower-graph-to-kernel refused {len(errors)} ops: {parts}", None
    )


def _weight_declarations(
    function: FuncOp, errors: list[Diagnostic]
) -> dict[str, tuple[TensorType, Operation]]:
    """Weight name -> (type, first declaring op), from graph.param and existing
    kernel.weight ops."""
    declarations: dict[str, tuple[TensorType, Operation]] = {}
    for op in function.walk():
        if isinstance(op, WeightOp | ParamOp):
            name = op.weight_name if isinstance(op, WeightOp) else op.param_name.data
            type_ = op.weight_type if isinstance(op, WeightOp) else tensor_type(op.result)
            first, _ = declarations.setdefault(name, (type_, op))
            if first != type_:
                errors.append(_error(op, f"weight '{name}' is also declared with type {first}"))
    return declarations


def plan_function(ctx: LoweringContext, function: FuncOp) -> _Plan:
    """Lower each op of ``function`` off to the side with the lowering context
    ``ctx``, collecting every failure."""
    plan = _Plan([], [], [], [])
    types = _weight_declarations(function, plan.errors)
    declared = {op.weight_name for op in function.walk() if isinstance(op, WeightOp)}
    ops = [op for block in function.body.blocks for op in block.ops]
    refused: set[Operation] = set()
    for op in ops:
        if isinstance(op, ParamOp):
            plan.params.append(op)
        if isinstance(op, _KEPT):
            continue
        try:
            launch = lower(ctx, op)
        except Unlowerable as why:
            plan.errors.append(_error(op, str(why)))
            refused.add(op)
            continue
        launch.location = named_location(op)
        for key in PHASE_ATTRS:  # the training phase of the op (insert-backward, apply-optimizer)
            if key in op.attributes:
                launch.attributes[key] = op.attributes[key]
        plan.launches.append((op, launch))
        if not isinstance(launch, LaunchOp):
            continue  # a view (teeny_ir.kernels.views): no contract, no weights
        try:
            launch.check_plan()
            _check_extra_results(op, launch)
            _declare_weights(launch, {**_epilogue_weights(op), **types}, declared, plan.weights)
        except (VerifyException, Unlowerable) as err:
            plan.errors.append(_error(op, str(err)))
    for ret in (op for op in ops if isinstance(op, ReturnOp)):
        for index, returned in enumerate(ret.operands):
            if isinstance(returned.owner, ParamOp | ConstantOp):
                # A result is a buffer a launch writes; a weight is bound and a
                # constant is a parameter, so a launch copies it.
                copy = copy_launch(returned, tensor_type(returned))
                copy.location = named_location(ret)
                plan.copies.append((ret, index, copy))
    new = {launch for _, launch in plan.launches} | {copy for _, _, copy in plan.copies}
    for param in plan.params:
        if any(use.operation in new for use in param.result.uses):
            name, type_ = param.param_name.data, tensor_type(param.result)
            value = KernelParamOp(Derivation("identity", (name,), type_.get_shape()))
            value.location = named_location(param)
            plan.materialized.append((param, value))
            if name not in declared:
                declared.add(name)
                weight = WeightOp(name, type_, zero_default=param.zero_default)
                weight.location = param.location
                plan.weights.append(weight)
    return plan


def _check_extra_results(op: Operation, launch: LaunchOp) -> None:
    """The launch's results past the op's must each be a status output of its
    family (checked by the runtime), never a value the graph would lose."""
    family = FAMILIES[launch.family]
    status = {text for name, text in launch.arg_bindings if name in family.status_checks}
    for index in range(len(op.results), len(launch.results)):
        if f"out{index}" not in status:
            raise Unlowerable(
                f"internal: result #{index} of the '{launch.family}' launch is neither a "
                "result of the op nor a status output of its family"
            )


def named_location(op: Operation) -> LocationAttr:
    """The location a launch keeps for provenance: a fused location as it is
    (each source named by the pass that fused it), any other wrapped in a name
    location naming ``op`` - ``loc("graph.max_pool2d"("m.mlir":7:10))``."""
    location = op.location
    if isinstance(location, FusedLoc | NameLoc | UnknownLoc):
        return location
    return NameLoc(StringAttr(op.name), location)


def _epilogue_weights(op: Operation) -> dict[str, tuple[TensorType, Operation]]:
    """The per-channel weights a fused convolution's scale and shift read, at
    their shape [C_OUT]: fuse-epilogues removes the graph.param ops it folds."""
    if not isinstance(op, FusedConv2dOp):
        return {}
    channels = TensorType(f32, [tensor_type(op.result).get_shape()[1]])
    sources = (*op.scale.data.sources, *op.shift.data.sources)
    return {source: (channels, op) for source in sources}


def _declare_weights(
    launch: LaunchOp,
    types: Mapping[str, tuple[TensorType, Operation]],
    declared: set[str],
    weights: list[WeightOp],
) -> None:
    """Append a kernel.weight for each new source of the launch's derivations
    (first-use order), checking that the sources fit."""
    for slot in launch.param_slots:
        shapes = {s: types[s][0].get_shape() for s in slot.derivation.sources if s in types}
        for problem in slot.derivation.check_sources(shapes):
            raise Unlowerable(f"its {slot.name} derivation does not fit: {problem}")
        for source in slot.derivation.sources:
            if source not in declared:
                declared.add(source)
                type_, declaration = types[source]
                weight = WeightOp(
                    source,
                    type_,
                    zero_default=isinstance(declaration, ParamOp) and declaration.zero_default,
                )
                weight.location = declaration.location
                weights.append(weight)


@dataclass(frozen=True)
class LowerGraphToKernelPass(ModulePass):
    """Lower graph ops to kernel.launch ops and a kernel.weight table.

    Expects the graph after select-conv-algorithm. Each op becomes the launch
    its kernel family's lowering rule builds (``docs/supported-ops.md`` lists
    them): a ``graph.fused_conv2d`` the ``conv1x1_gemm``,
    ``implicit_gemm_conv`` or ``depthwise_conv`` launch of its ``algorithm``
    (its scale and shift derivations as parameter slots); a ``graph.batch_norm``
    a ``channel_affine`` launch in inference form, a ``batch_norm_train`` one
    in training form (``graph.batch_norm_backward`` a ``batch_norm_backward``
    one); pointwise-table ops ``elementwise`` launches over a rank-6 view with
    broadcasting strides; reshapes and flattens that keep the batch views with
    no launch, and (option ``views``) channel splits and concats too where
    safe. The ``graph.param`` ops become ``kernel.weight`` declarations at the
    top of the function, one per weight a derivation reads, and a
    ``kernel.param`` where a launch takes a weight (or a ``graph.constant``) as
    an operand. Launches keep the locations and result types of the ops they
    replace; ``func.return`` stays, a weight or constant it returns copied into
    the result by a ``reshape_copy`` launch. Refuses, naming each op with its location:
    unfused convolutions, fused convolutions whose algorithm no family
    implements, derivations that do not fit their weights' shapes, and ops no family implements (or forms of an op
    its family's rule does not take, each with the rule's reason).
    """

    name = "lower-graph-to-kernel"
    anchors: ClassVar[tuple[str, ...]] = ("builtin.module",)

    views: bool = True
    """Make channel splits and concats views where safe (`teeny_ir.kernels.views`);
    false keeps every copy launch."""

    profile: TileProfile = "gpu"
    """The tile profile of the launches whose tiles the op does not carry (fused
    convolutions carry select-conv-algorithm's): ``gpu`` tiles fit sm_80/sm_90,
    ``interpreter`` tiles are large, for Triton's CPU interpreter."""

    def __post_init__(self) -> None:
        check_profile(self.profile)  # a ValueError naming the profiles

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lowering = LoweringContext(profile=self.profile)
        plans = [(f, plan_function(lowering, f)) for f in op.walk() if isinstance(f, FuncOp)]
        errors = [e for _, plan in plans for e in plan.errors]
        if errors:
            for _, plan in plans:
                plan.discard()
            total = summary(errors)
            raise DiagnosticError([*errors, *([total] if total else [])])
        for function, plan in plans:
            origins = plan.origins()
            plan.apply(function.body.blocks[0])
            if self.views:
                form_views(function.body.blocks[0], origins)
