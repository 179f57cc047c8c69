"""Triton source of the ``reduce`` family: the sum or mean over a run of axes.

``x`` is seen as ``[N, RB, OUTER, R, INNER]`` (see the family's contract): row
``(n, o, inner)``'s element ``(rb, r)`` lies at ``(n + rb) * x_batch_stride +
(o * R + r) * INNER + inner`` (64-bit offsets). Each program takes ``BLOCK_ROWS``
rows, loops over the ``RB`` images and over each image's ``R`` elements in
chunks of ``BLOCK_R``, every load masked, and accumulates the finite values
per lane in fp32. NaN and infinities are counted apart, so no addition is ever
invalid: a row with a NaN, or with both infinities, sums to NaN, one with +inf
(-inf) only to +inf (-inf), as numpy's sum. The mean divides by ``RB * R``.
Row ``q`` is stored at ``(q // Y_IMAGE) * y_batch_stride + q % Y_IMAGE``.
"""

import triton
import triton.language as tl


@triton.jit
def reduce(
    x,
    y,
    N,
    RB,
    OUTER,
    R,
    INNER,
    Y_IMAGE,
    x_batch_stride,
    y_batch_stride,
    MEAN: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_R: tl.constexpr,
):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    row_mask = rows < N.to(tl.int64) * OUTER * INNER
    row = tl.where(row_mask, rows, 0)
    inner = row % INNER
    rest = row // INNER
    outer = rest % OUTER
    image = rest // OUTER
    x_image = image * x_batch_stride + outer * R * INNER + inner
    acc = tl.zeros((BLOCK_ROWS, BLOCK_R), dtype=tl.float32)
    nan = tl.zeros((BLOCK_ROWS, BLOCK_R), dtype=tl.int32)
    pos = tl.zeros((BLOCK_ROWS, BLOCK_R), dtype=tl.int32)
    neg = tl.zeros((BLOCK_ROWS, BLOCK_R), dtype=tl.int32)
    # One loop over the RB * R elements of a row, the images folded into the
    # chunks: a chunk of a small image spans several images.
    count = RB.to(tl.int64) * R
    for start in range(0, count, BLOCK_R):
        f = start + tl.arange(0, BLOCK_R)
        rb = f // R
        column = rb * x_batch_stride + (f - rb * R) * INNER
        mask = row_mask[:, None] & (f < count)[None, :]
        offsets = x_image[:, None] + column[None, :]
        v = tl.load(x + offsets, mask=mask, other=0.0)
        acc, nan, pos, neg = finite_sum_add(acc, nan, pos, neg, v)  # noqa: F821 - a shared helper
    total = finite_sum_total(acc, nan, pos, neg)  # noqa: F821 - pasted in by rendering
    if MEAN:  # the infinities and NaN stay what they are
        total = total / (RB.to(tl.float32) * R.to(tl.float32))
    y_image = row // Y_IMAGE
    tl.store(y + y_image * y_batch_stride + (row - y_image * Y_IMAGE), total, mask=row_mask)
