"""select-conv-algorithm: record how each convolution runs, as IR attributes.

The decision is `teeny_ir.kernels.conv_algorithms` (pure functions); this pass applies it.
Every convolution leaves the pass as a ``graph.fused_conv2d`` carrying
``algorithm`` and ``tiles``: a plain ``graph.conv2d`` (nothing was fused into
it) is first wrapped as a fused convolution with the identity epilogue, so the
lowering sees one kind of convolution. The tiles are those of the family that
runs the algorithm (`conv_tiles`), for the pass's tile ``profile`` (``gpu`` or
``interpreter``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, StringAttr, TensorType, i64
from xdsl.ir import Attribute, Operation
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
from dialects.graph.param import ParamOp
from teeny_ir.core.derivations import fill, identity
from teeny_ir.core.diagnostics import Diagnostic, DiagnosticError, Severity, loc_of
from teeny_ir.kernels.conv_algorithms import classify_conv, conv_extents, conv_tiles
from teeny_ir.kernels.tiles import TileProfile, check_profile


def _shape(op: Operation, index: int) -> tuple[int, ...]:
    type_ = op.operands[index].type if index >= 0 else op.results[0].type
    assert isinstance(type_, TensorType)
    return type_.get_shape()


def _algorithm_properties(
    op: Conv2dOp | FusedConv2dOp, profile: TileProfile
) -> dict[str, Attribute]:
    """The ``algorithm`` and ``tiles`` properties for ``op``."""
    in_channels = _shape(op, 0)[1]
    weight_shape = _shape(op, 1)
    algorithm = classify_conv(
        in_channels, weight_shape, op.strides, op.padding, op.dilation, op.groups
    )
    m, n, k = conv_extents(algorithm, weight_shape, _shape(op, -1), op.groups)
    tiles = conv_tiles(algorithm, m, n, k, profile)
    return {"algorithm": StringAttr(algorithm), "tiles": DenseArrayBase.from_list(i64, tiles)}


@dataclass
class MarkFusedConv(RewritePattern):
    """Set ``algorithm`` and ``tiles`` on a graph.fused_conv2d."""

    errors: list[Diagnostic]
    profile: TileProfile = "gpu"

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: FusedConv2dOp, rewriter: PatternRewriter) -> None:
        chosen = _algorithm_properties(op, self.profile)
        if all(op.properties.get(key) == value for key, value in chosen.items()):
            return
        op.properties.update(chosen)
        rewriter.notify_op_modified(op)


@dataclass
class WrapPlainConv(RewritePattern):
    """graph.conv2d -> graph.fused_conv2d with scale ``fill(1.0)`` and shift
    ``identity(bias)`` (or ``fill(0.0)``), at the conv's location, marked."""

    errors: list[Diagnostic]
    profile: TileProfile = "gpu"

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Conv2dOp, rewriter: PatternRewriter) -> None:
        chosen = _algorithm_properties(op, self.profile)
        channels = _shape(op, -1)[1]
        bias = None if op.bias is None else op.bias.owner
        if bias is None:
            shift = fill(0.0, [channels])
        elif isinstance(bias, ParamOp):
            shift = identity(bias.param_name.data, [channels])
        else:
            message = "the convolution bias must be a graph.param (the shift derivation names it)"
            self.errors.append(Diagnostic(Severity.ERROR, message, loc_of(op)))
            return
        fused = FusedConv2dOp.create(
            operands=[op.input, op.weight],
            result_types=[op.result.type],
            properties={
                **op.properties,
                "scale": DerivationAttr(fill(1.0, [channels])),
                "shift": DerivationAttr(shift),
                **chosen,
            },
            attributes=dict(op.attributes),
        )
        fused.location = op.location
        rewriter.replace(op, fused)
        if isinstance(bias, ParamOp) and not bias.result.uses:
            rewriter.erase(bias)  # the shift derivation names it now


def select_conv_algorithm_patterns(
    errors: list[Diagnostic], profile: TileProfile = "gpu"
) -> list[RewritePattern]:
    """The pass's patterns for a tile ``profile``; convolutions it cannot mark
    are appended to ``errors``."""
    return [MarkFusedConv(errors, profile), WrapPlainConv(errors, profile)]


@dataclass(frozen=True)
class SelectConvAlgorithmPass(ModulePass):
    """Choose each convolution's algorithm and tiles (graph.fused_conv2d).

    Expects graph ops, usually after fuse-epilogues. Every
    ``graph.fused_conv2d`` gets ``algorithm`` (`teeny_ir.kernels.conv_algorithms`)
    and ``tiles`` [BLOCK_M, BLOCK_N, BLOCK_K] from its family's tile rule over
    M = OH * OW and: for ``gemm`` (1x1, stride 1, no padding, dilation 1, one
    group) N = C_out, K = C_in; for ``depthwise`` (groups == C_in == C_out)
    N = C (channels), K = KH * KW (taps), the tiles being [positions, channels,
    taps]; for ``implicit-gemm`` (every other convolution) N = C_out / groups,
    K = C_in / groups * KH * KW. ``profile`` picks the rules: ``gpu`` (the
    default) tiles fit sm_80 and sm_90; ``interpreter`` tiles are large, for
    Triton's CPU interpreter (its cost is per program and per op, not per
    element), and need not fit a GPU. Every plain ``graph.conv2d`` is first
    turned into a ``graph.fused_conv2d`` (scale ``fill(1.0)``, shift
    ``identity(bias)`` or ``fill(0.0)``, its bias graph.param removed when it
    is left unused), so all convolutions leave as fused ones. Refuses (one
    located error each, all reported together) a plain convolution whose
    bias is not a graph.param.
    """

    name = "select-conv-algorithm"
    anchors: ClassVar[tuple[str, ...]] = ("builtin.module", "func.func")

    profile: TileProfile = "gpu"
    """Tile profile: ``gpu`` (fits sm_80/sm_90) or ``interpreter`` (large tiles
    for Triton's interpreter)."""

    def __post_init__(self) -> None:
        check_profile(self.profile)  # a ValueError naming the profiles

    def apply(self, ctx: Context, op: Operation) -> None:
        errors: list[Diagnostic] = []
        patterns = select_conv_algorithm_patterns(errors, self.profile)
        walker = PatternRewriteWalker(
            GreedyRewritePatternApplier(patterns, dce_enabled=False),
            apply_recursively=False,
        )
        for region in op.regions:
            walker.rewrite_region(region)
        if errors:
            raise DiagnosticError(errors)
