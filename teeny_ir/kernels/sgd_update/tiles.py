"""Tile and launch choices of the optimizer-update families (``sgd_update`` and
``adamw_update``): pure constants the lowerings and the tests share."""

from __future__ import annotations

BLOCK = 1024
INTERPRETER_BLOCK = 16384
"""The ``interpreter`` tile profile's: its cost is per program, not per element."""
"""Elements of the flat parameter one program (or one loop step) updates."""
NUM_WARPS, NUM_STAGES = 4, 1
"""Memory-bound elementwise updates: nothing worth pipelining."""
