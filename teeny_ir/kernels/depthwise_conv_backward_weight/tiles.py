"""Tile and launch choices of the ``depthwise_conv_backward_weight`` family:
pure functions that the family's lowering asks, so the tests can pin the rules.

A program owns ``BLOCK_T`` taps x ``BLOCK_C`` channels of ``dw`` and reduces
``BLOCK_P`` (image, output position) pairs per step into an accumulator of
``BLOCK_P * BLOCK_T * BLOCK_C`` elements, its largest block (the gathered
input is as large).
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

GPU_MIN_BLOCK_P = 128
"""Smallest ``BLOCK_P`` of the ``gpu`` profile: one element per thread at 4 warps."""
GPU_MAX_BLOCK_P = 1024
"""Largest ``BLOCK_P`` of the ``gpu`` profile: 8 accumulators per thread at 4 warps."""
INTERPRETER_MAX_BLOCK_T = 128
"""Largest ``BLOCK_T`` of the ``interpreter`` profile (an 11x11 kernel in one block)."""
WARPS_8_FROM = 8192
"""A program's block ``BLOCK_P * BLOCK_T * BLOCK_C`` from which it takes 8 warps
(more than 64 accumulators per thread at 4 warps)."""


def pick_tiles(m: int, n: int, k: int, profile: TileProfile = "gpu") -> tuple[int, int, int]:
    """Tile sizes ``(BLOCK_P, BLOCK_C, BLOCK_T)`` of a depthwise weight gradient.

    ``m`` is one image's output positions ``OH * OW`` (the batch, which
    multiplies the reduction, is unknown when tiles are chosen), ``n`` the
    channels ``C`` and ``k`` the taps ``KH * KW``. Every size is a power of two.

    ``gpu``: one program per (channel, tap), ``BLOCK_C = BLOCK_T = 1``: ``C *
    KH * KW`` programs (576 for 64 channels of 3x3, where the grouped GEMM
    launches 64) and no lane spent on a tap or channel tail (each tap reads
    its channel's ``dy`` again, the same bytes for all ``KH * KW`` programs of
    a channel); ``BLOCK_P`` is ``m`` rounded up, clamped to 128..1024
    positions per step.

    ``interpreter`` (few programs of few steps): every tap in one block
    (``BLOCK_T`` is ``k`` rounded up, at most 128), a whole image's positions
    per step (``BLOCK_P`` is ``m`` rounded up, at most 2048,
    `INTERPRETER_MAX_ROWS`, and at most ``2**15 // BLOCK_T``) and as many
    channels as fit (``BLOCK_C`` is ``n`` rounded up, clamped to
    1..``2**15 // (BLOCK_P * BLOCK_T)``): a block of at most 2**15 elements
    (`INTERPRETER_MAX_BLOCK`). The forward depthwise convolution's rule, whose
    tile has the same three extents.
    """
    for name, value in (("m", m), ("n", n), ("k", k)):
        if value < 1:
            raise ValueError(f"depthwise extent {name} must be >= 1, got {value}")
    if check_profile(profile) == "interpreter":
        block_t = min(next_power_of_two(k), INTERPRETER_MAX_BLOCK_T)
        block_p = min(next_power_of_two(m), INTERPRETER_MAX_ROWS, INTERPRETER_MAX_BLOCK // block_t)
        block_c = clamp(next_power_of_two(n), 1, INTERPRETER_MAX_BLOCK // (block_p * block_t))
        return block_p, block_c, block_t
    return clamp(next_power_of_two(m), GPU_MIN_BLOCK_P, GPU_MAX_BLOCK_P), 1, 1


def launch_config(block_p: int, block_c: int, block_t: int) -> tuple[int, int]:
    """(num_warps, num_stages): 8 warps once the block ``BLOCK_P * BLOCK_T *
    BLOCK_C`` reaches 8192 elements (`WARPS_8_FROM`), else 4; 1 stage (no
    ``tl.dot`` to pipeline). Every ``gpu`` tile takes 4 warps."""
    return (8 if block_p * block_t * block_c >= WARPS_8_FROM else 4), 1
