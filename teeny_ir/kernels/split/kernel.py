"""Triton source of the ``split`` family: ``y0, ..., y_{N_OUTPUTS-1} = split(x)``.

Every tensor is a contiguous matrix of rows: the source ``x`` is
[OUTER, INNER_IN] and output ``k`` is [OUTER, INNER_k], taking the columns
``[start_k, start_k + INNER_k)`` of each row, ``start_k`` the sum of the
``INNER`` before it (a split along any axis of NCHW tensors is this view). A
1-D grid of ``BLOCK`` programs walks the source's flat index, so every load is
contiguous; each element is stored to the one output whose columns hold it.
Outputs past ``N_OUTPUTS`` are not compiled in; the lowering binds them to
``y0`` with ``INNER_k = 0``.

The flat index is 64-bit so that the tail mask stays right near 2**31; the row
and column are then 32-bit, exact because every in-range index is below
``numel`` (an i32), and each output's offset stays below its own size.
"""

import triton
import triton.language as tl


@triton.jit
def _put(value, part, row, col, start, width, mask):
    """Store the lanes whose column lies in ``[start, start + width)`` into that
    part (row ``row``, column ``col - start``)."""
    inside = mask & (col >= start) & (col < start + width)
    local = tl.where(inside, col - start, 0)
    tl.store(part + row * width + local, value, mask=inside)


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
    N_OUTPUTS: tl.constexpr,
    BLOCK: tl.constexpr,
):
    flat = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = flat < numel
    index = tl.where(mask, flat, 0).to(tl.int32)
    row = index // INNER_IN
    col = index % INNER_IN
    value = tl.load(x + flat, mask=mask, other=0.0)
    _put(value, y0, row, col, 0, INNER0, mask)
    if N_OUTPUTS > 1:
        _put(value, y1, row, col, INNER0, INNER1, mask)
    if N_OUTPUTS > 2:
        _put(value, y2, row, col, INNER0 + INNER1, INNER2, mask)
    if N_OUTPUTS > 3:
        _put(value, y3, row, col, INNER0 + INNER1 + INNER2, INNER3, mask)
