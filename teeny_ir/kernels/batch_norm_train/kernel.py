"""Triton source of the ``batch_norm_train`` family: a training-form batch norm.

Each program owns ``BLOCK_C`` channels (a ``[BLOCK_C, BLOCK_R]`` tile) and loops
over the flat per-channel index ``f`` in ``[0, B * HW)`` in chunks of ``BLOCK_R``:
``b = f // HW``, ``r = f - b * HW``, the value at ``b * x_batch_stride + c * HW +
r`` (64-bit offsets; a chunk of a small plane spans images). Every load and store
is masked on the channel and on the chunk's tail; masked-off lanes read 0.

Three passes, each in a fixed order (per-lane fp32 accumulators, then a tree
sum per channel; no atomics): the mean; the centred sums ``sum(d)`` and
``sum(d * d)`` of ``d = x - mean``, which correct the mean (``+ sum(d) / n``)
and give the biased variance ``(sum(d * d) - sum(d)^2 / n) / n``, accurate for
values with a large common offset; then ``y``. The running statistics are
updated with the unbiased variance ``m2 / (n - 1)``, NaN for ``n == 1``
(computed without dividing by 0). ``hyper`` holds ``eps``, ``momentum`` and
``1 - momentum``.
"""

import triton
import triton.language as tl


@triton.jit
def batch_norm_train(
    x,
    gamma,
    beta,
    running_mean,
    running_var,
    hyper,
    y,
    mean_out,
    var_out,
    B,
    C,
    HW,
    x_batch_stride,
    y_batch_stride,
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
    momentum = tl.load(hyper + 1)
    keep = tl.load(hyper + 2)

    # Pass 1: the mean (a shared helper, pasted in by rendering).
    mean = channel_mean(x, plane, c_mask, count, HW, x_batch_stride, BLOCK_C, BLOCK_R)  # noqa: F821

    # Pass 2: the centred sums.
    s1 = tl.zeros((BLOCK_C, BLOCK_R), dtype=tl.float32)
    s2 = tl.zeros((BLOCK_C, BLOCK_R), dtype=tl.float32)
    for start in range(0, count, BLOCK_R):
        f = start + tl.arange(0, BLOCK_R)
        b = f // HW
        column = b * x_batch_stride + (f - b * HW)
        mask = c_mask[:, None] & (f < count)[None, :]
        v = tl.load(x + plane[:, None] + column[None, :], mask=mask, other=0.0)
        d = tl.where(mask, v - mean[:, None], 0.0)
        s1 += d
        s2 += d * d
    mean, _, m2 = centred_statistics(mean, s1, s2, n)  # noqa: F821 - a shared helper
    var = m2 / n
    rstd = 1.0 / tl.sqrt_rn(var + eps)
    scale = rstd * tl.load(gamma + channel, mask=c_mask, other=0.0)
    offset = tl.load(beta + channel, mask=c_mask, other=0.0)

    # Pass 3: y.
    for start in range(0, count, BLOCK_R):
        f = start + tl.arange(0, BLOCK_R)
        b = f // HW
        r = f - b * HW
        mask = c_mask[:, None] & (f < count)[None, :]
        value = tl.load(
            x + plane[:, None] + (b * x_batch_stride + r)[None, :], mask=mask, other=0.0
        )
        out = (value - mean[:, None]) * scale[:, None] + offset[:, None]
        tl.store(y + plane[:, None] + (b * y_batch_stride + r)[None, :], out, mask=mask)

    # The running statistics (read before written: safe in place).
    unbiased = tl.where(count > 1, m2 / tl.maximum(n - 1.0, 1.0), float("nan"))
    old_mean = tl.load(running_mean + channel, mask=c_mask, other=0.0)
    old_var = tl.load(running_var + channel, mask=c_mask, other=0.0)
    tl.store(mean_out + channel, keep * old_mean + momentum * mean, mask=c_mask)
    tl.store(var_out + channel, keep * old_var + momentum * unbiased, mask=c_mask)
