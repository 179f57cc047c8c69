"""Triton source of the ``softmax_backward`` family: the gradients of softmax and
log-softmax along one axis.

``y``, ``dy`` and ``dx`` are seen as ``[N, RB, OUTER, R, INNER]`` (see the
family's contract): row ``(n, o, inner)``'s element ``(rb, r)`` lies at ``(n +
rb) * batch_stride + (o * R + r) * INNER + inner`` (64-bit offsets). Each
program takes ``BLOCK_ROWS`` rows and walks them in chunks of ``BLOCK_R``
elements, every load masked (a lane past the row or past the last row loads 0
and is never stored).

Pass 1 sums, per lane, ``dy * y`` (softmax) or ``dy`` (log-softmax) in fp32; the
lanes combine at the end into the row's sum ``S``. Pass 2 writes ``y * (dy -
S)`` or ``dy - exp(y) * S``. The arithmetic is the reference's, so NaN and inf
propagate as there (a NaN anywhere in a row makes ``S``, hence the whole row,
NaN). The summation order is fixed by the loop: the result is deterministic.
"""

import triton
import triton.language as tl


@triton.jit
def softmax_backward(
    y,
    dy,
    dx,
    N,
    RB,
    OUTER,
    R,
    INNER,
    y_batch_stride,
    dy_batch_stride,
    dx_batch_stride,
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
    y_row = image * y_batch_stride + within
    dy_row = image * dy_batch_stride + within
    dx_row = image * dx_batch_stride + within
    acc = tl.zeros((BLOCK_ROWS, BLOCK_R), dtype=tl.float32)
    y_image = y_row
    dy_image = dy_row
    for _ in range(0, RB):
        for start in range(0, R, BLOCK_R):
            r = start + tl.arange(0, BLOCK_R)
            mask = row_mask[:, None] & (r < R)[None, :]
            steps = r.to(tl.int64)[None, :] * INNER
            g = tl.load(dy + dy_image[:, None] + steps, mask=mask, other=0.0)
            if LOG:
                acc += g
            else:
                acc += g * tl.load(y + y_image[:, None] + steps, mask=mask, other=0.0)
        y_image += y_batch_stride
        dy_image += dy_batch_stride
    s = tl.sum(acc, axis=1)[:, None]
    y_image = y_row
    dy_image = dy_row
    dx_image = dx_row
    for _ in range(0, RB):
        for start in range(0, R, BLOCK_R):
            r = start + tl.arange(0, BLOCK_R)
            mask = row_mask[:, None] & (r < R)[None, :]
            steps = r.to(tl.int64)[None, :] * INNER
            v = tl.load(y + y_image[:, None] + steps, mask=mask, other=0.0)
            g = tl.load(dy + dy_image[:, None] + steps, mask=mask, other=0.0)
            out = g - tl.exp(v) * s if LOG else v * (g - s)
            tl.store(dx + dx_image[:, None] + steps, out, mask=mask)
        y_image += y_batch_stride
        dy_image += dy_batch_stride
        dx_image += dx_batch_stride
