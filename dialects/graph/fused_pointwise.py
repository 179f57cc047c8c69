"""`graph.fused_pointwise`: a chain of pointwise ops computed as one op.

fuse-pointwise makes it from a chain (a DAG) of pointwise-table ops, so that
the chain runs as one ``fused_elementwise`` launch instead of one launch per op.
Its ``program`` (`teeny_ir.core.pointwise_program`) names each absorbed op's
table entry and its operands, the op's inputs (``%k``) or earlier steps
(``$j``); the op's location is the fusion of the absorbed ops' locations::

    %y = graph.fused_pointwise %a, %b, %c program "sub %0 %1; mul $0 %2"
        : (tensor<?x2x84xf32>, tensor<1x2x84xf32>, tensor<1x84xf32>) -> tensor<?x2x84xf32>

The verifier parses the program (it must read exactly the op's inputs) and
checks the result type against the steps' shapes, broadcast as the unfused ops
would broadcast them (`broadcast_shapes`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import StringAttr, TensorType, f32
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import irdl_op_definition, prop_def, result_def, traits_def, var_operand_def
from xdsl.parser import Parser
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from dialects.graph.shapes import Shape, broadcast_shapes, check_result, check_tensor
from teeny_ir.core import pointwise_program
from teeny_ir.ir.format import OptionParser, OptionsFormatOp, parse_utf8_literal, value_type


def _program_option(parser: Parser) -> Attribute:
    return StringAttr(parse_utf8_literal(parser, "pointwise program"))


def program_shape(program: pointwise_program.Program, shapes: Sequence[Shape]) -> Shape:
    """The shape of ``program``'s value on inputs of ``shapes``: every step's
    operands broadcast (raises VerifyException naming the step that cannot)."""
    results: list[Shape] = []
    for index, step in enumerate(program.steps):
        operands = [
            shapes[ref.index] if ref.kind == "%" else results[ref.index] for ref in step.operands
        ]
        shape = tuple(operands[0])
        for other in operands[1:]:
            try:
                shape = broadcast_shapes(shape, other)
            except VerifyException as err:
                raise VerifyException(f"step {index} ({step.entry.name}): {err}") from None
        results.append(shape)
    return results[-1]


@irdl_op_definition
class FusedPointwiseOp(OptionsFormatOp):
    """A pointwise program over ``inputs`` (see the module docstring)."""

    name = "graph.fused_pointwise"

    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    program_attr = prop_def(StringAttr, prop_name="program")

    traits = traits_def(Pure())

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {"program": _program_option}
    REQUIRED: ClassVar[tuple[str, ...]] = ("program",)

    def __init__(
        self,
        inputs: Sequence[SSAValue | Operation],
        program: pointwise_program.Program,
        result_type: TensorType | None = None,
    ):
        """``program`` over ``inputs``; without ``result_type`` it is inferred."""
        if result_type is None:
            shapes = [check_tensor(value_type(v), f"input {i}") for i, v in enumerate(inputs)]
            result_type = TensorType(f32, program_shape(program, shapes))
        super().__init__(
            operands=[inputs],
            result_types=[result_type],
            properties={"program": StringAttr(program.text())},
        )

    @classmethod
    def from_text(
        cls, inputs: Sequence[SSAValue | Operation], program: str
    ) -> FusedPointwiseOp:
        """The op of the program ``program`` spells (ValueError if it does not
        parse or reads another number of inputs)."""
        return cls(inputs, pointwise_program.parse(program, len(inputs)))

    @property
    def program(self) -> pointwise_program.Program:
        """The parsed program (the verifier has checked that it parses)."""
        return pointwise_program.parse(self.program_attr.data, len(self.inputs))

    def verify_(self) -> None:
        try:
            program = self.program
        except ValueError as err:
            raise VerifyException(f"invalid program: {err}") from None
        shapes = [check_tensor(v.type, f"input {i}") for i, v in enumerate(self.inputs)]
        check_result(self.result, TensorType(f32, program_shape(program, shapes)))
