"""Tile and launch choices of the ``conv2d_backward_weight`` family: pure
functions that the family's lowering asks, so the tests can pin the rules."""

from __future__ import annotations

from teeny_ir.kernels.tiles import (
    INTERPRETER_MAX_GATHER,
    TileProfile,
    check_profile,
    clamp,
    next_power_of_two,
)

MIN_BLOCK = 16
"""Smallest tile edge: ``tl.dot`` on a GPU needs 16x16 tiles (and K >= 8)."""
MAX_BLOCK_M = 64
"""Largest ``BLOCK_M`` (output channels per program) of the ``gpu`` profile."""
MAX_BLOCK_N = 128
"""Largest ``BLOCK_N`` (weight columns per program) of the ``gpu`` profile."""
INTERPRETER_MAX_M = 128
"""Largest ``BLOCK_M`` of the ``interpreter`` profile."""
INTERPRETER_MAX_N = 512
"""Largest ``BLOCK_N`` of the ``interpreter`` profile."""
INTERPRETER_IMAGES = 64
"""Images whose positions one ``interpreter`` K step covers at most: the K loop
runs over the batch's positions, and a training batch is rarely above 64
(LeNet's first convolution at batch 32: 4 steps of 8192 instead of 25 of
1024)."""
NUM_STAGES = 2
"""Two stages double-buffer the K loop."""


def pick_tiles(m: int, n: int, k: int, profile: TileProfile = "gpu") -> tuple[int, int, int]:
    """Tile sizes ``(BLOCK_M, BLOCK_N, BLOCK_K)`` of a weight gradient.

    ``m`` is the output channels per group ``C_OUT / groups``, ``n`` the weight
    columns ``C_IN / groups * KH * KW`` and ``k`` one image's output positions
    ``OH * OW`` (the batch, which multiplies the reduction, is unknown when
    tiles are chosen). Every size is a power of two and at least 16.

    ``gpu``: ``BLOCK_M`` is ``m`` rounded up, clamped to 16..64; ``BLOCK_N`` is
    ``n`` rounded up, clamped to 16..128; ``BLOCK_K`` is 64 when ``k >= 256``,
    32 when ``k >= 64``, else 16. The largest tiles (64x128x64, 2 stages)
    buffer 96 KiB of fp32 operands, inside sm_80's and sm_90's shared memory.

    ``interpreter``: ``BLOCK_M`` is ``m`` rounded up, clamped to 16..128;
    ``BLOCK_N`` is ``n`` rounded up, clamped to 16..512; ``BLOCK_K`` spans up to
    64 images' positions (``k`` rounded up, times 64: the reduction runs over
    the batch too) but keeps the gathered input tile ``BLOCK_K x max(BLOCK_M,
    BLOCK_N)`` within 2**18 elements (`INTERPRETER_MAX_GATHER`). These need
    not fit a GPU.
    """
    for name, value in (("m", m), ("n", n), ("k", k)):
        if value < 1:
            raise ValueError(f"backward-weight extent {name} must be >= 1, got {value}")
    if check_profile(profile) == "interpreter":
        block_m = clamp(next_power_of_two(m), MIN_BLOCK, INTERPRETER_MAX_M)
        block_n = clamp(next_power_of_two(n), MIN_BLOCK, INTERPRETER_MAX_N)
        block_k = clamp(
            next_power_of_two(k) * INTERPRETER_IMAGES,
            MIN_BLOCK,
            INTERPRETER_MAX_GATHER // max(block_m, block_n),
        )
        return block_m, block_n, block_k
    block_m = clamp(next_power_of_two(m), MIN_BLOCK, MAX_BLOCK_M)
    block_n = clamp(next_power_of_two(n), MIN_BLOCK, MAX_BLOCK_N)
    block_k = 64 if k >= 256 else 32 if k >= 64 else 16
    return block_m, block_n, block_k


def launch_config(block_m: int, block_n: int) -> tuple[int, int]:
    """(num_warps, num_stages): 8 warps for a 64x128 accumulator, else 4."""
    return (8 if block_m * block_n >= 64 * 128 else 4), NUM_STAGES
