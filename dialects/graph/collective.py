"""Collectives: `graph.all_reduce`, the one cross-process op of the dialect.

Data-parallel training runs the same graph on every process (rank) of a
group, each on its shard of the batch; a collective combines one value across
the ranks. The graph is built for a group of ``world`` ranks (the attribute),
and every rank executes its collectives in the same order (they are the same
program), which is what pairs them up at run time.
"""

from __future__ import annotations

from xdsl.irdl import irdl_op_definition, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from dialects.graph.shapes import check_result, check_tensor, format_shape
from teeny_ir.ir.collective import REDUCTIONS, CollectiveOp

__all__ = ["REDUCTIONS", "AllReduceOp"]


@irdl_op_definition
class AllReduceOp(CollectiveOp):
    """``input`` reduced elementwise over the ``world`` ranks of the process
    group, every rank receiving the result, as
    ``torch.distributed.all_reduce`` (``sum``; ``mean`` is the sum divided by
    ``world``, ``ReduceOp.AVG``)::

        y = sum_r x_r            (reduction sum)
        y = sum_r x_r / world    (reduction mean)

    with ``x_r`` the operand's value on rank ``r``. Properties (both required):
    ``reduction`` (``mean`` or ``sum``) and ``world`` (i64 >= 1, the number of
    ranks the graph was built for; with 1 the op is the identity). The operand
    is a fully static f32 tensor (every rank holds one of the same shape: a
    dynamic batch may differ between ranks); the result has its type.

    It is its own adjoint: the gradient of ``x_r`` is the same all-reduce of
    the ranks' gradients of ``y`` (insert-backward emits it). The reference
    interpreter runs it through the collective it is given
    (`teeny_ir.reference.collective`).

        %g = graph.all_reduce %dw reduction mean world 2 : (tensor<16x3x3x3xf32>) -> tensor<16x3x3x3xf32>
        %n = graph.all_reduce %count reduction sum world 8 : (tensor<f32>) -> tensor<f32>
    """

    name = "graph.all_reduce"

    traits = traits_def(Pure())

    def verify_(self) -> None:
        self.verify_properties()
        shape = check_tensor(self.input.type, "input")
        try:
            check_tensor(self.input.type, "input", dynamic_batch=False)
        except VerifyException:
            raise VerifyException(
                f"expected a fully static input, got shape {format_shape(shape)}: every rank "
                "must hold a value of one shape, and the ranks' batches may differ"
            ) from None
        check_result(self.result, self.input.type)
