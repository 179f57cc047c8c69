"""Triton source of the ``softmax`` family: softmax and log-softmax along one axis.

``x`` and ``y`` are seen as ``[N, RB, OUTER, R, INNER]`` (see the family's contract):
``N * OUTER * INNER`` rows, each of ``RB * R`` elements; row ``(n, o, inner)``'s
element ``(rb, r)`` lies at ``(n + rb) * batch_stride + (o * R + r) * INNER +
inner`` (64-bit offsets). Each program takes ``BLOCK_ROWS`` rows and walks them in
chunks of ``BLOCK_R`` elements, every load masked (a lane past the row or past
the last row loads -inf and is never stored).

Pass 1 keeps, per lane, a running maximum ``m`` and a running sum of
``exp(x - m)`` rescaled whenever ``m`` grows (the online softmax); the lanes
combine at the end into the row's maximum ``M`` and sum ``S >= 1``. Pass 2 writes
``exp(x - M) / S`` or ``x - M - log(S)``. NaN and +inf are kept out of the
statistics (they count as -inf there) and mark their row: a row with a NaN or a
+inf, or of -inf only, is NaN throughout, as the reference's ``x - max`` makes
it. No intermediate is ever invalid or divides by zero.
"""

import triton
import triton.language as tl


@triton.jit
def softmax(
    x,
    y,
    N,
    RB,
    OUTER,
    R,
    INNER,
    x_batch_stride,
    y_batch_stride,
    LOG: tl.constexpr,
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
    within = outer * R * INNER + inner
    x_row = image * x_batch_stride + within
    y_row = image * y_batch_stride + within
    m_acc = tl.full((BLOCK_ROWS, BLOCK_R), float("-inf"), tl.float32)
    s_acc = tl.zeros((BLOCK_ROWS, BLOCK_R), dtype=tl.float32)
    bad = tl.zeros((BLOCK_ROWS, BLOCK_R), dtype=tl.int32)
    x_image = x_row
    for _ in range(0, RB):
        for start in range(0, R, BLOCK_R):
            r = start + tl.arange(0, BLOCK_R)
            mask = row_mask[:, None] & (r < R)[None, :]
            offsets = x_image[:, None] + r.to(tl.int64)[None, :] * INNER
            v = tl.load(x + offsets, mask=mask, other=float("-inf"))
            special = (v != v) | (v == float("inf"))
            bad = tl.maximum(bad, special.to(tl.int32))
            v = tl.where(special, float("-inf"), v)
            m_new = tl.maximum(m_acc, v)
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
            s_acc = s_acc * tl.exp(m_acc - m_safe) + tl.exp(v - m_safe)
            m_acc = m_new
        x_image += x_batch_stride
    m = tl.max(m_acc, axis=1)
    m_row = tl.where(m == float("-inf"), 0.0, m)
    s = tl.sum(s_acc * tl.exp(m_acc - m_row[:, None]), axis=1)
    nan_row = (tl.max(bad, axis=1) > 0) | (m == float("-inf"))
    s = tl.where(nan_row, 1.0, s)
    log_s = tl.log(s)
    x_image = x_row
    y_image = y_row
    for _ in range(0, RB):
        for start in range(0, R, BLOCK_R):
            r = start + tl.arange(0, BLOCK_R)
            mask = row_mask[:, None] & (r < R)[None, :]
            steps = r.to(tl.int64)[None, :] * INNER
            v = tl.load(x + x_image[:, None] + steps, mask=mask, other=float("-inf"))
            v = tl.where((v != v) | (v == float("inf")), float("-inf"), v)
            shifted = v - m_row[:, None]
            out = shifted - log_s[:, None] if LOG else tl.exp(shifted) / s[:, None]
            out = tl.where(nan_row[:, None], float("nan"), out)
            tl.store(y + y_image[:, None] + steps, out, mask=mask)
        x_image += x_batch_stride
        y_image += y_batch_stride
