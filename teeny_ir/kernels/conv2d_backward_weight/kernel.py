"""Triton source of the ``conv2d_backward_weight`` family: the weight gradient of
a 2-D convolution (NCHW, any kernel size, stride, four-sided padding, dilation
and groups), ``dw = conv2d_weight(x, dy)``, as a GEMM.

GEMM view, per group ``g``: rows ``m`` run over the group's ``M = C_OUT /
GROUPS`` output channels (channel ``o = g * M + m``), columns ``n`` over ``N =
C_IN / GROUPS * KH * KW`` (input channel ``c``, tap ``(p, q)``) in the weight's
own order (``n = (c * KH + p) * KW + q``), and the reduction ``k`` over ``K = B
* OH * OW`` (image, output position) pairs (``k = (b * OH + i) * OW + j``).
``A[m, k] = dy[b, o, i, j]`` and ``B[k, n] = x[b, g * C_IN / GROUPS + c, i *
STRIDE_H - PAD_T + p * DIL_H, j * STRIDE_W - PAD_L + q * DIL_W]``, 0 where the
tap falls in the padding. Each program walks the whole of ``K`` in chunks of
``BLOCK_K`` (64-bit: the batch's positions may pass 2**31), accumulating
``acc[BLOCK_M, BLOCK_N] += A @ B`` with ``tl.dot`` in that fixed order, and
stores its tile once: deterministic, no atomics.

The grid is one axis of ``cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N) * GROUPS``
programs: ``pid = (row tile * GROUPS + group) * column tiles + column tile``,
so programs past the tile model have row tiles past ``M`` and write nothing.
Each image of ``x`` and ``dy`` is contiguous and starts ``b *
<operand>_batch_stride`` elements from its base (64-bit), offsets inside one
image and in ``dw`` are 32-bit.
"""

import triton
import triton.language as tl


@triton.jit
def conv2d_backward_weight(
    x,
    dy,
    dw,
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
    x_batch_stride,
    dy_batch_stride,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid = tl.program_id(0)
    group_in = C_IN // GROUPS
    group_out = C_OUT // GROUPS
    taps = KH * KW
    n_total = group_in * taps
    tiles_n = tl.cdiv(n_total, BLOCK_N)
    per_row_tile = tiles_n * GROUPS
    pid_m = pid // per_row_tile
    rest = pid % per_row_tile
    group = rest // tiles_n
    pid_n = rest % tiles_n
    plane = H * W
    out_plane = OH * OW

    # Row tiles past M (extra programs) may pass 2**31 as i32: keep rows 64-bit.
    offs_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K).to(tl.int64)
    mask_m = offs_m < group_out
    mask_n = offs_n < n_total
    out_channel = (group * group_out + offs_m).to(tl.int32)
    c = offs_n // taps
    tap = offs_n % taps
    tap_h = tap // KW * DIL_H - PAD_T
    tap_w = tap % KW * DIL_W - PAD_L
    dy_rows = out_channel * out_plane
    x_cols = (group * group_in + c) * plane
    k_total = B.to(tl.int64) * out_plane

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k_start in range(0, k_total, BLOCK_K):
        k = k_start + offs_k
        mask_k = k < k_total
        batch = k // out_plane
        position = (k - batch * out_plane).to(tl.int32)
        # Gradient tile [BLOCK_M, BLOCK_K]: dy[b, o, i, j].
        a = tl.load(
            dy + (batch * dy_batch_stride)[None, :] + dy_rows[:, None] + position[None, :],
            mask=mask_m[:, None] & mask_k[None, :],
            other=0.0,
        )
        in_h = (position // OW * STRIDE_H)[:, None] + tap_h[None, :]
        in_w = (position % OW * STRIDE_W)[:, None] + tap_w[None, :]
        inside = (in_h >= 0) & (in_h < H) & (in_w >= 0) & (in_w < W)
        # Input tile [BLOCK_K, BLOCK_N]: the tap n of output position k; 0 in the padding.
        b = tl.load(
            x + (batch * x_batch_stride)[:, None] + x_cols[None, :] + in_h * W + in_w,
            mask=mask_k[:, None] & mask_n[None, :] & inside,
            other=0.0,
        )
        acc = tl.dot(a, b, acc)

    mask = mask_m[:, None] & mask_n[None, :]
    tl.store(dw + (out_channel * n_total)[:, None] + offs_n[None, :], acc, mask=mask)
