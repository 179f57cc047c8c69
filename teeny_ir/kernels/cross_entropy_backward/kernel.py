"""Triton source of the ``cross_entropy_backward`` family: ``dlogits =
(softmax(logits) - onehot(targets)) * g / N``.

Each program takes ``BLOCK_ROWS`` rows (row offsets in 64 bits). Pass 1 walks
each row in chunks of ``BLOCK_C`` classes keeping, per lane, a running maximum
and a running sum of ``exp(x - max)`` rescaled when the maximum grows (the
softmax family's online pass); pass 2 writes ``(exp(x - M) / S - hit) * g / N``,
``hit`` being 1 where the class index equals the row's target (a compare, never
an address computed from a target). NaN and +inf are kept out of the statistics
and make their row NaN, as does a row of -inf only (the reference's ``x -
max``), and so does a target outside ``[0, C)``. Program 0 also counts the
targets outside ``[0, C)`` over all rows and writes ``status``: the count, the
first such row and its target (the runtime raises the error).
"""

import triton
import triton.language as tl


@triton.jit
def cross_entropy_backward(
    logits,
    targets,
    g,
    dlogits,
    status,
    N,
    C,
    logits_batch_stride,
    dlogits_batch_stride,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid.to(tl.int64) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    row_mask = rows < N
    row = tl.where(row_mask, rows, 0)
    target = tl.load(targets + row, mask=row_mask, other=0)
    in_range = (target >= 0) & (target < C)
    x_row = row * logits_batch_stride
    dx_row = row * dlogits_batch_stride
    scale = tl.load(g) / N.to(tl.float32)
    m_acc = tl.full((BLOCK_ROWS, BLOCK_C), float("-inf"), tl.float32)
    s_acc = tl.zeros((BLOCK_ROWS, BLOCK_C), dtype=tl.float32)
    special = tl.zeros((BLOCK_ROWS, BLOCK_C), dtype=tl.int32)
    for start in range(0, C, BLOCK_C):
        c = start + tl.arange(0, BLOCK_C)
        mask = row_mask[:, None] & (c < C)[None, :]
        v = tl.load(logits + x_row[:, None] + c[None, :], mask=mask, other=float("-inf"))
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
    for start in range(0, C, BLOCK_C):
        c = start + tl.arange(0, BLOCK_C)
        mask = row_mask[:, None] & (c < C)[None, :]
        v = tl.load(logits + x_row[:, None] + c[None, :], mask=mask, other=float("-inf"))
        v = tl.where((v != v) | (v == float("inf")), float("-inf"), v)
        p = tl.exp(v - m_row[:, None]) / s[:, None]
        hit = c.to(tl.int64)[None, :] == target[:, None]
        out = (p - hit.to(tl.float32)) * scale
        out = tl.where(nan_row[:, None], float("nan"), out)
        tl.store(dlogits + dx_row[:, None] + c[None, :], out, mask=mask)
    if pid == 0:
        bad_count = tl.zeros((BLOCK_ROWS,), dtype=tl.int64)
        first_bad = tl.full((BLOCK_ROWS,), N, tl.int64)
        for row_start in range(0, N, BLOCK_ROWS):
            scan = row_start + tl.arange(0, BLOCK_ROWS).to(tl.int64)
            scan_mask = scan < N
            t = tl.load(targets + scan, mask=scan_mask, other=0)
            bad = scan_mask & ((t < 0) | (t >= C))
            bad_count += bad.to(tl.int64)
            first_bad = tl.minimum(first_bad, tl.where(bad, scan, N))
        count = tl.sum(bad_count, axis=0)
        first = tl.min(first_bad, axis=0)
        value = tl.load(targets + tl.where(count > 0, first, 0), mask=count > 0, other=0)
        tl.store(status, count)
        tl.store(status + 1, first)
        tl.store(status + 2, value)
