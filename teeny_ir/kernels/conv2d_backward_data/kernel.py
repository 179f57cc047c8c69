"""Triton source of the ``conv2d_backward_data`` family: the input gradient of a
2-D convolution (NCHW, any kernel size, stride, four-sided padding, dilation
and groups), ``dx = conv2d_input(dy, w)``, as an implicit GEMM.

GEMM view, per group ``g``: rows ``m`` run over the ``M = B * H * W`` input
positions of the whole batch (``m = (b * H + h) * W + w``), columns ``n`` over
the group's ``N = C_IN / GROUPS`` input channels (channel ``g * N + n`` of
``dx``), and the reduction ``k`` over ``K = C_OUT / GROUPS * KH * KW`` pairs of
an output channel ``o`` of the group and a tap ``(p, q)``, in the weight's own
order (``k = (o * KH + p) * KW + q``). The K loop gathers ``A[m, k] = dy[b, g *
C_OUT / GROUPS + o, i, j]`` with ``i * STRIDE_H = h + PAD_T - p * DIL_H`` and
``j * STRIDE_W = w + PAD_L - q * DIL_W``: a tap whose numerator is negative, not
a multiple of the stride, or whose quotient falls past ``OH``/``OW`` reads 0
(the quotient is taken of a non-negative numerator, then checked by
multiplying back, so the mask is exact for any stride, and the quotient is in
``[0, OH) x [0, OW)`` whenever the load is unmasked, whatever the geometry;
``UNIT_STRIDE``, set by the lowering when both strides are 1, skips the
quotient: the numerator is the output position, in range where the mask
holds, so the same addresses are read with fewer ops). ``B[k, n] = w[g *
C_OUT / GROUPS + o, n, p, q]``. ``acc[BLOCK_M, BLOCK_N] += A @ B`` is a
``tl.dot`` in a fixed K order: the result is deterministic.

The grid is one axis of ``cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N) * GROUPS``
programs: ``pid = (row tile * GROUPS + group) * column tiles + column tile``,
so programs past the tile model have row tiles past ``M`` and write nothing.
Every ``dx`` element of a valid row and column is written (0 where no output
reads that input). Each image of ``dy`` and ``dx`` is contiguous and starts
``b * <operand>_batch_stride`` elements from its base; the row index and the
image bases are 64-bit, offsets inside one image and the weight 32-bit.
"""

import triton
import triton.language as tl


@triton.jit
def conv2d_backward_data(
    dy,
    w,
    dx,
    B,
    C_IN,
    H,
    W,
    C_OUT,
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
    GROUPS,
    dy_batch_stride,
    dx_batch_stride,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    UNIT_STRIDE: tl.constexpr,
):
    pid = tl.program_id(0)
    group_in = C_IN // GROUPS
    group_out = C_OUT // GROUPS
    tiles_n = tl.cdiv(group_in, BLOCK_N)
    per_row_tile = tiles_n * GROUPS
    pid_m = pid // per_row_tile
    rest = pid % per_row_tile
    group = rest // tiles_n
    pid_n = rest % tiles_n
    taps = KH * KW
    k_total = group_out * taps
    plane = H * W
    out_plane = OH * OW
    # A stride of 0 (which no convolution has) must not divide by zero: any
    # geometry keeps the gathered addresses inside [0, OH) x [0, OW).
    stride_h = tl.maximum(STRIDE_H, 1)
    stride_w = tl.maximum(STRIDE_W, 1)

    offs_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < B.to(tl.int64) * plane
    mask_n = offs_n < group_in
    batch = offs_m // plane
    position = (offs_m - batch * plane).to(tl.int32)
    top = position // W + PAD_T
    left = position % W + PAD_L
    dy_rows = dy + batch * dy_batch_stride + group * group_out * out_plane
    channel = group * group_in + offs_n
    w_cols = w + (group * group_out * group_in + offs_n) * taps

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k_start in range(0, k_total, BLOCK_K):
        k = k_start + offs_k
        mask_k = k < k_total
        o = k // taps
        tap = k % taps
        num_h = top[:, None] - (tap // KW * DIL_H)[None, :]
        num_w = left[:, None] - (tap % KW * DIL_W)[None, :]
        if UNIT_STRIDE:  # every tap hits an output position: no quotient to check
            out_h = num_h
            out_w = num_w
            hit = (num_h >= 0) & (num_h < OH) & (num_w >= 0) & (num_w < OW)
        else:
            out_h = tl.maximum(num_h, 0) // stride_h
            out_w = tl.maximum(num_w, 0) // stride_w
            hit = (num_h >= 0) & (out_h * stride_h == num_h) & (out_h < OH)
            hit = hit & (num_w >= 0) & (out_w * stride_w == num_w) & (out_w < OW)
        # Gradient tile [BLOCK_M, BLOCK_K]: output (o, i, j) that tap k of input m feeds.
        a = tl.load(
            dy_rows[:, None] + (o[None, :] * OH + out_h) * OW + out_w,
            mask=mask_m[:, None] & mask_k[None, :] & hit,
            other=0.0,
        )
        # Weight tile [BLOCK_K, BLOCK_N]: w[g * C_OUT / GROUPS + o, n, p, q].
        b = tl.load(
            w_cols[None, :] + (o * group_in * taps + tap)[:, None],
            mask=mask_k[:, None] & mask_n[None, :],
            other=0.0,
        )
        acc = tl.dot(a, b, acc)

    mask = mask_m[:, None] & mask_n[None, :]
    in_image = position[:, None] + (channel * plane)[None, :]
    tl.store(dx + (batch * dx_batch_stride)[:, None] + in_image, acc, mask=mask)
