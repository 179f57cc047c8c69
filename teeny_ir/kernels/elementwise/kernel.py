"""Triton source of the ``elementwise`` family: ``out = op(x)`` or ``op(x, y)``.

The output is viewed as rank 6 (left-padded with 1s); a 1-D grid of ``BLOCK``
programs walks its flat index, which is split into 6 coordinates with
``size1..size5`` (output dims 1..5). Each operand is addressed through its own
strides, 0 on broadcast dims, so numpy broadcasting needs no copies. ``OP``
names an entry of the pointwise table; rendering replaces the ``pointwise``
slot with that entry's expression (a unary entry never reads ``y``, and its
lowering binds ``y`` to ``x``).

The flat index is 64-bit, so the tail mask stays right even when ``numel``
is within ``BLOCK`` of 2**31; the coordinates are then split in 32-bit
arithmetic (cheaper on GPUs), which is exact because every in-range index is
below ``numel`` (an i32) and each operand has at most ``numel`` elements.
"""

import triton
import triton.language as tl


@triton.jit
def pointwise(x, y):
    """Slot: rendering replaces it with the pointwise table's expression for OP."""
    tl.static_assert(False, "render this kernel: its pointwise slot is empty")
    return x


@triton.jit
def elementwise(
    x,
    y,
    out,
    numel,
    size1,
    size2,
    size3,
    size4,
    size5,
    x_stride0,
    x_stride1,
    x_stride2,
    x_stride3,
    x_stride4,
    x_stride5,
    y_stride0,
    y_stride1,
    y_stride2,
    y_stride3,
    y_stride4,
    y_stride5,
    OP: tl.constexpr,
    BLOCK: tl.constexpr,
):
    flat = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = flat < numel
    index = tl.where(mask, flat, 0).to(tl.int32)
    i5 = index % size5
    rest = index // size5
    i4 = rest % size4
    rest = rest // size4
    i3 = rest % size3
    rest = rest // size3
    i2 = rest % size2
    rest = rest // size2
    i1 = rest % size1
    i0 = rest // size1
    x_offset = (
        i0 * x_stride0
        + i1 * x_stride1
        + i2 * x_stride2
        + i3 * x_stride3
        + i4 * x_stride4
        + i5 * x_stride5
    )
    y_offset = (
        i0 * y_stride0
        + i1 * y_stride1
        + i2 * y_stride2
        + i3 * y_stride3
        + i4 * y_stride4
        + i5 * y_stride5
    )
    a = tl.load(x + x_offset, mask=mask, other=0.0)
    # Masked-off lanes read y = 1 so that x / y stays finite there (never stored).
    b = tl.load(y + y_offset, mask=mask, other=1.0)
    tl.store(out + flat, pointwise(a, b), mask=mask)
