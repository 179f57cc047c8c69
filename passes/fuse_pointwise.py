"""fuse-pointwise: turn each chain of pointwise ops into one
`graph.fused_pointwise` (`dialects.graph.fused_pointwise`), which lowers to one
``fused_elementwise`` launch instead of one launch per op (what Inductor does
first: imported graphs, such as a detection head's box decoding or an
activation an exporter decomposed, otherwise cost a launch per op).

A *candidate* is an op of the pointwise table (`teeny_ir.core.pointwise`) on
tensors of rank <= 6. The pass walks each block from its last op to its
first; each candidate not yet absorbed is the root of a group, which grows
through the producers of its operands. A producer joins when it is a
candidate and either

- every user of its value is already in the group (the value never needs to
  reach memory), or
- every user of its value is a candidate (it is recomputed in each user's
  group, as Inductor inlines a pointwise node into each consumer, and is
  then never materialised);

and the group stays within the family's limits (`pointwise_program.MAX_INPUTS`
inputs, `pointwise_program.MAX_STEPS` steps). Operands broadcast as the ops
do (numpy's rules): the program is evaluated at the output's index, every
input read through broadcasting strides.

A group of two or more ops becomes one ``graph.fused_pointwise`` at the
root's place, located at the fusion of every absorbed op's location (its
provenance: a plan's launch names each op it implements), and the absorbed
ops left without users are erased. A group of one op is rewritten only where
that lets a split or concat be a view (its input is a ``graph.split`` part or
its result a ``graph.concat`` operand): the ``fused_elementwise`` family reads
and writes batch-strided views, the ``elementwise`` family does not.

A ``graph.reduce_sum`` or ``graph.reduce_mean`` whose operand a candidate
computes roots a group too (Inductor's reduction with its pointwise prologue):
the chain grows from its operand as above, a value read by pointwise ops and
reductions alike being recomputed in each, and the group becomes one
``graph.fused_pointwise`` with a trailing ``reduce sum|mean`` over the
reduction's axes, which the ``fused_reduce`` family runs as one launch
(`teeny_ir.kernels.fused_reduce`): the reduced value is computed where it is
summed and never stored. That family reads each input at the reduced
operand's shape, without a batch of its own, one value per image or as a
scalar, and reduces what the ``reduce`` family reduces (the batch and one
run of axes); otherwise (``fused_reduce.lowering.unfusable``) the reduction
stays its own launch, with a remark at it, and its chain fuses without it.

Where a chain is cut the pass says why with a remark at the op where it stops,
``pointwise chain cut: <reason>``: a candidate whose value has a user that is
not pointwise (it must reach memory), a shape change (a reshape, flatten or
transpose between two pointwise ops), or a group at the family's limits.
Statistics: ``fusions`` (fused ops made), ``absorbed`` (ops they replace),
``cuts`` (remarks).

The pass runs in ``teeny-inference``, after fuse-epilogues (an activation
that can ride in a convolution's or a GEMM's epilogue is taken there first),
and in ``teeny-training`` after apply-optimizer: the backward and the update
are built from the unfused ops (`graph.fused_pointwise` has no VJP rule), and
then the forward's and the backward's chains are fused, a group never mixing
training phases (`phase`: the fused op keeps its ops' ``teeny.backward`` or
``teeny.update``, so the plan's phases are unchanged).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from dialects.graph.fused_pointwise import FusedPointwiseOp, Reduction
from dialects.graph.reduce import ReduceMeanOp, ReduceSumOp, ReductionOp
from dialects.graph.structure import ConcatOp, FlattenOp, ReshapeOp, SplitOp, TransposeOp
from passes.fuse_epilogues import fused_location
from passes.lower_graph_to_kernel import PHASE_ATTRS
from teeny_ir.core import pointwise, pointwise_program
from teeny_ir.core.diagnostics import DiagnosticEngine, engine_of
from teeny_ir.kernels.elementwise.contract import RANK
from teeny_ir.kernels.fused_reduce.lowering import unfusable

SHAPE_OPS = (ReshapeOp, FlattenOp, TransposeOp)
"""Ops that change a shape: a chain is cut there (with a remark)."""


def candidate(op: Operation) -> bool:
    """A pointwise-table op on tensors the ``fused_elementwise`` family takes."""
    if pointwise.lookup(op.name) is None or len(op.results) != 1:
        return False
    values = (*op.operands, *op.results)
    return all(isinstance(v.type, TensorType) and len(v.type.get_shape()) <= RANK for v in values)


REDUCTIONS: dict[type[Operation], str] = {ReduceSumOp: "sum", ReduceMeanOp: "mean"}
"""The reductions a group may end in, and the fused op's ``reduce`` for each."""


def reduction(op: Operation) -> bool:
    """A `graph.reduce_sum` or `graph.reduce_mean`: the root of a group that ends
    in a reduction, when its operand comes from a candidate."""
    return type(op) in REDUCTIONS


def consumer(op: Operation) -> bool:
    """An op that computes what it reads from a producer in its own group: a
    candidate, or a reduction."""
    return candidate(op) or reduction(op)


def phase(op: Operation) -> tuple[str, ...]:
    """The training phase an op belongs to (its `PHASE_ATTRS`: none in the
    forward); a group never mixes phases, and the fused op keeps its group's."""
    return tuple(key for key in PHASE_ATTRS if key in op.attributes)


def _producer(value: SSAValue) -> Operation | None:
    return value.owner if isinstance(value, OpResult) else None


def _user_names(value: SSAValue) -> list[str]:
    return sorted({use.operation.name for use in value.uses})


@dataclass
class _Group:
    """The ops of one fused op (``position``: each op's index in the block)."""

    root: Operation
    position: dict[Operation, int]
    ops: list[Operation] = field(default_factory=list[Operation])

    def ordered(self, extra: Operation | None = None) -> list[Operation]:
        """The ops (with ``extra`` joined) in block order: the root last."""
        members = [*self.ops, *([extra] if extra is not None else [])]
        return sorted(members, key=lambda op: self.position[op])

    def inputs(self, extra: Operation | None = None) -> list[SSAValue]:
        """The values the group reads from outside it (with ``extra`` joined), in
        the order the ordered steps first read them."""
        ordered = self.ordered(extra)
        members = set(ordered)
        found: list[SSAValue] = []
        for op in ordered:
            for value in op.operands:
                if _producer(value) not in members and value not in found:
                    found.append(value)
        return found


class FusePointwise:
    """Grows and rewrites the groups of one block (module docstring)."""

    def __init__(self, engine: DiagnosticEngine) -> None:
        self.engine = engine
        self.fusions = 0
        self.absorbed = 0
        self.cuts = 0
        self._said: set[tuple[Operation, str]] = set()

    def _cut(self, message: str, op: Operation) -> None:
        """One remark per op and reason, however many groups meet the cut."""
        if (op, message) in self._said:
            return
        self._said.add((op, message))
        self.cuts += 1
        self.engine.remark(f"pointwise chain cut: {message}", op)

    def run(self, block: Block) -> None:
        done: set[Operation] = set()
        ops = list(block.ops)
        position = {op: index for index, op in enumerate(ops)}
        for op in reversed(ops):
            if op in done or op.parent_block() is not block:
                continue
            if reduction(op):
                found = self._grow_reduction(op, position)
                if found is not None:
                    done.update(found.ops)
                    self._rewrite(found)
                continue
            if not candidate(op):
                continue
            group = self._grow(op, position)
            done.update(group.ops)
            self._rewrite(group)

    def _grow_reduction(self, root: Operation, position: dict[Operation, int]) -> _Group | None:
        """The group of a reduction and the chain computing its operand, or None
        (no chain, or one the ``fused_reduce`` family cannot take: a remark says
        why, and the chain is then fused without the reduction)."""
        producer = _producer(root.operands[0])
        if producer is None or not candidate(producer) or phase(producer) != phase(root):
            return None
        group = self._grow(root, position)
        if len(group.ops) == 1:
            return None
        shapes = [tuple(_tensor(v).get_shape()) for v in group.inputs()]
        operand = tuple(_tensor(root.operands[0]).get_shape())
        assert isinstance(root, ReductionOp)
        reason = unfusable(shapes, operand, tuple(root.axes))
        if reason is not None:
            self._cut(f"{root.name} is not fused into the chain: {reason}", root)
            return None
        return group

    def _grow(self, root: Operation, position: dict[Operation, int]) -> _Group:
        group = _Group(root, position, [root])
        pending = [root]
        while pending:
            op = pending.pop(0)
            for value in op.operands:
                producer = _producer(value)
                if producer is None or producer in group.ops:
                    continue
                if isinstance(producer, SHAPE_OPS):
                    inner = _producer(producer.operands[0])
                    if inner is not None and candidate(inner):
                        self._cut(
                            f"a shape change ({producer.name}) between {inner.name} and {op.name}",
                            producer,
                        )
                    continue
                if not candidate(producer) or phase(producer) != phase(root):
                    continue
                users = {use.operation for use in producer.results[0].uses}
                if not (users <= set(group.ops) or all(consumer(u) for u in users)):
                    others = [
                        name
                        for name in _user_names(producer.results[0])
                        if pointwise.lookup(name) is None
                        and name not in ("graph.reduce_sum", "graph.reduce_mean")
                    ]
                    reason = (
                        "its value is a result of the function"
                        if others == ["func.return"]
                        else f"its value has a user that is not pointwise ({', '.join(others)})"
                    )
                    self._cut(reason, producer)
                    continue
                if len(group.inputs(producer)) > pointwise_program.MAX_INPUTS:
                    self._cut(
                        f"fusing {producer.name} would read more than "
                        f"{pointwise_program.MAX_INPUTS} inputs",
                        producer,
                    )
                    continue
                if len(group.ops) - reduction(root) >= pointwise_program.MAX_STEPS:
                    self._cut(f"the group has {pointwise_program.MAX_STEPS} steps", producer)
                    continue
                group.ops.append(producer)
                pending.append(producer)
        return group

    def _rewrite(self, group: _Group) -> None:
        root = group.root
        if len(group.ops) == 1 and not _enables_view(root):
            return
        ordered = group.ordered()
        inputs = group.inputs()
        steps: list[pointwise_program.Step] = []
        index_of: dict[Operation, int] = {}
        # A reduction root is last; every other op is an ancestor of its operand,
        # so the program's last step is the value it reduces.
        for op in ordered[:-1] if reduction(root) else ordered:
            entry = pointwise.lookup(op.name)
            assert entry is not None
            refs = []
            for value in op.operands:
                producer = _producer(value)
                if producer is not None and producer in index_of:
                    refs.append(pointwise_program.Ref("$", index_of[producer]))
                else:
                    refs.append(pointwise_program.Ref("%", inputs.index(value)))
            index_of[op] = len(steps)
            steps.append(
                pointwise_program.Step(entry, pointwise.options_of(entry, op), tuple(refs))
            )
        program = pointwise_program.Program.of(steps, len(inputs))
        result_type = root.results[0].type
        assert isinstance(result_type, TensorType)
        trailing = None
        if isinstance(root, ReductionOp):
            trailing = Reduction(REDUCTIONS[type(root)], tuple(root.axes), root.keepdims)
        fused = FusedPointwiseOp(inputs, program, result_type, trailing)
        fused.location = fused_location(ordered)
        for key in phase(root):
            fused.attributes[key] = root.attributes[key]
        Rewriter.replace_op(root, fused)
        self.fusions += 1
        self.absorbed += len(ordered)
        for op in reversed(ordered[:-1]):  # the root is last: it has been replaced
            if not op.results[0].uses:
                Rewriter.erase_op(op)


def _tensor(value: SSAValue) -> TensorType:
    assert isinstance(value.type, TensorType)
    return value.type


def _enables_view(op: Operation) -> bool:
    """A lone op whose input is a split's part or whose value a concat takes."""
    reads_part = any(isinstance(_producer(v), SplitOp) for v in op.operands)
    feeds_concat = any(isinstance(use.operation, ConcatOp) for use in op.results[0].uses)
    return reads_part or feeds_concat


@dataclass(frozen=True)
class FusePointwisePass(ModulePass):
    """Fuse each chain of pointwise ops into one graph.fused_pointwise.

    Expects graph ops (after fuse-epilogues). Every maximal chain (a DAG) of
    pointwise-table ops, cheap producers recomputed where all their users are
    pointwise, becomes one op at the root's place, located at the fusion of
    the absorbed ops' locations. A ``graph.reduce_sum`` or ``graph.reduce_mean``
    of a chain's value joins it as a trailing reduction (``reduce sum|mean``:
    one ``fused_reduce`` launch, the value never stored) where that family
    can read every input. Refuses nothing: where a chain is cut (a user that
    is not pointwise, a shape change, the family's limits, a reduction the
    family cannot take) a remark ``pointwise chain cut: <reason>`` says why,
    at the op where it stops.
    """

    name = "fuse-pointwise"
    anchors: ClassVar[tuple[str, ...]] = ("builtin.module", "func.func")

    def apply(self, ctx: Context, op: Operation) -> None:
        fuser = FusePointwise(engine_of(ctx))
        blocks = [
            block for nested in op.walk() for region in nested.regions for block in region.blocks
        ]
        for block in blocks:
            fuser.run(block)
        sink = getattr(ctx, "_teeny_pass_statistics", None)
        if sink is not None:
            sink.add("fusions", fuser.fusions, "Number of graph.fused_pointwise ops made")
            sink.add("absorbed", fuser.absorbed, "Number of pointwise ops they replace")
            sink.add("cuts", fuser.cuts, "Number of chains cut (one remark each)")
