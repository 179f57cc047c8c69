"""Triton source of the ``reshape_copy`` family: ``y = reshape(x)``.

A 1-D grid of ``BLOCK`` programs walks the contiguous output's flat index,
which is also the input's logical (row-major) index. The flat index is 64-bit
so that the tail mask stays right near 2**31; the image and the offset in it
are then 32-bit, exact because every in-range index is below ``numel`` (an
i32), and the image's start is 64-bit: a batch-strided input may span more
than 2**31 elements.
"""

import triton
import triton.language as tl


@triton.jit
def reshape_copy(
    x,
    y,
    numel,
    X_IMAGE,
    x_batch_stride,
    BLOCK: tl.constexpr,
):
    flat = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = flat < numel
    index = tl.where(mask, flat, 0).to(tl.int32)
    offset = (index // X_IMAGE).to(tl.int64) * x_batch_stride + index % X_IMAGE
    tl.store(y + flat, tl.load(x + offset, mask=mask, other=0.0), mask=mask)
