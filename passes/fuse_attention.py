"""fuse-attention: turn the matmul / softmax / matmul of an attention into one
`graph.attention` (`dialects.graph.attention`), which lowers to one fused
launch (the scores never reach memory) and differentiates through one fused
backward.

The pattern is rooted at a ``graph.softmax`` along the last axis whose input
is a product of two matrices, as the importers produce it from
``softmax(q @ k^T * scale) @ v`` in any of its spellings::

    scores = matmul(A, B)  [*b, N, M]        (no bias, no activation)
    A = q  [*b, N, Dk]  or  transpose(q) with q [*b, Dk, N]
    B = k^T:  transpose(k) with k [*b, M, Dk]  or  k itself [*b, Dk, M]
    p = softmax(scores * c, axis -1)
    out = matmul(p, V)               V = v [*b, M, Dv] or transpose(v) with v [*b, Dv, M]
       or matmul(V, transpose(p))    (out = (p V^T)^T, stored features-first:
                                      YOLO11's ``v @ attn.transpose(-2, -1)``)

A transpose here swaps the last two dimensions only. The ``scale`` is the
product of every scalar factor met on the way: ``graph.mul`` by (or
``graph.div`` of the scores by) a ``graph.constant`` holding one value,
applied to the scores, to ``q`` or ``k`` (before or after their transpose),
PyTorch's decomposition of ``scaled_dot_product_attention`` included. Which
tensors are stored features-first becomes the op's ``transposed`` flags. The
fused op takes the final product's place; its location fuses every absorbed
op's (its provenance), and the ops left without users are erased.

A candidate (a last-axis softmax fed by a product, through scalar factors or
not) that cannot fuse is left as it is with a remark at the softmax,
``attention not fused: <reason>``: the scores or probabilities have other
uses, a product carries a bias or activation, the operands do not share their
batch dimensions, a head dimension exceeds the attention kernels' limit, or
the probabilities feed something other than a product with ``v``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import VerifyException

from dialects.graph.attention import AttentionOp, infer_attention_shapes, logical_shape
from dialects.graph.constant import ConstantOp
from dialects.graph.elementwise import DivOp, MulOp
from dialects.graph.linear import MatmulOp
from dialects.graph.reduce import SoftmaxOp
from dialects.graph.structure import TransposeOp
from passes.fuse_epilogues import fused_location
from teeny_ir.core.diagnostics import DiagnosticEngine, engine_of
from teeny_ir.kernels.attention.tiles import MAX_HEAD_DIM


class NotFused(Exception):
    """Why a candidate attention stays as it is."""


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def _owner(value: SSAValue) -> Operation | None:
    return value.op if isinstance(value, OpResult) else None


def _owners(value: SSAValue) -> list[Operation]:
    owner = _owner(value)
    return [] if owner is None else [owner]


def _scalar(value: SSAValue) -> float | None:
    """The one value of a ``graph.constant`` that holds a single value (any
    shape), else None."""
    owner = _owner(value)
    if not isinstance(owner, ConstantOp):
        return None
    values = {float(v) for v in owner.value.get_values()}
    return values.pop() if len(values) == 1 else None


def _scaled(value: SSAValue) -> tuple[SSAValue, float, float, list[Operation]] | None:
    """``value = x * c`` (either order) or ``x / c`` with ``c`` a scalar constant
    and ``x`` of ``value``'s type: ``(x, multiplier, divisor, [op, constant])``."""
    op = _owner(value)
    if isinstance(op, MulOp):
        for x, c in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            factor = _scalar(c)
            if factor is not None and x.type == value.type:
                return x, factor, 1.0, [op, *_owners(c)]
    if isinstance(op, DivOp):
        divisor = _scalar(op.rhs)
        if divisor is not None and op.lhs.type == value.type and divisor != 0.0:
            return op.lhs, 1.0, divisor, [op, *_owners(op.rhs)]
    return None


@dataclass
class _Walk:
    """The absorbed ops and the scale met while peeling a pattern's operands."""

    ops: list[Operation] = field(default_factory=list[Operation])
    multiplier: float = 1.0
    divisor: float = 1.0

    def peel(self, value: SSAValue) -> SSAValue:
        """``value`` without its scalar factors (recorded)."""
        while (found := _scaled(value)) is not None:
            value, multiplier, divisor, ops = found
            self.multiplier *= multiplier
            self.divisor *= divisor
            self.ops += ops
        return value

    def untranspose(self, value: SSAValue, scaled: bool = True) -> tuple[SSAValue, bool]:
        """``(x, True)`` when ``value`` is ``transpose(x)`` swapping the last two
        dimensions, else ``(value, False)``; with ``scaled``, scalar factors are
        peeled on both sides of the transpose (they scale the scores: not so
        for ``v``, whose factors scale the output)."""
        if scaled:
            value = self.peel(value)
        op = _owner(value)
        if isinstance(op, TransposeOp) and _is_swap(op):
            self.ops.append(op)
            return (self.peel(op.input) if scaled else op.input), True
        return value, False

    @property
    def scale(self) -> float:
        return self.multiplier / self.divisor


def _plain_product(value: SSAValue) -> MatmulOp | None:
    op = _owner(value)
    return op if isinstance(op, MatmulOp) else None


def _single_use(value: SSAValue, what: str) -> None:
    uses = len(list(value.uses))
    if uses != 1:
        raise NotFused(f"the {what} have {uses} uses")


def _check_product(op: MatmulOp, what: str) -> None:
    if op.bias is not None or op.activation != "none":
        raise NotFused(f"the {what} product carries a bias or an activation")


class FuseAttention(RewritePattern):
    """softmax(scale * q k^T) v -> one ``graph.attention`` (module docstring)."""

    def __init__(self, engine: DiagnosticEngine) -> None:
        self.engine = engine
        self.fusions = 0
        self.blocked = 0

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SoftmaxOp, rewriter: PatternRewriter) -> None:
        walk = _Walk()
        scores = walk.peel(op.input)
        product = _plain_product(scores)
        if product is None:
            return  # not an attention: no remark
        try:
            if op.axis != len(_shape(op.input)) - 1:
                raise NotFused("the softmax is not along the last axis (the keys)")
            self._fuse(op, walk, product, rewriter)
        except NotFused as reason:
            self.blocked += 1
            self.engine.remark(f"attention not fused: {reason}", op)

    def _fuse(
        self, softmax: SoftmaxOp, walk: _Walk, scores: MatmulOp, rewriter: PatternRewriter
    ) -> None:
        _check_product(scores, "scores")
        for scaling in walk.ops:
            if not isinstance(scaling, ConstantOp):
                _single_use(scaling.results[0], "scaled scores")
        _single_use(scores.result, "scores")
        walk.ops.append(scores)
        q, q_transposed = walk.untranspose(scores.lhs)
        k, k_is_transpose = walk.untranspose(scores.rhs)  # B = k^T
        _single_use(softmax.result, "probabilities")
        (use,) = list(softmax.result.uses)
        user = use.operation
        absorbed: list[Operation] = [*walk.ops, softmax]
        final: Operation
        if isinstance(user, MatmulOp) and use.index == 0:
            # out = p @ V, V = v [M, Dv] or transpose(v) with v [Dv, M]
            final = user
            v, v_transposed = walk.untranspose(user.rhs, scaled=False)
            o_transposed = False
        elif isinstance(user, TransposeOp) and _is_swap(user):
            # out = V_c @ p^T, stored features-first
            _single_use(user.result, "transposed probabilities")
            (inner,) = list(user.result.uses)
            final = inner.operation
            if not isinstance(final, MatmulOp) or inner.index != 1:
                raise NotFused(f"the transposed probabilities feed {final.name}, not a product")
            assert isinstance(final, MatmulOp)
            absorbed.append(user)
            v_c, v_c_is_transpose = walk.untranspose(final.lhs, scaled=False)
            v, v_transposed = v_c, not v_c_is_transpose
            o_transposed = True
        else:
            raise NotFused(f"the probabilities feed {user.name}, not a product with v")
        _check_product(final, "output")
        flags = (int(q_transposed), int(not k_is_transpose), int(v_transposed), int(o_transposed))
        try:
            o_shape, _ = infer_attention_shapes(_shape(q), _shape(k), _shape(v), flags)
        except VerifyException as err:
            raise NotFused(str(err)) from None
        assert isinstance(final, MatmulOp)
        if _shape(final.result) != o_shape:
            raise NotFused("the output product's type is not the attention's")
        if not math.isfinite(walk.scale) or walk.scale == 0.0:
            raise NotFused(f"the scale {walk.scale} is not finite and non-zero")
        dims = {
            "Dk": logical_shape(_shape(q), flags[0])[-1],
            "Dv": logical_shape(_shape(v), flags[2])[-1],
        }
        for name, size in dims.items():
            if size > MAX_HEAD_DIM:
                raise NotFused(
                    f"head dimension {name} = {size} exceeds the attention kernels' {MAX_HEAD_DIM}"
                )
        fused = AttentionOp(q, k, v, walk.scale, flags)
        fused.location = fused_location([*absorbed, final])
        rewriter.replace(final, [fused], [fused.output])
        _erase_dead([*absorbed, *walk.ops], rewriter)
        self.fusions += 1


class AbsorbTransposes(RewritePattern):
    """A ``graph.attention`` whose q, k or v is a last-two-dimensions transpose,
    or whose output's one use is one, reads (writes) the untransposed tensor
    instead: the layout flag flips and the transpose goes (an imported
    ``scaled_dot_product_attention(q.transpose(-2, -1), ...)``)."""

    def __init__(self) -> None:
        self.absorbed = 0

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: AttentionOp, rewriter: PatternRewriter) -> None:
        flags = list(op.transposed)
        operands: list[SSAValue] = [op.q, op.k, op.v]
        sources: list[Operation] = [op]
        for index, value in enumerate(operands):
            owner = _owner(value)
            if isinstance(owner, TransposeOp) and _is_swap(owner):
                operands[index] = owner.input
                flags[index] ^= 1
                sources.append(owner)
        uses = list(op.output.uses)
        tail = uses[0].operation if len(uses) == 1 else None
        if not (isinstance(tail, TransposeOp) and _is_swap(tail)):
            tail = None
        if len(sources) == 1 and tail is None:
            return
        if tail is not None:
            flags[3] ^= 1
            sources.append(tail)
        fused = AttentionOp(operands[0], operands[1], operands[2], op.scale, flags)
        fused.location = fused_location(sources)
        fused.attributes.update(op.attributes)
        if tail is None:
            rewriter.replace(op, [fused], [fused.output, fused.lse])
        else:
            rewriter.insert(fused, InsertPoint.before(op))
            rewriter.replace(tail, [], [fused.output])
            rewriter.replace(op, [], [None, fused.lse])
        _erase_dead(sources[1:], rewriter)
        self.absorbed += 1


def _erase_dead(ops: Sequence[Operation], rewriter: PatternRewriter) -> None:
    """Erase those of ``ops`` left without users, users first (until none is)."""
    pending = list(dict.fromkeys(ops))
    while True:
        dead = [
            op
            for op in pending
            if op.parent is not None and all(not list(r.uses) for r in op.results)
        ]
        if not dead:
            return
        for op in dead:
            rewriter.erase(op)
            pending.remove(op)


def _is_swap(op: TransposeOp) -> bool:
    rank = len(_shape(op.input))
    return list(op.perm) == [*range(rank - 2), rank - 1, rank - 2]


@dataclass(frozen=True)
class FuseAttentionPass(ModulePass):
    """Fuse softmax(scale * q k^T) v into one graph.attention.

    Expects graph ops (imported or built). Each last-axis ``graph.softmax``
    whose input is a ``graph.matmul`` of q and k (possibly transposed,
    possibly scaled by scalar constants) and whose single use is a product
    with v (``p @ v``, or ``v @ p^T`` through a transpose) becomes one
    ``graph.attention`` with the combined scale and the layout flags of q, k,
    v and o, at the fusion of the absorbed ops' locations. Refuses nothing: a
    candidate that cannot fuse stays with a remark ``attention not fused:
    <reason>`` at its softmax.
    """

    name = "fuse-attention"
    anchors: ClassVar[tuple[str, ...]] = ("builtin.module", "func.func")

    def apply(self, ctx: Context, op: Operation) -> None:
        pattern = FuseAttention(engine_of(ctx))
        walker = PatternRewriteWalker(pattern, apply_recursively=False)
        for region in op.regions:
            walker.rewrite_region(region)
        # Then every attention (fused here or imported) takes in its transposes.
        absorb = AbsorbTransposes()
        walker = PatternRewriteWalker(
            GreedyRewritePatternApplier([absorb], dce_enabled=False), apply_recursively=True
        )
        for region in op.regions:
            walker.rewrite_region(region)
        sink = getattr(ctx, "_teeny_pass_statistics", None)
        if sink is not None:
            sink.add("fusions", pattern.fusions, "Number of attentions fused into one op")
            sink.add(
                "not-fused",
                pattern.blocked,
                "Number of attention candidates not fused (one remark each)",
            )
