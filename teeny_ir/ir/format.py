"""Assembly formats shared by the graph ops, and property helpers.

Parse errors go through ``parser.raise_error``, so they are located. Optional
properties are absent when they hold their default, and the printers write only
the present ones, so text round-trips exactly.

Floats follow MLIR: a value prints in decimal when that reads back as the same
bits, and otherwise (an integral value whose shortest form has no '.', NaN,
±inf) as its bit pattern in hexadecimal, ``0x7FC00000`` for an f32 and 16
digits for an f64. A hexadecimal literal where a float is expected is read as
those bits (`teeny_ir.ir.parsing.parse_optional_hex_float`), never as an
integer value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar, Self, TypeVar

from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation, opt_prop_def

from teeny_ir.ir.parsing import float_bits, hex_float_text, parse_optional_hex_float

if TYPE_CHECKING:
    from xdsl.parser import AttrParser, Parser, UnresolvedOperand
    from xdsl.printer import Printer

OpT = TypeVar("OpT", bound=Operation)

OptionParser = Callable[["Parser"], Attribute]
"""Parses the value that follows an option keyword."""

_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
_BARE_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")
"""MLIR's bare-id: what `keyword_option` reads without quotes."""


# --- floats (their bit-level helpers live with the parser) ---------------------
def parse_f64(parser: AttrParser) -> float:
    """An f64: a float literal (``1.0e-05``, ``-0.5``) or its bits in hex."""
    value = parse_optional_hex_float(parser, f64)
    return parser.parse_float() if value is None else value


def f64_option(parser: Parser) -> Attribute:
    """Parser for an f64 option's value (see `parse_f64`)."""
    return FloatAttr(parse_f64(parser), f64)


def f64_text(value: float) -> str:
    """An f64 as text that `parse_f64` reads back to the same bits: the shortest
    decimal (with the '.' MLIR's float syntax needs: ``1.0e-05``), or its bits
    in hex when it is not finite."""
    if not math.isfinite(value):
        return hex_float_text(float_bits(value, f64), f64)
    text = repr(float(value))
    if "." not in text:
        mantissa, _, exponent = text.partition("e")
        text = f"{mantissa}.0" + (f"e{exponent}" if exponent else "")
    return text


def parse_i64(parser: Parser) -> int:
    """An integer literal that fits in i64."""
    start = parser.pos
    value = parser.parse_integer(allow_boolean=False)
    if not _I64_MIN <= value <= _I64_MAX:
        parser.raise_error(f"integer {value} does not fit in i64", start, parser.pos)
    return value


def int_array_option(name: str, count: int, layout: str = "") -> OptionParser:
    """Parser for ``[a, b, ...]`` holding exactly ``count`` i64 values."""

    def parse(parser: Parser) -> Attribute:
        start = parser.pos
        values = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: parse_i64(parser)
        )
        if len(values) != count:
            parser.raise_error(
                f"expected {count} values for {name}{layout}, got {len(values)}",
                start,
                parser.pos,
            )
        return DenseArrayBase.from_list(i64, values)

    return parse


def keyword_option(name: str, choices: Sequence[str]) -> OptionParser:
    """Parser for one word out of ``choices`` (an identifier or a string literal)."""

    def parse(parser: Parser) -> Attribute:
        start = parser.pos
        word = parser.parse_optional_identifier() or parser.parse_optional_str_literal()
        if word is None or word not in choices:
            parser.raise_error(
                f"expected {name} to be one of {', '.join(choices)}", start, parser.pos
            )
        return StringAttr(word)

    return parse


def parse_options(parser: Parser, options: Mapping[str, OptionParser]) -> dict[str, Attribute]:
    """Parse ``keyword value`` pairs, in any order, each at most once."""
    parsed: dict[str, Attribute] = {}
    while True:
        start = parser.pos
        keyword = parser.parse_optional_keyword_in(options)
        if keyword is None:
            return parsed
        if keyword in parsed:
            parser.raise_error(f"'{keyword}' is given more than once", start, parser.pos)
        parsed[keyword] = options[keyword](parser)


def print_options(printer: Printer, op: Operation, names: Collection[str]) -> None:
    """Print the present properties among ``names`` as ``keyword value`` pairs."""
    for name in names:
        value = op.properties.get(name)
        if value is not None:
            print_option(printer, name, value)


def print_option(printer: Printer, name: str, value: Attribute) -> None:
    """One `` keyword value`` pair, the value as `parse_options`' parsers read it."""
    printer.print_string(f" {name}")
    if isinstance(value, DenseArrayBase):
        printer.print_string(f" {list(value.get_values())}")
    elif isinstance(value, IntegerAttr):
        printer.print_string(f" {value.value.data}")
    elif isinstance(value, FloatAttr):
        printer.print_string(" ")
        printer.print_float(value.value.data, f64)
    elif isinstance(value, StringAttr):  # a word from a fixed set
        printer.print_string(" ")
        if _BARE_IDENTIFIER.fullmatch(value.data):
            printer.print_string(value.data)
        else:  # ``implicit-gemm`` is no bare identifier: quote it
            printer.print_string_literal(value.data)
    elif not isinstance(value, UnitAttr):
        printer.print_string(" ")
        printer.print_attribute(value)
    # A UnitAttr (``training``) is the keyword alone.


def parse_signature_tail(
    parser: Parser,
    cls: type[OpT],
    operands: Sequence[UnresolvedOperand],
    properties: dict[str, Attribute],
    reserved: Collection[str],
) -> OpT:
    """The rest of a function-type format after the options: ``attr-dict :
    (types) -> types``, and the op of class ``cls`` built from it."""
    attributes = parse_attr_dict(parser, reserved)
    parser.parse_punctuation(":")
    start = parser.pos
    signature = parser.parse_function_type()
    values = parser.resolve_operands(operands, signature.inputs.data, start)
    return cls.create(
        operands=values,
        result_types=signature.outputs.data,
        properties=properties,
        attributes=attributes,
    )


def print_signature_tail(printer: Printer, op: Operation) -> None:
    """`` attr-dict : (types) -> types``, what `parse_signature_tail` reads."""
    printer.print_op_attributes(op.attributes)
    printer.print_string(" : ")
    printer.print_function_type(op.operand_types, op.result_types)


def parse_attr_dict(parser: Parser, reserved: Collection[str]) -> dict[str, Attribute]:
    """Parse an optional discardable-attribute dictionary (``attr-dict``)."""
    attributes = parser.parse_optional_attr_dict_with_reserved_attr_names(reserved)
    return {} if attributes is None else dict(attributes.data)


def parse_utf8_literal(parser: Parser, what: str) -> str:
    """A string literal. xDSL lexes one with escaped non-ASCII bytes (as its printer
    writes them) as a bytes literal, so accept those and decode them as UTF-8."""
    start = parser.pos
    if (text := parser.parse_optional_str_literal()) is not None:
        return text
    raw = parser.parse_optional_bytes_literal()
    if raw is None:
        parser.raise_error(f"expected the {what}, a string literal")
    try:
        return raw.decode()
    except UnicodeDecodeError:
        parser.raise_error(f"the {what} is not valid UTF-8", start, parser.pos)


def parse_tensor_type(parser: Parser) -> TensorType:
    """A type that must be a tensor type."""
    start = parser.pos
    type_ = parser.parse_type()
    if not isinstance(type_, TensorType):
        parser.raise_error(f"expected a tensor type, got {type_}", start, parser.pos)
    return type_


def value_type(value: SSAValue | Operation) -> Attribute:
    """The type of a value, or of the single result of an op."""
    return SSAValue.get(value).type


def i64_array_prop(name: str, default: Sequence[int]) -> DenseArrayBase[I64]:
    """An optional i64-array property named ``name``, reading as ``default`` when absent."""
    return opt_prop_def(DenseArrayBase[I64], DenseArrayBase.from_list(i64, default), prop_name=name)


def i64_array(values: Sequence[int] | None) -> Attribute | None:
    """The property value of an optional i64 array (None: absent)."""
    return None if values is None else DenseArrayBase.from_list(i64, values)


def f64_attr(value: float | None) -> Attribute | None:
    """The property value of an optional f64 (None: absent)."""
    return None if value is None else FloatAttr(value, f64)


class OptionsFormatOp(IRDLOperation):
    """Shared assembly format of ops whose signature is a function type:

        %r = graph.op %a, %b (keyword value)* attr-dict : (type, type) -> type

    ``OPTIONS`` maps each property keyword to its value parser; present
    properties print in that order. ``REQUIRED`` options must be written (a
    missing one is a located parse error, not a verifier failure). Operand and
    result counts are left to the verifier, as in the generic form.
    """

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {}
    REQUIRED: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        start = parser.pos
        operands = parser.parse_comma_separated_list(
            parser.Delimiter.NONE, parser.parse_unresolved_operand
        )
        properties = parse_options(parser, cls.OPTIONS)
        for name in cls.REQUIRED:
            if name not in properties:
                parser.raise_error(f"expected the '{name}' option of {cls.name}", start, parser.pos)
        return parse_signature_tail(parser, cls, operands, properties, cls.OPTIONS)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        print_options(printer, self, self.OPTIONS)
        print_signature_tail(printer, self)
