"""Triton source of the ``split`` family: ``y0, ..., y_{N_OUTPUTS-1} = split(x)``.

Every tensor is a matrix of rows: the source ``x`` is [OUTER, INNER_IN] and
output ``k`` is [OUTER, INNER_k], taking the columns
``[start_k, start_k + INNER_k)`` of each row, ``start_k`` the sum of the
``INNER`` before it (a split along any axis of NCHW tensors is this view). A
1-D grid of ``BLOCK`` programs walks the source's flat index; each element is
stored to the one output whose columns hold it. Outputs past ``N_OUTPUTS`` are
not compiled in; the lowering binds them to ``y0`` with ``INNER_k = 0``.

Each tensor's images (``IMAGE`` elements, contiguous) lie ``batch_stride``
elements apart: an element of logical index ``f`` (its index in the row view)
is at ``(f // IMAGE) * batch_stride + f % IMAGE`` (`teeny_ir.kernels.concat.rows`).
For a contiguous source the loads are contiguous.

The flat index is 64-bit so that the tail mask stays right near 2**31; the row,
column and logical indices are then 32-bit, exact because every in-range index
is below ``numel`` (an i32) and each output's logical index below its own size;
image offsets (``image * batch_stride``) are 64-bit.
"""

import triton
import triton.language as tl


@triton.jit
def _address(logical, image, stride):
    """The element offset of the logical index ``logical`` in a tensor whose images
    of ``image`` elements lie ``stride`` elements apart (64-bit image offset)."""
    return (logical // image).to(tl.int64) * stride + logical % image


@triton.jit
def _put(value, part, image, stride, row, col, start, width, mask):
    """Store the lanes whose column lies in ``[start, start + width)`` into that
    part (row ``row``, column ``col - start``)."""
    inside = mask & (col >= start) & (col < start + width)
    local = tl.where(inside, col - start, 0)
    offset = _address(row * width + local, image, stride)
    tl.store(part + offset, value, mask=inside)


@triton.jit
def split(
    x,
    y0,
    y1,
    y2,
    y3,
    numel,
    INNER_IN,
    INNER0,
    INNER1,
    INNER2,
    INNER3,
    IMAGE_IN,
    IMAGE0,
    IMAGE1,
    IMAGE2,
    IMAGE3,
    x_batch_stride,
    y0_batch_stride,
    y1_batch_stride,
    y2_batch_stride,
    y3_batch_stride,
    N_OUTPUTS: tl.constexpr,
    BLOCK: tl.constexpr,
):
    flat = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = flat < numel
    index = tl.where(mask, flat, 0).to(tl.int32)
    row = index // INNER_IN
    col = index % INNER_IN
    value = tl.load(x + _address(index, IMAGE_IN, x_batch_stride), mask=mask, other=0.0)
    _put(value, y0, IMAGE0, y0_batch_stride, row, col, 0, INNER0, mask)
    if N_OUTPUTS > 1:
        _put(value, y1, IMAGE1, y1_batch_stride, row, col, INNER0, INNER1, mask)
    if N_OUTPUTS > 2:
        start2 = INNER0 + INNER1
        _put(value, y2, IMAGE2, y2_batch_stride, row, col, start2, INNER2, mask)
    if N_OUTPUTS > 3:
        start3 = INNER0 + INNER1 + INNER2
        _put(value, y3, IMAGE3, y3_batch_stride, row, col, start3, INNER3, mask)
