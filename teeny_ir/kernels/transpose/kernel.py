"""Triton source of the ``transpose`` family: ``y = permute(x, perm)``.

A 1-D grid of ``BLOCK`` programs walks the contiguous output's flat index. Each
index is split into the output's indices (rank 6, trailing dimensions of size 1
where the tensor has fewer; dimension 0 takes what is left), and the input is
read at the logical index ``sum_k i_k * x_stride<k>``, the permuted row-major
strides of the input. A logical index ``f`` lies at
``(f // IMAGE_IN) * x_batch_stride + f % IMAGE_IN``: the input's images may lie
farther apart than their size (a view).

The flat index is 64-bit so that the tail mask stays right near 2**31; the
output indices and the logical index are then 32-bit, exact because every
in-range index is below ``numel`` (an i32); the image offset is 64-bit.
"""

import triton
import triton.language as tl


@triton.jit
def transpose(
    x,
    y,
    numel,
    IMAGE_IN,
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
    x_batch_stride,
    BLOCK: tl.constexpr,
):
    flat = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = flat < numel
    rest = tl.where(mask, flat, 0).to(tl.int32)
    logical = (rest % size5) * x_stride5
    rest = rest // size5
    logical += (rest % size4) * x_stride4
    rest = rest // size4
    logical += (rest % size3) * x_stride3
    rest = rest // size3
    logical += (rest % size2) * x_stride2
    rest = rest // size2
    logical += (rest % size1) * x_stride1
    logical += (rest // size1) * x_stride0
    offset = (logical // IMAGE_IN).to(tl.int64) * x_batch_stride + logical % IMAGE_IN
    value = tl.load(x + offset, mask=mask, other=0.0)
    tl.store(y + flat, value, mask=mask)
