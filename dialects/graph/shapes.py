"""Shape rules of the graph dialect: pure functions shared by the verifiers, the
builders and the passes.

Only dimension 0 (the batch) of an activation may be dynamic (``?``, xDSL's
``DYNAMIC_INDEX``); parameters are fully static, and every size is at least 1.
Each rule raises `VerifyException` naming the first violated rule.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DYNAMIC_INDEX, Float32Type, NoneAttr, TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.utils.exceptions import VerifyException

Shape = tuple[int, ...]

DEFAULT_STRIDES: Shape = (1, 1)
DEFAULT_PADDING: Shape = (0, 0, 0, 0)
DEFAULT_DILATION: Shape = (1, 1)
DEFAULT_GROUPS = 1
DEFAULT_EPS = 1e-5
DEFAULT_MOMENTUM = 0.1


def format_shape(shape: Sequence[int]) -> str:
    """Render a shape for messages: ``[?, 3, 8, 8]``."""
    return "[" + ", ".join("?" if d == DYNAMIC_INDEX else str(d) for d in shape) + "]"


def check_shape(shape: Sequence[int], what: str, *, dynamic_batch: bool) -> None:
    """Raise unless every size is >= 1, or ``?`` at dimension 0 where allowed."""
    for index, size in enumerate(shape):
        if size == DYNAMIC_INDEX:
            if not dynamic_batch:
                raise VerifyException(
                    f"expected {what} to be fully static, got shape {format_shape(shape)}"
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


def check_tensor(type_: Attribute, what: str, *, dynamic_batch: bool = True) -> Shape:
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
    check_shape(shape, what, dynamic_batch=dynamic_batch)
    return shape


def check_channel_vector(type_: Attribute, what: str, channels: int) -> None:
    """Check a per-channel operand: a static f32 tensor of shape ``[channels]``."""
    shape = check_tensor(type_, what, dynamic_batch=False)
    if shape != (channels,):
        raise VerifyException(f"expected {what} shape [{channels}], got {format_shape(shape)}")


def check_result(result: SSAValue, expected: Attribute) -> None:
    """Check a result type against the inferred one."""
    if result.type != expected:
        raise VerifyException(f"expected result type {expected}, got {result.type}")


def check_count(name: str, values: Sequence[int], count: int, layout: str = "") -> None:
    """Check that an option holds exactly ``count`` values."""
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
    check_shape(input_shape, "input", dynamic_batch=True)
    check_shape(weight_shape, "weight", dynamic_batch=False)
    check_count("strides", strides, 2)
    check_count("padding", padding, 4, " [top, left, bottom, right]")
    check_count("dilation", dilation, 2)
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


def broadcast_shapes(lhs: Sequence[int], rhs: Sequence[int]) -> Shape:
    """Numpy broadcasting of two shapes, with a dynamic batch dimension.

    Shapes are aligned on their trailing dimensions; a size 1 stretches to the
    other size. ``?`` broadcasts with 1 or ``?`` to ``?``; ``?`` against a static
    size other than 1 is an error (the batch size is unknown until run time), and
    so is a result whose ``?`` would land anywhere but dimension 0.
    """
    check_shape(lhs, f"shape {format_shape(lhs)}", dynamic_batch=True)
    check_shape(rhs, f"shape {format_shape(rhs)}", dynamic_batch=True)
    shapes = f"{format_shape(lhs)} and {format_shape(rhs)}"
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
