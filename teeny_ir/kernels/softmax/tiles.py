"""Tile and launch choices of the ``softmax`` and ``reduce`` families: pure
functions the lowerings ask, so the tests can pin every variant they emit."""

from __future__ import annotations

from teeny_ir.kernels.tiles import check_profile

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


INTERPRETER_TILE = 2**15
"""Elements of one program's block in the ``interpreter`` profile."""
INTERPRETER_MAX_BLOCK_R = 2**14
"""The ``interpreter`` profile's largest chunk of a reduced row."""


def reduce_tiles(
    rows: int, extent: int, batch: bool, profile: str = "gpu"
) -> tuple[int, int]:
    """``(BLOCK_ROWS, BLOCK_R)`` of a ``reduce`` launch: ``rows`` rows per image,
    each reducing ``extent`` elements per image, over the batch too if ``batch``
    (the kernel's chunks then span images).

    ``gpu``: `row_tiles` of ``extent``. ``interpreter`` (which pays per op and
    per loop step, not per element): with the batch reduced, ``BLOCK_ROWS`` is
    ``rows`` rounded up to a power of two (at most 1024) and ``BLOCK_R`` fills
    a 2**15-element block (at most 2**14), so a bias gradient's sum over a
    batch is one or two chunks; without it, ``BLOCK_R`` is ``extent`` rounded up
    (at most 2**14) and ``BLOCK_ROWS`` fills the block."""
    for name, value in (("rows", rows), ("extent", extent)):
        if value < 1:
            raise ValueError(f"reduce {name} must be >= 1, got {value}")
    if check_profile(profile) == "gpu":
        return row_tiles(extent)
    if batch:
        block_rows = min(1024, 1 << (rows - 1).bit_length())
        return block_rows, min(INTERPRETER_MAX_BLOCK_R, INTERPRETER_TILE // block_rows)
    block_r = min(INTERPRETER_MAX_BLOCK_R, 1 << (extent - 1).bit_length())
    return INTERPRETER_TILE // block_r, block_r


def launch_config() -> tuple[int, int]:
    """``(num_warps, num_stages)`` of every softmax and reduce launch."""
    return NUM_WARPS, NUM_STAGES
