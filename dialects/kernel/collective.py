"""``kernel.all_reduce``: a collective of the launch plan, not a kernel launch.

lower-graph-to-kernel makes one for each ``graph.all_reduce``
(`teeny_ir.kernels.collective.lowering`); emit-triton records it as a
collective entry of the plan's launches, in program order with its phase
(docs/plan.md, "Collectives"), which the runtime runs through the process
group it is given (torch.distributed): no Triton kernel, no grid.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, cast

from xdsl.dialects.builtin import I64, IntegerAttr, StringAttr, TensorType, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from dialects.kernel.attributes import is_batch_tensor
from teeny_ir.ir.format import OptionParser, OptionsFormatOp, keyword_option, parse_i64, value_type

REDUCTIONS = ("mean", "sum")
"""The reductions of ``kernel.all_reduce``, as ``graph.all_reduce``'s (the
kernel dialect loads no graph module)."""


def _world_option(parser: Parser) -> Attribute:
    return IntegerAttr(parse_i64(parser), i64)


@irdl_op_definition
class AllReduceOp(OptionsFormatOp):
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

    input = operand_def(TensorType)
    result = result_def(TensorType)
    reduction_attr = prop_def(StringAttr, prop_name="reduction")
    world_attr = prop_def(IntegerAttr[I64], prop_name="world")

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        "reduction": keyword_option("reduction", REDUCTIONS),
        "world": _world_option,
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("reduction", "world")

    def __init__(self, input: SSAValue | Operation, reduction: str, world: int):
        """All-reduce ``input`` (``reduction`` "mean" or "sum") over ``world``
        ranks; the result type is ``input``'s."""
        super().__init__(
            operands=[input],
            result_types=[value_type(input)],
            properties={
                "reduction": StringAttr(reduction),
                "world": IntegerAttr(world, i64),
            },
        )

    @property
    def reduction(self) -> str:
        """``mean`` or ``sum``."""
        return self.reduction_attr.data

    @property
    def world(self) -> int:
        """The number of ranks the plan is built for."""
        return self.world_attr.value.data

    def verify_(self) -> None:
        if self.reduction not in REDUCTIONS:
            raise VerifyException(
                f"expected reduction to be one of {', '.join(REDUCTIONS)}, got '{self.reduction}'"
            )
        if self.world < 1:
            raise VerifyException(f"expected world (the number of ranks) >= 1, got {self.world}")
        for what, type_ in (("the operand", self.input.type), ("the result", self.result.type)):
            if not is_batch_tensor(type_, static=True):
                raise VerifyException(
                    f"{what} must be a static, contiguous f32 tensor with sizes >= 1, got {type_}"
                )
        if cast(TensorType, self.result.type) != cast(TensorType, self.input.type):
            raise VerifyException(
                f"the result type {self.result.type} must be the operand's {self.input.type}"
            )
