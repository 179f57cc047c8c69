"""Tile and launch choices of the ``depthwise_conv`` family: pure functions that
select-conv-algorithm and the family's lowering ask, so the tests can pin the
rules at every boundary.

A program computes ``BLOCK_P`` output positions x ``BLOCK_C`` channels and
reduces ``BLOCK_T`` taps per step, so its largest block is the gathered input
``[BLOCK_P, BLOCK_T, BLOCK_C]``. The fused op's ``tiles`` [BLOCK_M, BLOCK_N,
BLOCK_K] are ``[BLOCK_P, BLOCK_C, BLOCK_T]``: positions, channels, taps.
"""

from __future__ import annotations

from teeny_ir.kernels.tiles import (
    INTERPRETER_MAX_BLOCK,
    INTERPRETER_MAX_ROWS,
    TileProfile,
    check_profile,
    clamp,
    next_power_of_two,
)

GPU_MAX_BLOCK_C = 32
"""Largest ``BLOCK_C`` of the ``gpu`` profile."""
INTERPRETER_MAX_BLOCK_T = 128
"""Largest ``BLOCK_T`` of the ``interpreter`` profile (an 11x11 kernel in one step)."""
WARPS_8_FROM = 8192
"""A program's gathered block ``BLOCK_P * BLOCK_T * BLOCK_C`` from which it
takes 8 warps (more than 64 elements per thread at 4 warps)."""


def pick_depthwise_tile_sizes(
    m: int, n: int, k: int, profile: TileProfile = "gpu"
) -> tuple[int, int, int]:
    """Tile sizes ``(BLOCK_P, BLOCK_C, BLOCK_T)`` of a depthwise convolution.

    ``m`` is one image's output positions ``OH * OW`` (the batch is unknown
    when tiles are chosen; the grid folds it into the positions), ``n`` the
    channels ``C`` and ``k`` the taps ``KH * KW``. Every size is a power of two
    (there is no ``tl.dot``, so no 16x16 minimum).

    ``gpu``: ``BLOCK_P`` is 128 when ``m >= 128``, else 64; ``BLOCK_C`` is
    ``n`` rounded up to a power of two, at most 32; ``BLOCK_T`` is 1 (one tap
    per step: the ``[BLOCK_P, BLOCK_C]`` gather is at most 4096 elements, 32
    per thread at 4 warps, whatever the kernel size).

    ``interpreter`` (every tap in one step, a whole image's positions and as
    many channels as fit): ``BLOCK_T`` is ``k`` rounded up, at most 128;
    ``BLOCK_P`` is ``m`` rounded up, at most 2048 (`INTERPRETER_MAX_ROWS`) and
    at most ``2**15 // BLOCK_T``; ``BLOCK_C`` is ``n`` rounded up, clamped to
    1..``2**15 // (BLOCK_P * BLOCK_T)``, so the gathered block holds at most
    2**15 elements (`INTERPRETER_MAX_BLOCK`).
    """
    for name, value in (("m", m), ("n", n), ("k", k)):
        if value < 1:
            raise ValueError(f"depthwise extent {name} must be >= 1, got {value}")
    if check_profile(profile) == "interpreter":
        block_t = min(next_power_of_two(k), INTERPRETER_MAX_BLOCK_T)
        block_p = min(next_power_of_two(m), INTERPRETER_MAX_ROWS, INTERPRETER_MAX_BLOCK // block_t)
        block_c = clamp(next_power_of_two(n), 1, INTERPRETER_MAX_BLOCK // (block_p * block_t))
        return block_p, block_c, block_t
    block_p = 128 if m >= 128 else 64
    block_c = min(next_power_of_two(n), GPU_MAX_BLOCK_C)
    return block_p, block_c, 1


def launch_config(block_p: int, block_c: int, block_t: int) -> tuple[int, int]:
    """(num_warps, num_stages) for a tile: 8 warps once the gathered block
    ``BLOCK_P * BLOCK_T * BLOCK_C`` reaches 8192 elements (`WARPS_8_FROM`),
    else 4; 1 stage (no ``tl.dot`` to pipeline). Every ``gpu`` tile takes 4
    warps; large ``interpreter`` tiles take 8 (the interpreter ignores it)."""
    return (8 if block_p * block_t * block_c >= WARPS_8_FROM else 4), 1
