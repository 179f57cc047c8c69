"""Triton source of the ``depthwise_conv`` family: a depthwise 2-D convolution
(NCHW, ``groups == C_IN == C_OUT``, any kernel size, stride, four-sided padding
and dilation) as a direct convolution, with the GEMM families' epilogue fused.

Each channel is convolved with its own ``KH x KW`` filter, so there is no
reduction over channels and no ``tl.dot``: a program owns a tile of
``BLOCK_P`` output positions (rows ``m = (b * OH + oh) * OW + ow`` over the
whole batch, grid axis 0) by ``BLOCK_C`` channels (grid axis 1), and
accumulates ``acc[BLOCK_P, BLOCK_C]`` over the ``KH * KW`` taps ``t = p * KW +
q``, ``BLOCK_T`` taps per step: it gathers the input block ``[BLOCK_P, BLOCK_T,
BLOCK_C]`` ``x[b, c, oh * STRIDE_H - PAD_T + p * DIL_H, ow * STRIDE_W - PAD_L +
q * DIL_W]`` with a load mask (taps outside the image, the padding, and the
tap tail read 0), multiplies it by the weights ``w[c, 0, p, q]`` (a
``[BLOCK_T, BLOCK_C]`` block) and sums over the taps.

Rows past ``B * OH * OW`` and channels past ``C`` are masked (a larger grid
writes nothing). Image ``b`` of ``x``, ``r`` and ``y`` starts ``b *
<operand>_batch_stride`` elements from its base, each image contiguous, so any
of them may be a channel slice of a larger buffer. The row index and the image
base offsets are 64-bit, offsets inside one image 32-bit: only one image (not
the batch) has to fit in 2**31 elements. The epilogue is the shared
``gemm_epilogue`` helper (`teeny_ir.kernels.triton_helpers`, pasted in by
rendering), as in the GEMM families: ``act(scale[c] * acc + shift[c])`` with
``ACTIVATION`` an epilogue entry of the pointwise table (or ``none``) rendered
into the ``activation`` slot, then, if the runtime argument ``HAS_RESIDUAL``
(an i32 dim, not a constexpr: one variant serves launches with and without a
residual) is not 0, plus ``r`` (when 0, ``r`` is never read).
"""

import triton
import triton.language as tl


@triton.jit
def activation(x):
    """Slot: rendering replaces it with the pointwise table's expression for ACTIVATION."""
    tl.static_assert(False, "render this kernel: its activation slot is empty")
    return x


@triton.jit
def depthwise_conv(
    x,
    w,
    scale,
    shift,
    r,
    y,
    B,
    C,
    H,
    W,
    OH,
    OW,
    KH,
    KW,
    STRIDE_H,
    STRIDE_W,
    PAD_T,
    PAD_L,
    DIL_H,
    DIL_W,
    x_batch_stride,
    r_batch_stride,
    y_batch_stride,
    HAS_RESIDUAL,
    BLOCK_P: tl.constexpr,
    BLOCK_C: tl.constexpr,
    BLOCK_T: tl.constexpr,
    ACTIVATION: tl.constexpr,
):
    pid_p = tl.program_id(0)
    pid_c = tl.program_id(1)
    spatial = OH * OW
    taps = KH * KW

    offs_p = pid_p.to(tl.int64) * BLOCK_P + tl.arange(0, BLOCK_P)
    mask_p = offs_p < B.to(tl.int64) * spatial
    image = offs_p // spatial
    position = (offs_p - image * spatial).to(tl.int32)
    in_h0 = (position // OW) * STRIDE_H - PAD_T
    in_w0 = (position % OW) * STRIDE_W - PAD_L
    channel = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    mask_c = channel < C
    # Plane (b, c) of x, for every row and channel of the tile: [BLOCK_P, BLOCK_C].
    x_planes = (x + image * x_batch_stride)[:, None] + (channel * (H * W))[None, :]
    offs_t = tl.arange(0, BLOCK_T)

    acc = tl.zeros((BLOCK_P, BLOCK_C), dtype=tl.float32)
    for t_start in range(0, taps, BLOCK_T):
        t = t_start + offs_t
        mask_t = t < taps
        in_h = in_h0[:, None] + (t // KW * DIL_H)[None, :]
        in_w = in_w0[:, None] + (t % KW * DIL_W)[None, :]
        # [BLOCK_P, BLOCK_T]: the tap reads inside the image (else padding: 0).
        inside = (
            mask_p[:, None] & mask_t[None, :] & (in_h >= 0) & (in_h < H) & (in_w >= 0) & (in_w < W)
        )
        a = tl.load(
            x_planes[:, None, :] + (in_h * W + in_w)[:, :, None],
            mask=inside[:, :, None] & mask_c[None, None, :],
            other=0.0,
        )
        # Weight block [BLOCK_T, BLOCK_C]: tap t of channel c lies at c * KH * KW + t.
        b = tl.load(
            w + channel[None, :] * taps + t[:, None],
            mask=mask_t[:, None] & mask_c[None, :],
            other=0.0,
        )
        acc += tl.sum(a * b[None, :, :], axis=1)

    # Element (position, channel) of an image lies at channel * OH * OW + position.
    in_image = (channel * spatial)[None, :] + position[:, None]
    mask = mask_p[:, None] & mask_c[None, :]
    residual = (r + image * r_batch_stride)[:, None] + in_image
    v = gemm_epilogue(  # noqa: F821 - a shared helper, pasted in by rendering
        acc, activation, scale, shift, channel, mask_c, residual, mask, HAS_RESIDUAL
    )
    tl.store((y + image * y_batch_stride)[:, None] + in_image, v, mask=mask)
