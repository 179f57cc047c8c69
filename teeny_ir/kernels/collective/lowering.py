"""The lowering of ``graph.all_reduce``: a ``kernel.all_reduce``, no launch.

The collective keeps the op's ``reduction`` and ``world`` (and, as every
lowered op, its location and training phase: lower-graph-to-kernel copies
them); the plan records it as a collective of its launches.
"""

from __future__ import annotations

from xdsl.ir import Operation

from dialects.graph.collective import AllReduceOp as GraphAllReduceOp
from dialects.kernel.attributes import is_batch_tensor
from dialects.kernel.collective import AllReduceOp
from teeny_ir.kernels.lowering import LoweringContext, Unlowerable, lowers, tensor_type


@lowers(GraphAllReduceOp)
def lower_all_reduce(ctx: LoweringContext, op: Operation) -> AllReduceOp:
    """A collective over the ranks (`dialects.kernel.collective`): the runtime
    runs it through the process group, in plan order."""
    assert isinstance(op, GraphAllReduceOp)
    if not is_batch_tensor(tensor_type(op.input), static=True):
        raise Unlowerable(
            f"a collective takes a static f32 tensor with sizes >= 1, got {op.input.type}"
        )
    return AllReduceOp(op.input, op.reduction, op.world)
