"""The `kernel` dialect: the seed's RuntimeOp contract as IR.

After lower-graph-to-kernel a function is a weight table and launches (one
line each when printed; see `LaunchOp` for the syntax)::

    kernel.weight "model.0.conv.weight" : tensor<37x37x1x1xf32>
    %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 64, ..., ACTIVATION = "silu"}
        params [w : tensor<37x37xf32> = #derive.param<reshape("model.0.conv.weight") : [37, 37]>, ...]
        args [x = in0, w = param.w, ..., y = out0, B = "B", C_IN = "37", ..., M = "63", ...]
        grid ["B * cdiv(63, 64) * cdiv(37, 64)", "1", "1"] warps 4 stages 2
        : (tensor<?x37x7x9xf32>) -> tensor<?x37x7x9xf32>

The verifier proves what the runtime relies on: bindings match the family's
ABI (`teeny_ir.kernels.families`), constexprs its table, and for every batch
1..64 the grid covers the family's tile model within the hardware's limits;
parameter slots fit the function's ``kernel.weight`` table. Args and grid
form one launch; a later ``launches`` list (the seed's ``n_launches``) would
hold several per op.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    I64,
    ArrayAttr,
    DictionaryAttr,
    Float32Type,
    IntegerAttr,
    NoneAttr,
    StringAttr,
    TensorType,
    f32,
    i64,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    prop_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from dialects.derive import DerivationAttr
from teeny_ir.core import expressions
from teeny_ir.core.derivations import Derivation
from teeny_ir.ir.format import parse_attr_dict, parse_tensor_type, parse_utf8_literal
from teeny_ir.kernels.contract import MAX_GRID, MAX_NUM_WARPS, KernelFamily, constexpr_problem
from teeny_ir.kernels.families import FAMILIES

if TYPE_CHECKING:
    from xdsl.parser import AttrParser, Parser
    from xdsl.printer import Printer

COVERAGE_BATCHES = range(1, 65)
"""Batch sizes for which the verifier proves grid coverage and argument ranges."""
MAX_I32 = 2**31 - 1
BATCH = "B"

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_REFERENCE = re.compile(r"(in|out)(0|[1-9][0-9]*)|param\.([A-Za-z_][A-Za-z0-9_]*)")
_REFERENCE_FORMS = {"input": "in<N>", "output": "out<N>", "param": "param.<slot>"}


def _print_name(printer: Printer, name: str) -> None:
    """An identifier bare, anything else as a string literal (both parse back)."""
    if _IDENTIFIER.fullmatch(name):
        printer.print_string(name)
    else:
        printer.print_string_literal(name)


def _is_batch_tensor(type_: Attribute, *, static: bool) -> bool:
    """An f32 tensor without encoding, sizes >= 1, ``?`` only at dimension 0 (and
    nowhere if ``static``)."""
    if not isinstance(type_, TensorType) or not isinstance(type_.element_type, Float32Type):
        return False
    if type_.encoding != NoneAttr():
        return False
    shape = type_.get_shape()
    dynamic_ok = () if static else (0,)
    return all(d >= 1 or (d == DYNAMIC_INDEX and i in dynamic_ok) for i, d in enumerate(shape))


def symbolic_shape(type_: TensorType) -> list[int | str]:
    """A result type as the plan writes output shapes: ``?`` becomes ``"B"``."""
    return [BATCH if d == DYNAMIC_INDEX else d for d in type_.get_shape()]


# Attributes


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
            return _parse_slot_body(parser)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            _print_slot_body(printer, self)

    def slot(self) -> ParamSlot:
        shape = self.slot_type.get_shape() if isinstance(self.slot_type, TensorType) else ()
        return ParamSlot(self.slot_name.data, tuple(shape), self.derivation.data)


def _parse_slot_body(parser: AttrParser) -> list[Attribute]:
    name = parser.parse_identifier_or_str_literal(" (a parameter slot name)")
    parser.parse_punctuation(":")
    type_ = parser.parse_type()
    parser.parse_punctuation("=")
    start = parser.pos
    derivation = parser.parse_attribute()
    if not isinstance(derivation, DerivationAttr):
        parser.raise_error("expected a #derive.param<...> after '='", start, parser.pos)
    return [StringAttr(name), type_, derivation]


def _print_slot_body(printer: Printer, slot: ParamSlotAttr) -> None:
    _print_name(printer, slot.slot_name.data)
    printer.print_string(" : ")
    printer.print_attribute(slot.slot_type)
    printer.print_string(" = ")
    printer.print_attribute(slot.derivation)


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
            return _parse_binding_body(parser)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            _print_binding_body(printer, self)


def _parse_binding_body(parser: AttrParser) -> list[Attribute]:
    name = parser.parse_identifier_or_str_literal(" (an argument name)")
    parser.parse_punctuation("=")
    binding = parser.parse_identifier_or_str_literal(
        " (in<N>, out<N>, param.<slot> or an expression string)"
    )
    return [StringAttr(name), StringAttr(binding)]


def _print_binding_body(printer: Printer, arg: ArgBindingAttr) -> None:
    _print_name(printer, arg.arg_name.data)
    printer.print_string(" = ")
    if _REFERENCE.fullmatch(arg.binding.data):
        printer.print_string(arg.binding.data)
    else:
        printer.print_string_literal(arg.binding.data)


# Ops


@irdl_op_definition
class WeightOp(IRDLOperation):
    """Declares a weight of the function: its state-dict name and static f32 type.

    The declarations form the function's weight table; launches' derivations
    may read only declared weights, with fitting shapes. No results: kernels
    read weights only through parameter slots.

        kernel.weight "model.0.conv.weight" : tensor<37x37x1x1xf32>
    """

    name = "kernel.weight"

    weight_name_attr = prop_def(StringAttr, prop_name="weight_name")
    weight_type = prop_def(TensorType, prop_name="type")

    def __init__(self, name: str, type: TensorType):
        super().__init__(properties={"weight_name": StringAttr(name), "type": type})

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
        if not _is_batch_tensor(self.weight_type, static=True):
            raise VerifyException(
                f"weight '{self.weight_name}' must be a static f32 tensor with sizes >= 1, "
                f"got {self.weight_type}"
            )
        block = self.parent_block()
        for other in block.ops if block is not None else ():
            if other is self:
                break
            if isinstance(other, WeightOp) and other.weight_name == self.weight_name:
                raise VerifyException(f"weight '{self.weight_name}' is already declared")

    @classmethod
    def parse(cls, parser: Parser) -> WeightOp:
        name = parse_utf8_literal(parser, "weight name")
        attributes = parse_attr_dict(parser, ("weight_name", "type"))
        parser.parse_punctuation(":")
        op = cls(name, parse_tensor_type(parser))
        op.attributes.update(attributes)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.weight_name)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.weight_type)


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
            ParamSlotAttr(
                StringAttr(p.name), TensorType(f32, p.shape), DerivationAttr(p.derivation)
            )
            for p in params
        ]
        bindings = [ArgBindingAttr(StringAttr(n), StringAttr(b)) for n, b in args]
        values = {
            k: StringAttr(v) if isinstance(v, str) else IntegerAttr(v, i64)
            for k, v in constexprs.items()
        }
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
            if (value := _constexpr_value(v)) is not None
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
        enclosing function): lowering passes call it on ops not yet inserted."""
        family = FAMILIES.get(self.family)
        if family is None:
            raise VerifyException(
                f"unknown kernel family '{self.family}' (known: {', '.join(sorted(FAMILIES))})"
            )
        for what, values in (("operand", self.inputs), ("result", self.outputs)):
            for index, value in enumerate(values):
                if not _is_batch_tensor(value.type, static=False):
                    raise VerifyException(
                        f"{what} #{index} must be an f32 tensor with sizes >= 1 whose only "
                        f"dynamic dimension is the batch (0), got {value.type}"
                    )
        constexprs = _check_constexprs(family, self.constexprs_attr.data)
        slots = _check_slots(self.params_attr.data)
        expressions_ = _check_bindings(family, self.arg_bindings, self, slots)
        if not (1 <= self.num_warps <= MAX_NUM_WARPS and _power_of_two(self.num_warps)):
            raise VerifyException(
                f"num_warps must be a power of two in 1..{MAX_NUM_WARPS}, got {self.num_warps}"
            )
        if self.num_stages < 1:
            raise VerifyException(f"num_stages must be >= 1, got {self.num_stages}")
        grid = [g.data for g in self.grid_attr]
        if len(grid) != 3:
            raise VerifyException(f"expected 3 grid expressions (x, y, z), got {len(grid)}")
        axes = [_parse_over_batch(f"grid[{i}]", text) for i, text in enumerate(grid)]
        tiles = {k: v for k, v in constexprs.items() if isinstance(v, int)}
        _prove_coverage(family, tiles, expressions_, list(zip(grid, axes, strict=True)))

    def check_weight_table(self) -> None:
        """Every derivation source is declared by a ``kernel.weight`` of the
        enclosing function, with a shape that fits the derivation."""
        table: dict[str, tuple[int, ...]] = {}
        function = self.parent_op()
        while function is not None and not isinstance(function, FuncOp):
            function = function.parent_op()
        for op in function.walk() if function is not None else ():
            if isinstance(op, WeightOp):
                table.setdefault(op.weight_name, op.shape)
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
                lambda: ParamSlotAttr.new(_parse_slot_body(parser)),
                " (parameter slots)",
            )
        parser.parse_keyword("args")
        args = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE,
            lambda: ArgBindingAttr.new(_parse_binding_body(parser)),
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
            printer.print_list(self.params_attr, lambda slot: _print_slot_body(printer, slot))
            printer.print_string("]")
        printer.print_string(" args [")
        printer.print_list(self.args_attr, lambda arg: _print_binding_body(printer, arg))
        printer.print_string("] grid [")
        printer.print_list(self.grid_attr, lambda g: printer.print_string_literal(g.data))
        printer.print_string(f"] warps {self.num_warps} stages {self.num_stages}")
        printer.print_op_attributes(self.attributes, print_keyword=True)
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
        "family": StringAttr(family),
        "constexprs": DictionaryAttr(constexprs),
        "params": ArrayAttr(params),
        "args": ArrayAttr(args),
        "grid": ArrayAttr([StringAttr(g) for g in grid]),
        "num_warps": IntegerAttr(num_warps, i64),
        "num_stages": IntegerAttr(num_stages, i64),
    }


def _parse_count(parser: Parser, keyword: str) -> int:
    """``keyword N`` with N a non-negative i64."""
    parser.parse_keyword(keyword)
    start = parser.pos
    value = parser.parse_integer(allow_boolean=False, allow_negative=False)
    if value >= 2**63:
        parser.raise_error(f"{keyword} {value} does not fit in i64", start, parser.pos)
    return value


def _print_constexpr(printer: Printer, name: str, value: Attribute) -> None:
    _print_name(printer, name)
    printer.print_string(" = ")
    if isinstance(value, IntegerAttr) and value.type == i64:
        printer.print_string(str(value.value.data))
    elif isinstance(value, StringAttr):
        printer.print_string_literal(value.data)
    else:
        printer.print_attribute(value)


# Verification helpers


def _power_of_two(value: int) -> bool:
    return value >= 1 and value & (value - 1) == 0


def _check_constexprs(
    family: KernelFamily, values: Mapping[str, Attribute]
) -> dict[str, int | str]:
    expected = [c.name for c in family.constexprs]
    for name in values:
        if name not in expected:
            raise VerifyException(
                f"family '{family.name}' has no constexpr '{name}' "
                f"(its constexprs: {', '.join(expected)})"
            )
    checked: dict[str, int | str] = {}
    for constexpr in family.constexprs:
        attr = values.get(constexpr.name)
        if attr is None:
            raise VerifyException(f"missing constexpr '{constexpr.name}' of family '{family.name}'")
        value = _constexpr_value(attr)
        if value is None:
            kind = "a pointwise op name" if constexpr.type == "pointwise" else "an i64 integer"
            raise VerifyException(f"constexpr '{constexpr.name}' must be {kind}, got {attr}")
        problem = constexpr_problem(constexpr, value)
        if problem is not None:
            raise VerifyException(problem)
        checked[constexpr.name] = value
    return checked


def _constexpr_value(attr: Attribute) -> int | str | None:
    """An i64 integer or a string constexpr's value (None for anything else)."""
    if isinstance(attr, IntegerAttr) and attr.type == i64:
        return attr.value.data
    if isinstance(attr, StringAttr):
        return attr.data
    return None


def _check_slots(slots: Sequence[ParamSlotAttr]) -> set[str]:
    names: set[str] = set()
    for slot in slots:
        name = slot.slot_name.data
        if not _IDENTIFIER.fullmatch(name):
            raise VerifyException(f"parameter slot name '{name}' is not an identifier")
        if name in names:
            raise VerifyException(f"parameter slot '{name}' is declared twice")
        names.add(name)
        if not _is_batch_tensor(slot.slot_type, static=True):
            raise VerifyException(
                f"parameter slot '{name}' must be a static f32 tensor with sizes >= 1, got {slot.slot_type}"
            )
        shape = slot.slot().shape
        if shape != slot.derivation.data.shape:
            raise VerifyException(
                f"parameter slot '{name}' has shape {list(shape)} but its derivation gives "
                f"{list(slot.derivation.data.shape)}"
            )
    return names


def _parse_over_batch(what: str, text: str) -> expressions.Expr:
    try:
        expr = expressions.parse(text)
    except expressions.ExpressionError as err:
        raise VerifyException(f"{what} = '{text}' is not an expression: {err}") from None
    for symbol in sorted(expressions.symbols(expr) - {BATCH}):
        raise VerifyException(
            f"{what} = '{text}' uses symbol '{symbol}': only the batch '{BATCH}' may appear"
        )
    return expr


def _check_bindings(
    family: KernelFamily, bindings: Sequence[tuple[str, str]], op: LaunchOp, slots: set[str]
) -> dict[str, tuple[str, expressions.Expr]]:
    """Check the ABI bindings; return the dim/scalar ones as name -> (text, expr)."""
    abi = [a.name for a in family.args]
    if len(bindings) != len(abi):
        raise VerifyException(
            f"family '{family.name}' takes {len(abi)} arguments ({', '.join(abi)}), "
            f"got {len(bindings)} bindings"
        )
    counts = {"in": len(op.inputs), "out": len(op.outputs)}
    used: set[str] = set()
    values: dict[str, tuple[str, expressions.Expr]] = {}
    for index, ((name, text), arg) in enumerate(zip(bindings, family.args, strict=True)):
        if name != arg.name:
            raise VerifyException(
                f"argument binding #{index} names '{name}', expected '{arg.name}' "
                f"(the family's ABI order: {', '.join(abi)})"
            )
        if arg.kind not in _REFERENCE_FORMS:
            values[name] = (text, _parse_over_batch(f"argument '{name}'", text))
            continue
        match = _REFERENCE.fullmatch(text)
        prefix = {"input": "in", "output": "out"}.get(arg.kind, "param")
        if match is None or (match.group(1) or "param") != prefix:
            raise VerifyException(
                f"argument '{name}' (kind {arg.kind}) must bind to "
                f"{_REFERENCE_FORMS[arg.kind]}, got '{text}'"
            )
        used.add(text)
        if prefix == "param" and match.group(3) not in slots:
            raise VerifyException(
                f"argument '{name}' binds to unknown parameter slot '{match.group(3)}'"
            )
        if prefix != "param" and int(match.group(2)) >= counts[prefix]:
            count, what = counts[prefix], "operand" if prefix == "in" else "result"
            raise VerifyException(
                f"argument '{name}' binds to {text}, but the launch has "
                f"{count} {what}{'s' if count != 1 else ''}"
            )
    expected = [(f"in{i}", f"operand #{i}", "input") for i in range(counts["in"])]
    expected += [(f"out{i}", f"result #{i}", "output") for i in range(counts["out"])]
    expected += [(f"param.{s}", f"parameter slot '{s}'", "") for s in sorted(slots)]
    for reference, what, kind in expected:
        if reference not in used:
            raise VerifyException(
                f"{what} is not bound to any {kind + ' ' if kind else ''}argument"
            )
    return values


def _evaluate(what: str, text: str, expr: expressions.Expr, batch: int) -> int:
    try:
        return expressions.evaluate(expr, {BATCH: batch})
    except expressions.ExpressionError as err:
        raise VerifyException(
            f"{what} = '{text}' cannot be evaluated at B = {batch}: {err}"
        ) from None


def _prove_coverage(
    family: KernelFamily,
    constexprs: Mapping[str, int],
    arguments: Mapping[str, tuple[str, expressions.Expr]],
    grid: Sequence[tuple[str, expressions.Expr]],
) -> None:
    """For every batch in `COVERAGE_BATCHES` (once if nothing depends on ``B``):
    i32 arguments are sizes in [0, 2**31 - 1], and each grid axis launches
    between the programs the family's tile model needs (at least 1) and the
    hardware limit."""
    models = [
        [tuple(map(expressions.parse, cover)) for cover in axis.covers] for axis in family.grid
    ]
    i32_args = {a.name for a in family.args if a.dtype == "i32"}
    texts = {
        **{f"argument '{name}'": item for name, item in arguments.items()},
        **{f"grid[{axis}]": item for axis, item in enumerate(grid)},
    }
    fixed = {
        w: _evaluate(w, t, e, 1)
        for w, (t, e) in texts.items()
        if BATCH not in expressions.symbols(e)
    }
    batches = COVERAGE_BATCHES if len(fixed) < len(texts) else COVERAGE_BATCHES[:1]
    for batch in batches:
        values = {
            w: fixed[w] if w in fixed else _evaluate(w, t, e, batch) for w, (t, e) in texts.items()
        }
        env = dict(constexprs)
        for name, (text, _) in arguments.items():
            value = env[name] = values[f"argument '{name}'"]
            if name in i32_args and not 0 <= value <= MAX_I32:
                raise VerifyException(
                    f"argument '{name}' = '{text}' is {value} at B = {batch}, outside "
                    f"[0, {MAX_I32}] (i32 sizes and strides)"
                )
        for axis, (text, _) in enumerate(grid):
            at = f"grid[{axis}] = '{text}' is {values[f'grid[{axis}]']} at B = {batch}"
            programs = values[f"grid[{axis}]"]
            if programs < 1:
                raise VerifyException(f"{at}: each grid dimension must be >= 1")
            if programs > MAX_GRID[axis]:
                raise VerifyException(f"{at}, above the hardware limit {MAX_GRID[axis]}")
            needed = math.prod(
                expressions.evaluate(expressions.Call("cdiv", extent, tile), env)
                for extent, tile in (models[axis] if axis < len(models) else [])
            )
            if programs < needed:
                model = " * ".join(f"cdiv({e}, {t})" for e, t in family.grid[axis].covers)
                raise VerifyException(
                    f"{at}, but the tile model of '{family.name}' needs {model} = {needed}"
                )


Kernel = Dialect("kernel", [WeightOp, LaunchOp], [ParamSlotAttr, ArgBindingAttr])
