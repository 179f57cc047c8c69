"""Canonicalization patterns of the structural graph ops, run by ``canonicalize``.

Each op of `dialects.graph.structure` carries the trait
`dialects.graph.structure.StructureCanonicalization`, which asks `patterns_for`
for its patterns (this module is imported on first use, so loading the dialect
stays cheap). Every pattern replaces its op by a value that already exists and
has the op's result type: no new op, no location to invent, no surviving value
changes type.

- `IdentityReshape`: a ``graph.reshape`` or ``graph.flatten`` whose result type
  is its input's -> the input.
- `IdentityTranspose`: a ``graph.transpose`` whose result type is its input's
  and whose permutation keeps the row-major order (it moves only dimensions of
  size 1, or none) -> the input.
- `SingleConcat`: a ``graph.concat`` of one input -> the input; `SingleSplit`:
  a ``graph.split`` into one part -> the input.
- `ConcatOfSplit`: a ``graph.concat`` of every result of one ``graph.split``, in
  order, along the split's axis -> the split's input.

Dead ``graph.param`` ops (and every other dead graph op: all are ``Pure``) need
no pattern: the rewrite driver erases side-effect-free ops without uses.
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from dialects.graph.structure import ConcatOp, FlattenOp, ReshapeOp, SplitOp, TransposeOp


def _forward(op: Operation, value: SSAValue, rewriter: PatternRewriter) -> None:
    """Replace ``op``'s one result by ``value``, of the same type."""
    assert op.results[0].type == value.type
    rewriter.replace(op, [], [value])


class IdentityReshape(RewritePattern):
    """``graph.reshape`` / ``graph.flatten`` to the input's own type -> the input."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, ReshapeOp | FlattenOp) and op.result.type == op.input.type:
            _forward(op, op.input, rewriter)


class IdentityTranspose(RewritePattern):
    """A ``graph.transpose`` that leaves type and element order as they are -> the input."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter, /) -> None:
        type_ = op.input.type
        if not isinstance(type_, TensorType) or op.result.type != type_:
            return
        shape = type_.get_shape()
        moved = [p for p in op.perm if shape[p] != 1]
        if moved == sorted(moved):
            _forward(op, op.input, rewriter)


class SingleConcat(RewritePattern):
    """``graph.concat`` of one input -> the input."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ConcatOp, rewriter: PatternRewriter, /) -> None:
        if len(op.inputs) == 1:
            _forward(op, op.inputs[0], rewriter)


class SingleSplit(RewritePattern):
    """``graph.split`` into one part -> the input."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SplitOp, rewriter: PatternRewriter, /) -> None:
        if len(op.outputs) == 1:
            _forward(op, op.input, rewriter)


class ConcatOfSplit(RewritePattern):
    """``graph.concat`` of all the parts of one ``graph.split``, in order, along
    the split's axis -> the split's input (the split itself stays while other
    ops use its parts)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ConcatOp, rewriter: PatternRewriter, /) -> None:
        first = op.inputs[0] if op.inputs else None
        if not isinstance(first, OpResult) or not isinstance(first.op, SplitOp):
            return
        split = first.op
        if split.axis != op.axis or list(op.inputs) != list(split.outputs):
            return
        if op.result.type == split.input.type:
            _forward(op, split.input, rewriter)


_PATTERNS: dict[type[Operation], tuple[RewritePattern, ...]] = {
    ReshapeOp: (IdentityReshape(),),
    FlattenOp: (IdentityReshape(),),
    TransposeOp: (IdentityTranspose(),),
    ConcatOp: (SingleConcat(), ConcatOfSplit()),
    SplitOp: (SingleSplit(),),
}


def patterns_for(op_type: type[Operation]) -> tuple[RewritePattern, ...]:
    """The canonicalization patterns rooted at ``op_type`` (none for other ops)."""
    return _PATTERNS.get(op_type, ())
