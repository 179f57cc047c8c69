"""`graph.param`: a model parameter, named by its PyTorch state-dict key."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.irdl import IRDLOperation, irdl_op_definition, prop_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from dialects.graph.shapes import check_tensor
from teeny_ir.ir.format import parse_attr_dict, parse_tensor_type, parse_utf8_literal

if TYPE_CHECKING:
    from xdsl.parser import Parser
    from xdsl.printer import Printer


@irdl_op_definition
class ParamOp(IRDLOperation):
    """A model parameter, bound at run time to the weight of the same name.

    ``param_name`` is the dotted PyTorch state-dict key (non-empty, any
    characters); the result is that weight, a fully static f32 tensor.

        %w = graph.param "model.0.conv.weight" : tensor<16x3x3x3xf32>
    """

    name = "graph.param"

    param_name = prop_def(StringAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, param_name: str | StringAttr, result_type: TensorType):
        if isinstance(param_name, str):
            param_name = StringAttr(param_name)
        super().__init__(properties={"param_name": param_name}, result_types=[result_type])

    def verify_(self) -> None:
        if not self.param_name.data:
            raise VerifyException("expected a non-empty parameter name")
        check_tensor(self.result.type, "parameter", dynamic_batch=False)

    @classmethod
    def parse(cls, parser: Parser) -> ParamOp:
        param_name = parse_utf8_literal(parser, "parameter name")
        attributes = parse_attr_dict(parser, ["param_name"])
        parser.parse_punctuation(":")
        op = cls(param_name, parse_tensor_type(parser))
        op.attributes.update(attributes)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.param_name.data)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)
