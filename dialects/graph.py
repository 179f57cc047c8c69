"""The `graph` dialect: whole-tensor neural-network ops, teeny_ir's input language.

Values are builtin ``tensor<...xf32>`` types. Only dimension 0 (the batch) of an
activation may be dynamic (``?``, xDSL's ``DYNAMIC_INDEX``); parameters are fully
static, and every dimension size is at least 1. Each op verifies its operands and
checks its result type against the inferred one. The shape rules are the pure
functions `infer_conv2d_shape` and `broadcast_shapes`, which the builder API uses too.

Every op is pure (no memory effects), so `cse` and `dce` apply to graph programs.
Optional properties are absent when they hold their default; the custom assembly
format prints only the properties that are present, so text round-trips exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar, Self

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    I64,
    DenseArrayBase,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    NoneAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
    f64,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_result_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from dialects.derive import DerivationAttr
from teeny_ir.derivations import Derivation

if TYPE_CHECKING:
    from xdsl.parser import Parser
    from xdsl.printer import Printer

Shape = tuple[int, ...]

DEFAULT_STRIDES: Shape = (1, 1)
DEFAULT_PADDING: Shape = (0, 0, 0, 0)
DEFAULT_DILATION: Shape = (1, 1)
DEFAULT_GROUPS = 1
DEFAULT_EPS = 1e-5
DEFAULT_MOMENTUM = 0.1

_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


# Shape rules: pure functions shared by the verifiers and the builder API.


def _format_shape(shape: Sequence[int]) -> str:
    """Render a shape for messages: ``[?, 3, 8, 8]``."""
    return "[" + ", ".join("?" if d == DYNAMIC_INDEX else str(d) for d in shape) + "]"


def _check_shape(shape: Sequence[int], what: str, *, dynamic_batch: bool) -> None:
    """Raise unless every size is >= 1, or ``?`` at dimension 0 where allowed."""
    for index, size in enumerate(shape):
        if size == DYNAMIC_INDEX:
            if not dynamic_batch:
                raise VerifyException(
                    f"expected {what} to be fully static, got shape {_format_shape(shape)}"
                )
            if index != 0:
                raise VerifyException(
                    f"{what} has a dynamic dimension {index}: "
                    "only the batch dimension (0) may be dynamic"
                )
        elif size < 1:
            raise VerifyException(
                f"{what} has dimension {index} of size {size}: sizes must be >= 1"
            )


def _check_tensor(type_: Attribute, what: str, *, dynamic_batch: bool = True) -> Shape:
    """Check that ``type_`` is an f32 tensor obeying the shape policy; return its shape."""
    if not isinstance(type_, TensorType):
        raise VerifyException(f"expected {what} to be a tensor, got {type_}")
    element_type: Attribute = type_.element_type
    if not isinstance(element_type, Float32Type):
        raise VerifyException(
            f"unsupported dtype {element_type} for {what}: graph ops take f32 tensors"
        )
    if type_.encoding != NoneAttr():
        raise VerifyException(f"expected {what} to have no tensor encoding")
    shape = type_.get_shape()
    _check_shape(shape, what, dynamic_batch=dynamic_batch)
    return shape


def _check_result(result: SSAValue, expected: Attribute) -> None:
    if result.type != expected:
        raise VerifyException(f"expected result type {expected}, got {result.type}")


def _check_count(name: str, values: Sequence[int], count: int, layout: str = "") -> None:
    if len(values) != count:
        raise VerifyException(f"expected {count} values for {name}{layout}, got {len(values)}")


def infer_conv2d_shape(
    input_shape: Sequence[int],
    weight_shape: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> Shape:
    """Result shape ``[N, C_out, H_out, W_out]`` of `graph.conv2d`.

    ``input_shape`` is ``[N, C_in, H, W]`` (N may be ``DYNAMIC_INDEX``),
    ``weight_shape`` is ``[C_out, C_in / groups, KH, KW]`` (static), ``strides``
    and ``dilation`` are ``[height, width]``, ``padding`` is
    ``[top, left, bottom, right]``. Per spatial axis,
    ``out = (size + pad_begin + pad_end - (dilation * (kernel - 1) + 1)) // stride + 1``.
    Raises `VerifyException` naming the first violated rule.
    """
    if len(input_shape) != 4:
        raise VerifyException(
            f"expected input of rank 4 [N, C_in, H, W], got rank {len(input_shape)}"
        )
    if len(weight_shape) != 4:
        raise VerifyException(
            "expected weight of rank 4 [C_out, C_in / groups, KH, KW], "
            f"got rank {len(weight_shape)}"
        )
    _check_shape(input_shape, "input", dynamic_batch=True)
    _check_shape(weight_shape, "weight", dynamic_batch=False)
    _check_count("strides", strides, 2)
    _check_count("padding", padding, 4, " [top, left, bottom, right]")
    _check_count("dilation", dilation, 2)
    if min(strides) < 1:
        raise VerifyException(f"expected strides >= 1, got {list(strides)}")
    if min(dilation) < 1:
        raise VerifyException(f"expected dilation >= 1, got {list(dilation)}")
    if min(padding) < 0:
        raise VerifyException(f"expected padding >= 0, got {list(padding)}")
    if groups < 1:
        raise VerifyException(f"expected groups >= 1, got {groups}")

    batch, in_channels, height, width = input_shape
    out_channels, group_channels, kernel_h, kernel_w = weight_shape
    if in_channels % groups:
        raise VerifyException(f"expected C_in = {in_channels} to be divisible by groups = {groups}")
    if out_channels % groups:
        raise VerifyException(
            f"expected C_out = {out_channels} to be divisible by groups = {groups}"
        )
    if group_channels != in_channels // groups:
        raise VerifyException(
            "expected weight dim 1 to be C_in / groups = "
            f"{in_channels // groups}, got {group_channels}"
        )

    spatial: list[int] = []
    axes = (
        ("height", height, kernel_h, strides[0], dilation[0], padding[0], padding[2]),
        ("width", width, kernel_w, strides[1], dilation[1], padding[1], padding[3]),
    )
    for axis, size, kernel, stride, dilation_, pad_begin, pad_end in axes:
        dilated_kernel = dilation_ * (kernel - 1) + 1
        padded_size = size + pad_begin + pad_end
        if dilated_kernel > padded_size:
            raise VerifyException(
                f"dilated kernel {axis} {dilated_kernel} exceeds padded input {axis} {padded_size}"
            )
        spatial.append((padded_size - dilated_kernel) // stride + 1)
    return (batch, out_channels, *spatial)


def broadcast_shapes(lhs: Sequence[int], rhs: Sequence[int]) -> Shape:
    """Numpy broadcasting of two shapes, with a dynamic batch dimension.

    Shapes are aligned on their trailing dimensions; a size 1 stretches to the
    other size. ``?`` broadcasts with 1 or ``?`` to ``?``; ``?`` against a static
    size other than 1 is an error (the batch size is unknown until run time), and
    so is a result whose ``?`` would land anywhere but dimension 0.
    """
    _check_shape(lhs, f"shape {_format_shape(lhs)}", dynamic_batch=True)
    _check_shape(rhs, f"shape {_format_shape(rhs)}", dynamic_batch=True)
    shapes = f"{_format_shape(lhs)} and {_format_shape(rhs)}"
    rank = max(len(lhs), len(rhs))
    padded_lhs = (1,) * (rank - len(lhs)) + tuple(lhs)
    padded_rhs = (1,) * (rank - len(rhs)) + tuple(rhs)
    result: list[int] = []
    for index, (left, right) in enumerate(zip(padded_lhs, padded_rhs, strict=True)):
        if left == right or right == 1:
            size = left
        elif left == 1:
            size = right
        elif DYNAMIC_INDEX in (left, right):
            static = right if left == DYNAMIC_INDEX else left
            raise VerifyException(
                f"cannot broadcast dynamic dimension against static size {static} (shapes {shapes})"
            )
        else:
            raise VerifyException(
                f"cannot broadcast shapes {shapes}: sizes {left} and {right} "
                f"differ at result dimension {index}"
            )
        if size == DYNAMIC_INDEX and index != 0:
            raise VerifyException(
                f"cannot broadcast shapes {shapes}: the dynamic batch dimension "
                f"would land at result dimension {index}"
            )
        result.append(size)
    return tuple(result)


# Assembly format. Parse errors go through `parser.raise_error`, so they are located.

OptionParser = Callable[["Parser"], Attribute]


def _parse_i64(parser: Parser) -> int:
    start = parser.pos
    value = parser.parse_integer(allow_boolean=False)
    if not _I64_MIN <= value <= _I64_MAX:
        parser.raise_error(f"integer {value} does not fit in i64", start, parser.pos)
    return value


def _int_array_option(name: str, count: int, layout: str = "") -> OptionParser:
    """Parser for ``[a, b, ...]`` holding exactly ``count`` i64 values."""

    def parse(parser: Parser) -> Attribute:
        start = parser.pos
        values = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: _parse_i64(parser)
        )
        if len(values) != count:
            parser.raise_error(
                f"expected {count} values for {name}{layout}, got {len(values)}",
                start,
                parser.pos,
            )
        return DenseArrayBase.from_list(i64, values)

    return parse


def _parse_options(parser: Parser, options: Mapping[str, OptionParser]) -> dict[str, Attribute]:
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


def _print_options(printer: Printer, op: Operation, names: Collection[str]) -> None:
    """Print the present properties among ``names`` as ``keyword value`` pairs."""
    for name in names:
        value = op.properties.get(name)
        if value is None:
            continue
        printer.print_string(f" {name}")
        if isinstance(value, DenseArrayBase):
            printer.print_string(f" {list(value.get_values())}")
        elif isinstance(value, IntegerAttr):
            printer.print_string(f" {value.value.data}")
        elif isinstance(value, FloatAttr):
            printer.print_string(" ")
            printer.print_float(value.value.data, f64)
        elif isinstance(value, StringAttr):
            printer.print_string(f" {value.data}")  # identifiers from a fixed set
        elif not isinstance(value, UnitAttr):
            printer.print_string(" ")
            printer.print_attribute(value)
        # A UnitAttr (``training``) is the keyword alone.


def _parse_attr_dict(parser: Parser, reserved: Collection[str]) -> dict[str, Attribute]:
    """Parse an optional discardable-attribute dictionary (``attr-dict``)."""
    attributes = parser.parse_optional_attr_dict_with_reserved_attr_names(reserved)
    return {} if attributes is None else dict(attributes.data)


def _parse_utf8_literal(parser: Parser, what: str) -> str:
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


def _parse_tensor_type(parser: Parser) -> TensorType:
    start = parser.pos
    type_ = parser.parse_type()
    if not isinstance(type_, TensorType):
        parser.raise_error(f"expected a tensor type, got {type_}", start, parser.pos)
    return type_


class _OptionsFormatOp(IRDLOperation):
    """Shared assembly format of ops whose signature is a function type:

        %r = graph.op %a, %b (keyword value)* attr-dict : (type, type) -> type

    ``OPTIONS`` maps each property keyword to its value parser; present
    properties print in that order. Operand and result counts are left to the
    verifier, as in the generic form.
    """

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {}

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        operands = parser.parse_comma_separated_list(
            parser.Delimiter.NONE, parser.parse_unresolved_operand
        )
        properties = _parse_options(parser, cls.OPTIONS)
        attributes = _parse_attr_dict(parser, cls.OPTIONS)
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

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        _print_options(printer, self, self.OPTIONS)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_function_type(self.operand_types, self.result_types)


def _value_type(value: SSAValue | Operation) -> Attribute:
    return SSAValue.get(value).type


def _i64_array_prop(name: str, default: Sequence[int]) -> DenseArrayBase[I64]:
    """An optional i64-array property named ``name``, reading as ``default`` when absent."""
    return opt_prop_def(DenseArrayBase[I64], DenseArrayBase.from_list(i64, default), prop_name=name)


def _i64_array(values: Sequence[int] | None) -> Attribute | None:
    return None if values is None else DenseArrayBase.from_list(i64, values)


def _f64(value: float | None) -> Attribute | None:
    return None if value is None else FloatAttr(value, f64)


# Ops


@irdl_op_definition
class ParamOp(IRDLOperation):
    """A model parameter, bound at run time to the weight of the same name.

    ``param_name`` is the dotted PyTorch state-dict key (non-empty, any
    characters); the result is that weight, a fully static f32 tensor.

        %w = graph.param "model.0.conv.weight" : tensor<16x3x3x3xf32>
    """

    name = "graph.param"

    param_name = prop_def(StringAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, param_name: str | StringAttr, result_type: TensorType):
        if isinstance(param_name, str):
            param_name = StringAttr(param_name)
        super().__init__(properties={"param_name": param_name}, result_types=[result_type])

    def verify_(self) -> None:
        if not self.param_name.data:
            raise VerifyException("expected a non-empty parameter name")
        _check_tensor(self.result.type, "parameter", dynamic_batch=False)

    @classmethod
    def parse(cls, parser: Parser) -> ParamOp:
        param_name = _parse_utf8_literal(parser, "parameter name")
        attributes = _parse_attr_dict(parser, ["param_name"])
        parser.parse_punctuation(":")
        op = cls(param_name, _parse_tensor_type(parser))
        op.attributes.update(attributes)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.param_name.data)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class Conv2dOp(_OptionsFormatOp):
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

    strides_attr = _i64_array_prop("strides", DEFAULT_STRIDES)
    padding_attr = _i64_array_prop("padding", DEFAULT_PADDING)
    dilation_attr = _i64_array_prop("dilation", DEFAULT_DILATION)
    groups_attr = opt_prop_def(
        IntegerAttr[I64], IntegerAttr(DEFAULT_GROUPS, i64), prop_name="groups"
    )

    traits = traits_def(Pure())

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        "strides": _int_array_option("strides", 2),
        "padding": _int_array_option("padding", 4, " [top, left, bottom, right]"),
        "dilation": _int_array_option("dilation", 2),
        "groups": lambda parser: IntegerAttr(_parse_i64(parser), i64),
    }

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
            shape = infer_conv2d_shape(
                _check_tensor(_value_type(input), "input"),
                _check_tensor(_value_type(weight), "weight", dynamic_batch=False),
                DEFAULT_STRIDES if strides is None else strides,
                DEFAULT_PADDING if padding is None else padding,
                DEFAULT_DILATION if dilation is None else dilation,
                DEFAULT_GROUPS if groups is None else groups,
            )
            result_type = TensorType(f32, shape)
        super().__init__(
            operands=[input, weight, bias],
            result_types=[result_type],
            properties={
                "strides": _i64_array(strides),
                "padding": _i64_array(padding),
                "dilation": _i64_array(dilation),
                "groups": None if groups is None else IntegerAttr(groups, i64),
            },
        )

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

    def verify_(self) -> None:
        shape = infer_conv2d_shape(
            _check_tensor(self.input.type, "input"),
            _check_tensor(self.weight.type, "weight", dynamic_batch=False),
            self.strides,
            self.padding,
            self.dilation,
            self.groups,
        )
        if self.bias is not None:
            bias_shape = _check_tensor(self.bias.type, "bias", dynamic_batch=False)
            if bias_shape != (shape[1],):
                raise VerifyException(
                    f"expected bias shape [{shape[1]}], got {_format_shape(bias_shape)}"
                )
        _check_tensor(self.result.type, "result")
        _check_result(self.result, TensorType(f32, shape))


@irdl_op_definition
class BatchNormOp(_OptionsFormatOp):
    """Batch normalisation over dimension 1 of ``input`` [N, C, ...], PyTorch style.

    Operands: ``input``, then ``gamma``, ``beta``, ``running_mean`` and
    ``running_var``, each [C]. Optional properties: ``eps`` (f64, default 1e-5,
    finite and > 0), ``momentum`` (f64, default 0.1, in [0, 1]), and the unit
    ``training``.

    Inference (``training`` absent): one result, of ``input``'s type::

        y = (x - running_mean) / sqrt(running_var + eps) * gamma + beta

    Training (``training`` present): the same formula with the batch mean and
    the biased batch variance, taken over every dimension but 1, instead of the
    running statistics; and two more results, the updated running statistics
    (``tensor<Cxf32>`` each)::

        running_mean' = (1 - momentum) * running_mean + momentum * batch_mean
        running_var'  = (1 - momentum) * running_var + momentum * unbiased_batch_var

        %y = graph.batch_norm %x, %g, %b, %m, %v eps 1.000000e-03
            : (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>,
               tensor<16xf32>, tensor<16xf32>) -> tensor<?x16x8x8xf32>
    """

    name = "graph.batch_norm"

    input = operand_def(TensorType)
    gamma = operand_def(TensorType)
    beta = operand_def(TensorType)
    running_mean = operand_def(TensorType)
    running_var = operand_def(TensorType)
    result = result_def(TensorType)
    updated_running_stats = var_result_def(TensorType)
    """Training mode only: the updated running mean, then the updated running var."""

    eps_attr = opt_prop_def(FloatAttr[Float64Type], FloatAttr(DEFAULT_EPS, f64), prop_name="eps")
    momentum_attr = opt_prop_def(
        FloatAttr[Float64Type], FloatAttr(DEFAULT_MOMENTUM, f64), prop_name="momentum"
    )
    training_attr = opt_prop_def(UnitAttr, prop_name="training")

    traits = traits_def(Pure())

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        "eps": lambda parser: FloatAttr(parser.parse_float(), f64),
        "momentum": lambda parser: FloatAttr(parser.parse_float(), f64),
        "training": lambda parser: UnitAttr(),
    }

    def __init__(
        self,
        input: SSAValue | Operation,
        gamma: SSAValue | Operation,
        beta: SSAValue | Operation,
        running_mean: SSAValue | Operation,
        running_var: SSAValue | Operation,
        *,
        eps: float | None = None,
        momentum: float | None = None,
        training: bool = False,
    ):
        """Build a batch norm; ``eps`` and ``momentum`` left as None stay absent.

        Result types: ``input``'s type, then in training mode the types of
        ``running_mean`` and ``running_var``.
        """
        stats = [running_mean, running_var] if training else []
        super().__init__(
            operands=[input, gamma, beta, running_mean, running_var],
            result_types=[_value_type(input), [_value_type(v) for v in stats]],
            properties={
                "eps": _f64(eps),
                "momentum": _f64(momentum),
                "training": UnitAttr() if training else None,
            },
        )

    @property
    def eps(self) -> float:
        """Effective epsilon added to the variance."""
        return self.eps_attr.value.data

    @property
    def momentum(self) -> float:
        """Effective running-statistics momentum (PyTorch convention)."""
        return self.momentum_attr.value.data

    @property
    def training(self) -> bool:
        """Whether the op normalises with batch statistics and updates running ones."""
        return self.training_attr is not None

    def verify_(self) -> None:
        input_shape = _check_tensor(self.input.type, "input")
        if len(input_shape) < 2:
            raise VerifyException(
                f"expected input of rank >= 2 [N, C, ...], got rank {len(input_shape)}"
            )
        channels = input_shape[1]
        per_channel = (
            ("gamma", self.gamma),
            ("beta", self.beta),
            ("running_mean", self.running_mean),
            ("running_var", self.running_var),
        )
        for what, value in per_channel:
            shape = _check_tensor(value.type, what, dynamic_batch=False)
            if shape != (channels,):
                raise VerifyException(
                    f"expected {what} shape [{channels}], got {_format_shape(shape)}"
                )
        if not (math.isfinite(self.eps) and self.eps > 0):
            raise VerifyException(f"expected eps to be finite and > 0, got {self.eps}")
        if not 0 <= self.momentum <= 1:
            raise VerifyException(f"expected momentum in [0, 1], got {self.momentum}")
        _check_result(self.result, self.input.type)
        stats = self.updated_running_stats
        if not self.training:
            if stats:
                raise VerifyException(f"expected 1 result in inference mode, got {len(stats) + 1}")
            return
        if len(stats) != 2:
            raise VerifyException(
                "expected 3 results (y, running mean, running var) in training mode, "
                f"got {len(stats) + 1}"
            )
        stats_type = TensorType(f32, [channels])
        for what, value in zip(("mean", "var"), stats, strict=True):
            if value.type != stats_type:
                raise VerifyException(
                    f"expected updated running {what} type {stats_type}, got {value.type}"
                )


@irdl_op_definition
class SiluOp(IRDLOperation):
    """Elementwise SiLU (swish): ``y = x * sigmoid(x) = x / (1 + exp(-x))``.

    %y = graph.silu %x : tensor<?x16x8x8xf32>
    """

    name = "graph.silu"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, input: SSAValue | Operation):
        super().__init__(operands=[input], result_types=[_value_type(input)])

    def verify_(self) -> None:
        _check_tensor(self.input.type, "input")
        _check_result(self.result, self.input.type)

    @classmethod
    def parse(cls, parser: Parser) -> SiluOp:
        operand = parser.parse_unresolved_operand()
        attributes = _parse_attr_dict(parser, ())
        parser.parse_punctuation(":")
        op = cls(parser.resolve_operand(operand, _parse_tensor_type(parser)))
        op.attributes.update(attributes)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.input.type)


@irdl_op_definition
class AddOp(_OptionsFormatOp):
    """Elementwise ``lhs + rhs`` with numpy broadcasting (see `broadcast_shapes`).

    %z = graph.add %a, %b : (tensor<?x16x8x8xf32>, tensor<16x1x1xf32>)
        -> tensor<?x16x8x8xf32>
    """

    name = "graph.add"

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
        """Build an add; without ``result_type`` the broadcast type is inferred."""
        if result_type is None:
            shape = broadcast_shapes(
                _check_tensor(_value_type(lhs), "lhs"),
                _check_tensor(_value_type(rhs), "rhs"),
            )
            result_type = TensorType(f32, shape)
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def verify_(self) -> None:
        shape = broadcast_shapes(
            _check_tensor(self.lhs.type, "lhs"), _check_tensor(self.rhs.type, "rhs")
        )
        _check_tensor(self.result.type, "result")
        _check_result(self.result, TensorType(f32, shape))


ACTIVATIONS = ("silu", "relu", "sigmoid")
"""Epilogue activations of `FusedConv2dOp` (absent: none)."""
CONV_ALGORITHMS = ("gemm", "depthwise", "implicit-gemm")
"""Values of `FusedConv2dOp`'s ``algorithm``, chosen by select-conv-algorithm."""


def _keyword_option(name: str, choices: Sequence[str]) -> OptionParser:
    def parse(parser: Parser) -> Attribute:
        start = parser.pos
        word = parser.parse_optional_identifier() or parser.parse_optional_str_literal()
        if word is None or word not in choices:
            parser.raise_error(
                f"expected {name} to be one of {', '.join(choices)}", start, parser.pos
            )
        return StringAttr(word)

    return parse


def _derivation_option(name: str) -> OptionParser:
    def parse(parser: Parser) -> Attribute:
        start = parser.pos
        attr = parser.parse_attribute()
        if not isinstance(attr, DerivationAttr):
            parser.raise_error(f"expected {name} to be a #derive.param<...>", start, parser.pos)
        return attr

    return parse


def is_gemm_conv(
    weight_shape: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> bool:
    """1x1 kernel, stride 1, no padding, dilation 1, one group: a plain GEMM."""
    return (
        tuple(weight_shape[2:]) == (1, 1)
        and tuple(strides) == (1, 1)
        and tuple(padding) == (0, 0, 0, 0)
        and tuple(dilation) == (1, 1)
        and groups == 1
    )


@irdl_op_definition
class FusedConv2dOp(_OptionsFormatOp):
    """A convolution with its per-channel epilogue, made by fuse-conv-bn-act::

        y[n, o, i, j] = act(scale[o] * conv2d(x, w)[n, o, i, j] + shift[o])

    ``conv2d`` is `Conv2dOp` without bias (same options and shape rule). ``scale``
    and ``shift`` are derivations (``#derive.param<...>``, evaluated by
    `teeny_ir.derivations.evaluate`) of shape [C_out]: an inference BN fold
    gives ``bn_scale``/``bn_shift`` (a conv bias folded into the shift), a bias
    alone ``fill(1.0)``/``identity(bias)``. ``activation`` is silu, relu or
    sigmoid (absent: none). select-conv-algorithm sets ``algorithm`` (gemm,
    depthwise, implicit-gemm) and ``tiles`` [BLOCK_M, BLOCK_N, BLOCK_K].

        %y = graph.fused_conv2d %x, %w scale #derive.param<...>
            shift #derive.param<...> activation silu algorithm gemm
            tiles [64, 64, 16] : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>)
            -> tensor<?x16x4x4xf32>
    """

    name = "graph.fused_conv2d"

    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    result = result_def(TensorType)

    strides_attr = _i64_array_prop("strides", DEFAULT_STRIDES)
    padding_attr = _i64_array_prop("padding", DEFAULT_PADDING)
    dilation_attr = _i64_array_prop("dilation", DEFAULT_DILATION)
    groups_attr = opt_prop_def(
        IntegerAttr[I64], IntegerAttr(DEFAULT_GROUPS, i64), prop_name="groups"
    )
    scale = prop_def(DerivationAttr)
    shift = prop_def(DerivationAttr)
    activation_attr = opt_prop_def(StringAttr, prop_name="activation")
    algorithm_attr = opt_prop_def(StringAttr, prop_name="algorithm")
    tiles_attr = opt_prop_def(DenseArrayBase[I64], prop_name="tiles")

    traits = traits_def(Pure())

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        **Conv2dOp.OPTIONS,
        "scale": _derivation_option("scale"),
        "shift": _derivation_option("shift"),
        "activation": _keyword_option("activation", ACTIVATIONS),
        "algorithm": _keyword_option("algorithm", CONV_ALGORITHMS),
        "tiles": _int_array_option("tiles", 3, " [BLOCK_M, BLOCK_N, BLOCK_K]"),
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
        result_type: TensorType | None = None,
    ):
        """Build a fused convolution; options left as None stay absent (default)."""
        if result_type is None:
            shape = infer_conv2d_shape(
                _check_tensor(_value_type(input), "input"),
                _check_tensor(_value_type(weight), "weight", dynamic_batch=False),
                DEFAULT_STRIDES if strides is None else strides,
                DEFAULT_PADDING if padding is None else padding,
                DEFAULT_DILATION if dilation is None else dilation,
                DEFAULT_GROUPS if groups is None else groups,
            )
            result_type = TensorType(f32, shape)
        super().__init__(
            operands=[input, weight],
            result_types=[result_type],
            properties={
                "strides": _i64_array(strides),
                "padding": _i64_array(padding),
                "dilation": _i64_array(dilation),
                "groups": None if groups is None else IntegerAttr(groups, i64),
                "scale": DerivationAttr(scale),
                "shift": DerivationAttr(shift),
                "activation": None if activation is None else StringAttr(activation),
            },
        )

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

    @property
    def activation(self) -> str:
        """The epilogue activation, or "none"."""
        return "none" if self.activation_attr is None else self.activation_attr.data

    @property
    def algorithm(self) -> str | None:
        return None if self.algorithm_attr is None else self.algorithm_attr.data

    @property
    def tiles(self) -> Shape | None:
        return None if self.tiles_attr is None else self.tiles_attr.get_values()

    def verify_(self) -> None:
        weight_shape = _check_tensor(self.weight.type, "weight", dynamic_batch=False)
        shape = infer_conv2d_shape(
            _check_tensor(self.input.type, "input"),
            weight_shape,
            self.strides,
            self.padding,
            self.dilation,
            self.groups,
        )
        _check_tensor(self.result.type, "result")
        _check_result(self.result, TensorType(f32, shape))
        for name, attr in (("scale", self.scale), ("shift", self.shift)):
            if attr.data.shape != (shape[1],):
                raise VerifyException(
                    f"expected {name} of shape [{shape[1]}], got {list(attr.data.shape)}"
                )
        if self.activation_attr is not None and self.activation not in ACTIVATIONS:
            raise VerifyException(
                f"expected activation to be one of {', '.join(ACTIVATIONS)}, got '{self.activation}'"
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
        _check_count("tiles", tiles, 3, " [BLOCK_M, BLOCK_N, BLOCK_K]")
        if any(t < 1 or t & (t - 1) for t in tiles):
            raise VerifyException(f"expected tiles to be powers of two, got {list(tiles)}")
        if self.algorithm == "gemm" and not is_gemm_conv(
            weight_shape, self.strides, self.padding, self.dilation, self.groups
        ):
            raise VerifyException(
                "algorithm 'gemm' needs a 1x1 kernel, stride 1, no padding, dilation 1 and one group"
            )


Graph = Dialect("graph", [ParamOp, Conv2dOp, BatchNormOp, SiluOp, AddOp, FusedConv2dOp], [])
