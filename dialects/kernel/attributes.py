"""The kernel dialect's attributes and the tensor layouts its ops take.

- `BatchStrideAttr` (``#kernel.batch_stride<N>``), the encoding of a
  batch-strided tensor type, and the layout helpers over it (`batch_stride`,
  `is_strided`, `with_batch_stride`, `symbolic_shape`, `is_batch_tensor`);
- `ParamSlotAttr` (``#kernel.slot<...>``), a launch's parameter slot, whose
  value is a `ParamSlot`;
- `ArgBindingAttr` (``#kernel.arg<...>``), what one ABI argument of a launch
  receives: a tensor reference of `teeny_ir.core.symbols`' binding grammar or
  an expression over ``B``.

Each attribute's body parser and printer are public: `LaunchOp` prints its
``params [...]`` and ``args [...]`` lists with them, without the wrappers.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import (
    Float32Type,
    IntAttr,
    NoneAttr,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition

from dialects.derive import DerivationAttr
from teeny_ir.core import symbols
from teeny_ir.core.derivations import Derivation

if TYPE_CHECKING:
    from xdsl.parser import AttrParser
    from xdsl.printer import Printer

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""A name printed bare (anything else is printed as a string literal)."""


def print_name(printer: Printer, name: str) -> None:
    """An identifier bare, anything else as a string literal (both parse back)."""
    if IDENTIFIER.fullmatch(name):
        printer.print_string(name)
    else:
        printer.print_string_literal(name)


# Layouts


@irdl_attr_definition
class BatchStrideAttr(ParametrizedAttribute):
    """The layout of a batch-strided tensor, as its type's encoding::

        tensor<?x16x8x8xf32, #kernel.batch_stride<3072>>

    Each image (``shape[1:]``) is contiguous, and consecutive images are
    ``stride`` elements apart: a view of channels of a larger NCHW buffer (a
    ``kernel.slice`` of it, or an operand that a ``kernel.concat`` places in its
    buffer). A type without encoding is contiguous."""

    name = "kernel.batch_stride"

    stride_attr: IntAttr

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            start = parser.pos
            value = parser.parse_integer(allow_boolean=False, allow_negative=False)
            if value < 1 or value > 2**31 - 1:
                parser.raise_error("a batch stride must be in 1..2**31-1", start, parser.pos)
        return [IntAttr(value)]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.stride}>")

    @property
    def stride(self) -> int:
        return self.stride_attr.data


def batch_stride(type_: TensorType) -> int:
    """Elements between consecutive images of a tensor of ``type_``."""
    if isinstance(type_.encoding, BatchStrideAttr):
        return type_.encoding.stride
    return math.prod(type_.get_shape()[1:])


def is_strided(type_: Attribute) -> bool:
    """Whether ``type_`` is a batch-strided view (not contiguous)."""
    return isinstance(type_, TensorType) and isinstance(type_.encoding, BatchStrideAttr)


def with_batch_stride(type_: TensorType, stride: int | None) -> TensorType:
    """``type_`` with the given batch stride; contiguous (no encoding) when
    ``stride`` is None or equals the image size."""
    shape = type_.get_shape()
    if stride is None or stride == math.prod(shape[1:]):
        return TensorType(type_.element_type, shape)
    return TensorType(type_.element_type, shape, BatchStrideAttr(IntAttr(stride)))


def symbolic_shape(type_: TensorType) -> list[int | str]:
    """A result type as the plan writes output shapes: ``?`` becomes ``"B"``."""
    return symbols.symbolic_shape(type_.get_shape())


@functools.lru_cache(maxsize=4096)
def is_batch_tensor(
    type_: Attribute, *, static: bool, strided: bool = False, element: str = "f32"
) -> bool:
    """An f32 (``element="i64"``: i64) tensor, sizes >= 1, ``?`` only at
    dimension 0 (and nowhere if ``static``), without encoding - or, with
    ``strided``, possibly a `BatchStrideAttr` one whose stride covers an image.

    The one test of the tensors kernel IR and the launch plan take: the kernel
    ops' verifiers and emit-triton ask it."""
    if not isinstance(type_, TensorType):
        return False
    if element == "i64" and type_.element_type != i64:
        return False
    if element != "i64" and not isinstance(type_.element_type, Float32Type):
        return False
    if type_.encoding != NoneAttr():
        if not strided or not isinstance(type_.encoding, BatchStrideAttr):
            return False
        shape = type_.get_shape()
        if len(shape) < 2 or type_.encoding.stride < math.prod(shape[1:]):
            return False
    return symbols.is_batch_shape(type_.get_shape(), static=static)


# Parameter slots


@dataclass(frozen=True)
class ParamSlot:
    """A kernel parameter: a static f32 tensor computed from weights by ``derivation``."""

    name: str
    shape: tuple[int, ...]
    derivation: Derivation


@irdl_attr_definition
class ParamSlotAttr(ParametrizedAttribute):
    """One parameter slot of a launch::

    #kernel.slot<w : tensor<37x37xf32> = #derive.param<reshape("w0") : [37, 37]>>
    """

    name = "kernel.slot"

    slot_name: StringAttr
    slot_type: Attribute
    derivation: DerivationAttr

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            return parse_slot_body(parser)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            print_slot_body(printer, self)

    def slot(self) -> ParamSlot:
        shape = self.slot_type.get_shape() if isinstance(self.slot_type, TensorType) else ()
        return ParamSlot(self.slot_name.data, tuple(shape), self.derivation.data)


def parse_slot_body(parser: AttrParser) -> list[Attribute]:
    """``name : type = #derive.param<...>``, as `ParamSlotAttr`'s parameters."""
    name = parser.parse_identifier_or_str_literal(" (a parameter slot name)")
    parser.parse_punctuation(":")
    type_ = parser.parse_type()
    parser.parse_punctuation("=")
    start = parser.pos
    derivation = parser.parse_attribute()
    if not isinstance(derivation, DerivationAttr):
        parser.raise_error("expected a #derive.param<...> after '='", start, parser.pos)
    return [StringAttr(name), type_, derivation]


def print_slot_body(printer: Printer, slot: ParamSlotAttr) -> None:
    """The text `parse_slot_body` reads."""
    print_name(printer, slot.slot_name.data)
    printer.print_string(" : ")
    printer.print_attribute(slot.slot_type)
    printer.print_string(" = ")
    printer.print_attribute(slot.derivation)


# Argument bindings


@irdl_attr_definition
class ArgBindingAttr(ParametrizedAttribute):
    """What one ABI argument of a launch receives: ``in<N>``, ``out<N>`` or
    ``param.<slot>`` for pointers (printed bare), or an expression over ``B``
    (printed as a string)::

    #kernel.arg<x = in0>    #kernel.arg<M = "63">
    """

    name = "kernel.arg"

    arg_name: StringAttr
    binding: StringAttr

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            return parse_binding_body(parser)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            print_binding_body(printer, self)


def parse_binding_body(parser: AttrParser) -> list[Attribute]:
    """``name = in0`` or ``name = "expression"``, as `ArgBindingAttr`'s parameters."""
    name = parser.parse_identifier_or_str_literal(" (an argument name)")
    parser.parse_punctuation("=")
    binding = parser.parse_identifier_or_str_literal(
        " (in<N>, out<N>, param.<slot> or an expression string)"
    )
    return [StringAttr(name), StringAttr(binding)]


def print_binding_body(printer: Printer, arg: ArgBindingAttr) -> None:
    """The text `parse_binding_body` reads: a tensor reference bare, anything else
    as a string literal."""
    print_name(printer, arg.arg_name.data)
    printer.print_string(" = ")
    if symbols.is_binding(arg.binding.data):
        printer.print_string(arg.binding.data)
    else:
        printer.print_string_literal(arg.binding.data)
