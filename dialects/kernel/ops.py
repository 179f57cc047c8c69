"""The kernel dialect's ops: ``kernel.launch`` (one launch of a kernel family),
``kernel.param`` (weights as a value) and the views that cost no launch
(``kernel.slice``, ``kernel.reshape``, ``kernel.concat``). ``kernel.weight``,
the function's weight table, is in `dialects.kernel.weights`."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, cast

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    f32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from dialects.derive import DerivationAttr
from dialects.kernel.attributes import (
    ArgBindingAttr,
    ParamSlot,
    ParamSlotAttr,
    batch_stride,
    is_batch_tensor,
    is_strided,
    parse_binding_body,
    parse_slot_body,
    print_binding_body,
    print_name,
    print_slot_body,
    symbolic_shape,
)
from dialects.kernel.bindings import (
    check_bindings,
    check_slots,
    constexpr_value,
    constexpr_values,
    element_types,
)
from dialects.kernel.weights import enclosing_function, weight_table
from teeny_ir.core.derivations import Derivation
from teeny_ir.core.symbols import format_binding
from teeny_ir.ir.format import parse_tensor_type
from teeny_ir.kernels import validator
from teeny_ir.kernels.validator import LaunchContract

if TYPE_CHECKING:
    from xdsl.parser import Parser
    from xdsl.printer import Printer


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """One launch of a kernel family: the seed's RuntimeOp, instantiated.

    Operands are the activation inputs, results the outputs (``?`` = batch).
    Properties: ``family``; ``constexprs`` (name -> i64, or a string naming a
    pointwise-table entry; exactly the family's);
    ``params`` (ordered `ParamSlotAttr`); ``args`` (one `ArgBindingAttr` per
    ABI argument, in ABI order); ``grid`` (three expressions over ``B``);
    ``num_warps`` (threads = 32 x num_warps) and ``num_stages``.

        %y = kernel.launch "elementwise" (%a, %b) {OP = "add", BLOCK = 1024}
            args [x = in0, y = in1, out = out0, numel = "B * 64", size1 = "4", ...]
            grid ["cdiv(B * 64, 1024)", "1", "1"] warps 4 stages 1
            : (tensor<?x4x4x4xf32>, tensor<4x1x1xf32>) -> tensor<?x4x4x4xf32>
    """

    name = "kernel.launch"

    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)

    family_attr = prop_def(StringAttr, prop_name="family")
    constexprs_attr = prop_def(DictionaryAttr, prop_name="constexprs")
    params_attr = prop_def(ArrayAttr[ParamSlotAttr], prop_name="params")
    args_attr = prop_def(ArrayAttr[ArgBindingAttr], prop_name="args")
    grid_attr = prop_def(ArrayAttr[StringAttr], prop_name="grid")
    num_warps_attr = prop_def(IntegerAttr[I64], prop_name="num_warps")
    num_stages_attr = prop_def(IntegerAttr[I64], prop_name="num_stages")

    traits = traits_def(Pure())

    def __init__(
        self,
        family: str,
        inputs: Sequence[SSAValue | Operation],
        result_types: Sequence[TensorType],
        constexprs: Mapping[str, int | str],
        params: Sequence[ParamSlot],
        args: Sequence[tuple[str, str]],
        grid: Sequence[str],
        num_warps: int,
        num_stages: int,
    ):
        slots = [
            ParamSlotAttr(_string(p.name), _f32_tensor(p.shape), DerivationAttr(p.derivation))
            for p in params
        ]
        bindings = [_binding(n, b) for n, b in args]
        values = {k: _string(v) if isinstance(v, str) else _i64(v) for k, v in constexprs.items()}
        super().__init__(
            operands=[inputs],
            result_types=[result_types],
            properties=_properties(family, values, slots, bindings, grid, num_warps, num_stages),
        )

    @property
    def family(self) -> str:
        return self.family_attr.data

    @property
    def constexpr_values(self) -> dict[str, int | str]:
        return {
            k: value
            for k, v in self.constexprs_attr.data.items()
            if (value := constexpr_value(v)) is not None
        }

    @property
    def param_slots(self) -> list[ParamSlot]:
        return [slot.slot() for slot in self.params_attr]

    @property
    def arg_bindings(self) -> list[tuple[str, str]]:
        """(ABI name, binding) in ABI order: ``in0``, ``out0``, ``param.w`` or an expression."""
        return [(a.arg_name.data, a.binding.data) for a in self.args_attr]

    @property
    def grid(self) -> tuple[str, str, str]:
        x, y, z = (g.data for g in self.grid_attr)
        return x, y, z

    @property
    def num_warps(self) -> int:
        return self.num_warps_attr.value.data

    @property
    def num_stages(self) -> int:
        return self.num_stages_attr.value.data

    def verify_(self) -> None:
        self.check_plan()
        self.check_weight_table()

    def check_plan(self) -> None:
        """Everything `verify_` checks except the weight table (which needs the
        enclosing function): lowering passes call it on ops not yet inserted.
        The contract itself is proven by `teeny_ir.kernels.validator`."""
        try:
            family = validator.family_of(self.family)
        except validator.ContractError as err:
            raise VerifyException(str(err)) from None
        elements = element_types(family, self.arg_bindings)
        for reference, what, value in self._tensors():
            element = elements.get(reference, "f32")
            if not is_batch_tensor(value.type, static=False, strided=True, element=element):
                raise VerifyException(
                    f"{what} must be an {element} tensor with sizes >= 1 whose "
                    "only dynamic dimension is the batch (0), contiguous or with a "
                    f"#kernel.batch_stride covering an image, got {value.type}"
                )
        constexprs = constexpr_values(family, self.constexprs_attr.data)
        slots = check_slots(self.params_attr.data)
        check_bindings(family, self.arg_bindings, len(self.inputs), len(self.outputs), slots)
        try:
            validator.validate(self.contract(constexprs))
        except validator.ContractError as err:
            raise VerifyException(str(err)) from None

    def _tensors(self) -> list[tuple[str, str, SSAValue]]:
        """(reference, name in messages, value) of each operand (``in<N>``,
        operand #N), then of each result (``out<N>``, result #N)."""
        return [
            (format_binding("in", i), f"operand #{i}", v) for i, v in enumerate(self.inputs)
        ] + [(format_binding("out", i), f"result #{i}", v) for i, v in enumerate(self.outputs)]

    def contract(self, constexprs: Mapping[str, int | str] | None = None) -> LaunchContract:
        """This launch as the validator sees it: pointers bound to ``in<N>``,
        ``out<N>`` and ``param.<slot>``, with their tensor types' shapes."""
        values = self.constexpr_values if constexprs is None else constexprs
        tensors: list[tuple[str, tuple[int | str, ...]]] = []
        for reference, _, value in self._tensors():
            assert isinstance(value.type, TensorType)  # checked by check_plan
            tensors.append((reference, tuple(symbolic_shape(value.type))))
        tensors += [(format_binding("param", s.name), s.shape) for s in self.param_slots]
        strides = tuple(
            (reference, batch_stride(value.type))
            for reference, _, value in self._tensors()
            if isinstance(value.type, TensorType) and is_strided(value.type)
        )
        return LaunchContract(
            self.family,
            tuple(sorted(values.items())),
            tuple(self.arg_bindings),
            tuple(tensors),
            tuple(g.data for g in self.grid_attr),
            self.num_warps,
            self.num_stages,
            strides,
        )

    def check_weight_table(self) -> None:
        """Every derivation source is declared by a ``kernel.weight`` of the
        enclosing function, with a shape that fits the derivation."""
        table = weight_table(enclosing_function(self))
        for slot in self.params_attr:
            name, derivation = slot.slot_name.data, slot.derivation.data
            for source in derivation.sources:
                if source not in table:
                    raise VerifyException(
                        f"parameter slot '{name}' reads weight '{source}', which no "
                        "kernel.weight of the enclosing function declares"
                    )
            problems = derivation.check_sources(table)
            if problems:
                raise VerifyException(f"parameter slot '{name}': {problems[0]}")

    @classmethod
    def parse(cls, parser: Parser) -> LaunchOp:
        family = parser.parse_str_literal(" (the kernel family)")
        operands = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, parser.parse_unresolved_operand, " (the launch's inputs)"
        )
        constexprs = parser.parse_optional_attr_dict()
        params: list[Attribute] = []
        if parser.parse_optional_keyword("params") is not None:
            params = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE,
                lambda: ParamSlotAttr.new(parse_slot_body(parser)),
                " (parameter slots)",
            )
        parser.parse_keyword("args")
        args = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE,
            lambda: ArgBindingAttr.new(parse_binding_body(parser)),
            " (argument bindings)",
        )
        parser.parse_keyword("grid")
        grid = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, parser.parse_str_literal, " (grid expressions)"
        )
        num_warps, num_stages = _parse_count(parser, "warps"), _parse_count(parser, "stages")
        attributes = parser.parse_optional_attr_dict_with_keyword()
        parser.parse_punctuation(":")
        start = parser.pos
        signature = parser.parse_function_type()
        values = parser.resolve_operands(operands, signature.inputs.data, start)
        return cls.create(
            operands=values,
            result_types=signature.outputs.data,
            properties=_properties(family, constexprs, params, args, grid, num_warps, num_stages),
            attributes={} if attributes is None else dict(attributes.data),
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.family)
        printer.print_string(" (")
        printer.print_list(self.inputs, printer.print_operand)
        printer.print_string(") {")
        printer.print_list(
            self.constexprs_attr.data.items(), lambda item: _print_constexpr(printer, *item)
        )
        printer.print_string("}")
        if self.params_attr.data:
            printer.print_string(" params [")
            printer.print_list(self.params_attr, lambda slot: print_slot_body(printer, slot))
            printer.print_string("]")
        printer.print_string(" args [")
        printer.print_list(self.args_attr, lambda arg: print_binding_body(printer, arg))
        printer.print_string("] grid [")
        printer.print_list(self.grid_attr, lambda g: printer.print_string_literal(g.data))
        printer.print_string(f"] warps {self.num_warps} stages {self.num_stages}")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" : ")
        printer.print_function_type(self.operand_types, self.result_types)


def _image_layout(type_: Attribute, what: str) -> TensorType:
    if (
        not is_batch_tensor(type_, static=False, strided=True)
        or len(cast(TensorType, type_).get_shape()) < 2
    ):
        raise VerifyException(
            f"{what} must be an f32 tensor of rank >= 2 whose only dynamic dimension is "
            f"the batch, contiguous or with a #kernel.batch_stride, got {type_}"
        )
    return cast(TensorType, type_)


@irdl_op_definition
class ParamOp(IRDLOperation):
    """A parameter tensor as a value: the weights a derivation computes, bound
    at run time like a launch's parameter slot, for a launch that reads a
    weight (or a ``graph.constant``) as an activation operand::

        %b = kernel.param #derive.param<identity("fc.bias") : [10]> : tensor<10xf32>

    lower-graph-to-kernel makes one for each ``graph.param`` or
    ``graph.constant`` that a launch takes as an operand (a matmul by a
    weight, an add of a constant); a family that reads a weight through a
    parameter slot needs none. The derivation's sources must be declared by
    the function's ``kernel.weight`` table."""

    name = "kernel.param"

    result = result_def(TensorType)
    derivation_attr = prop_def(DerivationAttr, prop_name="derivation")

    traits = traits_def(Pure())

    def __init__(self, derivation: Derivation):
        super().__init__(
            result_types=[_f32_tensor(derivation.shape)],
            properties={"derivation": DerivationAttr(derivation)},
        )

    @property
    def derivation(self) -> Derivation:
        return self.derivation_attr.data

    def verify_(self) -> None:
        type_ = self.result.type
        if not is_batch_tensor(type_, static=True):
            raise VerifyException(f"expected a static f32 tensor, got {type_}")
        shape = cast(TensorType, type_).get_shape()
        if shape != self.derivation.shape:
            raise VerifyException(
                f"the result has shape {list(shape)} but the derivation gives "
                f"{list(self.derivation.shape)}"
            )
        table = weight_table(enclosing_function(self))
        for source in self.derivation.sources:
            if source not in table:
                raise VerifyException(
                    f"the derivation reads weight '{source}', which no kernel.weight of the "
                    "enclosing function declares"
                )
        problems = self.derivation.check_sources(table)
        if problems:
            raise VerifyException(problems[0])

    @classmethod
    def parse(cls, parser: Parser) -> ParamOp:
        start = parser.pos
        attr = parser.parse_attribute()
        if not isinstance(attr, DerivationAttr):
            parser.raise_error(
                f"expected a #derive.param derivation, got {attr}", start, parser.pos
            )
        parser.parse_punctuation(":")
        pos = parser.pos
        type_ = parse_tensor_type(parser)
        op = cls(attr.data)
        if type_ != op.result.type:
            parser.raise_error(
                f"the type {type_} does not match the derivation's {op.result.type}",
                pos,
                parser.pos,
            )
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.derivation_attr)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class SliceOp(IRDLOperation):
    """A view of channels ``[start, start + C)`` of ``source`` (dimension 1),
    where C is the result's channel count: no launch, no copy. The result has
    the source's batch stride (images stay where they are)::

        %b = kernel.slice %x start 16
            : tensor<?x32x8x8xf32> -> tensor<?x16x8x8xf32, #kernel.batch_stride<2048>>

    The view starts ``start * prod(shape[2:])`` elements into the source's
    images. lower-graph-to-kernel makes one for each part of a channel
    ``graph.split`` whose users all take batch-strided operands."""

    name = "kernel.slice"

    source = operand_def(TensorType)
    result = result_def(TensorType)
    start_attr = prop_def(IntegerAttr[I64], prop_name="start")

    traits = traits_def(Pure())

    def __init__(self, source: SSAValue | Operation, start: int, result_type: TensorType):
        super().__init__(
            operands=[source], result_types=[result_type], properties={"start": _i64(start)}
        )

    @property
    def start(self) -> int:
        return self.start_attr.value.data

    @property
    def offset(self) -> int:
        """Elements from the source's image start to the view's."""
        return self.start * math.prod(cast(TensorType, self.result.type).get_shape()[2:])

    def verify_(self) -> None:
        source = _image_layout(self.source.type, "the source")
        result = _image_layout(self.result.type, "the result")
        src, res = source.get_shape(), result.get_shape()
        if len(src) != len(res) or src[0] != res[0] or src[2:] != res[2:]:
            raise VerifyException(
                f"a slice keeps every dimension but 1: {source} cannot give {result}"
            )
        if not 0 <= self.start <= src[1] - res[1]:
            raise VerifyException(
                f"channels [{self.start}, {self.start + res[1]}) are not inside the "
                f"source's {src[1]}"
            )
        if batch_stride(result) != batch_stride(source):
            raise VerifyException(
                f"the result's batch stride {batch_stride(result)} must be the source's "
                f"{batch_stride(source)} (a slice does not move images)"
            )

    @classmethod
    def parse(cls, parser: Parser) -> SliceOp:
        source = parser.parse_unresolved_operand()
        parser.parse_keyword("start")
        start = _parse_start(parser)
        parser.parse_punctuation(":")
        pos = parser.pos
        source_type = parse_tensor_type(parser)
        parser.parse_punctuation("->")
        result_type = parse_tensor_type(parser)
        (value,) = parser.resolve_operands([source], [source_type], pos)
        return cls(value, start, result_type)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.source)
        printer.print_string(f" start {self.start} : ")
        printer.print_attribute(self.source.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)


def _parse_start(parser: Parser) -> int:
    start = parser.pos
    value = parser.parse_integer(allow_boolean=False, allow_negative=False)
    if value >= 2**31:
        parser.raise_error(f"start {value} does not fit in i32", start, parser.pos)
    return value


@irdl_op_definition
class ReshapeOp(IRDLOperation):
    """The elements of each image of ``source`` in row-major order, with a new
    shape: a view, no launch, no copy. The batch stays dimension 0 (a reshape
    that folds it into another dimension is not a view), and each image keeps
    its place, so the result has the source's batch stride::

        %f = kernel.reshape %x : tensor<?x16x5x5xf32> -> tensor<?x400xf32>

    lower-graph-to-kernel makes one for every ``graph.reshape`` and
    ``graph.flatten`` that keeps the batch."""

    name = "kernel.reshape"

    source = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, source: SSAValue | Operation, result_type: TensorType):
        super().__init__(operands=[source], result_types=[result_type])

    def verify_(self) -> None:
        types = []
        for what, type_ in (("source", self.source.type), ("result", self.result.type)):
            if (
                not is_batch_tensor(type_, static=False, strided=True)
                or not cast(TensorType, type_).get_shape()
            ):
                raise VerifyException(
                    f"the {what} must be an f32 tensor of rank >= 1 whose only dynamic "
                    f"dimension is the batch, contiguous or with a #kernel.batch_stride, got {type_}"
                )
            types.append(cast(TensorType, type_))
        source, result = types
        src, res = source.get_shape(), result.get_shape()
        if src[0] != res[0]:
            raise VerifyException(
                f"a reshape view keeps dimension 0 (the batch): {source} cannot give {result}"
            )
        if math.prod(src[1:]) != math.prod(res[1:]):
            raise VerifyException(
                f"an image of {source} holds {math.prod(src[1:])} elements, one of {result} "
                f"{math.prod(res[1:])}"
            )
        if batch_stride(result) != batch_stride(source):
            raise VerifyException(
                f"the result's batch stride {batch_stride(result)} must be the source's "
                f"{batch_stride(source)} (a reshape does not move images)"
            )

    @classmethod
    def parse(cls, parser: Parser) -> ReshapeOp:
        source = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        pos = parser.pos
        source_type = parse_tensor_type(parser)
        parser.parse_punctuation("->")
        result_type = parse_tensor_type(parser)
        (value,) = parser.resolve_operands([source], [source_type], pos)
        return cls(value, result_type)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.source)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class ConcatOp(IRDLOperation):
    """The concatenation of its operands along dimension 1, which their
    producers have already written in place: operand k lives at channels
    ``[sum(C_j for j < k), ... + C_k)`` of the result's buffer, so each has the
    result's batch stride. No launch, no copy::

        %c = kernel.concat %a, %b : (tensor<?x16x8x8xf32, #kernel.batch_stride<2048>>,
            tensor<?x16x8x8xf32, #kernel.batch_stride<2048>>) -> tensor<?x32x8x8xf32>

    Each operand is the result of a ``kernel.launch`` (its writer) and is an
    operand of no other ``kernel.concat``: a value has one place. Not pure: it
    names the buffer its producers write into, so it is never erased as dead
    while they are kept."""

    name = "kernel.concat"

    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)

    def __init__(self, inputs: Sequence[SSAValue | Operation], result_type: TensorType):
        super().__init__(operands=[inputs], result_types=[result_type])

    def offsets(self) -> list[int]:
        """Each operand's element offset in the result's images."""
        shape = cast(TensorType, self.result.type).get_shape()
        plane = math.prod(shape[2:])
        offsets, channel = [], 0
        for value in self.inputs:
            offsets.append(channel * plane)
            channel += cast(TensorType, value.type).get_shape()[1]
        return offsets

    def verify_(self) -> None:
        result = _image_layout(self.result.type, "the result")
        shape = result.get_shape()
        if not self.inputs:
            raise VerifyException("expected at least one operand")
        channels = 0
        for index, value in enumerate(self.inputs):
            operand = _image_layout(value.type, f"operand #{index}")
            part = operand.get_shape()
            if len(part) != len(shape) or part[0] != shape[0] or part[2:] != shape[2:]:
                raise VerifyException(
                    f"operand #{index} {operand} does not match the result {result} on "
                    "every dimension but 1"
                )
            if batch_stride(operand) != batch_stride(result):
                raise VerifyException(
                    f"operand #{index} has batch stride {batch_stride(operand)}, but it lives "
                    f"in the result's buffer, whose batch stride is {batch_stride(result)}"
                )
            if not isinstance(value.owner, LaunchOp):
                raise VerifyException(
                    f"operand #{index} must be the result of a kernel.launch (the launch "
                    "writes it in place)"
                )
            places = sum(1 for use in value.uses if isinstance(use.operation, ConcatOp))
            if places != 1:
                raise VerifyException(
                    f"operand #{index} is an operand of {places} kernel.concat places; a "
                    "value lives in one place"
                )
            channels += part[1]
        if channels != shape[1]:
            raise VerifyException(
                f"the operands have {channels} channels in all, the result {shape[1]}"
            )

    @classmethod
    def parse(cls, parser: Parser) -> ConcatOp:
        operands = parser.parse_comma_separated_list(
            parser.Delimiter.NONE, parser.parse_unresolved_operand, " (the parts)"
        )
        parser.parse_punctuation(":")
        pos = parser.pos
        signature = parser.parse_function_type()
        if len(signature.outputs.data) != 1:
            parser.raise_error("kernel.concat has one result", pos, parser.pos)
        values = parser.resolve_operands(operands, signature.inputs.data, pos)
        result = signature.outputs.data[0]
        if not isinstance(result, TensorType):
            parser.raise_error(f"expected a tensor result, got {result}", pos, parser.pos)
        return cls(values, result)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.inputs, printer.print_operand)
        printer.print_string(" : ")
        printer.print_function_type(self.operand_types, self.result_types)


def _properties(
    family: str,
    constexprs: Mapping[str, Attribute],
    params: Sequence[Attribute],
    args: Sequence[Attribute],
    grid: Sequence[str],
    num_warps: int,
    num_stages: int,
) -> dict[str, Attribute]:
    return {
        "family": _string(family),
        "constexprs": DictionaryAttr(constexprs),
        "params": ArrayAttr(params),
        "args": ArrayAttr(args),
        "grid": ArrayAttr([_string(g) for g in grid]),
        "num_warps": _i64(num_warps),
        "num_stages": _i64(num_stages),
    }


# Attributes are immutable values, so launches share equal ones: building a
# launch then costs a dictionary lookup per attribute instead of constructing
# and verifying each (lowering a 10k-op graph builds ~100k of them).


@functools.lru_cache(maxsize=65536)
def _string(text: str) -> StringAttr:
    return StringAttr(text)


@functools.lru_cache(maxsize=65536)
def _i64(value: int) -> IntegerAttr[I64]:
    return IntegerAttr(value, i64)


@functools.lru_cache(maxsize=65536)
def _binding(name: str, text: str) -> ArgBindingAttr:
    return ArgBindingAttr(_string(name), _string(text))


@functools.lru_cache(maxsize=4096)
def _f32_tensor(shape: tuple[int, ...]) -> TensorType:
    return TensorType(f32, shape)


def _parse_count(parser: Parser, keyword: str) -> int:
    """``keyword N`` with N a non-negative i64."""
    parser.parse_keyword(keyword)
    start = parser.pos
    value = parser.parse_integer(allow_boolean=False, allow_negative=False)
    if value >= 2**63:
        parser.raise_error(f"{keyword} {value} does not fit in i64", start, parser.pos)
    return value


def _print_constexpr(printer: Printer, name: str, value: Attribute) -> None:
    print_name(printer, name)
    printer.print_string(" = ")
    if isinstance(value, IntegerAttr) and value.type == i64:
        printer.print_string(str(value.value.data))
    elif isinstance(value, StringAttr):
        printer.print_string_literal(value.data)
    else:
        printer.print_attribute(value)
