"""Elementwise ops: activations (`graph.silu`, `graph.relu`, `graph.sigmoid`),
broadcasting binaries (`graph.add`, `graph.mul`) and `graph.bias_add`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from xdsl.dialects.builtin import TensorType, f32
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from dialects.graph.format import OptionsFormatOp, parse_attr_dict, parse_tensor_type, value_type
from dialects.graph.shapes import broadcast_shapes, check_channel_vector, check_result, check_tensor

if TYPE_CHECKING:
    from xdsl.parser import Parser
    from xdsl.printer import Printer


class UnaryOp(IRDLOperation):
    """Shared definition of the elementwise activations: one f32 tensor in, one of
    the same type out, printed with the type once::

        %y = graph.op %x attr-dict : tensor<?x16x8x8xf32>
    """

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, input: SSAValue | Operation):
        super().__init__(operands=[input], result_types=[value_type(input)])

    def verify_(self) -> None:
        check_tensor(self.input.type, "input")
        check_result(self.result, self.input.type)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        operand = parser.parse_unresolved_operand()
        attributes = parse_attr_dict(parser, ())
        parser.parse_punctuation(":")
        op = cls(parser.resolve_operand(operand, parse_tensor_type(parser)))
        op.attributes.update(attributes)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.input.type)


@irdl_op_definition
class SiluOp(UnaryOp):
    """Elementwise SiLU (swish): ``y = x * sigmoid(x) = x / (1 + exp(-x))``.

    %y = graph.silu %x : tensor<?x16x8x8xf32>
    """

    name = "graph.silu"


@irdl_op_definition
class ReluOp(UnaryOp):
    """Elementwise rectifier: ``y = max(x, 0)`` (``y = 0`` for ``x <= 0``).

    %y = graph.relu %x : tensor<?x16x8x8xf32>
    """

    name = "graph.relu"


@irdl_op_definition
class SigmoidOp(UnaryOp):
    """Elementwise logistic function: ``y = 1 / (1 + exp(-x))``, in (0, 1).

    Evaluated without overflow for any finite ``x``: ``exp(x) / (1 + exp(x))``
    when ``x < 0``.

    %y = graph.sigmoid %x : tensor<?x16x8x8xf32>
    """

    name = "graph.sigmoid"


class BroadcastBinaryOp(OptionsFormatOp):
    """Shared definition of the broadcasting binaries: ``lhs``, ``rhs`` and a result
    of the shape `broadcast_shapes` gives (numpy's rules, with the batch ``?``)."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(
        self,
        lhs: SSAValue | Operation,
        rhs: SSAValue | Operation,
        result_type: TensorType | None = None,
    ):
        """Build the op; without ``result_type`` the broadcast type is inferred."""
        if result_type is None:
            shape = broadcast_shapes(
                check_tensor(value_type(lhs), "lhs"),
                check_tensor(value_type(rhs), "rhs"),
            )
            result_type = TensorType(f32, shape)
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def verify_(self) -> None:
        shape = broadcast_shapes(
            check_tensor(self.lhs.type, "lhs"), check_tensor(self.rhs.type, "rhs")
        )
        check_tensor(self.result.type, "result")
        check_result(self.result, TensorType(f32, shape))


@irdl_op_definition
class AddOp(BroadcastBinaryOp):
    """Elementwise ``lhs + rhs`` with numpy broadcasting (see `broadcast_shapes`).

    %z = graph.add %a, %b : (tensor<?x16x8x8xf32>, tensor<16x1x1xf32>)
        -> tensor<?x16x8x8xf32>
    """

    name = "graph.add"


@irdl_op_definition
class MulOp(BroadcastBinaryOp):
    """Elementwise ``lhs * rhs`` with numpy broadcasting (see `broadcast_shapes`).

    %z = graph.mul %a, %b : (tensor<?x16x8x8xf32>, tensor<?x16x1x1xf32>)
        -> tensor<?x16x8x8xf32>
    """

    name = "graph.mul"


@irdl_op_definition
class BiasAddOp(OptionsFormatOp):
    """Per-channel bias: ``input`` [N, C, ...] (rank >= 2) plus ``bias`` [C] (static)
    broadcast along dimension 1::

        y[n, c, ...] = x[n, c, ...] + bias[c]

    The result has ``input``'s type. split-bias makes it from a biased conv.

        %y = graph.bias_add %x, %b : (tensor<?x16x8x8xf32>, tensor<16xf32>)
            -> tensor<?x16x8x8xf32>
    """

    name = "graph.bias_add"

    input = operand_def(TensorType)
    bias = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, input: SSAValue | Operation, bias: SSAValue | Operation):
        super().__init__(operands=[input, bias], result_types=[value_type(input)])

    def verify_(self) -> None:
        shape = check_tensor(self.input.type, "input")
        if len(shape) < 2:
            raise VerifyException(f"expected input of rank >= 2 [N, C, ...], got rank {len(shape)}")
        check_channel_vector(self.bias.type, "bias", shape[1])
        check_result(self.result, self.input.type)
