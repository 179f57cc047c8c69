"""`graph.constant`: a small dense f32 literal."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType, f32
from xdsl.irdl import IRDLOperation, irdl_op_definition, prop_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from dialects.graph.shapes import check_result, check_tensor
from teeny_ir.ir.format import parse_attr_dict

if TYPE_CHECKING:
    from xdsl.parser import Parser
    from xdsl.printer import Printer

MAX_CONSTANT_ELEMENTS = 4096
"""The most elements a `graph.constant` may hold; larger tensors are weights."""


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A tensor whose value is written in the IR: the dense literal ``value``.

    ``value`` is a ``DenseIntOrFPElementsAttr`` of a fully static f32 tensor
    type of at most `MAX_CONSTANT_ELEMENTS` elements (a larger tensor belongs in
    the weights, as a `graph.param`); the result has that type. The format is
    MLIR's ``arith.constant``: the discardable attributes come first, then the
    literal, whose type is the result type::

        %c = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
    """

    name = "graph.constant"

    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, value: DenseIntOrFPElementsAttr):
        """Build a constant of ``value``; the result type is the literal's type."""
        super().__init__(properties={"value": value}, result_types=[value.type])

    @classmethod
    def from_values(cls, values: Sequence[float], shape: Sequence[int] | None = None) -> ConstantOp:
        """A constant of shape ``shape`` (default ``[len(values)]``) holding
        ``values`` in row-major order; a single value fills the whole shape."""
        shape = (len(values),) if shape is None else tuple(shape)
        if len(values) not in (1, math.prod(shape)):
            raise ValueError(
                f"expected 1 or {math.prod(shape)} values for shape {list(shape)}, "
                f"got {len(values)}"
            )
        return cls(DenseIntOrFPElementsAttr.from_list(TensorType(f32, shape), values))

    def verify_(self) -> None:
        shape = check_tensor(self.value.type, "constant", dynamic_batch=False)
        count = math.prod(shape)
        if count > MAX_CONSTANT_ELEMENTS:
            raise VerifyException(
                f"constant has {count} elements, more than the {MAX_CONSTANT_ELEMENTS} "
                "allowed: pass a large tensor as a weight (graph.param)"
            )
        check_result(self.result, self.value.type)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        attributes = parse_attr_dict(parser, ["value"])
        start = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error("expected a dense<...> literal of tensor type", start, parser.pos)
        if not isinstance(value.type, TensorType):
            parser.raise_error(
                f"expected the literal's type to be a tensor type, got {value.type}",
                start,
                parser.pos,
            )
        op = cls(value)
        op.attributes.update(attributes)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_op_attributes(self.attributes)
        printer.print_string(" ")
        printer.print_attribute(self.value)
