"""Tile and launch choices of the ``upsample_nearest2d`` family (pure)."""

from __future__ import annotations

BLOCK = 1024
"""Output elements per program, one per lane."""
NUM_WARPS, NUM_STAGES = 4, 1
"""A gather has no loop to pipeline."""


def launch_config() -> tuple[int, int, int]:
    """``(BLOCK, num_warps, num_stages)`` of every upsample launch."""
    return BLOCK, NUM_WARPS, NUM_STAGES
