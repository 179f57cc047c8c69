"""Convolutions: `graph.conv2d`, the fused `graph.fused_conv2d`, and the
backward ops of the training stage, `graph.conv2d_backward_data` (the input
gradient) and `graph.conv2d_backward_weight` (the weight gradient)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar, Self

from xdsl.dialects.builtin import I64, DenseArrayBase, IntegerAttr, StringAttr, TensorType, f32, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from dialects.derive import DerivationAttr
from dialects.graph.shapes import (
    DEFAULT_DILATION,
    DEFAULT_GROUPS,
    DEFAULT_PADDING,
    DEFAULT_STRIDES,
    Shape,
    check_channel_vector,
    check_count,
    check_result,
    check_tensor,
    format_shape,
    infer_conv2d_shape,
    is_gemm_conv,
)
from teeny_ir.core import pointwise
from teeny_ir.core.derivations import Derivation
from teeny_ir.ir.format import (
    OptionParser,
    OptionsFormatOp,
    i64_array,
    i64_array_prop,
    int_array_option,
    keyword_option,
    parse_i64,
    parse_options,
    parse_signature_tail,
    print_options,
    value_type,
)

if TYPE_CHECKING:
    from xdsl.parser import Parser
    from xdsl.printer import Printer

ACTIVATIONS = pointwise.epilogue_names()
"""Epilogue activations of `FusedConv2dOp` (absent: none): the pointwise table's
epilogue entries."""
CONV_ALGORITHMS = ("gemm", "depthwise", "implicit-gemm")
"""Values of `FusedConv2dOp`'s ``algorithm``, chosen by select-conv-algorithm."""


def _conv_properties(
    strides: Sequence[int] | None,
    padding: Sequence[int] | None,
    dilation: Sequence[int] | None,
    groups: int | None,
) -> dict[str, Attribute | None]:
    return {
        "strides": i64_array(strides),
        "padding": i64_array(padding),
        "dilation": i64_array(dilation),
        "groups": None if groups is None else IntegerAttr(groups, i64),
    }


def _inferred_type(
    input: SSAValue | Operation,
    weight: SSAValue | Operation,
    strides: Sequence[int] | None,
    padding: Sequence[int] | None,
    dilation: Sequence[int] | None,
    groups: int | None,
) -> TensorType:
    """The builders' result type; raises `VerifyException` on operands that do not fit."""
    shape = infer_conv2d_shape(
        check_tensor(value_type(input), "input"),
        check_tensor(value_type(weight), "weight", dynamic_batch=False),
        DEFAULT_STRIDES if strides is None else strides,
        DEFAULT_PADDING if padding is None else padding,
        DEFAULT_DILATION if dilation is None else dilation,
        DEFAULT_GROUPS if groups is None else groups,
    )
    return TensorType(f32, shape)


class ConvOptionsOp(OptionsFormatOp):
    """The window options both convolutions share, each absent when default:
    ``strides`` [1, 1], ``padding`` [0, 0, 0, 0] (top, left, bottom, right),
    ``dilation`` [1, 1] and ``groups`` 1. Operands and results are declared by
    each op (xDSL orders operands by declaration)."""

    strides_attr = i64_array_prop("strides", DEFAULT_STRIDES)
    padding_attr = i64_array_prop("padding", DEFAULT_PADDING)
    dilation_attr = i64_array_prop("dilation", DEFAULT_DILATION)
    groups_attr = opt_prop_def(
        IntegerAttr[I64], IntegerAttr(DEFAULT_GROUPS, i64), prop_name="groups"
    )

    traits = traits_def(Pure())

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        "strides": int_array_option("strides", 2),
        "padding": int_array_option("padding", 4, " [top, left, bottom, right]"),
        "dilation": int_array_option("dilation", 2),
        "groups": lambda parser: IntegerAttr(parse_i64(parser), i64),
    }

    @property
    def strides(self) -> Shape:
        """Effective strides [height, width]."""
        return self.strides_attr.get_values()

    @property
    def padding(self) -> Shape:
        """Effective padding [top, left, bottom, right]."""
        return self.padding_attr.get_values()

    @property
    def dilation(self) -> Shape:
        """Effective dilation [height, width]."""
        return self.dilation_attr.get_values()

    @property
    def groups(self) -> int:
        """Effective number of groups."""
        return self.groups_attr.value.data

    def verify_conv(self, input: SSAValue, weight: SSAValue, result: SSAValue) -> Shape:
        """Check the operands and the result type; return the result shape."""
        shape = infer_conv2d_shape(
            check_tensor(input.type, "input"),
            check_tensor(weight.type, "weight", dynamic_batch=False),
            self.strides,
            self.padding,
            self.dilation,
            self.groups,
        )
        check_tensor(result.type, "result")
        check_result(result, TensorType(f32, shape))
        return shape


def derivation_option(name: str) -> OptionParser:
    """Parser for a ``#derive.param<...>`` attribute."""

    def parse(parser: Parser) -> Attribute:
        start = parser.pos
        attr = parser.parse_attribute()
        if not isinstance(attr, DerivationAttr):
            parser.raise_error(f"expected {name} to be a #derive.param<...>", start, parser.pos)
        return attr

    return parse


@irdl_op_definition
class Conv2dOp(ConvOptionsOp):
    """2-D cross-correlation over NCHW input, as ``torch.nn.functional.conv2d``.

    Operands: ``input`` [N, C_in, H, W], ``weight`` [C_out, C_in / groups, KH, KW]
    and an optional ``bias`` [C_out]. With ``G = groups``, output channel ``o``
    reads the input channels of group ``g = o // (C_out / G)``::

        y[n, o, i, j] = bias[o] + sum_{c, p, q} weight[o, c, p, q]
                        * x_pad[n, g * C_in / G + c,
                                i * stride_h + p * dilation_h,
                                j * stride_w + q * dilation_w]

    where ``x_pad`` is the input zero-padded by ``padding`` = [top, left, bottom,
    right] (ONNX order). Optional properties, absent when default: ``strides``
    [1, 1], ``padding`` [0, 0, 0, 0], ``dilation`` [1, 1], ``groups`` 1. The
    result shape is `infer_conv2d_shape`.

        %y = graph.conv2d %x, %w, %b strides [2, 2] padding [1, 1, 1, 1]
            : (tensor<?x3x8x8xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>)
            -> tensor<?x16x4x4xf32>
    """

    name = "graph.conv2d"

    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)

    def __init__(
        self,
        input: SSAValue | Operation,
        weight: SSAValue | Operation,
        bias: SSAValue | Operation | None = None,
        *,
        strides: Sequence[int] | None = None,
        padding: Sequence[int] | None = None,
        dilation: Sequence[int] | None = None,
        groups: int | None = None,
        result_type: TensorType | None = None,
    ):
        """Build a convolution; options left as None stay absent (default).

        Without ``result_type`` the result type is inferred, raising
        `VerifyException` if the operands do not fit together.
        """
        if result_type is None:
            result_type = _inferred_type(input, weight, strides, padding, dilation, groups)
        super().__init__(
            operands=[input, weight, bias],
            result_types=[result_type],
            properties=_conv_properties(strides, padding, dilation, groups),
        )

    def verify_(self) -> None:
        shape = self.verify_conv(self.input, self.weight, self.result)
        if self.bias is not None:
            check_channel_vector(self.bias.type, "bias", shape[1])


@irdl_op_definition
class FusedConv2dOp(ConvOptionsOp):
    """A convolution with its per-channel epilogue, made by fuse-epilogues::

        y[n, o, i, j] = act(scale[o] * conv2d(x, w)[n, o, i, j] + shift[o])
                        + residual[n, o, i, j]

    ``conv2d`` is `Conv2dOp` without bias (same options and shape rule). ``scale``
    and ``shift`` are derivations (``#derive.param<...>``, evaluated by
    `teeny_ir.core.derivations.evaluate`) of shape [C_out]: an inference BN fold
    gives ``bn_scale``/``bn_shift`` (a conv bias folded into the shift), a bias
    alone ``fill(1.0)``/``identity(bias)``. ``activation`` names an epilogue
    entry of the pointwise table (`teeny_ir.core.pointwise`; absent: none). The
    optional ``residual`` operand, of the result's type, is added after the
    activation (YOLOv8's bottleneck ``x + SiLU(BN(conv(x)))``; absent: nothing
    added); it is written ``residual %r`` after the input and weight, and its
    type comes third in the signature. select-conv-algorithm sets ``algorithm``
    (gemm, depthwise, implicit-gemm) and ``tiles`` [BLOCK_M, BLOCK_N, BLOCK_K],
    which are set together; ``gemm`` needs `is_gemm_conv`.

        %y = graph.fused_conv2d %x, %w scale #derive.param<...>
            shift #derive.param<...> algorithm gemm
            tiles [64, 64, 16] : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>)
            -> tensor<?x16x4x4xf32>
        %z = graph.fused_conv2d %x, %w residual %r scale #derive.param<...>
            shift #derive.param<...> activation silu
            : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>, tensor<?x16x4x4xf32>)
            -> tensor<?x16x4x4xf32>
    """

    name = "graph.fused_conv2d"

    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    residual = opt_operand_def(TensorType)
    result = result_def(TensorType)

    scale = prop_def(DerivationAttr)
    shift = prop_def(DerivationAttr)
    activation_attr = opt_prop_def(StringAttr, prop_name="activation")
    algorithm_attr = opt_prop_def(StringAttr, prop_name="algorithm")
    tiles_attr = opt_prop_def(DenseArrayBase[I64], prop_name="tiles")

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        **ConvOptionsOp.OPTIONS,
        "scale": derivation_option("scale"),
        "shift": derivation_option("shift"),
        "activation": keyword_option("activation", ACTIVATIONS),
        "algorithm": keyword_option("algorithm", CONV_ALGORITHMS),
        "tiles": int_array_option("tiles", 3, " [BLOCK_M, BLOCK_N, BLOCK_K]"),
    }

    def __init__(
        self,
        input: SSAValue | Operation,
        weight: SSAValue | Operation,
        *,
        scale: Derivation,
        shift: Derivation,
        activation: str | None = None,
        strides: Sequence[int] | None = None,
        padding: Sequence[int] | None = None,
        dilation: Sequence[int] | None = None,
        groups: int | None = None,
        residual: SSAValue | Operation | None = None,
        result_type: TensorType | None = None,
    ):
        """Build a fused convolution; options left as None stay absent (default),
        and so does ``residual`` (the value added after the activation)."""
        if result_type is None:
            result_type = _inferred_type(input, weight, strides, padding, dilation, groups)
        super().__init__(
            operands=[input, weight, residual],
            result_types=[result_type],
            properties={
                **_conv_properties(strides, padding, dilation, groups),
                "scale": DerivationAttr(scale),
                "shift": DerivationAttr(shift),
                "activation": None if activation is None else StringAttr(activation),
            },
        )

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        """``%x, %w [residual %r] (keyword value)* attr-dict : (types) -> type``."""
        start = parser.pos
        operands = parser.parse_comma_separated_list(
            parser.Delimiter.NONE, parser.parse_unresolved_operand
        )
        if len(operands) > 2:
            parser.raise_error(
                f"expected the input and weight operands of {cls.name}, got {len(operands)} "
                "operands (a residual is written 'residual %r')",
                start,
                parser.pos,
            )
        if parser.parse_optional_keyword("residual") is not None:
            if len(operands) != 2:
                parser.raise_error(
                    f"expected the input and weight operands before 'residual', "
                    f"got {len(operands)}",
                    start,
                    parser.pos,
                )
            operands.append(parser.parse_unresolved_operand())
        properties = parse_options(parser, cls.OPTIONS)
        misplaced = parser.pos
        if parser.parse_optional_keyword("residual") is not None:
            parser.raise_error(
                "expected 'residual %r' right after the input and weight operands",
                misplaced,
                parser.pos,
            )
        return parse_signature_tail(parser, cls, operands, properties, cls.OPTIONS)

    def print(self, printer: Printer) -> None:
        # From the operand list, so that an op with the wrong count (the verifier
        # says so) still prints: input, weight, then the residual if any.
        operands = list(self.operands)
        printer.print_string(" ")
        printer.print_list(operands[:2], printer.print_operand)
        for residual in operands[2:]:
            printer.print_string(" residual ")
            printer.print_operand(residual)
        print_options(printer, self, self.OPTIONS)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_function_type(self.operand_types, self.result_types)

    @property
    def activation(self) -> str:
        """The epilogue activation, or "none"."""
        return "none" if self.activation_attr is None else self.activation_attr.data

    @property
    def algorithm(self) -> str | None:
        """The convolution algorithm, once select-conv-algorithm has chosen it."""
        return None if self.algorithm_attr is None else self.algorithm_attr.data

    @property
    def tiles(self) -> Shape | None:
        """[BLOCK_M, BLOCK_N, BLOCK_K], set together with ``algorithm``."""
        return None if self.tiles_attr is None else self.tiles_attr.get_values()

    def verify_(self) -> None:
        shape = self.verify_conv(self.input, self.weight, self.result)
        for name, attr in (("scale", self.scale), ("shift", self.shift)):
            if attr.data.shape != (shape[1],):
                raise VerifyException(
                    f"expected {name} of shape [{shape[1]}], got {list(attr.data.shape)}"
                )
        if self.residual is not None and self.residual.type != self.result.type:
            raise VerifyException(
                f"expected residual of the result type {self.result.type}, "
                f"got {self.residual.type} (the residual is added elementwise, "
                "without broadcasting)"
            )
        if self.activation_attr is not None and self.activation not in ACTIVATIONS:
            raise VerifyException(
                "expected activation to be an epilogue entry of the pointwise table, "
                f"got '{self.activation}' (entries: {', '.join(ACTIVATIONS)})"
            )
        if (self.algorithm_attr is None) != (self.tiles_attr is None):
            raise VerifyException("expected 'algorithm' and 'tiles' to be set together")
        if self.algorithm is None:
            return
        if self.algorithm not in CONV_ALGORITHMS:
            raise VerifyException(
                f"expected algorithm to be one of {', '.join(CONV_ALGORITHMS)}, got '{self.algorithm}'"
            )
        tiles = self.tiles or ()
        check_count("tiles", tiles, 3, " [BLOCK_M, BLOCK_N, BLOCK_K]")
        if any(t < 1 or t & (t - 1) for t in tiles):
            raise VerifyException(f"expected tiles to be powers of two, got {list(tiles)}")
        weight_shape = check_tensor(self.weight.type, "weight", dynamic_batch=False)
        if self.algorithm == "gemm" and not is_gemm_conv(
            weight_shape, self.strides, self.padding, self.dilation, self.groups
        ):
            raise VerifyException(
                "algorithm 'gemm' needs a 1x1 kernel, stride 1, no padding, dilation 1 and one group"
            )


def _backward_type(type_: Attribute, what: str) -> Shape:
    """Check a rank-4 operand or result of a convolution backward; return its shape."""
    shape = check_tensor(type_, what)
    if len(shape) != 4:
        raise VerifyException(f"expected {what} of rank 4, got rank {len(shape)}")
    return shape


@irdl_op_definition
class Conv2dBackwardDataOp(ConvOptionsOp):
    """The gradient of `Conv2dOp`'s input (a transposed convolution), as
    ``torch.nn.grad.conv2d_input``::

        dx[n, g * C_in / G + c, h, w] = sum_{o, p, q, i, j} dy[n, g * C_out / G + o, i, j]
            * weight[g * C_out / G + o, c, p, q]
            [h + pad_top = i * stride_h + p * dilation_h]
            [w + pad_left = j * stride_w + q * dilation_w]

    Operands: ``grad`` dy [N, C_out, H_out, W_out] and ``weight``
    [C_out, C_in / groups, KH, KW]; the options are the forward convolution's.
    With a stride above 1 several input sizes give the same output size, so the
    result type carries dx's shape [N, C_in, H, W]: the verifier checks that
    `infer_conv2d_shape` of it and the weight gives dy's shape (input rows or
    columns that no window reads get a zero gradient).

        %dx = graph.conv2d_backward_data %dy, %w strides [2, 2] padding [1, 1, 1, 1]
            : (tensor<?x16x4x4xf32>, tensor<16x3x3x3xf32>) -> tensor<?x3x8x8xf32>
    """

    name = "graph.conv2d_backward_data"

    grad = operand_def(TensorType)
    weight = operand_def(TensorType)
    result = result_def(TensorType)

    def __init__(
        self,
        grad: SSAValue | Operation,
        weight: SSAValue | Operation,
        result_type: TensorType,
        *,
        strides: Sequence[int] | None = None,
        padding: Sequence[int] | None = None,
        dilation: Sequence[int] | None = None,
        groups: int | None = None,
    ):
        """Build the input gradient of a convolution whose input has ``result_type``;
        options left as None stay absent (default)."""
        super().__init__(
            operands=[grad, weight],
            result_types=[result_type],
            properties=_conv_properties(strides, padding, dilation, groups),
        )

    def verify_(self) -> None:
        grad = _backward_type(self.grad.type, "grad")
        weight = check_tensor(self.weight.type, "weight", dynamic_batch=False)
        input_shape = _backward_type(self.result.type, "result")
        try:
            expected = infer_conv2d_shape(
                input_shape, weight, self.strides, self.padding, self.dilation, self.groups
            )
        except VerifyException as error:
            raise VerifyException(
                f"the result (the forward input) {format_shape(input_shape)} does not fit "
                f"the convolution: {error}"
            ) from error
        if expected != grad:
            raise VerifyException(
                f"expected grad of shape {format_shape(expected)} (the convolution of the "
                f"result shape {format_shape(input_shape)}), got {format_shape(grad)}"
            )


@irdl_op_definition
class Conv2dBackwardWeightOp(ConvOptionsOp):
    """The gradient of `Conv2dOp`'s weight, as ``torch.nn.grad.conv2d_weight``::

        dweight[g * C_out / G + o, c, p, q] = sum_{n, i, j} dy[n, g * C_out / G + o, i, j]
            * x_pad[n, g * C_in / G + c, i * stride_h + p * dilation_h,
                    j * stride_w + q * dilation_w]

    with ``x_pad`` the input zero-padded by ``padding`` [top, left, bottom,
    right]. Operands: ``input`` x [N, C_in, H, W] and ``grad`` dy
    [N, C_out, H_out, W_out]; the options are the forward convolution's. The
    result type carries the weight's shape [C_out, C_in / groups, KH, KW]
    (static): the verifier checks that `infer_conv2d_shape` of the input and
    it gives dy's shape.

        %dw = graph.conv2d_backward_weight %x, %dy strides [2, 2] padding [1, 1, 1, 1]
            : (tensor<?x3x8x8xf32>, tensor<?x16x4x4xf32>) -> tensor<16x3x3x3xf32>
    """

    name = "graph.conv2d_backward_weight"

    input = operand_def(TensorType)
    grad = operand_def(TensorType)
    result = result_def(TensorType)

    def __init__(
        self,
        input: SSAValue | Operation,
        grad: SSAValue | Operation,
        result_type: TensorType,
        *,
        strides: Sequence[int] | None = None,
        padding: Sequence[int] | None = None,
        dilation: Sequence[int] | None = None,
        groups: int | None = None,
    ):
        """Build the weight gradient of a convolution whose weight has
        ``result_type``; options left as None stay absent (default)."""
        super().__init__(
            operands=[input, grad],
            result_types=[result_type],
            properties=_conv_properties(strides, padding, dilation, groups),
        )

    def verify_(self) -> None:
        input_shape = _backward_type(self.input.type, "input")
        grad = _backward_type(self.grad.type, "grad")
        weight = check_tensor(self.result.type, "result", dynamic_batch=False)
        if len(weight) != 4:
            raise VerifyException(
                f"expected result of rank 4 [C_out, C_in / groups, KH, KW], got rank {len(weight)}"
            )
        try:
            expected = infer_conv2d_shape(
                input_shape, weight, self.strides, self.padding, self.dilation, self.groups
            )
        except VerifyException as error:
            raise VerifyException(
                f"the result (the forward weight) {format_shape(weight)} does not fit "
                f"the convolution: {error}"
            ) from error
        if expected != grad:
            raise VerifyException(
                f"expected grad of shape {format_shape(expected)} (the convolution of the "
                f"input by the result shape {format_shape(weight)}), got {format_shape(grad)}"
            )
