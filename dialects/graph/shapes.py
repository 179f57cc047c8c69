"""Shape rules of the graph dialect: pure functions shared by the verifiers, the
builders and the passes.

Only dimension 0 (the batch) of an activation may be dynamic (``?``, xDSL's
``DYNAMIC_INDEX``); parameters are fully static, and every size is at least 1.
Each rule raises `VerifyException` naming the first violated rule.
"""

from __future__ import annotations

import math
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


def check_window_options(
    strides: Sequence[int], padding: Sequence[int], dilation: Sequence[int]
) -> None:
    """The sliding-window options shared by convolutions and pools: two strides
    and dilations >= 1, four paddings [top, left, bottom, right] >= 0."""
    check_count("strides", strides, 2)
    check_count("padding", padding, 4, " [top, left, bottom, right]")
    check_count("dilation", dilation, 2)
    if min(strides) < 1:
        raise VerifyException(f"expected strides >= 1, got {list(strides)}")
    if min(dilation) < 1:
        raise VerifyException(f"expected dilation >= 1, got {list(dilation)}")
    if min(padding) < 0:
        raise VerifyException(f"expected padding >= 0, got {list(padding)}")


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
    check_window_options(strides, padding, dilation)
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


# Structural ops (concat, split, reshape, flatten, transpose): a dynamic batch stays
# at dimension 0, unchanged.

_DYNAMIC_BATCH_LATER = "folding the batch into another dimension is not supported yet"


def _check_rank(shape: Sequence[int], what: str) -> None:
    if not shape:
        raise VerifyException(f"expected {what} of rank >= 1, got rank 0")


def _check_dim(dim: int, rank: int, what: str) -> None:
    if not 0 <= dim < rank:
        raise VerifyException(f"expected {what} in [0, {rank}), got {dim}")


def _dynamic_batch(shape: Sequence[int]) -> bool:
    return bool(shape) and shape[0] == DYNAMIC_INDEX


def _check_not_batch_axis(shape: Sequence[int], axis: int, verb: str) -> None:
    if axis == 0 and _dynamic_batch(shape):
        raise VerifyException(f"cannot {verb} along the dynamic batch dimension 0")


def infer_concat_shape(shapes: Sequence[Sequence[int]], axis: int) -> Shape:
    """Result shape of `graph.concat`: the inputs' common shape with the ``axis``
    sizes summed. ``axis`` is non-negative; every other dimension must agree
    exactly (a ``?`` batch only with ``?``)."""
    if not shapes:
        raise VerifyException("expected at least 1 input")
    first = shapes[0]
    _check_rank(first, "input 0")
    for index, shape in enumerate(shapes[1:], 1):
        if len(shape) != len(first):
            raise VerifyException(
                f"expected every input to have rank {len(first)} (input 0's), "
                f"input {index} has rank {len(shape)}"
            )
    _check_dim(axis, len(first), "axis")
    _check_not_batch_axis(first, axis, "concatenate")
    for index, shape in enumerate(shapes[1:], 1):
        for dim, (size, expected) in enumerate(zip(shape, first, strict=True)):
            if dim != axis and size != expected:
                raise VerifyException(
                    f"input {index} has shape {format_shape(shape)}, input 0 "
                    f"{format_shape(first)}: dimensions other than the axis ({axis}) "
                    f"must agree, and dimension {dim} does not"
                )
    total = sum(shape[axis] for shape in shapes)
    return (*first[:axis], total, *first[axis + 1 :])


def infer_split_shapes(shape: Sequence[int], axis: int, sizes: Sequence[int]) -> list[Shape]:
    """Result shapes of `graph.split`: ``shape`` with dimension ``axis``
    (non-negative) replaced by each of ``sizes`` in turn; the sizes are >= 1 and
    sum to that dimension."""
    _check_rank(shape, "input")
    _check_dim(axis, len(shape), "axis")
    _check_not_batch_axis(shape, axis, "split")
    if not sizes:
        raise VerifyException("expected at least 1 size")
    if min(sizes) < 1:
        raise VerifyException(f"expected sizes >= 1, got {list(sizes)}")
    if sum(sizes) != shape[axis]:
        raise VerifyException(
            f"expected sizes to sum to {shape[axis]} (dimension {axis} of the input "
            f"{format_shape(shape)}), got {list(sizes)} summing to {sum(sizes)}"
        )
    return [(*shape[:axis], size, *shape[axis + 1 :]) for size in sizes]


def infer_reshape_shape(shape: Sequence[int], target: Sequence[int]) -> Shape:
    """Result shape of `graph.reshape` with the ``target`` entries resolved, as in
    ONNX Reshape: ``0`` copies the input's size at the same index, ``-1`` (at most
    one) is inferred from the element count, any other entry is a size >= 1.

    A dynamic batch must be kept: ``target[0]`` is then ``0`` and the element
    counts agree per sample.
    """
    _check_rank(shape, "input")
    if not target:
        raise VerifyException("expected a non-empty shape")
    for index, entry in enumerate(target):
        if entry < -1:
            raise VerifyException(
                f"invalid shape entry {entry} at index {index}: expected a size >= 1, "
                "0 (copy the input's size) or -1 (inferred)"
            )
        if entry == 0 and index >= len(shape):
            raise VerifyException(
                f"shape entry 0 at index {index} copies input dimension {index}, "
                f"but the input has rank {len(shape)}"
            )
    if list(target).count(-1) > 1:
        raise VerifyException(f"expected at most one -1 (inferred) in shape {list(target)}")
    dynamic = _dynamic_batch(shape)
    if dynamic and target[0] != 0:
        raise VerifyException(
            f"expected shape entry 0 to be 0 (keep the dynamic batch), got {target[0]}: "
            + _DYNAMIC_BATCH_LATER
        )
    resolved = [shape[index] if entry == 0 else entry for index, entry in enumerate(target)]
    first = 1 if dynamic else 0  # the batch is copied; count the elements of one sample
    count = math.prod(shape[first:])
    known = math.prod(size for size in resolved[first:] if size != -1)
    per = " per sample" if dynamic else ""
    if -1 in resolved:
        if count % known:
            raise VerifyException(
                f"cannot infer the -1 in shape {list(target)}: the input "
                f"{format_shape(shape)} has {count} elements{per}, not a multiple of {known}"
            )
        resolved[resolved.index(-1)] = count // known
    elif known != count:
        raise VerifyException(
            f"element count mismatch: the input {format_shape(shape)} has {count} "
            f"elements{per}, shape {list(target)} has {known}"
        )
    return tuple(resolved)


def infer_flatten_shape(shape: Sequence[int], start_dim: int, end_dim: int) -> Shape:
    """Result shape of `graph.flatten`: dimensions ``start_dim..end_dim``
    (non-negative, inclusive) merged into one, as ``torch.flatten``."""
    _check_rank(shape, "input")
    _check_dim(start_dim, len(shape), "start_dim")
    _check_dim(end_dim, len(shape), "end_dim")
    if start_dim > end_dim:
        raise VerifyException(f"expected start_dim <= end_dim, got {start_dim} > {end_dim}")
    if start_dim == 0 < end_dim and _dynamic_batch(shape):
        raise VerifyException(
            "cannot flatten the dynamic batch dimension 0 (start_dim 0): " + _DYNAMIC_BATCH_LATER
        )
    merged = math.prod(shape[start_dim : end_dim + 1])
    return (*shape[:start_dim], merged, *shape[end_dim + 1 :])


def infer_transpose_shape(shape: Sequence[int], perm: Sequence[int]) -> Shape:
    """Result shape of `graph.transpose`: ``result[i] = shape[perm[i]]``, as
    ``torch.permute``; ``perm`` is a permutation of ``0..rank-1``."""
    _check_rank(shape, "input")
    if sorted(perm) != list(range(len(shape))):
        raise VerifyException(
            f"expected perm to be a permutation of [0, {len(shape)}) (the input's rank), "
            f"got {list(perm)}"
        )
    if _dynamic_batch(shape) and perm[0] != 0:
        raise VerifyException(
            f"cannot move the dynamic batch dimension: expected perm[0] = 0, got {perm[0]}"
        )
    return tuple(shape[dim] for dim in perm)
