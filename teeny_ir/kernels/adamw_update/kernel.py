"""Triton source of the ``adamw_update`` family: one ``torch.optim.AdamW`` step of
a flat parameter, in one program.

The program loads ``hyper`` (one masked block, each value picked out) and the
0-d ``step`` (lane 0 of a masked block), computes ``step' = step + 1`` and the
bias corrections ``1 - beta**step'`` as ``-expm1(step' * ln(beta))`` (a series
for small arguments, ``1 - exp`` otherwise: accurate in f32 where ``beta**step'``
is near 1), then walks the ``N`` elements in masked ``BLOCK`` chunks (64-bit
offsets), loading ``p``, ``g``, ``m`` and ``v`` of a chunk before storing any
of its outputs, in the reference's order of operations. ``step'`` is stored by
lane 0 of program 0, after the step was read: every output may be its input's
buffer (in place). Programs other than 0 (``live`` = 0) read only ``hyper`` and ``step``, and
store nothing.
"""

import triton
import triton.language as tl


@triton.jit
def _pick(values, index, k):
    """Element ``k`` of the block ``values`` (``index`` its lanes)."""
    return tl.sum(tl.where(index == k, values, 0.0), axis=0)


@triton.jit
def _one_minus_pow(ln_beta, count):
    """``1 - beta**count`` from ``ln(beta)`` (<= 0, or -inf for beta = 0) and the
    step count, as ``-expm1(x)`` with ``x = count * ln(beta)``: a Horner series
    through ``x**8 / 8!`` where ``|x| < 0.5``, else ``1 - exp(x)``."""
    x = count * ln_beta
    small = x > -0.5
    xs = tl.where(small, x, 0.0)
    series = 1.0 + xs / 8.0
    series = 1.0 + xs / 7.0 * series
    series = 1.0 + xs / 6.0 * series
    series = 1.0 + xs / 5.0 * series
    series = 1.0 + xs / 4.0 * series
    series = 1.0 + xs / 3.0 * series
    series = 1.0 + xs / 2.0 * series
    return tl.where(small, -xs * series, 1.0 - tl.exp(x))


@triton.jit
def adamw_update(
    p,
    g,
    m,
    v,
    step,
    hyper,
    p_out,
    m_out,
    v_out,
    step_out,
    N,
    BLOCK: tl.constexpr,
):
    live = (tl.program_id(0) == 0).to(tl.int32)
    lane = tl.arange(0, 16)
    h = tl.load(hyper + lane, mask=lane < 9, other=0.0)
    lr = _pick(h, lane, 0)
    beta1 = _pick(h, lane, 1)
    beta2 = _pick(h, lane, 2)
    eps = _pick(h, lane, 3)
    decay = _pick(h, lane, 4)
    one_minus_beta1 = _pick(h, lane, 5)
    one_minus_beta2 = _pick(h, lane, 6)
    ln_beta1 = _pick(h, lane, 7)
    ln_beta2 = _pick(h, lane, 8)
    count = tl.sum(tl.load(step + lane, mask=lane < 1, other=0.0), axis=0) + 1.0
    step_size = lr / _one_minus_pow(ln_beta1, count)
    root_bc2 = tl.sqrt_rn(_one_minus_pow(ln_beta2, count))
    for start in range(0, N, BLOCK):
        offs = start + tl.arange(0, BLOCK).to(tl.int64)
        mask = offs < N * live
        param = tl.load(p + offs, mask=mask, other=0.0)
        grad = tl.load(g + offs, mask=mask, other=0.0)
        exp_avg = tl.load(m + offs, mask=mask, other=0.0)
        exp_avg_sq = tl.load(v + offs, mask=mask, other=0.0)
        param = param * decay
        exp_avg = beta1 * exp_avg + one_minus_beta1 * grad
        exp_avg_sq = beta2 * exp_avg_sq + one_minus_beta2 * grad * grad
        denom = tl.sqrt_rn(exp_avg_sq) / root_bc2 + eps
        tl.store(m_out + offs, exp_avg, mask=mask)
        tl.store(v_out + offs, exp_avg_sq, mask=mask)
        tl.store(p_out + offs, param - step_size * exp_avg / denom, mask=mask)
    tl.store(step_out + lane, tl.zeros((16,), tl.float32) + count, mask=lane < live)
