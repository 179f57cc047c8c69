"""Triton source of the ``depthwise_conv_backward_data`` family: the input
gradient of a depthwise 2-D convolution (NCHW, ``groups == C_IN == C_OUT``,
any kernel size, stride, four-sided padding and dilation), ``dx =
conv2d_input(dy, w)``, as a direct gather.

Input channel ``c`` is read only by output channel ``c`` through its filter
``w[c, 0]``, so there is no reduction over channels and no ``tl.dot``: a
program owns a tile of ``BLOCK_P`` input positions (rows ``m = (b * H + h) *
W + w`` over the whole batch, grid axis 0) by ``BLOCK_C`` channels (grid axis
1), and accumulates ``acc[BLOCK_P, BLOCK_C]`` over the ``KH * KW`` taps ``t =
p * KW + q``, ``BLOCK_T`` taps per step, in that fixed order (deterministic).
Tap ``(p, q)`` of input ``(h, w)`` is fed by output ``(i, j)`` with ``i *
STRIDE_H = h + PAD_T - p * DIL_H`` and ``j * STRIDE_W = w + PAD_L - q *
DIL_W``: a tap whose numerator is negative, not a multiple of the stride, or
whose quotient falls past ``OH``/``OW`` reads 0 (the quotient is taken of a
non-negative numerator, then checked by multiplying back, so the mask is exact
for any stride, and the quotient is in ``[0, OH) x [0, OW)`` whenever the load
is unmasked, whatever the geometry; ``UNIT_STRIDE``, set by the lowering when
both strides are 1, skips the quotient: the numerator is the output position,
in range where the mask holds). Each step gathers ``dy`` ``[BLOCK_P, BLOCK_T,
BLOCK_C]``, multiplies it by the weights ``w[c, 0, p, q]`` (a ``[BLOCK_T,
BLOCK_C]`` block) and sums over the taps.

Rows past ``B * H * W`` and channels past ``C`` are masked (a larger grid
writes nothing); every ``dx`` element of a valid row and channel is written
(0 where no output reads that input). Image ``b`` of ``dy`` and ``dx`` starts
``b * <operand>_batch_stride`` elements from its base, each image contiguous.
The row index and the image bases are 64-bit, offsets inside one image and
the weight 32-bit.
"""

import triton
import triton.language as tl


@triton.jit
def depthwise_conv_backward_data(
    dy,
    w,
    dx,
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
    dy_batch_stride,
    dx_batch_stride,
    BLOCK_P: tl.constexpr,
    BLOCK_C: tl.constexpr,
    BLOCK_T: tl.constexpr,
    UNIT_STRIDE: tl.constexpr,
):
    pid_p = tl.program_id(0)
    pid_c = tl.program_id(1)
    plane = H * W
    out_plane = OH * OW
    taps = KH * KW
    # A stride of 0 (which no convolution has) must not divide by zero: any
    # geometry keeps the gathered addresses inside [0, OH) x [0, OW).
    stride_h = tl.maximum(STRIDE_H, 1)
    stride_w = tl.maximum(STRIDE_W, 1)

    offs_p = pid_p.to(tl.int64) * BLOCK_P + tl.arange(0, BLOCK_P)
    mask_p = offs_p < B.to(tl.int64) * plane
    image = offs_p // plane
    position = (offs_p - image * plane).to(tl.int32)
    top = position // W + PAD_T
    left = position % W + PAD_L
    channel = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    mask_c = channel < C
    # Plane (b, c) of dy, for every row and channel of the tile: [BLOCK_P, BLOCK_C].
    dy_planes = (dy + image * dy_batch_stride)[:, None] + (channel * out_plane)[None, :]
    offs_t = tl.arange(0, BLOCK_T)

    acc = tl.zeros((BLOCK_P, BLOCK_C), dtype=tl.float32)
    for t_start in range(0, taps, BLOCK_T):
        t = t_start + offs_t
        mask_t = t < taps
        num_h = top[:, None] - (t // KW * DIL_H)[None, :]
        num_w = left[:, None] - (t % KW * DIL_W)[None, :]
        if UNIT_STRIDE:  # every tap hits an output position: no quotient to check
            out_h = num_h
            out_w = num_w
            hit = (num_h >= 0) & (num_h < OH) & (num_w >= 0) & (num_w < OW)
        else:
            out_h = tl.maximum(num_h, 0) // stride_h
            out_w = tl.maximum(num_w, 0) // stride_w
            hit = (num_h >= 0) & (out_h * stride_h == num_h) & (out_h < OH)
            hit = hit & (num_w >= 0) & (out_w * stride_w == num_w) & (out_w < OW)
        # [BLOCK_P, BLOCK_T]: the output (i, j) that tap t of row m feeds, if any.
        hit = hit & mask_p[:, None] & mask_t[None, :]
        g = tl.load(
            dy_planes[:, None, :] + (out_h * OW + out_w)[:, :, None],
            mask=hit[:, :, None] & mask_c[None, None, :],
            other=0.0,
        )
        # Weight block [BLOCK_T, BLOCK_C]: tap t of channel c lies at c * KH * KW + t.
        b = tl.load(
            w + channel[None, :] * taps + t[:, None],
            mask=mask_t[:, None] & mask_c[None, :],
            other=0.0,
        )
        acc += tl.sum(g * b[None, :, :], axis=1)

    # Element (position, channel) of an image lies at channel * H * W + position.
    in_image = (channel * plane)[None, :] + position[:, None]
    mask = mask_p[:, None] & mask_c[None, :]
    tl.store((dx + image * dx_batch_stride)[:, None] + in_image, acc, mask=mask)
