"""Tile and launch choices of the optimizer-update families (``sgd_update`` and
``adamw_update``): pure constants and functions the lowerings and the tests share."""

from __future__ import annotations

from teeny_ir.kernels.tiles import check_profile

BLOCK = 1024
"""Elements of the flat parameter one program (or one loop step) updates."""
INTERPRETER_MAX_BLOCK = 2**16
"""The ``interpreter`` tile profile's largest ``BLOCK``: the interpreter's cost
is per program and per executed op, and a block's cost grows with its size
whether or not its lanes are masked, so its ``BLOCK`` is the parameter's size
rounded up to a power of two, up to 2**16 (a LeNet parameter, 48,000 elements
at most, is one loop step)."""


def update_block(numel: int, profile: str = "gpu") -> int:
    """``BLOCK`` of an optimizer update of a ``numel``-element parameter for tile
    profile ``profile``: 1024 on a GPU; for the interpreter ``numel`` rounded up
    to a power of two, clamped to 16..2**16."""
    if check_profile(profile) == "interpreter":
        return max(16, min(INTERPRETER_MAX_BLOCK, 1 << max(0, numel - 1).bit_length()))
    return BLOCK


NUM_WARPS, NUM_STAGES = 4, 1
"""Memory-bound elementwise updates: nothing worth pipelining."""
