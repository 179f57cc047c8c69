"""Triton source of the ``depthwise_conv_backward_weight`` family: the weight
gradient of a depthwise 2-D convolution (NCHW, ``groups == C_IN == C_OUT``,
any kernel size, stride, four-sided padding and dilation), ``dw =
conv2d_weight(x, dy)``, reduced over the batch without ``tl.dot``.

Channel ``c`` of the weight sees only channel ``c`` of ``x`` and of ``dy``, so
each ``dw[c, 0, p, q]`` is one dot product of length ``K = B * OH * OW``
(image, output position) pairs, ``k = (b * OH + i) * OW + j``: ``dy[b, c, i,
j]`` times ``x[b, c, i * STRIDE_H - PAD_T + p * DIL_H, j * STRIDE_W - PAD_L +
q * DIL_W]``, 0 where the tap falls in the padding. A program owns a block of
``BLOCK_T`` taps ``t = p * KW + q`` (grid axis 1) by ``BLOCK_C`` channels
(grid axis 0) and walks the whole of ``K`` in chunks of ``BLOCK_P`` (64-bit:
the batch's positions may pass 2**31): per chunk it loads ``dy`` ``[BLOCK_P,
BLOCK_C]``, gathers ``x`` ``[BLOCK_P, BLOCK_T, BLOCK_C]`` with a mask (the
padding, the tap tail, the channel tail and the positions past ``K`` read 0)
and adds their products into ``acc[BLOCK_P, BLOCK_T, BLOCK_C]``; after the
last chunk it sums ``acc`` over the positions and stores its block once.
The order of every addition is fixed by the tiles alone: deterministic, no
atomics.

Taps past ``KH * KW`` and channels past ``C`` are masked (a larger grid
writes nothing). Each image of ``x`` and ``dy`` is contiguous and starts
``b * <operand>_batch_stride`` elements from its base (64-bit); offsets inside
one image and in ``dw`` are 32-bit.
"""

import triton
import triton.language as tl


@triton.jit
def depthwise_conv_backward_weight(
    x,
    dy,
    dw,
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
    dy_batch_stride,
    BLOCK_P: tl.constexpr,
    BLOCK_C: tl.constexpr,
    BLOCK_T: tl.constexpr,
):
    pid_c = tl.program_id(0)
    pid_t = tl.program_id(1)
    plane = H * W
    out_plane = OH * OW
    taps = KH * KW

    channel = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    mask_c = channel < C
    t = pid_t * BLOCK_T + tl.arange(0, BLOCK_T)
    mask_t = t < taps
    tap_h = t // KW * DIL_H - PAD_T
    tap_w = t % KW * DIL_W - PAD_L
    x_channels = channel * plane
    dy_channels = channel * out_plane
    offs_k = tl.arange(0, BLOCK_P).to(tl.int64)
    k_total = B.to(tl.int64) * out_plane

    acc = tl.zeros((BLOCK_P, BLOCK_T, BLOCK_C), dtype=tl.float32)
    for k_start in range(0, k_total, BLOCK_P):
        k = k_start + offs_k
        mask_k = k < k_total
        image = k // out_plane
        position = (k - image * out_plane).to(tl.int32)
        # Gradient block [BLOCK_P, BLOCK_C]: dy[b, c, i, j].
        g = tl.load(
            (dy + image * dy_batch_stride)[:, None] + dy_channels[None, :] + position[:, None],
            mask=mask_k[:, None] & mask_c[None, :],
            other=0.0,
        )
        in_h = (position // OW * STRIDE_H)[:, None] + tap_h[None, :]
        in_w = (position % OW * STRIDE_W)[:, None] + tap_w[None, :]
        # [BLOCK_P, BLOCK_T]: the tap reads inside the image (else padding: 0).
        inside = (
            mask_k[:, None] & mask_t[None, :] & (in_h >= 0) & (in_h < H) & (in_w >= 0) & (in_w < W)
        )
        # Input block [BLOCK_P, BLOCK_T, BLOCK_C]: tap t of output position k.
        a = tl.load(
            (x + image * x_batch_stride)[:, None, None]
            + x_channels[None, None, :]
            + (in_h * W + in_w)[:, :, None],
            mask=inside[:, :, None] & mask_c[None, None, :],
            other=0.0,
        )
        acc += a * g[:, None, :]

    # Tap t of channel c lies at c * KH * KW + t.
    tl.store(
        dw + channel[None, :] * taps + t[:, None],
        tl.sum(acc, axis=0),
        mask=mask_t[:, None] & mask_c[None, :],
    )
