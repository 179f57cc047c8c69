"""`graph.fused_pointwise`: a chain of pointwise ops computed as one op.

fuse-pointwise makes it from a chain (a DAG) of pointwise-table ops, so that
the chain runs as one ``fused_elementwise`` launch instead of one launch per op.
Its ``program`` (`teeny_ir.core.pointwise_program`) names each absorbed op's
table entry and its operands, the op's inputs (``%k``) or earlier steps
(``$j``); the op's location is the fusion of the absorbed ops' locations::

    %y = graph.fused_pointwise %a, %b, %c program "sub %0 %1; mul $0 %2"
        : (tensor<?x2x84xf32>, tensor<1x2x84xf32>, tensor<1x84xf32>) -> tensor<?x2x84xf32>

With ``reduce sum`` or ``reduce mean`` (and ``axes``, optionally ``keepdims``,
as `graph.reduce_sum` spells them) the op also absorbs a trailing reduction: its
value is the program's value summed (averaged) over ``axes``, and the program's
value never reaches memory (it lowers to one ``fused_reduce`` launch)::

    %l = graph.fused_pointwise %a, %b program "sub %0 %1; mul $0 $0"
        reduce mean axes [0, 1] : (tensor<?x84xf32>, tensor<?x84xf32>) -> tensor<f32>

The verifier parses the program (it must read exactly the op's inputs) and
checks the result type against the steps' shapes, broadcast as the unfused ops
would broadcast them (`broadcast_shapes`), then reduced as `infer_reduce_shape`
says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects.builtin import DenseArrayBase, StringAttr, TensorType, UnitAttr, f32, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from dialects.graph.reduce import infer_reduce_shape, normalize_axis
from dialects.graph.shapes import Shape, broadcast_shapes, check_result, check_tensor
from teeny_ir.core import pointwise_program
from teeny_ir.ir.format import (
    OptionParser,
    OptionsFormatOp,
    keyword_option,
    parse_i64,
    parse_utf8_literal,
    value_type,
)

REDUCTIONS = ("sum", "mean")
"""The trailing reductions a fused op may absorb (`graph.reduce_sum`, `graph.reduce_mean`)."""


def _program_option(parser: Parser) -> Attribute:
    return StringAttr(parse_utf8_literal(parser, "pointwise program"))


def _parse_axes(parser: Parser) -> Attribute:
    values = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: parse_i64(parser))
    return DenseArrayBase.from_list(i64, values)


@dataclass(frozen=True)
class Reduction:
    """A trailing reduction: ``kind`` (`REDUCTIONS`) over ``axes`` (non-negative)."""

    kind: str
    axes: tuple[int, ...]
    keepdims: bool = False


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
    """A pointwise program over ``inputs``, optionally reduced (see the module
    docstring)::

        %y = graph.fused_pointwise %a, %b program "sub %0 %1; abs $0"
            : (tensor<?x8xf32>, tensor<1x8xf32>) -> tensor<?x8xf32>
        %l = graph.fused_pointwise %a, %b program "sub %0 %1; mul $0 $0"
            reduce mean axes [0, 1] : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<f32>

    The program's value is the unfused ops' value (numpy's broadcasting); with
    ``reduce sum`` or ``reduce mean`` it is then reduced over ``axes`` (kept as
    size 1 with ``keepdims``), as `graph.reduce_sum` and `graph.reduce_mean` do.
    """

    name = "graph.fused_pointwise"

    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    program_attr = prop_def(StringAttr, prop_name="program")
    reduce_attr = opt_prop_def(StringAttr, prop_name="reduce")
    axes_attr = opt_prop_def(DenseArrayBase, prop_name="axes")
    keepdims_attr = opt_prop_def(UnitAttr, prop_name="keepdims")

    traits = traits_def(Pure())

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        "program": _program_option,
        "reduce": keyword_option("reduce", REDUCTIONS),
        "axes": _parse_axes,
        "keepdims": lambda parser: UnitAttr(),
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("program",)

    def __init__(
        self,
        inputs: Sequence[SSAValue | Operation],
        program: pointwise_program.Program,
        result_type: TensorType | None = None,
        reduction: Reduction | None = None,
    ):
        """``program`` over ``inputs``, then ``reduction`` if given (its axes may
        be negative: they are stored non-negative); without ``result_type`` it
        is inferred."""
        shapes = [check_tensor(value_type(v), f"input {i}") for i, v in enumerate(inputs)]
        properties: dict[str, Attribute | None] = {"program": StringAttr(program.text())}
        if reduction is not None:
            shape = program_shape(program, shapes)
            axes = [normalize_axis(axis, len(shape)) for axis in reduction.axes]
            properties |= {
                "reduce": StringAttr(reduction.kind),
                "axes": DenseArrayBase.from_list(i64, axes),
                "keepdims": UnitAttr() if reduction.keepdims else None,
            }
            if result_type is None:
                result_type = TensorType(f32, infer_reduce_shape(shape, axes, reduction.keepdims))
        if result_type is None:
            result_type = TensorType(f32, program_shape(program, shapes))
        super().__init__(
            operands=[inputs],
            result_types=[result_type],
            properties={k: v for k, v in properties.items() if v is not None},
        )

    @classmethod
    def from_text(
        cls,
        inputs: Sequence[SSAValue | Operation],
        program: str,
        reduction: Reduction | None = None,
    ) -> FusedPointwiseOp:
        """The op of the program ``program`` spells (ValueError if it does not
        parse or reads another number of inputs), then ``reduction``."""
        return cls(inputs, pointwise_program.parse(program, len(inputs)), None, reduction)

    @property
    def reduction(self) -> Reduction | None:
        """The trailing reduction, or None for a plain pointwise op."""
        if self.reduce_attr is None:
            return None
        axes = tuple(self.axes_attr.get_values()) if self.axes_attr is not None else ()
        return Reduction(self.reduce_attr.data, axes, self.keepdims_attr is not None)

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
        shape = program_shape(program, shapes)
        if self.reduce_attr is None:
            if self.axes_attr is not None or self.keepdims_attr is not None:
                raise VerifyException("axes and keepdims need a reduction ('reduce sum' or 'mean')")
        else:
            if self.reduce_attr.data not in REDUCTIONS:
                raise VerifyException(
                    f"expected reduce to be one of {', '.join(REDUCTIONS)}, "
                    f"got '{self.reduce_attr.data}'"
                )
            if self.axes_attr is None:
                raise VerifyException(f"'reduce {self.reduce_attr.data}' needs its axes")
            shape = infer_reduce_shape(
                shape, self.axes_attr.get_values(), self.keepdims_attr is not None
            )
        check_result(self.result, TensorType(f32, shape))
