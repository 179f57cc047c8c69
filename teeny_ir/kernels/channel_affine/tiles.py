"""Tile and launch choices of the ``channel_affine`` family (pure)."""

from __future__ import annotations

BLOCK = 1024
"""Elements per program, one per lane."""
NUM_WARPS, NUM_STAGES = 4, 1
"""A streaming kernel has no loop to pipeline."""


def launch_config() -> tuple[int, int, int]:
    """``(BLOCK, num_warps, num_stages)`` of every channel_affine launch."""
    return BLOCK, NUM_WARPS, NUM_STAGES
