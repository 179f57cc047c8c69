"""Collectives: `graph.all_reduce`, the one cross-process op of the dialect.

Data-parallel training runs the same graph on every process (rank) of a
group, each on its shard of the batch; a collective combines one value across
the ranks. The graph is built for a group of ``world`` ranks (the attribute),
and every rank executes its collectives in the same order (they are the same
program), which is what pairs them up at run time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from xdsl.dialects.builtin import I64, IntegerAttr, StringAttr, TensorType, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.parser import Parser
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from dialects.graph.shapes import check_result, check_tensor, format_shape
from teeny_ir.ir.format import OptionParser, OptionsFormatOp, keyword_option, parse_i64, value_type

REDUCTIONS = ("mean", "sum")
"""The reductions of `graph.all_reduce`: the mean or the sum over the ranks."""


def _world_option(parser: Parser) -> Attribute:
    return IntegerAttr(parse_i64(parser), i64)


@irdl_op_definition
class AllReduceOp(OptionsFormatOp):
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

    input = operand_def(TensorType)
    result = result_def(TensorType)
    reduction_attr = prop_def(StringAttr, prop_name="reduction")
    world_attr = prop_def(IntegerAttr[I64], prop_name="world")

    traits = traits_def(Pure())

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
        """The number of ranks the graph was built for."""
        return self.world_attr.value.data

    def verify_(self) -> None:
        if self.reduction not in REDUCTIONS:
            raise VerifyException(
                f"expected reduction to be one of {', '.join(REDUCTIONS)}, got '{self.reduction}'"
            )
        if self.world < 1:
            raise VerifyException(f"expected world (the number of ranks) >= 1, got {self.world}")
        shape = check_tensor(self.input.type, "input")
        try:
            check_tensor(self.input.type, "input", dynamic_batch=False)
        except VerifyException:
            raise VerifyException(
                f"expected a fully static input, got shape {format_shape(shape)}: every rank "
                "must hold a value of one shape, and the ranks' batches may differ"
            ) from None
        check_result(self.result, self.input.type)
