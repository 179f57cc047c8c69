"""Triton source of the ``slice`` family: ``y = x[s_0::t_0, ..., s_5::t_5]``.

A 1-D grid of ``BLOCK`` programs walks the contiguous output's flat index. Each
index is split into the output's indices (rank 6, trailing dimensions of size 1
where the tensor has fewer; dimension 0 takes what is left); a dimension whose
bit is set in ``FLIP`` (a negative step) counts from its far end, and the
input is read at the logical index ``x_offset + sum_k j_k * x_stride<k>``. A
logical index ``f`` lies at ``(f // IMAGE_IN) * x_batch_stride + f % IMAGE_IN``:
the input's images may lie farther apart than their size (a view).

The flat index is 64-bit so that the tail mask stays right near 2**31; the
output indices are then 32-bit, exact because every in-range index is below
``numel`` (an i32); the logical index is 64-bit (an input may be larger than
the output), and so is the image offset.
"""

import triton
import triton.language as tl


@triton.jit
def _term(rest, size, stride, flip: tl.constexpr):
    """The logical-index term of one dimension: its index (``rest % size``,
    mirrored when ``flip``) times its stride, 64-bit."""
    index = rest % size
    if flip:
        index = size - 1 - index
    return index.to(tl.int64) * stride


@triton.jit
def slice_copy(
    x,
    y,
    numel,
    IMAGE_IN,
    size1,
    size2,
    size3,
    size4,
    size5,
    x_offset,
    x_stride0,
    x_stride1,
    x_stride2,
    x_stride3,
    x_stride4,
    x_stride5,
    x_batch_stride,
    FLIP: tl.constexpr,
    BLOCK: tl.constexpr,
):
    flat = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = flat < numel
    rest = tl.where(mask, flat, 0).to(tl.int32)
    logical = x_offset + _term(rest, size5, x_stride5, FLIP & 32)
    rest = rest // size5
    logical += _term(rest, size4, x_stride4, FLIP & 16)
    rest = rest // size4
    logical += _term(rest, size3, x_stride3, FLIP & 8)
    rest = rest // size3
    logical += _term(rest, size2, x_stride2, FLIP & 4)
    rest = rest // size2
    logical += _term(rest, size1, x_stride1, FLIP & 2)
    rest = rest // size1
    size0 = numel // (size1 * size2 * size3 * size4 * size5)
    logical += _term(rest, size0, x_stride0, FLIP & 1)
    offset = (logical // IMAGE_IN) * x_batch_stride + logical % IMAGE_IN
    value = tl.load(x + offset, mask=mask, other=0.0)
    tl.store(y + flat, value, mask=mask)
