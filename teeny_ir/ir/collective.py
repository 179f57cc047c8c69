"""What `graph.all_reduce` and `kernel.all_reduce` share: their operand and
result, the ``reduction`` and ``world`` properties, the assembly format,
constructor and accessors, and the check of the two properties. Each dialect
subclasses `CollectiveOp` with its name, traits and type checks (the kernel
dialect loads no graph module, so the shared part lives here)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from xdsl.dialects.builtin import I64, IntegerAttr, StringAttr, TensorType, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import operand_def, prop_def, result_def
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from teeny_ir.ir.format import OptionParser, OptionsFormatOp, keyword_option, parse_i64, value_type

REDUCTIONS = ("mean", "sum")
"""The reductions of an all-reduce: the mean or the sum over the ranks."""


def _world_option(parser: Parser) -> Attribute:
    return IntegerAttr(parse_i64(parser), i64)


class CollectiveOp(OptionsFormatOp):
    """An all-reduce of ``input`` over ``world`` ranks::

        %y = <dialect>.all_reduce %x reduction mean world 2 : (tensor<4xf32>) -> tensor<4xf32>
    """

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
        """The number of ranks the graph (or plan) is built for."""
        return self.world_attr.value.data

    def verify_properties(self) -> None:
        """Raise `VerifyException` for a reduction not in `REDUCTIONS` or a
        ``world`` below 1."""
        if self.reduction not in REDUCTIONS:
            raise VerifyException(
                f"expected reduction to be one of {', '.join(REDUCTIONS)}, got '{self.reduction}'"
            )
        if self.world < 1:
            raise VerifyException(f"expected world (the number of ranks) >= 1, got {self.world}")
