"""fuse-epilogues: fold the epilogue chain that follows a convolution, a linear
layer, a matmul or a batch norm into that op.

Formerly fuse-conv-bn-act, which pipelines may still name (a registered alias,
`teeny_ir.driver.pass_registry.ALIASES`): the pass outgrew convolutions.

For a convolution the chain is
``conv2d -> [bias_add] -> [batch_norm] -> [activation] -> [add]`` (in this
order, each part optional), every intermediate result used once. The
epilogue becomes two per-channel derivations (`teeny_ir.core.derivations`), so the
BN fold is never computed here: ``scale = bn_scale``, ``shift = bn_shift`` with
the bias folded in; a bias alone gives ``fill(1.0)`` / ``identity(bias)``; an
activation alone ``fill(1.0)`` / ``fill(0.0)``. A final ``graph.add`` of the
chain's value and a *residual* becomes the fused op's ``residual`` operand
(added after the activation, as in YOLOv8's bottleneck ``x + SiLU(BN(conv))``)
when the residual has the chain's type (no broadcasting) and is computed before
the convolution (a block argument or an earlier op's result), so the fused op
can take the add's place. A fusion that is blocked leaves the IR as it is and
says why in a remark at the op that was not fused.

A ``graph.linear`` or ``graph.matmul`` without an activation absorbs its
epilogue the same way: ``linear|matmul -> [bias] -> [activation]`` (single-use
values) becomes one op of its kind with the bias as its ``bias`` operand and
the activation as its ``activation`` (in both modes), ``y = act(x @ w + bias)``.
The bias is a ``graph.add`` (either operand order) of the product and a
``graph.param`` of shape [N], N the result's last dimension (numpy
broadcasting adds it along that dimension, at any rank), or, for a rank-2
linear only, a ``graph.bias_add`` of a ``graph.param`` (bias_add broadcasts
along dimension 1, which is then the output features); it joins only an op
that has no bias yet.

A standalone inference ``graph.batch_norm`` (one no convolution chain
absorbed: the convolution comes first in its block, so its chain is grown
first) followed by a single-use activation becomes one ``graph.batch_norm``
carrying the activation as its ``activation`` (inference mode only; training
mode leaves both ops).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    FusedLoc,
    LocationAttr,
    NameLoc,
    NoneAttr,
    StringAttr,
    TensorType,
    UnknownLoc,
    f32,
)
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from dialects.derive import DerivationAttr
from dialects.graph.conv import Conv2dOp, FusedConv2dOp
from dialects.graph.elementwise import AddOp, BiasAddOp
from dialects.graph.linear import LinearOp, MatmulOp
from dialects.graph.norm import BatchNormOp
from dialects.graph.param import ParamOp
from teeny_ir.core import pointwise
from teeny_ir.core.derivations import bn_scale, bn_shift, fill, identity
from teeny_ir.core.diagnostics import DiagnosticEngine, engine_of

Mode = Literal["inference", "training"]


def epilogue_activation(op: Operation) -> str | None:
    """The `FusedConv2dOp` activation keyword of ``op``, if the epilogue may absorb
    it: an epilogue entry of the pointwise table."""
    entry = pointwise.lookup(op.name)
    return entry.name if entry is not None and entry.epilogue else None


def _param(value: SSAValue) -> ParamOp | None:
    return value.owner if isinstance(value.owner, ParamOp) else None


def _weight_name(value: SSAValue) -> str:
    """The weight name of a value the chain has checked to be a graph.param."""
    param = _param(value)
    assert param is not None
    return param.param_name.data


def fused_location(ops: Sequence[Operation]) -> LocationAttr:
    """The location of an op made from ``ops``: each source named by its op,
    ``loc(fused["graph.conv2d"("m.mlir":3:8), "graph.silu"("m.mlir":4:8)])``
    (the provenance a plan's launch lists), built as MLIR's ``FusedLoc::get``
    does: unknown locations dropped, duplicates merged, a single one kept as is.
    A source that already has a name or fused location keeps its entries."""
    locations: list[LocationAttr] = []
    for op in ops:
        location = op.location
        if isinstance(location, UnknownLoc):
            continue
        if isinstance(location, FusedLoc) and isinstance(location.locations, ArrayAttr):
            entries = [entry for entry in location.locations if isinstance(entry, LocationAttr)]
        elif isinstance(location, NameLoc):
            entries = [location]
        else:
            entries = [NameLoc(StringAttr(op.name), location)]
        locations += [entry for entry in entries if entry not in locations]
    if not locations:
        return UnknownLoc()
    if len(locations) == 1:
        return locations[0]
    return FusedLoc(ArrayAttr(locations), NoneAttr())


def computed_before(value: SSAValue, op: Operation) -> bool:
    """Whether ``value`` is available where ``op`` is: an argument of ``op``'s block
    (or of an enclosing one), or the result of an op that comes before ``op`` (or
    before the op enclosing it) in its block."""
    if isinstance(value, BlockArgument):
        return value.block.is_ancestor(op)
    owner = value.owner
    assert isinstance(owner, Operation)
    block = owner.parent_block()
    if block is None:
        return False
    ancestor = block.find_ancestor_op_in_block(op)
    return ancestor is not None and owner.is_before_in_block(ancestor)


def _other_operand(add: AddOp, value: SSAValue) -> SSAValue:
    """The operand of ``add`` that is not ``value`` (``value`` is one of them)."""
    return add.rhs if add.lhs is value else add.lhs


@dataclass
class _Chain:
    """The ops absorbed so far, starting at the convolution."""

    conv: Conv2dOp
    bias_add: BiasAddOp | None = None
    batch_norm: BatchNormOp | None = None
    activation: Operation | None = None
    residual_add: AddOp | None = None
    """The final ``graph.add``, whose other operand is `residual`."""
    residual: SSAValue | None = None
    """The value the fused op adds after its activation (the fused op's operand)."""

    @property
    def ops(self) -> list[Operation]:
        parts = (self.conv, self.bias_add, self.batch_norm, self.activation, self.residual_add)
        return [op for op in parts if op is not None]

    @property
    def value(self) -> SSAValue:
        """The chain's value: the result of its last op."""
        return self.ops[-1].results[0]

    def accepts(self, op: Operation) -> bool:
        """Whether ``op`` may come next: its kind (the order is fixed), applied to
        the chain's value (a ``graph.add`` on either side)."""
        if self.residual_add is not None:
            return False  # the add ends the chain
        if isinstance(op, AddOp):
            return self.value in (op.lhs, op.rhs)
        if not op.operands or op.operands[0] is not self.value:
            return False
        if isinstance(op, BiasAddOp):
            return self.bias_add is None and self.batch_norm is None and self.activation is None
        if isinstance(op, BatchNormOp):
            return self.batch_norm is None and self.activation is None
        return epilogue_activation(op) is not None and self.activation is None

    def bias_name(self) -> str | None:
        """The weight name of the bias (the conv's own or the bias_add's), if any."""
        value = self.conv.bias if self.bias_add is None else self.bias_add.bias
        return None if value is None else _weight_name(value)


@dataclass
class FuseConvChain(RewritePattern):
    """Grow the chain from each graph.conv2d and replace it by one fused op."""

    mode: Mode
    engine: DiagnosticEngine
    fusions: int = 0
    """Chains replaced by a fused op so far (the pass's ``fusions`` statistic)."""
    blocked: int = 0
    """``not fused`` remarks emitted so far (the pass's ``not-fused`` statistic)."""

    def _remark(self, message: str, op: Operation) -> None:
        self.blocked += 1
        self.engine.remark(message, op)

    def _blocker(self, chain: _Chain, op: Operation) -> str | None:
        """Why ``op`` (a single user of the chain's tail) cannot join, or None."""
        if isinstance(op, BiasAddOp):
            if chain.conv.bias is not None:
                return "the convolution already has a bias"
            if _param(op.bias) is None:
                return "the bias of graph.bias_add is not a graph.param"
        if isinstance(op, BatchNormOp):
            if self.mode == "training":
                return "mode=training never folds batch-norm statistics"
            if op.training:
                return "the batch norm is in training form (batch statistics)"
            for role in ("gamma", "beta", "running_mean", "running_var"):
                if _param(getattr(op, role)) is None:
                    return f"batch-norm operand '{role}' is not a graph.param"
        if isinstance(op, AddOp):
            return self._residual_blocker(chain, op)
        return None

    def _residual_blocker(self, chain: _Chain, add: AddOp) -> str | None:
        """Why the other operand of ``add`` cannot be the fused op's residual, or None."""
        if self.mode == "training":
            # The backward of the fused activation would read its output, which
            # the fused op no longer has on its own (y - residual).
            return "mode=training never folds a residual graph.add"
        residual = _other_operand(add, chain.value)
        if residual.type != chain.value.type or add.result.type != chain.value.type:
            return (
                f"the residual of graph.add has type {residual.type}, not the "
                f"{chain.ops[-1].name} result's type {chain.value.type} (no broadcasting)"
            )
        if not computed_before(residual, chain.conv):
            return "the residual operand of graph.add is computed after the convolution"
        return None

    def _grow(self, chain: _Chain) -> None:
        """Absorb single users while they fit; remark on the first one that is blocked."""
        while True:
            tail = chain.ops[-1]
            users = [use.operation for use in tail.results[0].uses]
            candidates = [user for user in users if chain.accepts(user)]
            if not candidates:
                return
            if len(users) > 1:
                for user in dict.fromkeys(candidates):
                    self._remark(f"not fused: the {tail.name} result has {len(users)} uses", user)
                return
            (user,) = candidates
            if (reason := self._blocker(chain, user)) is not None:
                self._remark(f"not fused: {reason}", user)
                return
            if isinstance(user, BiasAddOp):
                chain.bias_add = user
            elif isinstance(user, BatchNormOp):
                chain.batch_norm = user
            elif isinstance(user, AddOp):
                chain.residual = _other_operand(user, chain.value)
                chain.residual_add = user
            else:
                chain.activation = user

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Conv2dOp, rewriter: PatternRewriter) -> None:
        chain = _Chain(op)
        self._grow(chain)
        if len(chain.ops) == 1:
            return  # a lone convolution: nothing to gain
        if _param(op.weight) is None:
            self._remark("not fused: the convolution weight is not a graph.param", op)
            return
        if op.bias is not None and _param(op.bias) is None:
            self._remark("not fused: the convolution bias is not a graph.param", op)
            return
        fused = self._fused_op(chain)
        doomed = chain.ops
        operands = [value for old in doomed for value in old.operands]
        rewriter.replace(doomed[-1], fused)
        for old in reversed(doomed[:-1]):
            rewriter.erase(old)
        # Clean up what this fusion orphaned (BN statistics, biases), MLIR style.
        for value in dict.fromkeys(operands):
            if (param := _param(value)) is not None and not param.result.uses:
                rewriter.erase(param)
        self.fusions += 1

    def _fused_op(self, chain: _Chain) -> FusedConv2dOp:
        conv = chain.conv
        assert isinstance(conv.result.type, TensorType)
        channels = conv.result.type.get_shape()[1]
        bias_name = chain.bias_name()
        if (bn := chain.batch_norm) is not None:
            gamma, beta, mean, var = (
                _weight_name(v) for v in (bn.gamma, bn.beta, bn.running_mean, bn.running_var)
            )
            scale = bn_scale(gamma, var, bn.eps, channels)
            shift = bn_shift(gamma, beta, mean, var, bn.eps, channels, bias_name)
        elif bias_name is not None:
            scale = fill(1.0, [channels])
            shift = identity(bias_name, [channels])
        else:
            scale = fill(1.0, [channels])
            shift = fill(0.0, [channels])
        properties: dict[str, Attribute] = {
            **conv.properties,
            "scale": DerivationAttr(scale),
            "shift": DerivationAttr(shift),
        }
        if chain.activation is not None:
            properties["activation"] = StringAttr(str(epilogue_activation(chain.activation)))
        residual = [] if chain.residual is None else [chain.residual]
        fused = FusedConv2dOp.create(
            operands=[conv.input, conv.weight, *residual],
            result_types=[conv.result.type],
            properties=properties,
            attributes=dict(conv.attributes),
        )
        fused.location = fused_location(chain.ops)
        return fused


def _vector_operand(add: AddOp, value: SSAValue) -> SSAValue | None:
    """The other operand of ``add`` (one of whose operands is ``value``) if it is a
    rank-1 tensor: a candidate bias along the last dimension."""
    other = _other_operand(add, value)
    if isinstance(other.type, TensorType) and len(other.type.get_shape()) == 1:
        return other
    return None


GemmOp = LinearOp | MatmulOp


@dataclass
class _FuseGemmChain(RewritePattern):
    """Grow ``root -> [bias] -> [activation]`` from a graph.linear or graph.matmul
    (the root) that has no activation yet, and replace it by one op of the root's
    kind carrying both. The bias is a ``graph.add`` of a [N] ``graph.param``
    (either operand order; N the result's last dimension) or, for a rank-2
    linear, a ``graph.bias_add``; it joins only a root without a bias."""

    engine: DiagnosticEngine
    fusions: int = 0
    blocked: int = 0
    made: set[Operation] = field(default_factory=set[Operation])
    """The ops this pattern built: the walker visits them again, and growing one
    of them would repeat the remarks its fusion made."""

    what: ClassVar[str]
    """The root, as remarks name it."""

    def _remark(self, message: str, op: Operation) -> None:
        self.blocked += 1
        self.engine.remark(message, op)

    def _accepts(self, ops: list[Operation], op: Operation) -> bool:
        """Whether ``op`` may come next (a bias straight after the root, an
        activation after either)."""
        tail = ops[-1].results[0]
        if isinstance(op, AddOp):
            return len(ops) == 1 and _vector_operand(op, tail) is not None
        if not op.operands or op.operands[0] is not tail:
            return False
        if isinstance(op, BiasAddOp):
            return len(ops) == 1 and isinstance(ops[0], LinearOp)
        return epilogue_activation(op) is not None and epilogue_activation(ops[-1]) is None

    def _blocker(self, root: GemmOp, op: Operation) -> str | None:
        if not isinstance(op, AddOp | BiasAddOp):
            return None
        if root.bias is not None:
            return f"the {self.what} already has a bias"
        assert isinstance(root.result.type, TensorType)
        shape = root.result.type.get_shape()
        if isinstance(op, BiasAddOp):
            if len(shape) != 2:
                return (
                    "graph.bias_add adds along dimension 1, not the output features "
                    "of a linear layer of rank > 2"
                )
            bias = op.bias
        else:
            vector = _vector_operand(op, root.result)
            assert vector is not None
            bias = vector
            if bias.type != TensorType(f32, [shape[-1]]):
                return (
                    f"the other operand of graph.add has type {bias.type}, not a bias "
                    f"[{shape[-1]}] along the last dimension of the {root.name} result"
                )
        if _param(bias) is None:
            return f"the bias of {op.name} is not a graph.param"
        return None

    def _fuse(self, op: GemmOp, rewriter: PatternRewriter) -> None:
        if op.activation_attr is not None or op in self.made:
            return  # already carries its epilogue, or was made by this pattern
        ops: list[Operation] = [op]
        bias = op.bias
        while True:
            users = [use.operation for use in ops[-1].results[0].uses]
            candidates = [user for user in users if self._accepts(ops, user)]
            if not candidates:
                break
            if len(users) > 1:
                for user in dict.fromkeys(candidates):
                    self._remark(
                        f"not fused: the {ops[-1].name} result has {len(users)} uses", user
                    )
                break
            (user,) = candidates
            if (reason := self._blocker(op, user)) is not None:
                self._remark(f"not fused: {reason}", user)
                break
            if isinstance(user, BiasAddOp):
                bias = user.bias
            elif isinstance(user, AddOp):
                bias = _vector_operand(user, op.result)
            ops.append(user)
        if len(ops) == 1:
            return
        activation = next((epilogue_activation(o) for o in ops[1:] if epilogue_activation(o)), None)
        fused = type(op).create(
            operands=[*op.operands[:2], *([] if bias is None else [bias])],
            result_types=[ops[-1].results[0].type],
            properties={
                **op.properties,
                **({} if activation is None else {"activation": StringAttr(activation)}),
            },
            attributes=dict(op.attributes),
        )
        fused.location = fused_location(ops)
        self.made.add(fused)
        rewriter.replace(ops[-1], fused)
        for old in reversed(ops[:-1]):
            rewriter.erase(old)
        self.fusions += 1


@dataclass
class FuseLinearChain(_FuseGemmChain):
    """Grow ``linear -> [bias] -> [activation]`` from each graph.linear that has no
    activation yet, and replace it by one graph.linear carrying both. The bias is
    a ``graph.add`` of a [out] ``graph.param`` (any rank) or a ``graph.bias_add``
    (rank 2), joining a linear without a bias."""

    what: ClassVar[str] = "linear layer"

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: LinearOp, rewriter: PatternRewriter) -> None:
        self._fuse(op, rewriter)


@dataclass
class FuseMatmulChain(_FuseGemmChain):
    """Grow ``matmul -> [add of a [N] graph.param bias] -> [activation]`` from each
    graph.matmul that has no activation yet, and replace it by one graph.matmul
    carrying both (``y = act(lhs @ rhs + bias)``)."""

    what: ClassVar[str] = "matmul"

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MatmulOp, rewriter: PatternRewriter) -> None:
        self._fuse(op, rewriter)


@dataclass
class FuseNormChain(RewritePattern):
    """Fold the single-use epilogue activation that follows a standalone inference
    graph.batch_norm (one no convolution chain absorbed) into its ``activation``.
    Inference mode only; the pass lists it after `FuseConvChain`, and the walker
    reaches a convolution before the batch norm it feeds, so a chain that can
    absorb the batch norm does so first."""

    engine: DiagnosticEngine
    fusions: int = 0
    blocked: int = 0

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: BatchNormOp, rewriter: PatternRewriter) -> None:
        if op.training or op.activation_attr is not None:
            return
        users = [use.operation for use in op.result.uses]
        candidates = [
            user
            for user in users
            if epilogue_activation(user) is not None and user.operands[0] is op.result
        ]
        if not candidates:
            return
        if len(users) > 1:
            for user in dict.fromkeys(candidates):
                self.blocked += 1
                self.engine.remark(f"not fused: the {op.name} result has {len(users)} uses", user)
            return
        (user,) = candidates
        fused = BatchNormOp.create(
            operands=list(op.operands),
            result_types=[user.results[0].type],
            properties={
                **op.properties,
                "activation": StringAttr(str(epilogue_activation(user))),
            },
            attributes=dict(op.attributes),
        )
        fused.location = fused_location([op, user])
        rewriter.replace(user, fused)
        rewriter.erase(op)
        self.fusions += 1


def fuse_epilogue_patterns(mode: Mode, engine: DiagnosticEngine) -> list[RewritePattern]:
    """The pass's patterns (remarks on blocked fusions go to ``engine``): the
    convolution chain first, the standalone batch norm's (inference only) last."""
    patterns: list[RewritePattern] = [
        FuseConvChain(mode, engine),
        FuseLinearChain(engine),
        FuseMatmulChain(engine),
    ]
    if mode == "inference":
        patterns.append(FuseNormChain(engine))
    return patterns


@dataclass(frozen=True)
class FuseEpiloguesPass(ModulePass):
    """Fold epilogues (bias, batch norm, activation, residual add) into the op they follow.

    conv2d -> [bias_add] -> [batch_norm] -> [activation] -> [add] becomes one
    graph.fused_conv2d; linear -> [bias] -> [activation] one graph.linear and
    matmul -> [bias] -> [activation] one graph.matmul (the bias a graph.add of
    a [N] graph.param along the last dimension, or a bias_add of a rank-2
    linear); and an inference batch_norm -> activation not preceded by a
    fusable convolution one graph.batch_norm with ``activation``.

    Expects graph ops (best after split-bias; a conv2d that still has its bias
    operand is folded the same way). Each chain of single-use ops becomes one
    ``graph.fused_conv2d`` whose ``scale``/``shift`` derivations name the
    weights of the ``graph.param`` ops they came from, located at the fusion
    of its sources' locations, each named by its op
    (``loc(fused["graph.conv2d"("m.mlir":3:8), "graph.silu"("m.mlir":4:8)])``,
    the provenance a plan lists), and placed where the chain's last op was;
    graph.param ops left without users are removed. A final ``graph.add``
    (either operand order) whose other operand has the chain's type and is
    computed before the convolution becomes the fused op's ``residual``. A
    convolution with nothing after it to absorb is left alone.

    ``mode=inference`` (default) folds inference-form batch norms (into a
    convolution, or an activation into a standalone one) and residual adds.
    ``mode=training`` never folds batch-norm statistics or residual adds (so a
    backward sees each activation's own result): it fuses only
    conv[+bias]+activation and the linear and matmul epilogues. Refuses
    nothing: a blocked fusion (a value with several users, a training-form
    batch norm, an operand that is not a graph.param, a broadcasting add or one
    whose residual is computed after the convolution, a bias of the wrong
    shape or on an op that already has one) is skipped with a remark
    ``not fused: <reason>``.
    """

    name = "fuse-epilogues"
    anchors: ClassVar[tuple[str, ...]] = ("builtin.module", "func.func")

    mode: Mode = "inference"

    def apply(self, ctx: Context, op: Operation) -> None:
        patterns = fuse_epilogue_patterns(self.mode, engine_of(ctx))
        # One sweep, so each blocked fusion is remarked on once.
        walker = PatternRewriteWalker(
            GreedyRewritePatternApplier(patterns, dce_enabled=False),
            apply_recursively=False,
        )
        for region in op.regions:
            walker.rewrite_region(region)
        # Statistics for --mlir-pass-statistics: the pass manager puts a sink on the
        # context while it collects them (passes do not import the driver).
        sink = getattr(ctx, "_teeny_pass_statistics", None)
        if sink is not None:
            # Every pattern's chains count (lit_tests/teeny-opt/pass-statistics.mlir
            # pins the descriptions).
            counted = [
                p for p in patterns if isinstance(p, FuseConvChain | _FuseGemmChain | FuseNormChain)
            ]
            assert len(counted) == len(patterns)
            sink.add(
                "fusions",
                sum(p.fusions for p in counted),
                "Number of epilogue chains fused into one op",
            )
            sink.add(
                "not-fused",
                sum(p.blocked for p in counted),
                "Number of fusions blocked (one remark each)",
            )
