"""Tile and launch choices of the ``pool2d`` family: pure functions the family's
lowering asks, so the tests can pin every variant the rules can emit."""

from __future__ import annotations

from teeny_ir.kernels.tiles import check_profile

WINDOW_BLOCK = 1024
"""Output positions per program of a windowed (max or average) pool."""
INTERPRETER_WINDOW_BLOCK = 2**16
"""The ``interpreter`` tile profile's: Triton's interpreter pays per program and
per executed op far more than per element, so one program of 2**16 outputs (a
LeNet batch of 32 in one program) beats 37 of 1024 (measured: 0.03 s against
0.20 s for LeNet's first max pool at batch 32)."""
GLOBAL_TILE = 4096
"""Elements per program of a global average pool: planes x spatial block."""
MAX_BLOCK_HW = 256
"""The largest spatial block of a global average pool."""
NUM_WARPS, NUM_STAGES = 4, 1
"""Every pool2d variant runs 4 warps; the window loops are unrolled and the
global reduction's loop has nothing worth pipelining."""


def window_tiles(profile: str = "gpu") -> tuple[int, int]:
    """``(BLOCK, BLOCK_HW)`` of a windowed pool: 1024 outputs per program, one
    per lane, for the ``gpu`` profile; 2**16 for the ``interpreter`` profile
    (``BLOCK_HW`` is unused and 1)."""
    block = INTERPRETER_WINDOW_BLOCK if check_profile(profile) == "interpreter" else WINDOW_BLOCK
    return block, 1


def global_tiles(spatial: int) -> tuple[int, int]:
    """``(BLOCK, BLOCK_HW)`` of a global average pool over ``spatial = H * W``
    elements per plane: ``BLOCK_HW`` is the next power of two of ``spatial``,
    capped at 256 (larger planes loop in blocks of 256); ``BLOCK`` planes per
    program fill a 4096-element tile. Both are powers of two."""
    if spatial < 1:
        raise ValueError(f"spatial extent must be >= 1, got {spatial}")
    block_hw = min(MAX_BLOCK_HW, 1 << (spatial - 1).bit_length())
    return GLOBAL_TILE // block_hw, block_hw


def launch_config() -> tuple[int, int]:
    """``(num_warps, num_stages)`` of every pool2d launch."""
    return NUM_WARPS, NUM_STAGES
