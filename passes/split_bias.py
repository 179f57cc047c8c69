"""split-bias: take the bias out of convolutions, as a separate `graph.bias_add`.

After this pass every bias is an op of its own, so fuse-epilogues sees one
shape of chain (conv -> bias_add -> batch_norm -> activation) and a training
pipeline can give the bias its own backward. `linear` is not split yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from dialects.graph.conv import Conv2dOp
from dialects.graph.elementwise import BiasAddOp


class SplitConvBias(RewritePattern):
    """``conv2d %x, %w, %b`` -> ``bias_add (conv2d %x, %w), %b``; both new ops
    keep the convolution's location, options and discardable attributes."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Conv2dOp, rewriter: PatternRewriter) -> None:
        if op.bias is None:
            return
        conv = Conv2dOp.create(
            operands=[op.input, op.weight],
            result_types=[op.result.type],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )
        bias_add = BiasAddOp(conv.result, op.bias)
        conv.location = bias_add.location = op.location
        rewriter.replace(op, [conv, bias_add])


def split_bias_patterns() -> list[RewritePattern]:
    """The pass's patterns, for pipelines that apply them with others."""
    return [SplitConvBias()]


@dataclass(frozen=True)
class SplitBiasPass(ModulePass):
    """Split the bias out of every graph.conv2d into a graph.bias_add.

    Expects graph ops. Produces, for each ``graph.conv2d`` with a bias operand,
    the same convolution without it followed by ``graph.bias_add`` of that
    bias; both take the convolution's location. Convolutions without a bias
    are left alone. Refuses nothing.
    """

    name = "split-bias"
    anchors: ClassVar[tuple[str, ...]] = ("builtin.module", "func.func")

    def apply(self, ctx: Context, op: Operation) -> None:
        walker = PatternRewriteWalker(
            GreedyRewritePatternApplier(split_bias_patterns(), dce_enabled=False),
            apply_recursively=False,
        )
        for region in op.regions:
            walker.rewrite_region(region)
