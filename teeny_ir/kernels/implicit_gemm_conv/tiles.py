"""Tile and launch choices of the ``implicit_gemm_conv`` family: pure functions
that select-conv-algorithm and the family's lowering ask, so the tests can pin
the rules at every boundary."""

from __future__ import annotations

from teeny_ir.kernels.tiles import (
    TileProfile,
    check_profile,
    clamp,
    interpreter_gather_tiles,
    next_power_of_two,
)

MIN_BLOCK = 16
"""Smallest tile edge: ``tl.dot`` on a GPU needs 16x16 tiles (and K >= 8)."""
MAX_BLOCK_N = 128
"""Largest ``BLOCK_N`` of the ``gpu`` profile."""


def pick_implicit_gemm_tile_sizes(
    m: int, n: int, k: int, profile: TileProfile = "gpu"
) -> tuple[int, int, int]:
    """Tile sizes ``(BLOCK_M, BLOCK_N, BLOCK_K)`` of an implicit-GEMM convolution.

    ``m`` is one image's output positions ``OH * OW`` (the batch is unknown
    when tiles are chosen, so it counts as 1), ``n`` the output channels per
    group ``C_OUT / groups`` and ``k`` the reduction ``C_IN / groups * KH *
    KW``. Every size is a power of two and at least 16 (the K tail is masked).

    ``gpu``: ``BLOCK_M`` is 128 when ``m >= 128``, else 64; ``BLOCK_N`` is
    ``n`` rounded up to a power of two, clamped to 16..128; ``BLOCK_K`` is 32
    when ``k >= 128`` or ``16 < k <= 32``, else 16. A ``k`` of 17..32 (the
    3-channel 3x3 stem's 27) is then one K step instead of two, with the same
    padding to 32 that two steps of 16 have, and shares its variant with the
    ``k >= 128`` layers of the same ``BLOCK_M`` and ``BLOCK_N``. The largest
    tiles (128x128x32, 2 stages) buffer 64 KiB of fp32 operands, well inside
    sm_80's and sm_90's shared memory.

    ``interpreter``: `interpreter_gather_tiles` (``m`` does not matter: a tile
    spans images). These tiles need not fit a GPU.
    """
    for name, value in (("m", m), ("n", n), ("k", k)):
        if value < 1:
            raise ValueError(f"implicit-GEMM extent {name} must be >= 1, got {value}")
    if check_profile(profile) == "interpreter":
        return interpreter_gather_tiles(n, k)
    block_m = 128 if m >= 128 else 64
    block_n = clamp(next_power_of_two(n), MIN_BLOCK, MAX_BLOCK_N)
    block_k = 32 if k >= 128 or 16 < k <= 32 else 16
    return block_m, block_n, block_k


def launch_config(block_m: int, block_n: int) -> tuple[int, int]:
    """(num_warps, num_stages) for a tile: 8 warps for a 128x128 accumulator
    (64 fp32 registers per thread at 8 warps), else 4; 2 stages double-buffer
    the K loop."""
    return (8 if block_m * block_n >= 128 * 128 else 4), 2
