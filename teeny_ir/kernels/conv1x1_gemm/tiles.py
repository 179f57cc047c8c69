"""Tile and launch choices of the ``conv1x1_gemm`` family: pure functions that
select-conv-algorithm and the family's lowering ask, so the tests can pin the
rules at every boundary."""

from __future__ import annotations

from teeny_ir.kernels.tiles import (
    INTERPRETER_MAX_BLOCK,
    INTERPRETER_MAX_ROWS,
    TileProfile,
    check_profile,
    clamp,
    next_power_of_two,
)

UNKNOWN_M_AS = 64
"""The GEMM M extent assumed when it is not known statically (teenygrad's rule)."""
GROUP_M = 8
"""Row-tile group of the GEMM's L2 swizzle (Triton's matmul tutorial value)."""
MIN_BLOCK_MN = 16
"""Smallest ``BLOCK_M``/``BLOCK_N`` (``tl.dot`` on a GPU needs 16x16 tiles)."""
MIN_BLOCK_K = 8
"""Smallest ``BLOCK_K`` (fp32 ``tl.dot`` needs K >= 8)."""


def pick_gemm_tile_sizes(
    m: int | None, n: int, k: int, profile: TileProfile = "gpu"
) -> tuple[int, int, int]:
    """Tile sizes ``(BLOCK_M, BLOCK_N, BLOCK_K)`` of a GEMM ``[M, K] @ [K, N]``.

    ``m`` is one image's positions ``H * W`` (the grid folds the batch in),
    ``n`` the output channels, ``k`` the input channels. An unknown ``m``
    (None) counts as 64 in both profiles. Every size is a power of two.

    ``gpu`` (the rule carried over from teenygrad's `pick_gemm_tile_sizes`):
    ``BLOCK_K`` is 32 when ``k >= 128``, 16 when ``k >= 32``, else 8;
    ``(BLOCK_M, BLOCK_N)`` is (128, 128) when both ``m`` and ``n`` are at least
    128, (128, 64) when only ``m`` is, (64, 128) when only ``n`` is, else
    (64, 64).

    ``interpreter`` (one program per image where it fits, one K step where it
    fits): ``BLOCK_M`` is ``m`` rounded up to a power of two, clamped to
    16..2048 (`INTERPRETER_MAX_ROWS`); ``BLOCK_N`` is ``n`` rounded up,
    clamped to 16..``2**15 // BLOCK_M``; ``BLOCK_K`` is ``k`` rounded up,
    clamped to 8..``2**15 // max(BLOCK_M, BLOCK_N)``, so no block
    (``BLOCK_M x BLOCK_N``, ``BLOCK_M x BLOCK_K``, ``BLOCK_K x BLOCK_N``) holds
    more than 2**15 elements (`INTERPRETER_MAX_BLOCK`).
    """
    for name, value in (("m", m), ("n", n), ("k", k)):
        if value is not None and value < 1:
            raise ValueError(f"GEMM extent {name} must be >= 1, got {value}")
    rows = UNKNOWN_M_AS if m is None else m
    if check_profile(profile) == "interpreter":
        block_m = clamp(next_power_of_two(rows), MIN_BLOCK_MN, INTERPRETER_MAX_ROWS)
        block_n = clamp(next_power_of_two(n), MIN_BLOCK_MN, INTERPRETER_MAX_BLOCK // block_m)
        block_k = clamp(
            next_power_of_two(k), MIN_BLOCK_K, INTERPRETER_MAX_BLOCK // max(block_m, block_n)
        )
        return block_m, block_n, block_k
    block_k = 32 if k >= 128 else 16 if k >= 32 else 8
    block_m = 128 if rows >= 128 else 64
    block_n = 128 if n >= 128 else 64
    return block_m, block_n, block_k


def launch_config(block_m: int, block_n: int) -> tuple[int, int]:
    """(num_warps, num_stages) for a tile: 8 warps once the accumulator reaches
    128x128 (64 fp32 registers per thread at 8 warps), else 4; 2 stages
    double-buffer the K loop."""
    return (8 if block_m * block_n >= 128 * 128 else 4), 2
