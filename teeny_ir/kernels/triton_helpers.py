"""Shared ``@triton.jit`` helpers, concatenated into every rendered kernel.

This file is Triton source that teeny_ir never imports: `teeny_ir.kernels.render`
reads it as text and pastes its functions into each emitted kernel file, so an
emitted file is self-contained and its hash covers everything that runs.
Kernel templates and the pointwise table's Triton expressions call these by
name. Core ``tl`` only (no libdevice: the interpreter cannot run it).

Special values behave as in PyTorch (nan in, nan out; +-inf to the limits),
and no intermediate overflows or makes an invalid operation when the result is
an ordinary number, so Triton's interpreter (numpy) warns only where the
result itself is an IEEE exception (``silu(-inf)`` is ``-inf * 0 = nan``, as in
PyTorch).
"""

import triton
import triton.language as tl


@triton.jit
def logistic(x):
    """1 / (1 + exp(-x)) computing only exp(-|x|), so it never overflows."""
    z = tl.exp(-tl.abs(x))
    r = 1.0 / (1.0 + z)
    return tl.where(x >= 0, r, z * r)


@triton.jit
def tanh_stable(x):
    """tanh(x) = sign(x) * (1 - z) / (1 + z) with z = exp(-2|x|), taken as exp(-|x|)**2
    so that nothing overflows (libdevice's tanh fails in the interpreter).

    tanh(+-inf) = +-1 and NaN stays NaN. Below 1/16 in magnitude, where 1 - z
    cancels, its odd Taylor polynomial x * (1 - x^2/3 + 2x^4/15 - 17x^6/315)
    (relative error < 1e-11) is used instead, which also keeps -0.0 and
    subnormals exact.
    """
    z = tl.exp(-tl.abs(x))
    z = z * z
    t = (1.0 - z) / (1.0 + z)
    small = tl.abs(x) < 0.0625
    s = tl.where(small, x, 0.0)
    s2 = s * s
    p = s * (
        1.0 + s2 * (-0.3333333333333333 + s2 * (0.13333333333333333 - 0.05396825396825397 * s2))
    )
    return tl.where(small, p, tl.where(x < 0, -t, t))


@triton.jit
def gelu_tanh_arg(x):
    """sqrt(2 / pi) * (x + 0.044715 * x**3), the tanh argument of the tanh-approximated
    GELU, over x clamped to [-10, 10]: tanh of it is then already exactly +-1 in f32,
    and the cube never overflows. (A NaN x becomes finite here: the GELU's outer
    factor x carries it.)"""
    c = tl.minimum(tl.maximum(x, -10.0), 10.0)
    return 0.7978845608028654 * (c + 0.044715 * c * c * c)


@triton.jit
def gemm_epilogue(acc, activate, scale, shift, channel, mask_n, residual, mask, HAS_RESIDUAL):
    """The fused epilogue of the GEMM convolution families (conv1x1_gemm,
    implicit_gemm_conv, depthwise_conv) on one accumulator tile ``acc[BLOCK_M,
    BLOCK_N]``, whose column j is output channel ``channel[j]`` (valid where
    ``mask_n``): ``activate(scale[n] * acc + shift[n])``, then, if the runtime
    i32 ``HAS_RESIDUAL`` is not 0, plus the residual tile at the pointers
    ``residual`` (loaded where ``mask``, the output tile's mask). The residual
    comes after the activation, as in YOLOv8's bottleneck ``x +
    SiLU(BN(conv(...)))``; without one, ``residual`` is never read.
    ``HAS_RESIDUAL`` is a kernel argument, not a constexpr, so one compiled
    variant serves a tile with and without the residual: the test is one
    uniform scalar branch (an ``scf.if``) after the main loop. A family without
    a residual (matmul, linear) passes a literal ``False``, which Triton folds
    as a constant. ``activate`` is the kernel's ``activation`` slot function."""
    channel_scale = tl.load(scale + channel, mask=mask_n, other=0.0)
    channel_shift = tl.load(shift + channel, mask=mask_n, other=0.0)
    v = activate(acc * channel_scale[None, :] + channel_shift[None, :])
    if HAS_RESIDUAL != 0:
        v += tl.load(residual, mask=mask, other=0.0)
    return v


@triton.jit
def channel_mean(
    x, plane, c_mask, count, HW, x_batch_stride, BLOCK_C: tl.constexpr, BLOCK_R: tl.constexpr
):
    """The batch-norm families' first pass: for a block of ``BLOCK_C`` channels
    (``plane = c * HW``, ``c_mask`` the channels that exist), the fp32 mean of
    ``x`` over the ``count = B * HW`` values of each, image ``b`` at ``b *
    x_batch_stride``; chunks of ``BLOCK_R`` along the flat index, per-lane
    accumulators, then one tree sum per channel (a fixed order, no atomics)."""
    acc = tl.zeros((BLOCK_C, BLOCK_R), dtype=tl.float32)
    for start in range(0, count, BLOCK_R):
        f = start + tl.arange(0, BLOCK_R)
        b = f // HW
        column = b * x_batch_stride + (f - b * HW)
        mask = c_mask[:, None] & (f < count)[None, :]
        acc += tl.load(x + plane[:, None] + column[None, :], mask=mask, other=0.0)
    return tl.sum(acc, axis=1) / count.to(tl.float32)


@triton.jit
def centred_statistics(mean, s1, s2, n):
    """The batch-norm families' second pass, finished: from the first pass's
    ``mean`` and the per-lane centred sums ``s1 = sum(d)``, ``s2 = sum(d * d)``
    (``d = x - mean``) over ``n`` values, the corrected mean, its correction
    ``shift = sum(d) / n`` and ``m2 = sum((x - mean')**2)`` (never below 0),
    without the cancellation of a one-pass ``E[x^2] - mean^2``."""
    d1 = tl.sum(s1, axis=1)
    shift = d1 / n
    m2 = tl.maximum(tl.sum(s2, axis=1) - d1 * shift, 0.0)
    return mean + shift, shift, m2


@triton.jit
def finite_sum_add(acc, nan, pos, neg, v):
    """One chunk of the row sums (the ``reduce`` and ``fused_reduce`` families):
    ``v``'s finite values added to ``acc`` lane by lane, and whether a lane saw a
    NaN, +inf or -inf kept apart in ``nan``, ``pos`` and ``neg`` (int32), so no
    addition is ever invalid. Masked-off lanes must hold 0 in ``v``."""
    is_nan = v != v
    is_pos = v == float("inf")
    is_neg = v == float("-inf")
    nan = tl.maximum(nan, is_nan.to(tl.int32))
    pos = tl.maximum(pos, is_pos.to(tl.int32))
    neg = tl.maximum(neg, is_neg.to(tl.int32))
    acc += tl.where(is_nan | is_pos | is_neg, 0.0, v)
    return acc, nan, pos, neg


@triton.jit
def finite_sum_total(acc, nan, pos, neg):
    """Each row's sum from `finite_sum_add`'s lanes, as numpy's sum: NaN for a row
    with a NaN or with both infinities, +inf (-inf) for one with +inf (-inf)
    only, else the sum of the finite values."""
    row_sum = tl.sum(acc, axis=1)
    has_pos = tl.max(pos, axis=1) > 0
    has_neg = tl.max(neg, axis=1) > 0
    row_sum = tl.where(has_pos, float("inf"), row_sum)
    row_sum = tl.where(has_neg, float("-inf"), row_sum)
    return tl.where((tl.max(nan, axis=1) > 0) | (has_pos & has_neg), float("nan"), row_sum)
