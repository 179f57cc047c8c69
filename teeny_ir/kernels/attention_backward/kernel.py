"""Triton source of the ``attention_backward`` family: dq, dk and dv of scaled
dot-product attention in one launch, FlashAttention-2's way.

Matrix ``g`` of each tensor starts ``g * rows * features`` elements from its
base (64-bit offsets); element (row ``r``, feature ``d``) lies at ``r * X_sr + d
* X_sd`` with its operand's strides (either layout; see the family's contract).
Axis 0 of the grid walks the ``G`` matrices, ``max(cdiv(N, BLOCK_M), cdiv(M,
BLOCK_N))`` programs each; axis 1 is the role:

- role 0 owns keys ``[j * BLOCK_N, (j + 1) * BLOCK_N)``: it keeps their ``k``
  and ``v`` tiles and loops over every query block ``i``, recomputing ``p^T =
  exp(scale * k q_i^T - lse_i)`` and ``delta_i = rowsum(do_i * o_i)``, and
  accumulates ``dv += p^T do_i`` and ``dk += ds^T q_i`` with ``ds^T = p^T *
  (v do_i^T - delta_i)``; then stores ``dk * scale`` and ``dv``;
- role 1 owns queries ``[i * BLOCK_M, (i + 1) * BLOCK_M)``: it keeps their
  ``q``, ``do``, ``lse`` and ``delta`` and loops over every key block,
  accumulating ``dq += ds k_j``; then stores ``dq * scale``;
- a role past 1 does nothing.

Each output element has exactly one writer and every sum runs in loop order, so
the result is deterministic (no atomics). Accumulation is fp32 (``tl.dot``: TF32
on a GPU). Every load is masked on the query, key and feature tails and on the
programs past the last matrix or past their role's last block (their loops run
zero times and their stores are masked off). A masked score becomes -inf before
the ``exp``, so a masked probability is exactly 0 and nothing overflows there;
masked operand lanes load 0, so a masked ``ds`` is 0 too. NaN in an input
propagates as NaN.
"""

import triton
import triton.language as tl


@triton.jit
def attention_backward(
    q,
    k,
    v,
    o,
    lse,
    do,
    scale,
    dq,
    dk,
    dv,
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
    role = tl.program_id(1)
    tiles = tl.maximum(tl.cdiv(N, BLOCK_M), tl.cdiv(M, BLOCK_N))
    matrix = pid // tiles
    tile = pid % tiles
    # Programs past the last matrix see no valid rows. (A block mask `&` a scalar
    # condition comes out as int32 in the interpreter, so fold it into the bounds.)
    n_end = tl.where(matrix < G, N, 0)
    m_end = tl.where(matrix < G, M, 0)
    g = matrix.to(tl.int64)
    q_matrix = g * N * DK
    k_matrix = g * M * DK
    v_matrix = g * M * DV
    o_matrix = g * N * DV
    lse_matrix = lse + g * N
    factor = tl.load(scale)
    d_k = tl.arange(0, BLOCK_DK)
    d_v = tl.arange(0, BLOCK_DV)
    mask_dk = d_k < DK
    mask_dv = d_v < DV

    if role == 0:
        keys = tile * BLOCK_N + tl.arange(0, BLOCK_N)
        mask_n = keys < m_end
        # Query blocks to visit: none for a key block past M (or past the last matrix).
        n_stop = tl.where(tile * BLOCK_N < m_end, N, 0)
        k_tile = tl.load(
            k + k_matrix + keys[:, None] * k_sr + d_k[None, :] * k_sd,
            mask=mask_n[:, None] & mask_dk[None, :],
            other=0.0,
        )
        v_tile = tl.load(
            v + v_matrix + keys[:, None] * v_sr + d_v[None, :] * v_sd,
            mask=mask_n[:, None] & mask_dv[None, :],
            other=0.0,
        )
        acc_dk = tl.zeros((BLOCK_N, BLOCK_DK), dtype=tl.float32)
        acc_dv = tl.zeros((BLOCK_N, BLOCK_DV), dtype=tl.float32)
        for start in range(0, n_stop, BLOCK_M):
            queries = start + tl.arange(0, BLOCK_M)
            mask_m = queries < N
            # q_i^T [BLOCK_DK, BLOCK_M], do_i and o_i [BLOCK_M, BLOCK_DV].
            q_t = tl.load(
                q + q_matrix + d_k[:, None] * q_sd + queries[None, :] * q_sr,
                mask=mask_dk[:, None] & mask_m[None, :],
                other=0.0,
            )
            o_offsets = o_matrix + queries[:, None] * o_sr + d_v[None, :] * o_sd
            o_mask = mask_m[:, None] & mask_dv[None, :]
            grad = tl.load(do + o_offsets, mask=o_mask, other=0.0)
            out = tl.load(o + o_offsets, mask=o_mask, other=0.0)
            row_lse = tl.load(lse_matrix + queries, mask=mask_m, other=0.0)
            delta = tl.sum(grad * out, axis=1)
            s_t = tl.dot(k_tile, q_t) * factor
            valid = mask_n[:, None] & mask_m[None, :]
            p_t = tl.exp(tl.where(valid, s_t - row_lse[None, :], float("-inf")))
            acc_dv = tl.dot(p_t, grad, acc_dv)
            dp_t = tl.dot(v_tile, tl.trans(grad))
            ds_t = p_t * (dp_t - delta[None, :])
            acc_dk = tl.dot(ds_t, tl.trans(q_t), acc_dk)
        tl.store(
            dk + k_matrix + keys[:, None] * k_sr + d_k[None, :] * k_sd,
            acc_dk * factor,
            mask=mask_n[:, None] & mask_dk[None, :],
        )
        tl.store(
            dv + v_matrix + keys[:, None] * v_sr + d_v[None, :] * v_sd,
            acc_dv,
            mask=mask_n[:, None] & mask_dv[None, :],
        )
    elif role == 1:
        queries = tile * BLOCK_M + tl.arange(0, BLOCK_M)
        mask_m = queries < n_end
        # Key blocks to visit: none for a query block past N (or past the last matrix).
        m_stop = tl.where(tile * BLOCK_M < n_end, M, 0)
        q_offsets = q_matrix + queries[:, None] * q_sr + d_k[None, :] * q_sd
        q_mask = mask_m[:, None] & mask_dk[None, :]
        q_tile = tl.load(q + q_offsets, mask=q_mask, other=0.0)
        o_offsets = o_matrix + queries[:, None] * o_sr + d_v[None, :] * o_sd
        o_mask = mask_m[:, None] & mask_dv[None, :]
        grad = tl.load(do + o_offsets, mask=o_mask, other=0.0)
        out = tl.load(o + o_offsets, mask=o_mask, other=0.0)
        row_lse = tl.load(lse_matrix + queries, mask=mask_m, other=0.0)
        delta = tl.sum(grad * out, axis=1)
        acc_dq = tl.zeros((BLOCK_M, BLOCK_DK), dtype=tl.float32)
        for start in range(0, m_stop, BLOCK_N):
            keys = start + tl.arange(0, BLOCK_N)
            mask_n = keys < M
            # k_j^T [BLOCK_DK, BLOCK_N], v_j^T [BLOCK_DV, BLOCK_N].
            k_t = tl.load(
                k + k_matrix + d_k[:, None] * k_sd + keys[None, :] * k_sr,
                mask=mask_dk[:, None] & mask_n[None, :],
                other=0.0,
            )
            v_t = tl.load(
                v + v_matrix + d_v[:, None] * v_sd + keys[None, :] * v_sr,
                mask=mask_dv[:, None] & mask_n[None, :],
                other=0.0,
            )
            s = tl.dot(q_tile, k_t) * factor
            valid = mask_m[:, None] & mask_n[None, :]
            p = tl.exp(tl.where(valid, s - row_lse[:, None], float("-inf")))
            dp = tl.dot(grad, v_t)
            ds = p * (dp - delta[:, None])
            acc_dq = tl.dot(ds, tl.trans(k_t), acc_dq)
        tl.store(dq + q_offsets, acc_dq * factor, mask=q_mask)
