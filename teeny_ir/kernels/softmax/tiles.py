"""Tile and launch choices of the ``softmax`` and ``reduce`` families: pure
functions the lowerings ask, so the tests can pin every variant they emit."""

from __future__ import annotations

TILE = 2048
"""Elements of one program's block: rows x reduced chunk."""
MAX_BLOCK_R = 1024
"""The largest chunk of a row; longer rows loop over it."""
NUM_WARPS, NUM_STAGES = 4, 1
"""Every variant runs 4 warps; the row loops are memory-bound and have nothing
worth pipelining."""


def row_tiles(extent: int) -> tuple[int, int]:
    """``(BLOCK_ROWS, BLOCK_R)`` for rows of ``extent`` reduced elements per image:
    ``BLOCK_R`` is the next power of two of ``extent`` capped at 1024 (a longer row
    loops in chunks of 1024), and ``BLOCK_ROWS`` rows fill a 2048-element block.
    Both are powers of two."""
    if extent < 1:
        raise ValueError(f"row extent must be >= 1, got {extent}")
    block_r = min(MAX_BLOCK_R, 1 << (extent - 1).bit_length())
    return TILE // block_r, block_r


def launch_config() -> tuple[int, int]:
    """``(num_warps, num_stages)`` of every softmax and reduce launch."""
    return NUM_WARPS, NUM_STAGES
