"""Triton source of the ``implicit_gemm_conv`` family: any 2-D convolution
(NCHW, any kernel size, stride, four-sided padding, dilation and groups) as an
implicit GEMM, with the BatchNorm-style epilogue and an optional residual fused.

GEMM view, per group ``g`` (grid axis 2): rows ``m`` run over the ``M = B * OH
* OW`` output positions of the whole batch (``m = (b * OH + oh) * OW + ow``),
columns ``n`` over the group's ``N = C_OUT / GROUPS`` output channels (output
channel ``o = g * N + n``), and the reduction ``k`` over ``K = C_IN / GROUPS *
KH * KW`` taps in the weight's own order (``k = (c * KH + p) * KW + q``), so
the weight [C_OUT, C_IN / GROUPS, KH, KW] is the GEMM's ``B^T`` as it is. The
K loop gathers the input patch tile ``A[m, k] = x[b, g * C_IN / GROUPS + c,
oh * STRIDE_H - PAD_T + p * DIL_H, ow * STRIDE_W - PAD_L + q * DIL_W]`` with a
load mask: taps outside the image (the padding) read 0, as does the K tail
(the 3-channel stem has K = 27). ``acc[BLOCK_M, BLOCK_N] += A @ B`` is a
``tl.dot`` (tensor cores on a GPU: BLOCK_M, BLOCK_N, BLOCK_K >= 16).

The grid is ``(cdiv(B * OH * OW, BLOCK_M), cdiv(C_OUT / GROUPS, BLOCK_N),
GROUPS)``; rows past ``M``, columns past ``N`` and groups past ``GROUPS`` are
masked (a larger grid writes nothing). Each image of ``x``, ``r`` and ``y`` is
contiguous and starts ``b * <operand>_batch_stride`` elements from its base,
so any of them may be a channel slice of a larger NCHW buffer. The row index
and the image base offsets are 64-bit, offsets inside one image 32-bit: only
one image (not the batch) has to fit in 2**31 elements.

The epilogue is the shared ``gemm_epilogue`` helper
(`teeny_ir.kernels.triton_helpers`, pasted in by rendering): ``ACTIVATION``
names an epilogue entry of the pointwise table (or ``none``), whose expression
rendering puts into the ``activation`` slot, and the runtime argument
``HAS_RESIDUAL`` (an i32 dim, not a constexpr: one variant serves launches
with and without a residual), when not 0, adds ``r`` (shaped like ``y``)
after it; when 0, ``r`` is never read.
"""

import triton
import triton.language as tl


@triton.jit
def activation(x):
    """Slot: rendering replaces it with the pointwise table's expression for ACTIVATION."""
    tl.static_assert(False, "render this kernel: its activation slot is empty")
    return x


@triton.jit
def implicit_gemm_conv(
    x,
    w,
    scale,
    shift,
    r,
    y,
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
    r_batch_stride,
    y_batch_stride,
    HAS_RESIDUAL,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    ACTIVATION: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    group = tl.program_id(2)
    group_in = C_IN // GROUPS
    group_out = C_OUT // GROUPS
    taps = KH * KW
    k_total = group_in * taps
    spatial = OH * OW

    # Programs past the last group see no valid rows or columns. (A block mask `&`
    # a scalar condition comes out as int32 in the interpreter: fold it into bounds.)
    m_end = tl.where(group < GROUPS, B.to(tl.int64) * spatial, 0)
    n_end = tl.where(group < GROUPS, group_out, 0)
    offs_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < m_end
    mask_n = offs_n < n_end
    batch = offs_m // spatial
    position = (offs_m - batch * spatial).to(tl.int32)
    out_h = position // OW
    out_w = position % OW
    in_h0 = out_h * STRIDE_H - PAD_T
    in_w0 = out_w * STRIDE_W - PAD_L
    x_rows = x + batch * x_batch_stride + group * group_in * H * W
    channel = group * group_out + offs_n
    w_cols = w + channel * k_total

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k_start in range(0, k_total, BLOCK_K):
        k = k_start + offs_k
        mask_k = k < k_total
        c = k // taps
        tap = k % taps
        in_h = in_h0[:, None] + (tap // KW * DIL_H)[None, :]
        in_w = in_w0[:, None] + (tap % KW * DIL_W)[None, :]
        inside = (in_h >= 0) & (in_h < H) & (in_w >= 0) & (in_w < W)
        # Patch tile [BLOCK_M, BLOCK_K]: tap k of output position m; 0 in the padding.
        a = tl.load(
            x_rows[:, None] + (c[None, :] * H + in_h) * W + in_w,
            mask=mask_m[:, None] & mask_k[None, :] & inside,
            other=0.0,
        )
        # Weight tile [BLOCK_K, BLOCK_N]: element (k, n) lies at channel * K + k.
        b = tl.load(
            w_cols[None, :] + k[:, None],
            mask=mask_k[:, None] & mask_n[None, :],
            other=0.0,
        )
        acc = tl.dot(a, b, acc)

    # Element (m, n) lies at channel * OH * OW + position of its image, in r and in y.
    in_image = position[:, None] + (channel * spatial)[None, :]
    mask = mask_m[:, None] & mask_n[None, :]
    residual = r + (batch * r_batch_stride)[:, None] + in_image
    v = gemm_epilogue(  # noqa: F821 - a shared helper, pasted in by rendering
        acc, activation, scale, shift, channel, mask_n, residual, mask, HAS_RESIDUAL
    )
    tl.store(y + (batch * y_batch_stride)[:, None] + in_image, v, mask=mask)
