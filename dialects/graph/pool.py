"""Pooling and resampling over NCHW: `graph.max_pool2d`, `graph.avg_pool2d`,
`graph.global_avg_pool2d` and `graph.upsample_nearest2d`; and the backward ops
of the two windowed pools, `graph.max_pool2d_backward` and
`graph.avg_pool2d_backward` (the other two differentiate with existing ops)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

from xdsl.dialects.builtin import I64, DenseArrayBase, TensorType, UnitAttr, f32
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from dialects.graph.shapes import (
    DEFAULT_DILATION,
    DEFAULT_PADDING,
    Shape,
    check_count,
    check_result,
    check_shape,
    check_tensor,
    check_window_options,
    format_shape,
)
from teeny_ir.ir.format import (
    OptionParser,
    OptionsFormatOp,
    i64_array,
    i64_array_prop,
    int_array_option,
    value_type,
)


def _check_nchw(input_shape: Sequence[int]) -> None:
    if len(input_shape) != 4:
        raise VerifyException(f"expected input of rank 4 [N, C, H, W], got rank {len(input_shape)}")
    check_shape(input_shape, "input", dynamic_batch=True)


def infer_pool2d_shape(
    input_shape: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    ceil_mode: bool,
) -> Shape:
    """Result shape ``[N, C, H_out, W_out]`` of `graph.max_pool2d` and `graph.avg_pool2d`.

    ``input_shape`` is ``[N, C, H, W]`` (N may be ``DYNAMIC_INDEX``); ``kernel``,
    ``strides`` and ``dilation`` are ``[height, width]``, ``padding`` is
    ``[top, left, bottom, right]``. Per spatial axis, with the dilated kernel
    ``dk = dilation * (kernel - 1) + 1`` and ``span = size + pad_begin + pad_end - dk``,
    ``out = floor(span / stride) + 1``, or with ``ceil_mode``
    ``out = ceil(span / stride) + 1`` less one if the last window would start at
    or past ``size + pad_begin`` (PyTorch's rule: every window starts inside the
    input or the begin padding). As PyTorch requires, each pad is at most
    ``kernel // 2`` (the undilated kernel); and ``dk`` must fit in the padded
    input, in ceil mode too (PyTorch lets ceil mode overhang by a little).
    Raises `VerifyException` naming the first violated rule.
    """
    _check_nchw(input_shape)
    check_count("kernel", kernel, 2)
    if min(kernel) < 1:
        raise VerifyException(f"expected kernel >= 1, got {list(kernel)}")
    check_window_options(strides, padding, dilation)

    spatial: list[int] = []
    axes = (("height", ("top", "bottom")), ("width", ("left", "right")))
    for index, (axis, sides) in enumerate(axes):
        size, kernel_, stride = input_shape[2 + index], kernel[index], strides[index]
        pad_begin, pad_end = padding[index], padding[index + 2]
        for side, pad in zip(sides, (pad_begin, pad_end), strict=True):
            if pad > kernel_ // 2:
                raise VerifyException(
                    f"padding {side} {pad} exceeds half the kernel {axis} {kernel_} "
                    "(PyTorch requires padding <= kernel // 2, whatever the dilation)"
                )
        dilated_kernel = dilation[index] * (kernel_ - 1) + 1
        padded_size = size + pad_begin + pad_end
        if dilated_kernel > padded_size:
            what = f"kernel {axis}" if dilation[index] == 1 else f"dilated kernel {axis}"
            raise VerifyException(
                f"{what} {dilated_kernel} exceeds padded input {axis} {padded_size}"
            )
        span = padded_size - dilated_kernel
        if not ceil_mode:
            spatial.append(span // stride + 1)
            continue
        out = -(-span // stride) + 1
        if (out - 1) * stride >= size + pad_begin:
            out -= 1
        spatial.append(out)
    return (input_shape[0], input_shape[1], *spatial)


def infer_global_avg_pool2d_shape(input_shape: Sequence[int]) -> Shape:
    """Result shape ``[N, C, 1, 1]`` of `graph.global_avg_pool2d` for ``[N, C, H, W]``."""
    _check_nchw(input_shape)
    return (input_shape[0], input_shape[1], 1, 1)


def infer_upsample_nearest2d_shape(input_shape: Sequence[int], scales: Sequence[int]) -> Shape:
    """Result shape ``[N, C, H * scale_h, W * scale_w]`` of `graph.upsample_nearest2d`."""
    _check_nchw(input_shape)
    check_count("scales", scales, 2)
    if min(scales) < 1:
        raise VerifyException(f"expected scales >= 1, got {list(scales)}")
    batch, channels, height, width = input_shape
    return (batch, channels, height * scales[0], width * scales[1])


_WINDOW_OPTIONS: Mapping[str, OptionParser] = {
    "kernel": int_array_option("kernel", 2),
    "strides": int_array_option("strides", 2),
    "padding": int_array_option("padding", 4, " [top, left, bottom, right]"),
}


class Pool2dOptionsOp(OptionsFormatOp):
    """The window options both pools share: ``kernel`` [KH, KW] (required), and,
    absent when default, ``strides`` (default: the kernel, as in PyTorch),
    ``padding`` [0, 0, 0, 0] (top, left, bottom, right) and the unit
    ``ceil_mode``. One f32 operand ``input`` [N, C, H, W] and one result."""

    input = operand_def(TensorType)
    result = result_def(TensorType)

    kernel_attr = prop_def(DenseArrayBase[I64], prop_name="kernel")
    strides_attr = opt_prop_def(DenseArrayBase[I64], prop_name="strides")
    padding_attr = i64_array_prop("padding", DEFAULT_PADDING)
    ceil_mode_attr = opt_prop_def(UnitAttr, prop_name="ceil_mode")

    traits = traits_def(Pure())

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        **_WINDOW_OPTIONS,
        "ceil_mode": lambda parser: UnitAttr(),
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("kernel",)

    @property
    def kernel(self) -> Shape:
        """Window size [height, width]."""
        return self.kernel_attr.get_values()

    @property
    def strides(self) -> Shape:
        """Effective strides [height, width]: the kernel when ``strides`` is absent."""
        return self.kernel if self.strides_attr is None else self.strides_attr.get_values()

    @property
    def padding(self) -> Shape:
        """Effective padding [top, left, bottom, right]."""
        return self.padding_attr.get_values()

    @property
    def ceil_mode(self) -> bool:
        """Whether partial windows hanging off the bottom/right edge produce outputs."""
        return self.ceil_mode_attr is not None

    @property
    def dilation(self) -> Shape:
        """Effective dilation [height, width]; [1, 1] unless the op declares one."""
        return DEFAULT_DILATION

    def verify_(self) -> None:
        shape = infer_pool2d_shape(
            check_tensor(self.input.type, "input"),
            self.kernel,
            self.strides,
            self.padding,
            self.dilation,
            self.ceil_mode,
        )
        check_tensor(self.result.type, "result")
        check_result(self.result, TensorType(f32, shape))


def _pool_properties(
    kernel: Sequence[int],
    strides: Sequence[int] | None,
    padding: Sequence[int] | None,
    ceil_mode: bool,
) -> dict[str, Attribute | None]:
    return {
        "kernel": i64_array(kernel),
        "strides": i64_array(strides),
        "padding": i64_array(padding),
        "ceil_mode": UnitAttr() if ceil_mode else None,
    }


def _pool_type(
    input: SSAValue | Operation,
    kernel: Sequence[int],
    strides: Sequence[int] | None,
    padding: Sequence[int] | None,
    dilation: Sequence[int] | None,
    ceil_mode: bool,
) -> TensorType:
    """The builders' result type; raises `VerifyException` on options that do not fit."""
    shape = infer_pool2d_shape(
        check_tensor(value_type(input), "input"),
        kernel,
        kernel if strides is None else strides,
        DEFAULT_PADDING if padding is None else padding,
        DEFAULT_DILATION if dilation is None else dilation,
        ceil_mode,
    )
    return TensorType(f32, shape)


@irdl_op_definition
class MaxPool2dOp(Pool2dOptionsOp):
    """2-D max pooling over NCHW, as ``torch.nn.functional.max_pool2d``::

        y[n, c, i, j] = max_{p, q} x_pad[n, c, i * stride_h + p * dilation_h,
                                            j * stride_w + q * dilation_w]

    where ``x_pad`` is the input padded with -inf by ``padding`` = [top, left,
    bottom, right] (and, in ceil mode, past the bottom/right edge for windows
    that hang off it), ``0 <= p < KH`` and ``0 <= q < KW``. Properties:
    ``kernel`` (required), and, absent when default, ``strides`` (the kernel),
    ``padding`` [0, 0, 0, 0], ``dilation`` [1, 1] and ``ceil_mode``. The result
    shape is `infer_pool2d_shape`. A window that covers only padding (possible
    with dilation, as in PyTorch) yields -inf.

        %y = graph.max_pool2d %x kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1]
            ceil_mode : (tensor<?x16x8x8xf32>) -> tensor<?x16x5x5xf32>
    """

    name = "graph.max_pool2d"

    dilation_attr = i64_array_prop("dilation", DEFAULT_DILATION)

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        **_WINDOW_OPTIONS,
        "dilation": int_array_option("dilation", 2),
        "ceil_mode": lambda parser: UnitAttr(),
    }

    def __init__(
        self,
        input: SSAValue | Operation,
        *,
        kernel: Sequence[int],
        strides: Sequence[int] | None = None,
        padding: Sequence[int] | None = None,
        dilation: Sequence[int] | None = None,
        ceil_mode: bool = False,
        result_type: TensorType | None = None,
    ):
        """Build a max pool; options left as None (or False) stay absent (default).

        Without ``result_type`` the result type is inferred, raising
        `VerifyException` if the options do not fit the input.
        """
        if result_type is None:
            result_type = _pool_type(input, kernel, strides, padding, dilation, ceil_mode)
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={
                **_pool_properties(kernel, strides, padding, ceil_mode),
                "dilation": i64_array(dilation),
            },
        )

    @property
    def dilation(self) -> Shape:
        """Effective dilation [height, width]."""
        return self.dilation_attr.get_values()


@irdl_op_definition
class AvgPool2dOp(Pool2dOptionsOp):
    """2-D average pooling over NCHW, as ``torch.nn.functional.avg_pool2d``
    (without ``divisor_override``)::

        y[n, c, i, j] = sum_{p, q} x_pad[n, c, i * stride_h + p, j * stride_w + q]
                        / divisor[i, j]

    where ``x_pad`` is the input zero-padded by ``padding`` = [top, left, bottom,
    right] (and, in ceil mode, past the bottom/right edge), ``0 <= p < KH``,
    ``0 <= q < KW``. With window start ``h0 = i * stride_h - top`` (and ``w0``
    likewise), ``divisor`` is the product over the two axes of the window
    length clipped, as PyTorch does, to::

        count_include_pad (default): min(h0 + KH, H + bottom) - h0
        exclude_pad:                 min(h0 + KH, H) - max(h0, 0)

    so padding counts, but a ceil-mode window's part past the end padding does
    not. Properties: ``kernel`` (required), and, absent when default,
    ``strides`` (the kernel), ``padding`` [0, 0, 0, 0], ``ceil_mode``, and the
    unit ``exclude_pad`` (PyTorch's ``count_include_pad=False``). The result
    shape is `infer_pool2d_shape` with dilation 1.

        %y = graph.avg_pool2d %x kernel [2, 2] padding [1, 1, 1, 1] exclude_pad
            : (tensor<?x16x8x8xf32>) -> tensor<?x16x5x5xf32>
    """

    name = "graph.avg_pool2d"

    exclude_pad_attr = opt_prop_def(UnitAttr, prop_name="exclude_pad")

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        **Pool2dOptionsOp.OPTIONS,
        "exclude_pad": lambda parser: UnitAttr(),
    }

    def __init__(
        self,
        input: SSAValue | Operation,
        *,
        kernel: Sequence[int],
        strides: Sequence[int] | None = None,
        padding: Sequence[int] | None = None,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        result_type: TensorType | None = None,
    ):
        """Build an average pool; options left as None, ``ceil_mode=False`` and
        ``count_include_pad=True`` (PyTorch's defaults) stay absent.

        Without ``result_type`` the result type is inferred, raising
        `VerifyException` if the options do not fit the input.
        """
        if result_type is None:
            result_type = _pool_type(input, kernel, strides, padding, None, ceil_mode)
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={
                **_pool_properties(kernel, strides, padding, ceil_mode),
                "exclude_pad": None if count_include_pad else UnitAttr(),
            },
        )

    @property
    def count_include_pad(self) -> bool:
        """Whether padding counts in the divisor (``exclude_pad`` absent)."""
        return self.exclude_pad_attr is None


@irdl_op_definition
class GlobalAvgPool2dOp(OptionsFormatOp):
    """Mean over the spatial dimensions of NCHW, as
    ``torch.nn.functional.adaptive_avg_pool2d(x, 1)``::

        y[n, c, 0, 0] = sum_{h, w} x[n, c, h, w] / (H * W)

    ``input`` [N, C, H, W] -> result [N, C, 1, 1] (`infer_global_avg_pool2d_shape`).

        %y = graph.global_avg_pool2d %x : (tensor<?x16x8x8xf32>) -> tensor<?x16x1x1xf32>
    """

    name = "graph.global_avg_pool2d"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, input: SSAValue | Operation, result_type: TensorType | None = None):
        """Build the op; without ``result_type`` it is inferred."""
        if result_type is None:
            shape = infer_global_avg_pool2d_shape(check_tensor(value_type(input), "input"))
            result_type = TensorType(f32, shape)
        super().__init__(operands=[input], result_types=[result_type])

    def verify_(self) -> None:
        shape = infer_global_avg_pool2d_shape(check_tensor(self.input.type, "input"))
        check_tensor(self.result.type, "result")
        check_result(self.result, TensorType(f32, shape))


@irdl_op_definition
class UpsampleNearest2dOp(OptionsFormatOp):
    """Nearest-neighbour upsampling of NCHW by integer factors, as
    ``torch.nn.functional.interpolate(x, scale_factor=(sh, sw), mode="nearest")``::

        y[n, c, i, j] = x[n, c, i // sh, j // sw]

    ``scales`` [sh, sw] (required, each >= 1); ``input`` [N, C, H, W] -> result
    [N, C, H * sh, W * sw] (`infer_upsample_nearest2d_shape`).

        %y = graph.upsample_nearest2d %x scales [2, 2]
            : (tensor<?x64x4x4xf32>) -> tensor<?x64x8x8xf32>
    """

    name = "graph.upsample_nearest2d"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    scales_attr = prop_def(DenseArrayBase[I64], prop_name="scales")

    traits = traits_def(Pure())

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        "scales": int_array_option("scales", 2),
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("scales",)

    def __init__(
        self,
        input: SSAValue | Operation,
        *,
        scales: Sequence[int],
        result_type: TensorType | None = None,
    ):
        """Build the op; without ``result_type`` it is inferred, raising
        `VerifyException` on bad scales or input."""
        if result_type is None:
            shape = infer_upsample_nearest2d_shape(check_tensor(value_type(input), "input"), scales)
            result_type = TensorType(f32, shape)
        super().__init__(
            operands=[input], result_types=[result_type], properties={"scales": i64_array(scales)}
        )

    @property
    def scales(self) -> Shape:
        """Integer scale factors [height, width]."""
        return self.scales_attr.get_values()

    def verify_(self) -> None:
        shape = infer_upsample_nearest2d_shape(check_tensor(self.input.type, "input"), self.scales)
        check_tensor(self.result.type, "result")
        check_result(self.result, TensorType(f32, shape))


# --- backward ops (the training stage) -------------------------------------------


class _PoolWindowProperties:
    """The effective window options of the pools' backward ops, read from their
    properties as `Pool2dOptionsOp` reads the forward's."""

    if TYPE_CHECKING:  # the ops' property definitions (IRDL rejects bare annotations)
        kernel_attr: DenseArrayBase[I64]
        strides_attr: DenseArrayBase[I64] | None
        padding_attr: DenseArrayBase[I64]
        ceil_mode_attr: UnitAttr | None

    @property
    def kernel(self) -> Shape:
        """Window size [height, width]."""
        return self.kernel_attr.get_values()

    @property
    def strides(self) -> Shape:
        """Effective strides [height, width]: the kernel when ``strides`` is absent."""
        return self.kernel if self.strides_attr is None else self.strides_attr.get_values()

    @property
    def padding(self) -> Shape:
        """Effective padding [top, left, bottom, right]."""
        return self.padding_attr.get_values()

    @property
    def ceil_mode(self) -> bool:
        """Whether partial windows hanging off the bottom/right edge produce outputs."""
        return self.ceil_mode_attr is not None


def _check_pool_grad(
    grad: SSAValue, input_shape: Sequence[int], op: MaxPool2dBackwardOp | AvgPool2dBackwardOp
) -> None:
    """Check that ``grad`` has the type of the forward pool's result for an input
    of ``input_shape`` and ``op``'s options."""
    shape = infer_pool2d_shape(
        input_shape, op.kernel, op.strides, op.padding, op.dilation, op.ceil_mode
    )
    grad_shape = check_tensor(grad.type, "grad")
    if grad_shape != shape:
        raise VerifyException(
            f"expected grad shape {format_shape(shape)} (the pool's result for input "
            f"{format_shape(input_shape)}), got {format_shape(grad_shape)}"
        )


@irdl_op_definition
class MaxPool2dBackwardOp(_PoolWindowProperties, OptionsFormatOp):
    """The input gradient of `graph.max_pool2d`, as PyTorch's
    ``max_pool2d_with_indices_backward``: each output's gradient goes to the
    position of its window's maximum, and the gradients that land on one input
    position (overlapping windows) add up::

        dx[n, c, h, w] = sum_{i, j : argmax[n, c, i, j] = (h, w)} dy[n, c, i, j]

    ``argmax`` scans each window's taps inside the input (never the padding) in
    row-major order and keeps the FIRST maximum on ties; a NaN is taken as the
    maximum (the last NaN of a window wins), as PyTorch's CPU kernel does. A
    window that covers only padding (possible with dilation) passes no gradient.

    Operands: ``input`` (the forward input x [N, C, H, W]) and ``grad`` (dy, of
    the forward result's type); the properties are the forward pool's
    (``kernel``, and, absent when default, ``strides``, ``padding``,
    ``dilation``, ``ceil_mode``). The result dx has ``input``'s type.

        %dx = graph.max_pool2d_backward %x, %dy kernel [3, 3] strides [2, 2]
            padding [1, 1, 1, 1] ceil_mode
            : (tensor<?x16x8x8xf32>, tensor<?x16x5x5xf32>) -> tensor<?x16x8x8xf32>
    """

    name = "graph.max_pool2d_backward"

    input = operand_def(TensorType)
    grad = operand_def(TensorType)
    result = result_def(TensorType)

    kernel_attr = prop_def(DenseArrayBase[I64], prop_name="kernel")
    strides_attr = opt_prop_def(DenseArrayBase[I64], prop_name="strides")
    padding_attr = i64_array_prop("padding", DEFAULT_PADDING)
    dilation_attr = i64_array_prop("dilation", DEFAULT_DILATION)
    ceil_mode_attr = opt_prop_def(UnitAttr, prop_name="ceil_mode")

    traits = traits_def(Pure())

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = MaxPool2dOp.OPTIONS
    REQUIRED: ClassVar[tuple[str, ...]] = ("kernel",)

    def __init__(
        self,
        input: SSAValue | Operation,
        grad: SSAValue | Operation,
        *,
        kernel: Sequence[int],
        strides: Sequence[int] | None = None,
        padding: Sequence[int] | None = None,
        dilation: Sequence[int] | None = None,
        ceil_mode: bool = False,
    ):
        """Build the backward of a max pool with these options (None or False:
        absent); the result has ``input``'s type."""
        super().__init__(
            operands=[input, grad],
            result_types=[value_type(input)],
            properties={
                **_pool_properties(kernel, strides, padding, ceil_mode),
                "dilation": i64_array(dilation),
            },
        )

    @classmethod
    def of(cls, op: MaxPool2dOp, input: SSAValue, grad: SSAValue) -> MaxPool2dBackwardOp:
        """The backward of the forward ``op``, with its options as written."""
        backward = cls(input, grad, kernel=op.kernel)
        backward.properties.update(
            {name: op.properties[name] for name in cls.OPTIONS if name in op.properties}
        )
        return backward

    @property
    def dilation(self) -> Shape:
        """Effective dilation [height, width]."""
        return self.dilation_attr.get_values()

    def verify_(self) -> None:
        input_shape = check_tensor(self.input.type, "input")
        _check_nchw(input_shape)
        _check_pool_grad(self.grad, input_shape, self)
        check_tensor(self.result.type, "result")
        check_result(self.result, self.input.type)


@irdl_op_definition
class AvgPool2dBackwardOp(_PoolWindowProperties, OptionsFormatOp):
    """The input gradient of `graph.avg_pool2d`, as PyTorch's
    ``avg_pool2d_backward``: each output's gradient, divided by its window's
    divisor (see `AvgPool2dOp`: ``count_include_pad`` / ``exclude_pad`` and the
    ceil-mode clipping), is spread over the window's taps inside the input::

        dx[n, c, h, w] = sum_{i, j : (h, w) in window(i, j)} dy[n, c, i, j] / divisor[i, j]

    The only operand is ``grad`` (dy, of the forward result's type): the
    gradient does not depend on x, whose type is the result's. The properties
    are the forward pool's (``kernel``, and, absent when default, ``strides``,
    ``padding``, ``ceil_mode``, ``exclude_pad``); the verifier checks that the
    pool of an input of the result's type has ``grad``'s type.

        %dx = graph.avg_pool2d_backward %dy kernel [2, 2] padding [1, 1, 1, 1]
            exclude_pad : (tensor<?x16x5x5xf32>) -> tensor<?x16x8x8xf32>
    """

    name = "graph.avg_pool2d_backward"

    grad = operand_def(TensorType)
    result = result_def(TensorType)

    kernel_attr = prop_def(DenseArrayBase[I64], prop_name="kernel")
    strides_attr = opt_prop_def(DenseArrayBase[I64], prop_name="strides")
    padding_attr = i64_array_prop("padding", DEFAULT_PADDING)
    ceil_mode_attr = opt_prop_def(UnitAttr, prop_name="ceil_mode")
    exclude_pad_attr = opt_prop_def(UnitAttr, prop_name="exclude_pad")

    traits = traits_def(Pure())

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = AvgPool2dOp.OPTIONS
    REQUIRED: ClassVar[tuple[str, ...]] = ("kernel",)

    @property
    def dilation(self) -> Shape:
        """Always [1, 1]: average pools take no dilation."""
        return DEFAULT_DILATION

    def __init__(
        self,
        grad: SSAValue | Operation,
        input_type: TensorType,
        *,
        kernel: Sequence[int],
        strides: Sequence[int] | None = None,
        padding: Sequence[int] | None = None,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ):
        """Build the backward of an average pool whose input has ``input_type``
        (options as `AvgPool2dOp`'s; defaults stay absent)."""
        super().__init__(
            operands=[grad],
            result_types=[input_type],
            properties={
                **_pool_properties(kernel, strides, padding, ceil_mode),
                "exclude_pad": None if count_include_pad else UnitAttr(),
            },
        )

    @classmethod
    def of(cls, op: AvgPool2dOp, grad: SSAValue) -> AvgPool2dBackwardOp:
        """The backward of the forward ``op``, with its options as written."""
        input_type = op.input.type
        assert isinstance(input_type, TensorType)
        backward = cls(grad, input_type, kernel=op.kernel)
        backward.properties.update(
            {name: op.properties[name] for name in cls.OPTIONS if name in op.properties}
        )
        return backward

    @property
    def count_include_pad(self) -> bool:
        """Whether padding counts in the divisor (``exclude_pad`` absent)."""
        return self.exclude_pad_attr is None

    def verify_(self) -> None:
        input_shape = check_tensor(self.result.type, "result")
        _check_nchw(input_shape)
        _check_pool_grad(self.grad, input_shape, self)
