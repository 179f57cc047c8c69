"""`graph.param`: a model parameter, named by its PyTorch state-dict key."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects.builtin import StringAttr, TensorType, UnitAttr
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
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

    The optional unit property ``zero_default`` marks state that may be absent
    from the weights (an optimizer's moments, buffers and step count, which
    apply-optimizer reads this way): when no weight has the name, the value is
    all zeros of the result type instead of a missing-weight error. Without it
    a missing weight is an error.

    The optional unit property ``frozen`` marks a weight that training never
    updates (a buffer, or a parameter with ``requires_grad=False``: the fixed
    DFL projection of a YOLO head): insert-backward gives it no gradient.

        %w = graph.param "model.0.conv.weight" : tensor<16x3x3x3xf32>
        %m = graph.param "model.0.conv.weight.exp_avg" zero_default : tensor<16x3x3x3xf32>
    """

    name = "graph.param"

    param_name = prop_def(StringAttr)
    zero_default_attr = opt_prop_def(UnitAttr, prop_name="zero_default")
    frozen_attr = opt_prop_def(UnitAttr, prop_name="frozen")
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(
        self,
        param_name: str | StringAttr,
        result_type: TensorType,
        *,
        zero_default: bool = False,
        frozen: bool = False,
    ):
        if isinstance(param_name, str):
            param_name = StringAttr(param_name)
        super().__init__(
            properties={
                "param_name": param_name,
                "zero_default": UnitAttr() if zero_default else None,
                "frozen": UnitAttr() if frozen else None,
            },
            result_types=[result_type],
        )

    @property
    def zero_default(self) -> bool:
        """Whether a missing weight reads as zeros (state that starts at zero)."""
        return self.zero_default_attr is not None

    @property
    def frozen(self) -> bool:
        """Whether training leaves this weight as it is (no gradient, no update)."""
        return self.frozen_attr is not None

    def verify_(self) -> None:
        if not self.param_name.data:
            raise VerifyException("expected a non-empty parameter name")
        check_tensor(self.result.type, "parameter", dynamic_batch=False)

    @classmethod
    def parse(cls, parser: Parser) -> ParamOp:
        param_name = parse_utf8_literal(parser, "parameter name")
        zero_default = parser.parse_optional_keyword("zero_default") is not None
        frozen = parser.parse_optional_keyword("frozen") is not None
        attributes = parse_attr_dict(parser, ["param_name", "zero_default", "frozen"])
        parser.parse_punctuation(":")
        op = cls(
            param_name, parse_tensor_type(parser), zero_default=zero_default, frozen=frozen
        )
        op.attributes.update(attributes)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.param_name.data)
        if self.zero_default:
            printer.print_string(" zero_default")
        if self.frozen:
            printer.print_string(" frozen")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)
