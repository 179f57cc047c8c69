"""Tile and launch choices of the ``avg_pool2d_backward`` family: pure functions
the family's lowering asks, so the tests can pin every variant it emits."""

from __future__ import annotations

BLOCK = 1024
"""dx elements per program, one per lane, as a forward pool's outputs."""
INTERPRETER_BLOCK = 16384
"""The ``interpreter`` profile's: Triton's interpreter pays per program and per
op, not per element, so fewer, larger programs run faster there."""
NUM_WARPS, NUM_STAGES = 4, 1
"""Every variant runs 4 warps; the tap loops have nothing worth pipelining."""


def element_tiles(profile: str = "gpu") -> int:
    """``BLOCK``: dx elements per program, for tile profile ``profile``."""
    return INTERPRETER_BLOCK if profile == "interpreter" else BLOCK


def launch_config() -> tuple[int, int]:
    """``(num_warps, num_stages)`` of every launch."""
    return NUM_WARPS, NUM_STAGES
