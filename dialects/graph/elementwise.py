"""Elementwise ops: activations and unary math (`graph.silu`, `graph.relu`,
`graph.sigmoid`, `graph.tanh`, `graph.gelu`, `graph.leaky_relu`, `graph.hardtanh`,
`graph.abs`, `graph.exp`, `graph.elu`, ...), broadcasting binaries (`graph.add`,
`graph.sub`, `graph.mul`, `graph.div`, `graph.maximum`, `graph.minimum`, `graph.pow`),
`graph.bias_add`, and `graph.activation_grad` (the backward of the unary ops)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar, Self

from xdsl.dialects.builtin import (
    DictionaryAttr,
    Float64Type,
    FloatAttr,
    StringAttr,
    TensorType,
    f32,
    f64,
)
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
    parse_signature_tail,
    parse_tensor_type,
    print_option,
    print_options,
    print_signature_tail,
    value_type,
)

if TYPE_CHECKING:
    from xdsl.parser import Parser
    from xdsl.printer import Printer

GELU_APPROXIMATIONS = ("tanh",)
"""Values of `GeluOp`'s ``approximate`` (absent: the exact erf form)."""
DEFAULT_NEGATIVE_SLOPE = 0.01
"""`LeakyReluOp`'s ``negative_slope`` when absent (PyTorch's default)."""
DEFAULT_ALPHA = 1.0
"""`EluOp`'s and `CeluOp`'s ``alpha`` when absent (PyTorch's and ONNX's default)."""


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
class HardswishOp(UnaryOp):
    """Elementwise hard swish, as ``torch.nn.functional.hardswish``:
    ``y = x * min(max(x + 3, 0), 6) / 6``.

    %y = graph.hardswish %x : tensor<?x16x8x8xf32>
    """

    name = "graph.hardswish"


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


@irdl_op_definition
class HardtanhOp(UnaryOp):
    """Elementwise clamp, as ``torch.nn.functional.hardtanh``: ``y = min_val`` for
    ``x < min_val``, ``max_val`` for ``x > max_val``, ``x`` otherwise (NaN stays
    NaN). ReLU6 is ``min_val 0.0 max_val 6.0``.

    ``min_val`` and ``max_val`` are optional finite f64s, -1.0 and 1.0 when
    absent, with ``min_val <= max_val``.

    %y = graph.hardtanh %x min_val 0.000000e+00 max_val 6.000000e+00 : tensor<?x16x8x8xf32>
    """

    name = "graph.hardtanh"

    min_val_attr = opt_prop_def(FloatAttr[Float64Type], FloatAttr(-1.0, f64), prop_name="min_val")
    max_val_attr = opt_prop_def(FloatAttr[Float64Type], FloatAttr(1.0, f64), prop_name="max_val")

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        "min_val": f64_option,
        "max_val": f64_option,
    }

    def __init__(
        self,
        input: SSAValue | Operation,
        min_val: float | None = None,
        max_val: float | None = None,
    ):
        """Build a hardtanh; a bound left as None stays absent (-1.0, 1.0)."""
        super().__init__(input)
        for name, value in (("min_val", min_val), ("max_val", max_val)):
            if (attr := f64_attr(value)) is not None:
                self.properties[name] = attr

    @property
    def min_val(self) -> float:
        return self.min_val_attr.value.data

    @property
    def max_val(self) -> float:
        return self.max_val_attr.value.data

    def verify_(self) -> None:
        super().verify_()
        if not (math.isfinite(self.min_val) and math.isfinite(self.max_val)):
            raise VerifyException(
                f"expected finite min_val and max_val, got {self.min_val} and {self.max_val}"
            )
        if self.min_val > self.max_val:
            raise VerifyException(
                f"expected min_val <= max_val, got {self.min_val} > {self.max_val}"
            )


@irdl_op_definition
class AbsOp(UnaryOp):
    """Elementwise absolute value: ``y = |x|``.

    %y = graph.abs %x : tensor<?x16x8x8xf32>
    """

    name = "graph.abs"


@irdl_op_definition
class NegOp(UnaryOp):
    """Elementwise negation: ``y = -x``.

    %y = graph.neg %x : tensor<?x16x8x8xf32>
    """

    name = "graph.neg"


@irdl_op_definition
class ExpOp(UnaryOp):
    """Elementwise exponential: ``y = e^x`` (inf where it exceeds float32).

    %y = graph.exp %x : tensor<?x16x8x8xf32>
    """

    name = "graph.exp"


@irdl_op_definition
class LogOp(UnaryOp):
    """Elementwise natural logarithm: ``y = ln(x)``; ``-inf`` at 0, NaN below 0.

    %y = graph.log %x : tensor<?x16x8x8xf32>
    """

    name = "graph.log"


@irdl_op_definition
class SqrtOp(UnaryOp):
    """Elementwise square root (correctly rounded): ``y = sqrt(x)``; NaN below 0,
    ``sqrt(-0) = -0``.

    %y = graph.sqrt %x : tensor<?x16x8x8xf32>
    """

    name = "graph.sqrt"


@irdl_op_definition
class ReciprocalOp(UnaryOp):
    """Elementwise reciprocal: ``y = 1 / x`` (``±inf`` at ``±0``).

    %y = graph.reciprocal %x : tensor<?x16x8x8xf32>
    """

    name = "graph.reciprocal"


@irdl_op_definition
class ErfOp(UnaryOp):
    """Elementwise error function: ``y = erf(x) = 2 / sqrt(pi) * integral_0^x exp(-t^2) dt``.

    %y = graph.erf %x : tensor<?x16x8x8xf32>
    """

    name = "graph.erf"


@irdl_op_definition
class SoftplusOp(UnaryOp):
    """Elementwise softplus, as ONNX's Softplus: ``y = log(1 + exp(x))``, evaluated
    as ``max(x, 0) + log1p(exp(-|x|))`` (never overflows). PyTorch's
    ``softplus`` (beta 1, threshold 20) agrees to float32 rounding.

    %y = graph.softplus %x : tensor<?x16x8x8xf32>
    """

    name = "graph.softplus"


@irdl_op_definition
class SoftsignOp(UnaryOp):
    """Elementwise softsign, as ``torch.nn.functional.softsign``: ``y = x / (1 + |x|)``
    (NaN at ``±inf``, as PyTorch's ``inf / inf``).

    %y = graph.softsign %x : tensor<?x16x8x8xf32>
    """

    name = "graph.softsign"


@irdl_op_definition
class SinOp(UnaryOp):
    """Elementwise sine (radians): ``y = sin(x)``; NaN at ``±inf``.

    %y = graph.sin %x : tensor<?x16x8x8xf32>
    """

    name = "graph.sin"


@irdl_op_definition
class CosOp(UnaryOp):
    """Elementwise cosine (radians): ``y = cos(x)``; NaN at ``±inf``.

    %y = graph.cos %x : tensor<?x16x8x8xf32>
    """

    name = "graph.cos"


class AlphaUnaryOp(UnaryOp):
    """Shared definition of `EluOp` and `CeluOp`: an optional finite f64 ``alpha``,
    `DEFAULT_ALPHA` when absent."""

    alpha_attr = opt_prop_def(
        FloatAttr[Float64Type], FloatAttr(DEFAULT_ALPHA, f64), prop_name="alpha"
    )

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {"alpha": f64_option}

    def __init__(self, input: SSAValue | Operation, alpha: float | None = None):
        """Build the op; ``alpha`` left as None stays absent (1.0)."""
        super().__init__(input)
        if (attr := f64_attr(alpha)) is not None:
            self.properties["alpha"] = attr

    @property
    def alpha(self) -> float:
        """The effective ``alpha``."""
        return self.alpha_attr.value.data

    def verify_(self) -> None:
        super().verify_()
        if not math.isfinite(self.alpha):
            raise VerifyException(f"expected alpha to be finite, got {self.alpha}")


@irdl_op_definition
class EluOp(AlphaUnaryOp):
    """Elementwise ELU, as ``torch.nn.functional.elu`` and ONNX's Elu: ``y = x`` for
    ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise.

    ``alpha`` is an optional finite f64, 1.0 when absent. ONNX's Selu is
    ``gamma * elu(x, alpha)``.

    %y = graph.elu %x alpha 5.000000e-01 : tensor<?x16x8x8xf32>
    """

    name = "graph.elu"


@irdl_op_definition
class CeluOp(AlphaUnaryOp):
    """Elementwise CELU, as ``torch.celu`` and ONNX's Celu: ``y = x`` for ``x > 0``,
    ``alpha * (exp(x / alpha) - 1)`` otherwise.

    ``alpha`` is an optional f64, positive and finite, 1.0 when absent (a positive
    alpha keeps ``exp``'s argument at most 0, so nothing overflows).

    %y = graph.celu %x alpha 2.000000e+00 : tensor<?x16x8x8xf32>
    """

    name = "graph.celu"

    def verify_(self) -> None:
        super().verify_()
        if not self.alpha > 0:
            raise VerifyException(f"expected alpha to be positive, got {self.alpha}")


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
class MaximumOp(BroadcastBinaryOp):
    """Elementwise ``max(lhs, rhs)`` with numpy broadcasting, as ``torch.maximum``:
    NaN if either operand is NaN.

    %z = graph.maximum %a, %b : (tensor<?x16x8x8xf32>, tensor<16x1x1xf32>)
        -> tensor<?x16x8x8xf32>
    """

    name = "graph.maximum"


@irdl_op_definition
class MinimumOp(BroadcastBinaryOp):
    """Elementwise ``min(lhs, rhs)`` with numpy broadcasting, as ``torch.minimum``:
    NaN if either operand is NaN.

    %z = graph.minimum %a, %b : (tensor<?x16x8x8xf32>, tensor<16x1x1xf32>)
        -> tensor<?x16x8x8xf32>
    """

    name = "graph.minimum"


@irdl_op_definition
class PowOp(BroadcastBinaryOp):
    """Elementwise ``lhs ** rhs`` with numpy broadcasting, as ``torch.pow`` (C's
    ``pow``): ``x ** 0 = 1`` and ``1 ** y = 1`` even for NaN, NaN for a finite
    negative base and a non-integer exponent, ``0 ** -y = inf``.

    %z = graph.pow %a, %b : (tensor<?x16x8x8xf32>, tensor<f32>) -> tensor<?x16x8x8xf32>
    """

    name = "graph.pow"


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
_ACTIVATION_OPTION = keyword_option("activation", UNARY_ACTIVATIONS)
_BARE_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _option_attr(value: str | float) -> Attribute:
    """An option value as `ActivationGradOp` stores it: a word or an f64."""
    if isinstance(value, str):
        return StringAttr(value)
    return FloatAttr(float(value), f64)


def _option_value(attr: Attribute) -> str | float:
    if isinstance(attr, StringAttr):
        return attr.data
    assert isinstance(attr, FloatAttr), attr
    return float(attr.value.data)


def _parse_option_value(parser: Parser) -> Attribute:
    """A word (an identifier or a string literal) or an f64 (`f64_option`)."""
    word = parser.parse_optional_identifier() or parser.parse_optional_str_literal()
    return StringAttr(word) if word is not None else f64_option(parser)


@irdl_op_definition
class ActivationGradOp(IRDLOperation):
    """The gradient of a unary pointwise op (``activation``, an entry of the
    pointwise table) at its input ``x``, given the gradient ``dy`` of its output::

        dx = activation'(x) * dy

    with PyTorch's backward formulas (``threshold_backward`` for relu: the
    gradient passes where ``x > 0``; ``gelu_backward``; ``leaky_relu_backward``);
    the derivative is the table's ``derivative``. The op carries the value of
    every option of the entry (its ``options``: gelu's ``approximate``,
    leaky_relu's ``negative_slope``, whatever a new entry declares), as the
    forward op had them, written as ``keyword value`` pairs after the
    activation: a word, or a number. ``x``, ``dy`` and the result have one
    type. insert-backward makes it.

        %dx = graph.activation_grad %x, %dy activation leaky_relu negative_slope 2.000000e-01
            : (tensor<?x16x8x8xf32>, tensor<?x16x8x8xf32>) -> tensor<?x16x8x8xf32>
    """

    name = "graph.activation_grad"

    input = operand_def(TensorType)
    grad = operand_def(TensorType)
    result = result_def(TensorType)

    activation_attr = prop_def(StringAttr, prop_name="activation")
    options_attr = opt_prop_def(DictionaryAttr, prop_name="options")

    traits = traits_def(Pure())

    def __init__(
        self,
        input: SSAValue | Operation,
        grad: SSAValue | Operation,
        activation: str,
        options: Mapping[str, str | float] | None = None,
    ):
        """``options``: the value of each option of the entry ``activation`` (a
        word or a number), as `ActivationGradOp.of` takes them from the forward op."""
        properties: dict[str, Attribute] = {"activation": StringAttr(activation)}
        if options:
            properties["options"] = DictionaryAttr(
                {name: _option_attr(value) for name, value in options.items()}
            )
        super().__init__(
            operands=[input, grad], result_types=[value_type(input)], properties=properties
        )

    @classmethod
    def of(cls, forward: Operation, grad: SSAValue | Operation, input: SSAValue) -> Self:
        """The gradient op of the unary pointwise op ``forward``, at ``input``
        (its input, as the backward reads it), with its options."""
        entry = pointwise.lookup(forward.name)
        assert entry is not None and entry.arity == 1, forward.name
        return cls(input, grad, entry.name, pointwise.options_of(entry, forward))

    @property
    def activation(self) -> str:
        return self.activation_attr.data

    def carried_options(self) -> dict[str, str | float]:
        """The option values this op carries for its entry (`pointwise.options_of`
        reads them, as it reads a forward op's properties)."""
        if self.options_attr is None:
            return {}
        return {name: _option_value(attr) for name, attr in self.options_attr.data.items()}

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        operands = parser.parse_comma_separated_list(
            parser.Delimiter.NONE, parser.parse_unresolved_operand
        )
        start = parser.pos
        if parser.parse_optional_keyword("activation") is None:
            parser.raise_error(f"expected the 'activation' option of {cls.name}", start, parser.pos)
        activation = _ACTIVATION_OPTION(parser)
        assert isinstance(activation, StringAttr)
        entry = pointwise.BY_NAME[activation.data]
        options: dict[str, Attribute] = {}
        while True:
            start = parser.pos
            keyword = parser.parse_optional_identifier()
            if keyword is None:
                break
            if keyword not in entry.options:
                parser.raise_error(
                    f"'{keyword}' is not an option of {entry.op}"
                    + (f" (its options: {', '.join(entry.options)})" if entry.options else ""),
                    start,
                    parser.pos,
                )
            if keyword in options:
                parser.raise_error(f"'{keyword}' is given more than once", start, parser.pos)
            options[keyword] = _parse_option_value(parser)
        properties: dict[str, Attribute] = {"activation": activation}
        if options:
            properties["options"] = DictionaryAttr(options)
        return parse_signature_tail(parser, cls, operands, properties, ("activation", "options"))

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        printer.print_string(f" activation {self.activation}")
        carried = {} if self.options_attr is None else self.options_attr.data
        entry = pointwise.BY_NAME.get(self.activation)
        order = [*(entry.options if entry else ()), *sorted(carried)]
        for name in dict.fromkeys(order):
            if (value := carried.get(name)) is not None:
                print_option(printer, name, value)
        print_signature_tail(printer, self)

    def verify_(self) -> None:
        if self.activation not in UNARY_ACTIVATIONS:
            raise VerifyException(
                f"expected activation to be a unary pointwise op "
                f"({', '.join(UNARY_ACTIVATIONS)}), got '{self.activation}'"
            )
        entry = pointwise.BY_NAME[self.activation]
        carried = {} if self.options_attr is None else self.options_attr.data
        for name in carried:
            if name not in entry.options:
                raise VerifyException(f"'{name}' is not an option of {entry.op}")
        for name in entry.options:
            value = carried.get(name)
            if value is None:
                raise VerifyException(
                    f"expected the value of {entry.op}'s option '{name}' (the forward op's)"
                )
            if isinstance(value, FloatAttr):
                if not math.isfinite(value.value.data):
                    raise VerifyException(f"expected {name} to be finite, got {value.value.data}")
            elif not (isinstance(value, StringAttr) and _BARE_WORD.fullmatch(value.data)):
                raise VerifyException(f"expected {name} to be a word or a number, got {value}")
        check_tensor(self.input.type, "input")
        if self.grad.type != self.input.type:
            raise VerifyException(
                f"expected the gradient to have the input's type {self.input.type}, "
                f"got {self.grad.type}"
            )
        check_result(self.result, self.input.type)
