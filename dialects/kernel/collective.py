"""``kernel.all_reduce``: a collective of the launch plan, not a kernel launch.

lower-graph-to-kernel makes one for each ``graph.all_reduce``
(`teeny_ir.kernels.collective.lowering`); emit-triton records it as a
collective entry of the plan's launches, in program order with its phase
(docs/plan.md, "Collectives"), which the runtime runs through the process
group it is given (torch.distributed): no Triton kernel, no grid.
"""

from __future__ import annotations

from typing import cast

from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition
from xdsl.utils.exceptions import VerifyException

from dialects.kernel.attributes import is_batch_tensor
from teeny_ir.ir.collective import REDUCTIONS, CollectiveOp

__all__ = ["REDUCTIONS", "AllReduceOp"]


@irdl_op_definition
class AllReduceOp(CollectiveOp):
    """``input`` reduced elementwise over the ``world`` ranks of the process
    group (``sum``, or ``mean``: the sum divided by ``world``), every rank
    receiving the result: the kernel-level form of ``graph.all_reduce``::

        %g = kernel.all_reduce %dw reduction mean world 2 : (tensor<6x1x5x5xf32>) -> tensor<6x1x5x5xf32>

    Properties (both required): ``reduction`` (``mean`` or ``sum``) and
    ``world`` (i64 >= 1; with 1 the op copies its input). The operand and the
    result are static, contiguous f32 tensors of one type (every rank holds
    one of the same shape). Not pure: it communicates with the other ranks,
    which run the same collectives in the same order, so it is never erased
    or moved as a value computation would be. No launch: the plan records it
    as a collective (docs/plan.md) and the runtime runs it through
    torch.distributed."""

    name = "kernel.all_reduce"

    def verify_(self) -> None:
        self.verify_properties()
        for what, type_ in (("the operand", self.input.type), ("the result", self.result.type)):
            if not is_batch_tensor(type_, static=True):
                raise VerifyException(
                    f"{what} must be a static, contiguous f32 tensor with sizes >= 1, got {type_}"
                )
        if cast(TensorType, self.result.type) != cast(TensorType, self.input.type):
            raise VerifyException(
                f"the result type {self.result.type} must be the operand's {self.input.type}"
            )
