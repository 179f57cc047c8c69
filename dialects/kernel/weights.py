"""The function's weight table: its ``kernel.weight`` declarations, and the
lookups over them that the ops reading weights verify against (built once per
verification run, so that verifying every launch of a function stays linear in
its size)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from xdsl.dialects.builtin import StringAttr, TensorType, UnitAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation
from xdsl.irdl import IRDLOperation, irdl_op_definition, opt_prop_def, prop_def
from xdsl.utils.exceptions import VerifyException

from dialects.kernel.attributes import is_batch_tensor
from teeny_ir.ir.format import parse_attr_dict, parse_tensor_type, parse_utf8_literal
from teeny_ir.ir.verifier import verification_memo

if TYPE_CHECKING:
    from xdsl.parser import Parser
    from xdsl.printer import Printer


@irdl_op_definition
class WeightOp(IRDLOperation):
    """Declares a weight of the function: its state-dict name and static f32 type.

    The declarations form the function's weight table; launches' derivations
    may read only declared weights, with fitting shapes. No results: kernels
    read weights only through parameter slots.

        kernel.weight "model.0.conv.weight" : tensor<37x37x1x1xf32>
        kernel.weight "model.0.conv.weight.momentum_buffer" zero_default : tensor<...>

    ``zero_default`` marks optimizer state that is zero when absent from the weights.
    """

    name = "kernel.weight"

    weight_name_attr = prop_def(StringAttr, prop_name="weight_name")
    weight_type = prop_def(TensorType, prop_name="type")
    zero_default_attr = opt_prop_def(UnitAttr, prop_name="zero_default")

    def __init__(self, name: str, type: TensorType, *, zero_default: bool = False):
        super().__init__(
            properties={
                "weight_name": StringAttr(name),
                "type": type,
                "zero_default": UnitAttr() if zero_default else None,
            }
        )

    @property
    def zero_default(self) -> bool:
        """Optimizer state that starts at zero when the weights lack it (the
        graph.param's ``zero_default``)."""
        return self.zero_default_attr is not None

    @property
    def weight_name(self) -> str:
        """The dotted PyTorch state-dict key."""
        return self.weight_name_attr.data

    @property
    def shape(self) -> tuple[int, ...]:
        return self.weight_type.get_shape()

    def verify_(self) -> None:
        if not self.weight_name:
            raise VerifyException("expected a non-empty weight name")
        if not is_batch_tensor(self.weight_type, static=True):
            raise VerifyException(
                f"weight '{self.weight_name}' must be a static f32 tensor with sizes >= 1, "
                f"got {self.weight_type}"
            )
        first = first_declarations(self.parent_block()).get(self.weight_name, self)
        if first is not self:
            raise VerifyException(f"weight '{self.weight_name}' is already declared")

    @classmethod
    def parse(cls, parser: Parser) -> WeightOp:
        name = parse_utf8_literal(parser, "weight name")
        zero_default = parser.parse_optional_keyword("zero_default") is not None
        attributes = parse_attr_dict(parser, ("weight_name", "type", "zero_default"))
        parser.parse_punctuation(":")
        op = cls(name, parse_tensor_type(parser), zero_default=zero_default)
        op.attributes.update(attributes)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.weight_name)
        if self.zero_default:
            printer.print_string(" zero_default")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.weight_type)


def first_declarations(block: Block | None) -> dict[str, WeightOp]:
    """Weight name -> the first kernel.weight of ``block`` declaring it, built
    once per verification run (`verification_memo`)."""
    memo = verification_memo()
    key = ("kernel.weight first declarations", id(block))
    if memo is not None and key in memo:
        return cast(dict[str, WeightOp], memo[key])
    first: dict[str, WeightOp] = {}
    for op in block.ops if block is not None else ():
        if isinstance(op, WeightOp):
            first.setdefault(op.weight_name, op)
    if memo is not None:
        memo[key] = first
    return first


def weight_table(function: FuncOp | None) -> dict[str, tuple[int, ...]]:
    """Weight name -> shape over the function's kernel.weight ops, built once per
    verification run (`verification_memo`) so that verifying every launch of a
    function stays linear in its size."""
    memo = verification_memo()
    key = ("kernel.weight table", id(function))
    if memo is not None and key in memo:
        return cast(dict[str, tuple[int, ...]], memo[key])
    table: dict[str, tuple[int, ...]] = {}
    for op in function.walk() if function is not None else ():
        if isinstance(op, WeightOp):
            table.setdefault(op.weight_name, op.shape)
    if memo is not None:
        memo[key] = table
    return table


def enclosing_function(op: Operation) -> FuncOp | None:
    """The ``func.func`` that ``op`` is nested in (None outside one)."""
    function = op.parent_op()
    while function is not None and not isinstance(function, FuncOp):
        function = function.parent_op()
    return function
