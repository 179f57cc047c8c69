"""Triton source of the ``concat`` family: ``out = concat(x0, ..., x_{N_INPUTS-1})``.

Every tensor is a matrix of rows: the destination ``out`` is [OUTER, INNER_OUT]
and input ``k`` is [OUTER, INNER_k], filling the columns
``[start_k, start_k + INNER_k)`` of each row, ``start_k`` the sum of the
``INNER`` before it (a concatenation along any axis of NCHW tensors is this
view). A 1-D grid of ``BLOCK`` programs walks the destination's flat index;
each element loads from the one input whose columns hold it (the others'
loads are masked off). Inputs past ``N_INPUTS`` are not compiled in; the
lowering binds them to ``x0`` with ``INNER_k = 0``.

Each tensor's images (``IMAGE`` elements, contiguous) lie ``batch_stride``
elements apart: an element of logical index ``f`` (its index in the row view)
is at ``(f // IMAGE) * batch_stride + f % IMAGE`` (`teeny_ir.kernels.concat.rows`).
For a contiguous destination the stores are contiguous.

The flat index is 64-bit so that the tail mask stays right near 2**31; the row,
column and logical indices are then 32-bit, exact because every in-range index
is below ``numel`` (an i32) and each input's logical index below its own size;
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
def _take(value, part, image, stride, row, col, start, width, mask):
    """``value`` with the lanes whose column lies in ``[start, start + width)``
    replaced by that part's element (row ``row``, column ``col - start``)."""
    inside = mask & (col >= start) & (col < start + width)
    local = tl.where(inside, col - start, 0)
    offset = _address(row * width + local, image, stride)
    loaded = tl.load(part + offset, mask=inside, other=0.0)
    return tl.where(inside, loaded, value)


@triton.jit
def concat(
    x0,
    x1,
    x2,
    x3,
    out,
    numel,
    INNER_OUT,
    INNER0,
    INNER1,
    INNER2,
    INNER3,
    IMAGE_OUT,
    IMAGE0,
    IMAGE1,
    IMAGE2,
    IMAGE3,
    x0_batch_stride,
    x1_batch_stride,
    x2_batch_stride,
    x3_batch_stride,
    out_batch_stride,
    N_INPUTS: tl.constexpr,
    BLOCK: tl.constexpr,
):
    flat = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = flat < numel
    index = tl.where(mask, flat, 0).to(tl.int32)
    row = index // INNER_OUT
    col = index % INNER_OUT
    value = tl.zeros([BLOCK], dtype=tl.float32)
    value = _take(value, x0, IMAGE0, x0_batch_stride, row, col, 0, INNER0, mask)
    if N_INPUTS > 1:
        value = _take(value, x1, IMAGE1, x1_batch_stride, row, col, INNER0, INNER1, mask)
    if N_INPUTS > 2:
        start2 = INNER0 + INNER1
        value = _take(value, x2, IMAGE2, x2_batch_stride, row, col, start2, INNER2, mask)
    if N_INPUTS > 3:
        start3 = INNER0 + INNER1 + INNER2
        value = _take(value, x3, IMAGE3, x3_batch_stride, row, col, start3, INNER3, mask)
    tl.store(out + _address(index, IMAGE_OUT, out_batch_stride), value, mask=mask)
