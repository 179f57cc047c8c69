"""Elementwise ops: activations (`graph.silu`, `graph.relu`, `graph.sigmoid`,
`graph.tanh`, `graph.gelu`, `graph.leaky_relu`), broadcasting binaries
(`graph.add`, `graph.sub`, `graph.mul`, `graph.div`), `graph.bias_add`, and
`graph.activation_grad` (the backward of the activations)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar, Self

from xdsl.dialects.builtin import Float64Type, FloatAttr, StringAttr, TensorType, f32, f64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from dialects.graph.shapes import broadcast_shapes, check_channel_vector, check_result, check_tensor
from teeny_ir.core import pointwise
from teeny_ir.ir.format import (
    OptionParser,
    OptionsFormatOp,
    f64_attr,
    f64_option,
    keyword_option,
    parse_attr_dict,
    parse_options,
    parse_tensor_type,
    print_options,
    value_type,
)

if TYPE_CHECKING:
    from xdsl.parser import Parser
    from xdsl.printer import Printer

GELU_APPROXIMATIONS = ("tanh",)
"""Values of `GeluOp`'s ``approximate`` (absent: the exact erf form)."""
DEFAULT_NEGATIVE_SLOPE = 0.01
"""`LeakyReluOp`'s ``negative_slope`` when absent (PyTorch's default)."""


class UnaryOp(IRDLOperation):
    """Shared definition of the elementwise activations: one f32 tensor in, one of
    the same type out, printed with the type once::

        %y = graph.op %x (keyword value)* attr-dict : tensor<?x16x8x8xf32>

    ``OPTIONS`` maps each property keyword to its value parser, as in
    `OptionsFormatOp`; most activations have none.
    """

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {}

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, input: SSAValue | Operation):
        super().__init__(operands=[input], result_types=[value_type(input)])

    def verify_(self) -> None:
        check_tensor(self.input.type, "input")
        check_result(self.result, self.input.type)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        operand = parser.parse_unresolved_operand()
        properties = parse_options(parser, cls.OPTIONS)
        attributes = parse_attr_dict(parser, cls.OPTIONS)
        parser.parse_punctuation(":")
        type_ = parse_tensor_type(parser)
        return cls.create(
            operands=[parser.resolve_operand(operand, type_)],
            result_types=[type_],
            properties=properties,
            attributes=attributes,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        print_options(printer, self, self.OPTIONS)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.input.type)


@irdl_op_definition
class SiluOp(UnaryOp):
    """Elementwise SiLU (swish): ``y = x * sigmoid(x) = x / (1 + exp(-x))``.

    %y = graph.silu %x : tensor<?x16x8x8xf32>
    """

    name = "graph.silu"


@irdl_op_definition
class ReluOp(UnaryOp):
    """Elementwise rectifier: ``y = max(x, 0)`` (``y = 0`` for ``x <= 0``).

    %y = graph.relu %x : tensor<?x16x8x8xf32>
    """

    name = "graph.relu"


@irdl_op_definition
class SigmoidOp(UnaryOp):
    """Elementwise logistic function: ``y = 1 / (1 + exp(-x))``, in (0, 1).

    Evaluated without overflow for any finite ``x``: ``exp(x) / (1 + exp(x))``
    when ``x < 0``.

    %y = graph.sigmoid %x : tensor<?x16x8x8xf32>
    """

    name = "graph.sigmoid"


@irdl_op_definition
class TanhOp(UnaryOp):
    """Elementwise hyperbolic tangent: ``y = tanh(x)``, in (-1, 1).

    %y = graph.tanh %x : tensor<?x16x8x8xf32>
    """

    name = "graph.tanh"


@irdl_op_definition
class GeluOp(UnaryOp):
    """Elementwise GELU, as ``torch.nn.functional.gelu``.

    ``approximate`` absent (PyTorch's ``"none"``): the exact form
    ``y = 0.5 * x * (1 + erf(x / sqrt(2)))``. ``approximate tanh``:
    ``y = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))``.

    %y = graph.gelu %x approximate tanh : tensor<?x16x8x8xf32>
    """

    name = "graph.gelu"

    approximate_attr = opt_prop_def(StringAttr, prop_name="approximate")

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        "approximate": keyword_option("approximate", GELU_APPROXIMATIONS),
    }

    def __init__(self, input: SSAValue | Operation, approximate: str = "none"):
        """Build a GELU; ``approximate`` is "none" (exact, the property stays
        absent) or "tanh", as in PyTorch."""
        super().__init__(input)
        if approximate != "none":
            self.properties["approximate"] = StringAttr(approximate)

    @property
    def approximate(self) -> str:
        """The approximation, PyTorch's spelling: "none" (exact) or "tanh"."""
        return "none" if self.approximate_attr is None else self.approximate_attr.data

    def verify_(self) -> None:
        super().verify_()
        if self.approximate_attr is not None and self.approximate not in GELU_APPROXIMATIONS:
            raise VerifyException(
                f"expected approximate to be one of {', '.join(GELU_APPROXIMATIONS)} "
                f"(absent: exact), got '{self.approximate}'"
            )


@irdl_op_definition
class LeakyReluOp(UnaryOp):
    """Elementwise leaky rectifier, as ``torch.nn.functional.leaky_relu``:
    ``y = x`` for ``x >= 0``, ``y = negative_slope * x`` otherwise.

    ``negative_slope`` is an optional finite f64, 0.01 when absent.

    %y = graph.leaky_relu %x negative_slope 2.000000e-01 : tensor<?x16x8x8xf32>
    """

    name = "graph.leaky_relu"

    negative_slope_attr = opt_prop_def(
        FloatAttr[Float64Type],
        FloatAttr(DEFAULT_NEGATIVE_SLOPE, f64),
        prop_name="negative_slope",
    )

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        "negative_slope": f64_option,
    }

    def __init__(self, input: SSAValue | Operation, negative_slope: float | None = None):
        """Build a leaky ReLU; ``negative_slope`` left as None stays absent (0.01)."""
        super().__init__(input)
        if (slope := f64_attr(negative_slope)) is not None:
            self.properties["negative_slope"] = slope

    @property
    def negative_slope(self) -> float:
        """The effective slope for negative inputs."""
        return self.negative_slope_attr.value.data

    def verify_(self) -> None:
        super().verify_()
        if not math.isfinite(self.negative_slope):
            raise VerifyException(
                f"expected negative_slope to be finite, got {self.negative_slope}"
            )


class BroadcastBinaryOp(OptionsFormatOp):
    """Shared definition of the broadcasting binaries: ``lhs``, ``rhs`` and a result
    of the shape `broadcast_shapes` gives (numpy's rules, with the batch ``?``)."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(
        self,
        lhs: SSAValue | Operation,
        rhs: SSAValue | Operation,
        result_type: TensorType | None = None,
    ):
        """Build the op; without ``result_type`` the broadcast type is inferred."""
        if result_type is None:
            shape = broadcast_shapes(
                check_tensor(value_type(lhs), "lhs"),
                check_tensor(value_type(rhs), "rhs"),
            )
            result_type = TensorType(f32, shape)
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def verify_(self) -> None:
        shape = broadcast_shapes(
            check_tensor(self.lhs.type, "lhs"), check_tensor(self.rhs.type, "rhs")
        )
        check_tensor(self.result.type, "result")
        check_result(self.result, TensorType(f32, shape))


@irdl_op_definition
class AddOp(BroadcastBinaryOp):
    """Elementwise ``lhs + rhs`` with numpy broadcasting (see `broadcast_shapes`).

    %z = graph.add %a, %b : (tensor<?x16x8x8xf32>, tensor<16x1x1xf32>)
        -> tensor<?x16x8x8xf32>
    """

    name = "graph.add"


@irdl_op_definition
class MulOp(BroadcastBinaryOp):
    """Elementwise ``lhs * rhs`` with numpy broadcasting (see `broadcast_shapes`).

    %z = graph.mul %a, %b : (tensor<?x16x8x8xf32>, tensor<?x16x1x1xf32>)
        -> tensor<?x16x8x8xf32>
    """

    name = "graph.mul"


@irdl_op_definition
class SubOp(BroadcastBinaryOp):
    """Elementwise ``lhs - rhs`` with numpy broadcasting (see `broadcast_shapes`).

    %z = graph.sub %a, %b : (tensor<?x16x8x8xf32>, tensor<16x1x1xf32>)
        -> tensor<?x16x8x8xf32>
    """

    name = "graph.sub"


@irdl_op_definition
class DivOp(BroadcastBinaryOp):
    """Elementwise ``lhs / rhs`` with numpy broadcasting (see `broadcast_shapes`);
    IEEE division, so ``x / 0`` is ``±inf`` (``nan`` for ``0 / 0``), as in PyTorch.

    %z = graph.div %a, %b : (tensor<?x16x8x8xf32>, tensor<?x1x1x1xf32>)
        -> tensor<?x16x8x8xf32>
    """

    name = "graph.div"


@irdl_op_definition
class BiasAddOp(OptionsFormatOp):
    """Per-channel bias: ``input`` [N, C, ...] (rank >= 2) plus ``bias`` [C] (static)
    broadcast along dimension 1::

        y[n, c, ...] = x[n, c, ...] + bias[c]

    The result has ``input``'s type. split-bias makes it from a biased conv.

        %y = graph.bias_add %x, %b : (tensor<?x16x8x8xf32>, tensor<16xf32>)
            -> tensor<?x16x8x8xf32>
    """

    name = "graph.bias_add"

    input = operand_def(TensorType)
    bias = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, input: SSAValue | Operation, bias: SSAValue | Operation):
        super().__init__(operands=[input, bias], result_types=[value_type(input)])

    def verify_(self) -> None:
        shape = check_tensor(self.input.type, "input")
        if len(shape) < 2:
            raise VerifyException(f"expected input of rank >= 2 [N, C, ...], got rank {len(shape)}")
        check_channel_vector(self.bias.type, "bias", shape[1])
        check_result(self.result, self.input.type)


UNARY_ACTIVATIONS = tuple(entry.name for entry in pointwise.TABLE if entry.arity == 1)
"""The pointwise-table entries `ActivationGradOp` differentiates."""


@irdl_op_definition
class ActivationGradOp(OptionsFormatOp):
    """The gradient of a unary pointwise op (``activation``, an entry of the
    pointwise table) at its input ``x``, given the gradient ``dy`` of its output::

        dx = activation'(x) * dy

    with PyTorch's backward formulas (``threshold_backward`` for relu: the
    gradient passes where ``x > 0``; ``gelu_backward``; ``leaky_relu_backward``);
    the derivative is the table's ``derivative``. ``approximate`` and
    ``negative_slope`` are the forward op's options, for gelu and leaky_relu.
    ``x``, ``dy`` and the result have one type. insert-backward makes it.

        %dx = graph.activation_grad %x, %dy activation silu
            : (tensor<?x16x8x8xf32>, tensor<?x16x8x8xf32>) -> tensor<?x16x8x8xf32>
    """

    name = "graph.activation_grad"

    input = operand_def(TensorType)
    grad = operand_def(TensorType)
    result = result_def(TensorType)

    activation_attr = prop_def(StringAttr, prop_name="activation")
    approximate_attr = opt_prop_def(StringAttr, prop_name="approximate")
    negative_slope_attr = opt_prop_def(FloatAttr[Float64Type], prop_name="negative_slope")

    traits = traits_def(Pure())

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        "activation": keyword_option("activation", UNARY_ACTIVATIONS),
        "approximate": keyword_option("approximate", GELU_APPROXIMATIONS),
        "negative_slope": f64_option,
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("activation",)

    def __init__(
        self,
        input: SSAValue | Operation,
        grad: SSAValue | Operation,
        activation: str,
        *,
        approximate: str | None = None,
        negative_slope: float | None = None,
    ):
        """``approximate`` / ``negative_slope`` None stay absent (exact gelu, 0.01)."""
        properties: dict[str, Attribute | None] = {
            "activation": StringAttr(activation),
            "approximate": None if approximate in (None, "none") else StringAttr(approximate),
            "negative_slope": f64_attr(negative_slope),
        }
        super().__init__(
            operands=[input, grad], result_types=[value_type(input)], properties=properties
        )

    @classmethod
    def of(cls, forward: Operation, grad: SSAValue | Operation, input: SSAValue) -> Self:
        """The gradient op of the unary pointwise op ``forward``, at ``input``
        (its input, as the backward reads it), with its options."""
        entry = pointwise.lookup(forward.name)
        assert entry is not None and entry.arity == 1, forward.name
        options = pointwise.options_of(entry, forward)
        return cls(
            input,
            grad,
            entry.name,
            approximate=options.get("approximate"),
            negative_slope=options.get("negative_slope"),
        )

    @property
    def activation(self) -> str:
        return self.activation_attr.data

    @property
    def approximate(self) -> str:
        return "none" if self.approximate_attr is None else self.approximate_attr.data

    @property
    def negative_slope(self) -> float:
        if self.negative_slope_attr is None:
            return DEFAULT_NEGATIVE_SLOPE
        return self.negative_slope_attr.value.data

    def verify_(self) -> None:
        if self.activation not in UNARY_ACTIVATIONS:
            raise VerifyException(
                f"expected activation to be a unary pointwise op "
                f"({', '.join(UNARY_ACTIVATIONS)}), got '{self.activation}'"
            )
        entry = pointwise.BY_NAME[self.activation]
        for option in ("approximate", "negative_slope"):
            if self.properties.get(option) is not None and option not in entry.options:
                raise VerifyException(f"'{option}' is not an option of {entry.op}")
        if self.approximate_attr is not None and self.approximate not in GELU_APPROXIMATIONS:
            raise VerifyException(f"expected approximate to be tanh, got '{self.approximate}'")
        if not math.isfinite(self.negative_slope):
            raise VerifyException(
                f"expected negative_slope to be finite, got {self.negative_slope}"
            )
        check_tensor(self.input.type, "input")
        if self.grad.type != self.input.type:
            raise VerifyException(
                f"expected the gradient to have the input's type {self.input.type}, "
                f"got {self.grad.type}"
            )
        check_result(self.result, self.input.type)
