"""Triton source of the ``cross_entropy`` family: the mean softmax cross-entropy
of ``logits`` [N, C] against i64 ``targets`` [N].

One program. For each block of ``BLOCK_ROWS`` rows it loads the targets
(masked), walks each row in chunks of ``BLOCK_C`` classes keeping, per lane, a
running maximum and a running sum of ``exp(x - max)`` rescaled when the maximum
grows (the softmax family's online pass), and picks the target's logit from the
chunk that holds it (a compare with the class index, never an address computed
from the target). A row's loss is ``max + log(sum) - logit[target]``. NaN and
+inf are kept out of the statistics and make their row's loss NaN, as does a
row of -inf only, so the loss is NaN exactly when the reference's is; a
target's logit of -inf in a finite row gives +inf. A target outside
``[0, C)`` makes its row's loss NaN and is counted: ``status`` gets the count,
the first such row and its target (the runtime raises the error). The row
losses are summed lane-wise in a fixed order and divided by ``N``.
"""

import triton
import triton.language as tl


@triton.jit
def cross_entropy(
    logits,
    targets,
    loss,
    status,
    N,
    C,
    logits_batch_stride,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    total = tl.zeros((BLOCK_ROWS,), dtype=tl.float32)
    bad_count = tl.zeros((BLOCK_ROWS,), dtype=tl.int64)
    first_bad = tl.full((BLOCK_ROWS,), N, tl.int64)
    for row_start in range(0, N, BLOCK_ROWS):
        rows = row_start + tl.arange(0, BLOCK_ROWS).to(tl.int64)
        row_mask = rows < N
        target = tl.load(targets + rows, mask=row_mask, other=0)
        in_range = (target >= 0) & (target < C)
        bad = row_mask & (in_range == 0)
        bad_count += bad.to(tl.int64)
        first_bad = tl.minimum(first_bad, tl.where(bad, rows, N))
        row_base = tl.where(row_mask, rows, 0) * logits_batch_stride
        m_acc = tl.full((BLOCK_ROWS, BLOCK_C), float("-inf"), tl.float32)
        s_acc = tl.zeros((BLOCK_ROWS, BLOCK_C), dtype=tl.float32)
        special = tl.zeros((BLOCK_ROWS, BLOCK_C), dtype=tl.int32)
        picked = tl.zeros((BLOCK_ROWS,), dtype=tl.float32)
        for start in range(0, C, BLOCK_C):
            c = start + tl.arange(0, BLOCK_C)
            mask = row_mask[:, None] & (c < C)[None, :]
            v = tl.load(logits + row_base[:, None] + c[None, :], mask=mask, other=float("-inf"))
            hit = mask & (c.to(tl.int64)[None, :] == target[:, None])
            picked += tl.sum(tl.where(hit, v, 0.0), axis=1)
            nan_or_inf = (v != v) | (v == float("inf"))
            special = tl.maximum(special, nan_or_inf.to(tl.int32))
            v = tl.where(nan_or_inf, float("-inf"), v)
            m_new = tl.maximum(m_acc, v)
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
            s_acc = s_acc * tl.exp(m_acc - m_safe) + tl.exp(v - m_safe)
            m_acc = m_new
        m = tl.max(m_acc, axis=1)
        m_row = tl.where(m == float("-inf"), 0.0, m)
        s = tl.sum(s_acc * tl.exp(m_acc - m_row[:, None]), axis=1)
        nan_row = (tl.max(special, axis=1) > 0) | (m == float("-inf")) | (in_range == 0)
        s = tl.where(nan_row, 1.0, s)
        row_loss = m_row + tl.log(s) - picked
        row_loss = tl.where(nan_row, float("nan"), row_loss)
        total += tl.where(row_mask, row_loss, 0.0)
    tl.store(loss, tl.sum(total, axis=0) / N.to(tl.float32))
    count = tl.sum(bad_count, axis=0)
    first = tl.min(first_bad, axis=0)
    value = tl.load(targets + tl.where(count > 0, first, 0), mask=count > 0, other=0)
    tl.store(status, count)
    tl.store(status + 1, first)
    tl.store(status + 2, value)
