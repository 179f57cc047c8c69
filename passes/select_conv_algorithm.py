"""select-conv-algorithm: record how each convolution runs, as IR attributes.

The decision is `teeny_ir.kernels.conv_algorithms` (pure functions); this pass applies it.
Every convolution leaves the pass as a ``graph.fused_conv2d`` carrying
``algorithm`` and ``tiles``: a plain ``graph.conv2d`` (nothing was fused into
it) is first wrapped as a fused convolution with the identity epilogue, so the
lowering sees one kind of convolution. A ``gemm`` convolution gets the
conv1x1_gemm family's tiles (`pick_gemm_tile_sizes`), an ``implicit-gemm`` one
the implicit_gemm_conv family's (`pick_implicit_gemm_tile_sizes`). Only
``depthwise`` has no kernel family yet: each is an error, and all of them are
reported.
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
from teeny_ir.kernels.conv1x1_gemm.tiles import pick_gemm_tile_sizes
from teeny_ir.kernels.conv_algorithms import classify_conv
from teeny_ir.kernels.implicit_gemm_conv.tiles import pick_implicit_gemm_tile_sizes

SUPPORTED = "kernels exist for gemm and implicit-gemm convolutions only"


def _shape(op: Operation, index: int) -> tuple[int, ...]:
    type_ = op.operands[index].type if index >= 0 else op.results[0].type
    assert isinstance(type_, TensorType)
    return type_.get_shape()


def _algorithm_properties(op: Conv2dOp | FusedConv2dOp) -> dict[str, Attribute] | str:
    """The ``algorithm`` and ``tiles`` properties for ``op``, or why it has none."""
    in_channels = _shape(op, 0)[1]
    weight_shape = _shape(op, 1)
    algorithm = classify_conv(
        in_channels, weight_shape, op.strides, op.padding, op.dilation, op.groups
    )
    _, out_channels, out_h, out_w = _shape(op, -1)
    if algorithm == "gemm":
        tiles = pick_gemm_tile_sizes(out_h * out_w, out_channels, in_channels)
    elif algorithm == "implicit-gemm":
        _, group_in, kernel_h, kernel_w = weight_shape
        tiles = pick_implicit_gemm_tile_sizes(
            out_h * out_w, out_channels // op.groups, group_in * kernel_h * kernel_w
        )
    else:
        return f"convolution algorithm '{algorithm}' is not supported yet ({SUPPORTED})"
    return {"algorithm": StringAttr(algorithm), "tiles": DenseArrayBase.from_list(i64, tiles)}


@dataclass
class MarkFusedConv(RewritePattern):
    """Set ``algorithm`` and ``tiles`` on a graph.fused_conv2d (or record an error)."""

    errors: list[Diagnostic]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: FusedConv2dOp, rewriter: PatternRewriter) -> None:
        chosen = _algorithm_properties(op)
        if isinstance(chosen, str):
            self.errors.append(Diagnostic(Severity.ERROR, chosen, loc_of(op)))
            return
        if all(op.properties.get(key) == value for key, value in chosen.items()):
            return
        op.properties.update(chosen)
        rewriter.notify_op_modified(op)


@dataclass
class WrapPlainConv(RewritePattern):
    """graph.conv2d -> graph.fused_conv2d with scale ``fill(1.0)`` and shift
    ``identity(bias)`` (or ``fill(0.0)``), at the conv's location, marked."""

    errors: list[Diagnostic]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Conv2dOp, rewriter: PatternRewriter) -> None:
        chosen = _algorithm_properties(op)
        if isinstance(chosen, str):
            self.errors.append(Diagnostic(Severity.ERROR, chosen, loc_of(op)))
            return
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


def select_conv_algorithm_patterns(errors: list[Diagnostic]) -> list[RewritePattern]:
    """The pass's patterns; unsupported convolutions are appended to ``errors``."""
    return [MarkFusedConv(errors), WrapPlainConv(errors)]


@dataclass(frozen=True)
class SelectConvAlgorithmPass(ModulePass):
    """Choose each convolution's algorithm and GEMM tiles (graph.fused_conv2d).

    Expects graph ops, usually after fuse-conv-bn-act. Every
    ``graph.fused_conv2d`` gets ``algorithm`` (`teeny_ir.kernels.conv_algorithms`)
    and ``tiles`` [BLOCK_M, BLOCK_N, BLOCK_K]: for ``gemm`` (1x1, stride 1, no
    padding, dilation 1, one group) the GEMM rule over M = OH * OW, N = C_out,
    K = C_in; for ``implicit-gemm`` (any other non-depthwise convolution) the
    implicit-GEMM rule over M = OH * OW, N = C_out / groups, K = C_in / groups
    * KH * KW. Every plain ``graph.conv2d`` is first
    turned into a ``graph.fused_conv2d`` (scale ``fill(1.0)``, shift
    ``identity(bias)`` or ``fill(0.0)``, its bias graph.param removed when it
    is left unused), so all convolutions leave as fused ones. Refuses (one
    located error each, all reported together) the convolutions whose
    algorithm has no kernel yet: ``depthwise`` (groups == C_in == C_out).
    """

    name = "select-conv-algorithm"
    anchors: ClassVar[tuple[str, ...]] = ("builtin.module", "func.func")

    def apply(self, ctx: Context, op: Operation) -> None:
        errors: list[Diagnostic] = []
        walker = PatternRewriteWalker(
            GreedyRewritePatternApplier(select_conv_algorithm_patterns(errors), dce_enabled=False),
            apply_recursively=False,
        )
        for region in op.regions:
            walker.rewrite_region(region)
        if errors:
            raise DiagnosticError(errors)
