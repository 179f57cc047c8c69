"""Triton source of the ``batch_norm_backward`` family: dx, dgamma and dbeta of a
training-form batch norm.

The layout and the loop are ``batch_norm_train``'s: each program owns ``BLOCK_C``
channels (a ``[BLOCK_C, BLOCK_R]`` tile) and loops over the flat per-channel
index ``f`` in ``[0, B * HW)`` in chunks of ``BLOCK_R`` (``b = f // HW``, ``r = f -
b * HW``, 64-bit offsets ``b * <name>_batch_stride + c * HW + r``), every load and
store masked on the channel and the chunk's tail.

Three passes in a fixed order (per-lane fp32 accumulators, then a tree sum per
channel; no atomics): the mean of x; then, with ``d = x - mean``, ``sum(d)``,
``sum(d * d)``, ``sum(dy)`` and ``sum(dy * d)``, which give the corrected mean
(``+ sum(d) / n``), the biased variance, ``dbeta = sum(dy)`` and ``dgamma = rstd
* (sum(dy * d) - sum(d) / n * sum(dy))``; then ``dx = gamma * rstd / n * (n * dy -
dbeta - xhat * dgamma)``. ``hyper`` holds ``eps``.
"""

import triton
import triton.language as tl


@triton.jit
def batch_norm_backward(
    x,
    gamma,
    dy,
    hyper,
    dx,
    dgamma,
    dbeta,
    B,
    C,
    HW,
    x_batch_stride,
    dy_batch_stride,
    dx_batch_stride,
    BLOCK_C: tl.constexpr,
    BLOCK_R: tl.constexpr,
):
    channels = tl.program_id(0).to(tl.int64) * BLOCK_C + tl.arange(0, BLOCK_C)
    c_mask = channels < C
    channel = tl.where(c_mask, channels, 0)
    plane = channel * HW
    count = B.to(tl.int64) * HW
    n = count.to(tl.float32)
    eps = tl.load(hyper)

    # Pass 1: the mean of x (a shared helper, pasted in by rendering).
    mean = channel_mean(x, plane, c_mask, count, HW, x_batch_stride, BLOCK_C, BLOCK_R)  # noqa: F821

    # Pass 2: the centred sums and the sums of dy.
    s1 = tl.zeros((BLOCK_C, BLOCK_R), dtype=tl.float32)
    s2 = tl.zeros((BLOCK_C, BLOCK_R), dtype=tl.float32)
    g1 = tl.zeros((BLOCK_C, BLOCK_R), dtype=tl.float32)
    g2 = tl.zeros((BLOCK_C, BLOCK_R), dtype=tl.float32)
    for start in range(0, count, BLOCK_R):
        f = start + tl.arange(0, BLOCK_R)
        b = f // HW
        r = f - b * HW
        mask = c_mask[:, None] & (f < count)[None, :]
        v = tl.load(x + plane[:, None] + (b * x_batch_stride + r)[None, :], mask=mask, other=0.0)
        g = tl.load(dy + plane[:, None] + (b * dy_batch_stride + r)[None, :], mask=mask, other=0.0)
        d = tl.where(mask, v - mean[:, None], 0.0)
        s1 += d
        s2 += d * d
        g1 += g
        g2 += g * d
    mean, shift, m2 = centred_statistics(mean, s1, s2, n)  # noqa: F821 - a shared helper
    var = m2 / n
    rstd = 1.0 / tl.sqrt_rn(var + eps)
    sum_dy = tl.sum(g1, axis=1)
    sum_dyx = rstd * (tl.sum(g2, axis=1) - shift * sum_dy)
    tl.store(dbeta + channel, sum_dy, mask=c_mask)
    tl.store(dgamma + channel, sum_dyx, mask=c_mask)
    k = tl.load(gamma + channel, mask=c_mask, other=0.0) * rstd / n

    # Pass 3: dx.
    for start in range(0, count, BLOCK_R):
        f = start + tl.arange(0, BLOCK_R)
        b = f // HW
        r = f - b * HW
        mask = c_mask[:, None] & (f < count)[None, :]
        value = tl.load(
            x + plane[:, None] + (b * x_batch_stride + r)[None, :], mask=mask, other=0.0
        )
        grad = tl.load(
            dy + plane[:, None] + (b * dy_batch_stride + r)[None, :], mask=mask, other=0.0
        )
        xhat = (value - mean[:, None]) * rstd[:, None]
        out = k[:, None] * (n * grad - sum_dy[:, None] - xhat * sum_dyx[:, None])
        tl.store(dx + plane[:, None] + (b * dx_batch_stride + r)[None, :], out, mask=mask)
