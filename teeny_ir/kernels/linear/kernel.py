"""Triton source of the ``linear`` family: a fully connected layer as one GEMM
over every row of the input, with the per-column epilogue fused.

``y[r, n] = act(scale[n] * sum_k x[r, k] * W[n, k] + shift[n])`` for the
``B * ROWS`` rows ``r`` of the input: image ``b`` (one batch item) holds
``ROWS`` contiguous rows of ``K`` elements and starts ``b * x_batch_stride``
elements from ``x`` (``y`` alike, rows of ``N``), so either may be a
batch-strided view. Row ``r`` is row ``r % ROWS`` of image ``r // ROWS``; its
offset is computed in 64 bits. ``acc[BLOCK_M, BLOCK_N] += X tile @ W^T tile``
with ``tl.dot`` (tensor cores: mma on sm_80, wgmma on sm_90; TF32 on a GPU).
The grid is 1-D over ``cdiv(B * ROWS, BLOCK_M) * cdiv(N, BLOCK_N)`` tiles in
the Triton tutorial's ``GROUP_M`` swizzle. Every load and the store are masked
on the row, column and K tails, and a grid larger than the tile model needs
writes nothing. The epilogue is the shared ``gemm_epilogue`` helper
(`teeny_ir.kernels.triton_helpers`, pasted in by rendering) without a
residual: ``ACTIVATION`` names an epilogue entry of the pointwise table (or
``none``), whose expression rendering puts into the ``activation`` slot.
"""

import triton
import triton.language as tl


@triton.jit
def activation(x):
    """Slot: rendering replaces it with the pointwise table's expression for ACTIVATION."""
    tl.static_assert(False, "render this kernel: its activation slot is empty")
    return x


@triton.jit
def linear(
    x,
    w,
    scale,
    shift,
    y,
    B,
    ROWS,
    K,
    N,
    x_batch_stride,
    y_batch_stride,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    ACTIVATION: tl.constexpr,
):
    pid = tl.program_id(0)
    total_rows = B * ROWS
    tiles_m = tl.cdiv(total_rows, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    tiles_per_group = GROUP_M * tiles_n
    first_tile_m = (pid // tiles_per_group) * GROUP_M
    group_size_m = max(min(tiles_m - first_tile_m, GROUP_M), 1)
    tile_m = first_tile_m + (pid % tiles_per_group) % group_size_m
    tile_n = (pid % tiles_per_group) // group_size_m

    offs_m = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    # Programs past the last tile see no valid rows (tile_m >= tiles_m).
    mask_m = offs_m < total_rows
    mask_n = offs_n < N
    rows = tl.where(mask_m, offs_m, 0).to(tl.int64)
    image = rows // ROWS
    row = rows % ROWS
    x_rows = x + image * x_batch_stride + row * K
    y_rows = y + image * y_batch_stride + row * N

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k_start in range(0, K, BLOCK_K):
        k = k_start + offs_k
        mask_k = k < K
        # X tile [BLOCK_M, BLOCK_K]: element (r, k) lies at x_rows[r] + k.
        a = tl.load(x_rows[:, None] + k[None, :], mask=mask_m[:, None] & mask_k[None, :], other=0.0)
        # W^T tile [BLOCK_K, BLOCK_N]: element (k, n) of W^T lies at n * K + k.
        b = tl.load(
            w + offs_n[None, :] * K + k[:, None],
            mask=mask_k[:, None] & mask_n[None, :],
            other=0.0,
        )
        acc = tl.dot(a, b, acc)

    mask = mask_m[:, None] & mask_n[None, :]
    v = gemm_epilogue(  # noqa: F821 - a shared helper, pasted in by rendering
        acc, activation, scale, shift, offs_n, mask_n, y_rows, mask, False
    )
    tl.store(y_rows[:, None] + offs_n[None, :], v, mask=mask)
