"""Triton source of the ``broadcast`` family: ``out = x`` stretched by numpy
broadcasting.

The output is viewed as rank 6 (left-padded with 1s); a 1-D grid of ``BLOCK``
programs walks its flat index (64-bit, so the tail mask stays right near
2**31), split into 6 coordinates with ``size1..size5`` in 32-bit arithmetic
(exact: every in-range index is below ``numel``, an i32). The input is read
through its strides, 0 on broadcast dims; every load and store is masked.
"""

import triton
import triton.language as tl


@triton.jit
def broadcast(
    x,
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
    offset = (
        i0 * x_stride0
        + i1 * x_stride1
        + i2 * x_stride2
        + i3 * x_stride3
        + i4 * x_stride4
        + i5 * x_stride5
    )
    tl.store(out + flat, tl.load(x + offset, mask=mask, other=0.0), mask=mask)
