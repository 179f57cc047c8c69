"""Triton source of the ``concat`` family: ``out = concat(x0, ..., x_{N_INPUTS-1})``.

Every tensor is a contiguous matrix of rows: the destination ``out`` is
[OUTER, INNER_OUT] and input ``k`` is [OUTER, INNER_k], filling the columns
``[start_k, start_k + INNER_k)`` of each row, ``start_k`` the sum of the
``INNER`` before it (a concatenation along any axis of NCHW tensors is this
view). A 1-D grid of ``BLOCK`` programs walks the destination's flat index, so
every store is contiguous; each element loads from the one input whose
columns hold it (the others' loads are masked off). Inputs past ``N_INPUTS``
are not compiled in; the lowering binds them to ``x0`` with ``INNER_k = 0``.

The flat index is 64-bit so that the tail mask stays right near 2**31; the row
and column are then 32-bit, exact because every in-range index is below
``numel`` (an i32), and each input's offset stays below its own size.
"""

import triton
import triton.language as tl


@triton.jit
def _take(value, part, row, col, start, width, mask):
    """``value`` with the lanes whose column lies in ``[start, start + width)``
    replaced by that part's element (row ``row``, column ``col - start``)."""
    inside = mask & (col >= start) & (col < start + width)
    local = tl.where(inside, col - start, 0)
    loaded = tl.load(part + row * width + local, mask=inside, other=0.0)
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
    N_INPUTS: tl.constexpr,
    BLOCK: tl.constexpr,
):
    flat = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = flat < numel
    index = tl.where(mask, flat, 0).to(tl.int32)
    row = index // INNER_OUT
    col = index % INNER_OUT
    value = tl.zeros([BLOCK], dtype=tl.float32)
    value = _take(value, x0, row, col, 0, INNER0, mask)
    if N_INPUTS > 1:
        value = _take(value, x1, row, col, INNER0, INNER1, mask)
    if N_INPUTS > 2:
        value = _take(value, x2, row, col, INNER0 + INNER1, INNER2, mask)
    if N_INPUTS > 3:
        value = _take(value, x3, row, col, INNER0 + INNER1 + INNER2, INNER3, mask)
    tl.store(out + flat, value, mask=mask)
