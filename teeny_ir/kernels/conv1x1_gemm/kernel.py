"""Triton source of the ``conv1x1_gemm`` family: a 1x1 convolution (stride 1,
no padding, one group) as a GEMM per image, with the BatchNorm-style epilogue
and an optional residual fused.

Per batch ``b``: ``Y_b[C_OUT, M] = act(scale * (W[C_OUT, C_IN] @ X_b[C_IN, M]) +
shift) (+ R_b)`` where ``M = H * W`` and ``X_b`` is image ``b`` of the NCHW
input. The kernel computes the transpose, ``acc[BLOCK_M, BLOCK_N] += X_b^T
tile @ W^T tile`` with ``tl.dot`` (tensor cores: mma on sm_80, wgmma on sm_90;
TF32 on a GPU), so the spatial axis is the GEMM's M. The grid is 1-D: program
ids run over ``B`` images, each split into ``cdiv(M, BLOCK_M) * cdiv(C_OUT,
BLOCK_N)`` tiles visited in the Triton tutorial's ``GROUP_M`` swizzle for L2
reuse.

Each image of ``x``, ``r`` and ``y`` is contiguous ([C, M], channel rows ``M``
apart) and starts ``b * <operand>_batch_stride`` elements from its base, so
any of them may be a channel slice of a larger NCHW buffer. Every load and
the store are masked on the m, n and k tails, and on the batch (a grid larger
than the tile model needs writes nothing). Per-image offsets are 32-bit; the
image base offsets are 64-bit, so only one image (not the whole batch) has to
fit in 2**31 elements. The epilogue is the shared ``gemm_epilogue`` helper
(`teeny_ir.kernels.triton_helpers`, pasted in by rendering): ``ACTIVATION``
names an epilogue entry of the pointwise table (or ``none``), whose
expression rendering puts into the ``activation`` slot, and the runtime
argument ``HAS_RESIDUAL`` (an i32 dim, not a constexpr: one variant serves
launches with and without a residual), when not 0, adds ``r`` after it (when
0, ``r`` is never read).
"""

import triton
import triton.language as tl


@triton.jit
def activation(x):
    """Slot: rendering replaces it with the pointwise table's expression for ACTIVATION."""
    tl.static_assert(False, "render this kernel: its activation slot is empty")
    return x


@triton.jit
def conv1x1_gemm(
    x,
    w,
    scale,
    shift,
    r,
    y,
    B,
    C_IN,
    C_OUT,
    M,
    x_batch_stride,
    r_batch_stride,
    y_batch_stride,
    HAS_RESIDUAL,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    ACTIVATION: tl.constexpr,
):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(C_OUT, BLOCK_N)
    tiles_per_image = tiles_m * tiles_n
    batch = pid // tiles_per_image
    tile = pid % tiles_per_image
    tiles_per_group = GROUP_M * tiles_n
    first_tile_m = (tile // tiles_per_group) * GROUP_M
    group_size_m = min(tiles_m - first_tile_m, GROUP_M)
    tile_m = first_tile_m + (tile % tiles_per_group) % group_size_m
    tile_n = (tile % tiles_per_group) // group_size_m

    offs_m = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    # Programs past the last image see no valid rows. (A block mask `&` a scalar
    # condition comes out as int32 in the interpreter, so fold it into the bound.)
    m_end = tl.where(batch < B, M, 0)
    mask_m = offs_m < m_end
    mask_n = offs_n < C_OUT
    image = batch.to(tl.int64)
    x_image = x + image * x_batch_stride

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k_start in range(0, C_IN, BLOCK_K):
        k = k_start + offs_k
        mask_k = k < C_IN
        # X_b^T tile [BLOCK_M, BLOCK_K]: element (m, k) of X_b^T lies at k * M + m.
        a = tl.load(
            x_image + k[None, :] * M + offs_m[:, None],
            mask=mask_m[:, None] & mask_k[None, :],
            other=0.0,
        )
        # W^T tile [BLOCK_K, BLOCK_N]: element (k, n) of W^T lies at n * C_IN + k.
        b = tl.load(
            w + offs_n[None, :] * C_IN + k[:, None],
            mask=mask_k[:, None] & mask_n[None, :],
            other=0.0,
        )
        acc = tl.dot(a, b, acc)

    # Element (m, n) of an image's [C_OUT, M] tile lies at n * M + m, in r and in y.
    in_image = offs_n[None, :] * M + offs_m[:, None]
    mask = mask_m[:, None] & mask_n[None, :]
    residual = r + image * r_batch_stride + in_image
    v = gemm_epilogue(  # noqa: F821 - a shared helper, pasted in by rendering
        acc, activation, scale, shift, offs_n, mask_n, residual, mask, HAS_RESIDUAL
    )
    tl.store(y + image * y_batch_stride + in_image, v, mask=mask)
