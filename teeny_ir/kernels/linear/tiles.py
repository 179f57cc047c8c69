"""Tile and launch choices of the GEMM families ``linear`` and ``matmul``: pure
functions that their lowerings ask, so the tests can pin the rules at every
boundary. The lowerings record the answers in the launch (its constexprs,
warps and stages)."""

from __future__ import annotations

from teeny_ir.kernels.tiles import clamp, next_power_of_two

UNKNOWN_M_AS = 64
"""The GEMM M extent assumed when it depends on the batch (as in conv1x1_gemm)."""
GROUP_M = 8
"""Row-tile group of the GEMM's L2 swizzle (Triton's matmul tutorial value)."""
MIN_BLOCK = 16
"""Smallest ``BLOCK_M``/``BLOCK_N``/``BLOCK_K``: ``tl.dot`` on a GPU needs 16x16
tiles and K >= 8; 16 along K is the safe choice for fp32 on sm_80 and sm_90."""
MAX_BLOCK_MN = 128
"""Largest ``BLOCK_M``/``BLOCK_N`` (a 128x128 fp32 accumulator at 8 warps)."""


def pick_tiles(m: int | None, n: int, k: int) -> tuple[int, int, int]:
    """Tile sizes ``(BLOCK_M, BLOCK_N, BLOCK_K)`` of a GEMM ``[M, K] @ [K, N]``.

    ``m`` is the rows (None when it depends on the batch: counted as
    `UNKNOWN_M_AS`), ``n`` the output columns, ``k`` the reduced extent.
    ``BLOCK_M`` and ``BLOCK_N`` are their extent rounded up to a power of two,
    clamped to 16..128 (a small layer gets one small tile, not a mostly empty
    64-wide one); ``BLOCK_K`` is 32 when ``k >= 128``, else 16. Every size is a
    power of two of at least 16, so every variant compiles with ``tl.dot`` on
    sm_80 and sm_90.
    """
    for name, value in (("m", m), ("n", n), ("k", k)):
        if value is not None and value < 1:
            raise ValueError(f"GEMM extent {name} must be >= 1, got {value}")
    rows = UNKNOWN_M_AS if m is None else m
    block_m = clamp(next_power_of_two(rows), MIN_BLOCK, MAX_BLOCK_MN)
    block_n = clamp(next_power_of_two(n), MIN_BLOCK, MAX_BLOCK_MN)
    block_k = 32 if k >= 128 else MIN_BLOCK
    return block_m, block_n, block_k


def launch_config(block_m: int, block_n: int) -> tuple[int, int]:
    """(num_warps, num_stages) for a tile: 8 warps once the accumulator reaches
    128x128 (64 fp32 registers per thread at 8 warps), 4 from 32x32 up, else 2
    (a 16-wide tile has too little work for 4 warps); 2 stages double-buffer the
    K loop."""
    area = block_m * block_n
    return (8 if area >= 128 * 128 else 4 if area >= 32 * 32 else 2), 2
