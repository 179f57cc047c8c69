"""Triton source of the ``matmul`` family: a batched, broadcasting matrix product
of two activations with the per-column epilogue fused.

For every matrix ``g = g0 * G1 + g1`` of the (collapsed) batch:
``y[g] = act(scale * (a[g] @ b[g]) + shift)``, ``a[g]`` [M, K] starting ``g0 *
a_stride0 + g1 * a_stride1`` elements from ``a`` (a stride of 0 where ``a``
broadcasts), ``b[g]`` [K, N] likewise, ``y[g]`` [M, N] contiguous at ``g * M *
N``; matrix offsets are 64-bit. ``acc[BLOCK_M, BLOCK_N] += A tile @ B tile``
with ``tl.dot`` (mma on sm_80, wgmma on sm_90; TF32 on a GPU). The grid is 1-D
over ``G0 * G1`` matrices, each split into ``cdiv(M, BLOCK_M) * cdiv(N,
BLOCK_N)`` tiles visited in the Triton tutorial's ``GROUP_M`` swizzle. Every
load and the store are masked on the m, n and k tails and on the batch (a grid
larger than the tile model needs writes nothing). The epilogue is the shared
``gemm_epilogue`` helper without a residual; ``ACTIVATION`` names an epilogue
entry of the pointwise table (or ``none``), rendered into the ``activation``
slot.
"""

import triton
import triton.language as tl


@triton.jit
def activation(x):
    """Slot: rendering replaces it with the pointwise table's expression for ACTIVATION."""
    tl.static_assert(False, "render this kernel: its activation slot is empty")
    return x


@triton.jit
def matmul(
    a,
    b,
    scale,
    shift,
    y,
    M,
    N,
    K,
    G0,
    G1,
    a_stride0,
    a_stride1,
    b_stride0,
    b_stride1,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    ACTIVATION: tl.constexpr,
):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    tiles_per_matrix = tiles_m * tiles_n
    matrix = pid // tiles_per_matrix
    tile = pid % tiles_per_matrix
    tiles_per_group = GROUP_M * tiles_n
    first_tile_m = (tile // tiles_per_group) * GROUP_M
    group_size_m = min(tiles_m - first_tile_m, GROUP_M)
    tile_m = first_tile_m + (tile % tiles_per_group) % group_size_m
    tile_n = (tile % tiles_per_group) // group_size_m

    offs_m = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    # Programs past the last matrix see no valid rows. (A block mask `&` a scalar
    # condition comes out as int32 in the interpreter, so fold it into the bound.)
    m_end = tl.where(matrix < G0 * G1, M, 0)
    mask_m = offs_m < m_end
    mask_n = offs_n < N
    g = matrix.to(tl.int64)
    g0 = g // G1
    g1 = g % G1
    a_matrix = a + g0 * a_stride0 + g1 * a_stride1
    b_matrix = b + g0 * b_stride0 + g1 * b_stride1

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k_start in range(0, K, BLOCK_K):
        k = k_start + offs_k
        mask_k = k < K
        # A tile [BLOCK_M, BLOCK_K]: element (m, k) lies at m * K + k.
        x = tl.load(
            a_matrix + offs_m[:, None] * K + k[None, :],
            mask=mask_m[:, None] & mask_k[None, :],
            other=0.0,
        )
        # B tile [BLOCK_K, BLOCK_N]: element (k, n) lies at k * N + n.
        w = tl.load(
            b_matrix + k[:, None] * N + offs_n[None, :],
            mask=mask_k[:, None] & mask_n[None, :],
            other=0.0,
        )
        acc = tl.dot(x, w, acc)

    # Element (m, n) of matrix g lies at g * M * N + m * N + n.
    out = y + g * M * N + offs_m[:, None] * N + offs_n[None, :]
    mask = mask_m[:, None] & mask_n[None, :]
    v = gemm_epilogue(  # noqa: F821 - a shared helper, pasted in by rendering
        acc, activation, scale, shift, offs_n, mask_n, out, mask, False
    )
    tl.store(out, v, mask=mask)
