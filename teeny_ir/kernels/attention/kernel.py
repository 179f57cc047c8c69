"""Triton source of the ``attention`` family: a fused scaled dot-product attention
forward (FlashAttention's), ``o = softmax(scale * q k^T) v`` and the row
log-sum-exp ``lse`` of the scaled scores, for ``G`` matrices.

Matrix ``g`` of ``q`` (``N`` x ``DK``) starts at ``g * N * DK`` (64-bit) and its
element (row ``r``, feature ``d``) lies at ``r * q_sr + d * q_sd``; ``k`` (``M``
x ``DK``), ``v`` (``M`` x ``DV``) and ``o`` (``N`` x ``DV``) likewise, so one
kernel reads and writes either layout of each (a transposed operand has
strides ``(1, rows)``), and ``lse`` is ``[G, N]``. The grid is 1-D: program
``pid`` takes query block ``pid % cdiv(N, BLOCK_M)`` of matrix ``pid //
cdiv(N, BLOCK_M)`` (the blocks of one matrix, which read the same keys, run
side by side).

A program loads its ``[BLOCK_M, BLOCK_DK]`` block of queries once, scaled by
``scale * log2(e)``, then walks the keys in blocks of ``BLOCK_N``: the scores
``s`` (a ``[BLOCK_M, BLOCK_N]`` product of the queries and a transposed key
block on tensor cores; TF32 on a GPU unless rendered with ``ieee``) are base-2
logits, keys past ``M`` are -inf, and the online softmax keeps per row the
running maximum ``m``, the running sum ``l`` of ``exp2(s - m)`` and the
accumulator ``acc`` of ``exp2(s - m) @ v``, both rescaled by ``exp2(m_old -
m_new)`` whenever ``m`` grows. Every block of the loop has a key below ``M``,
so ``m`` is finite after the first one and ``l >= 1`` for every row
(``exp2(0)`` of its largest score), including the rows past ``N``, whose
queries load as 0; nothing is ever ``inf - inf``. The program writes ``o = acc
/ l`` and ``lse = (m + log2(l)) * ln(2)``, masked to its rows and to ``DV``.
All arithmetic is fp32. NaN in an input makes the rows it reaches NaN (``tl.max``
skips NaN, on a GPU as in the interpreter, whose ``np.nanmax`` warns only on a
row of NaN scores; the sum and the products carry it).

Programs past the last matrix (a grid larger than the tile model needs) see no
rows and no keys: both bounds fold the scalar condition in (the interpreter
turns a block mask ``&`` a scalar into int32), so their key loop runs zero
times, ``l`` stays 0 (divided as 1) and nothing is loaded or stored.
"""

import triton
import triton.language as tl


@triton.jit
def attention(
    q,
    k,
    v,
    scale,
    o,
    lse,
    G,
    N,
    M,
    DK,
    DV,
    q_sr,
    q_sd,
    k_sr,
    k_sd,
    v_sr,
    v_sd,
    o_sr,
    o_sd,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_DK: tl.constexpr,
    BLOCK_DV: tl.constexpr,
):
    pid = tl.program_id(0)
    tiles_m = (N + BLOCK_M - 1) // BLOCK_M
    matrix = pid // tiles_m
    tile_m = pid % tiles_m
    valid = matrix < G
    n_end = tl.where(valid, N, 0)
    m_end = tl.where(valid, M, 0)
    g = matrix.to(tl.int64)
    q_matrix = q + g * N * DK
    k_matrix = k + g * M * DK
    v_matrix = v + g * M * DV
    o_matrix = o + g * N * DV

    offs_m = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_dk = tl.arange(0, BLOCK_DK)
    offs_dv = tl.arange(0, BLOCK_DV)
    mask_m = offs_m < n_end
    mask_dk = offs_dk < DK
    mask_dv = offs_dv < DV

    # The query block [BLOCK_M, BLOCK_DK], scaled once into base-2 logits.
    qs = tl.load(
        q_matrix + offs_m[:, None] * q_sr + offs_dk[None, :] * q_sd,
        mask=mask_m[:, None] & mask_dk[None, :],
        other=0.0,
    )
    qs = qs * (tl.load(scale) * 1.4426950408889634)  # log2(e)

    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l_i = tl.full((BLOCK_M,), 0.0, tl.float32)
    acc = tl.full((BLOCK_M, BLOCK_DV), 0.0, tl.float32)
    keys = tl.arange(0, BLOCK_N)
    for start in range(0, m_end, BLOCK_N):
        offs_n = start + keys
        mask_n = offs_n < M
        # The key block transposed, [BLOCK_DK, BLOCK_N]: element (d, n) at n * k_sr + d * k_sd.
        kt = tl.load(
            k_matrix + offs_dk[:, None] * k_sd + offs_n[None, :] * k_sr,
            mask=mask_dk[:, None] & mask_n[None, :],
            other=0.0,
        )
        s = tl.dot(qs, kt)
        s = tl.where(mask_n[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        # The value block [BLOCK_N, BLOCK_DV]: element (n, d) at n * v_sr + d * v_sd.
        vb = tl.load(
            v_matrix + offs_n[:, None] * v_sr + offs_dv[None, :] * v_sd,
            mask=mask_n[:, None] & mask_dv[None, :],
            other=0.0,
        )
        acc = tl.dot(p, vb, acc * alpha[:, None])
        m_i = m_new

    l_safe = tl.where(l_i == 0.0, 1.0, l_i)  # 0 only in programs past the last matrix
    out = acc * (1.0 / l_safe)[:, None]
    tl.store(
        o_matrix + offs_m[:, None] * o_sr + offs_dv[None, :] * o_sd,
        out,
        mask=mask_m[:, None] & mask_dv[None, :],
    )
    tl.store(lse + g * N + offs_m, (m_i + tl.log2(l_safe)) * 0.6931471805599453, mask=mask_m)
