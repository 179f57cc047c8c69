"""Tile and launch choices of the ``batch_norm_train`` and ``batch_norm_backward``
families: pure functions the lowerings ask, so the tests can pin every variant
they emit."""

from __future__ import annotations

from teeny_ir.kernels.tiles import check_profile

TILE = 2048
"""Elements of one program's ``[BLOCK_C, BLOCK_R]`` block in the ``gpu`` profile."""
MIN_BLOCK_R, MAX_BLOCK_R = 256, 1024
"""The ``gpu`` profile's chunk of a channel's values (they span images when a
plane is small)."""
INTERPRETER_TILE = 2**15
"""Elements of one program's block in the ``interpreter`` profile."""
INTERPRETER_MAX_BLOCK_C = 1024
INTERPRETER_MAX_BLOCK_R = 2**14
NUM_WARPS, NUM_STAGES = 4, 1
"""The channel loops are memory-bound and have nothing worth pipelining."""


def _pow2(value: int) -> int:
    return 1 << (value - 1).bit_length()


def bn_tiles(channels: int, plane: int, profile: str = "gpu") -> tuple[int, int]:
    """``(BLOCK_C, BLOCK_R)`` of a batch norm launch over ``channels`` channels of
    ``plane`` values per image (the batch is folded into the chunks).

    ``gpu``: ``BLOCK_R`` is the plane rounded up to a power of two, within
    [256, 1024], and ``BLOCK_C`` fills a 2048-element block (at most the channels
    rounded up). ``interpreter`` (which pays per op and per loop step, not per
    element): ``BLOCK_C`` is the channels rounded up (at most 1024), ``BLOCK_R``
    fills a 2**15-element block (at most 2**14), so a small layer is one program
    of one or two chunks per pass. Both are powers of two."""
    for name, value in (("channels", channels), ("plane", plane)):
        if value < 1:
            raise ValueError(f"batch norm {name} must be >= 1, got {value}")
    if check_profile(profile) == "gpu":
        block_r = min(MAX_BLOCK_R, max(MIN_BLOCK_R, _pow2(plane)))
        return min(_pow2(channels), TILE // block_r), block_r
    block_c = min(INTERPRETER_MAX_BLOCK_C, _pow2(channels))
    return block_c, min(INTERPRETER_MAX_BLOCK_R, INTERPRETER_TILE // block_c)


def launch_config() -> tuple[int, int]:
    """``(num_warps, num_stages)`` of every batch norm launch."""
    return NUM_WARPS, NUM_STAGES
