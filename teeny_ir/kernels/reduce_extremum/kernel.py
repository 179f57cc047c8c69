"""Triton source of the ``reduce_extremum`` family: the maximum or minimum over
a run of axes.

``x`` is seen as ``[N, RB, OUTER, R, INNER]`` (the ``reduce`` family's row
view): row ``(n, o, inner)``'s element ``(rb, r)`` lies at ``(n + rb) *
x_batch_stride + (o * R + r) * INNER + inner`` (64-bit offsets). Each program
takes ``BLOCK_ROWS`` rows and loops over the row's ``RB * R`` elements in chunks
of ``BLOCK_R``, masked lanes reading -inf (+inf for the minimum), the identity
of the combination. A NaN is counted apart (``tl.maximum`` is ``fmax`` in
Triton's interpreter and drops it): a row holding one is NaN, as ``torch.amax``.
Row ``q`` is stored at ``(q // Y_IMAGE) * y_batch_stride + q % Y_IMAGE``.
"""

import triton
import triton.language as tl


@triton.jit
def reduce_extremum(
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
    MAX: tl.constexpr,
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
    identity = float("-inf") if MAX else float("inf")
    acc = tl.full((BLOCK_ROWS, BLOCK_R), identity, dtype=tl.float32)
    nan = tl.zeros((BLOCK_ROWS, BLOCK_R), dtype=tl.int32)
    count = RB.to(tl.int64) * R
    for start in range(0, count, BLOCK_R):
        f = start + tl.arange(0, BLOCK_R)
        rb = f // R
        column = rb * x_batch_stride + (f - rb * R) * INNER
        mask = row_mask[:, None] & (f < count)[None, :]
        offsets = x_image[:, None] + column[None, :]
        v = tl.load(x + offsets, mask=mask, other=identity)
        is_nan = v != v
        nan = tl.maximum(nan, is_nan.to(tl.int32))
        v = tl.where(is_nan, identity, v)
        acc = tl.maximum(acc, v) if MAX else tl.minimum(acc, v)
    total = tl.max(acc, axis=1) if MAX else tl.min(acc, axis=1)
    total = tl.where(tl.max(nan, axis=1) > 0, float("nan"), total)
    y_image = row // Y_IMAGE
    tl.store(y + y_image * y_batch_stride + (row - y_image * Y_IMAGE), total, mask=row_mask)
