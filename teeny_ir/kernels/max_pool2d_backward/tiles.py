"""Tile and launch choices of the ``max_pool2d_backward`` family: pure functions
the family's lowering asks, so the tests can pin every variant it emits."""

from __future__ import annotations

import math

BLOCK = 128
"""dx elements per program: one per thread of the 4 warps. A thread's code
repeats its unrolled neighbour columns and windows per element it holds, so a
wider block multiplies the code (SPPF's 5 x 5: about 700 PTX lines at one
element per thread, 3,250 at 1024, eight per thread) and adds no parallelism
the grid lacks."""
INTERPRETER_BLOCK = 16384
"""The ``interpreter`` profile's: Triton's interpreter pays per program and per
op, not per element, so fewer, larger programs run faster there."""
NUM_WARPS, NUM_STAGES = 4, 1
"""Every variant runs 4 warps; the tap loops have nothing worth pipelining."""


def element_tiles(profile: str = "gpu") -> int:
    """``BLOCK``: dx elements per program, for tile profile ``profile``."""
    return INTERPRETER_BLOCK if profile == "interpreter" else BLOCK


def residues(stride: int, dilation: int) -> tuple[int, int, int]:
    """``(R, G, I)`` of one axis: ``G = gcd(dilation, stride)``, ``R = stride / G``
    and ``I`` the inverse of ``dilation / G`` modulo ``R`` (0 when ``R`` is 1). The
    kernel's taps ``p`` with ``p * dilation = t (mod stride)`` are then, when ``G``
    divides ``t``, ``p = (t / G) * I (mod R)``."""
    if stride < 1 or dilation < 1:
        raise ValueError(f"stride and dilation must be >= 1, got {stride}, {dilation}")
    g = math.gcd(dilation, stride)
    r = stride // g
    return r, g, (pow(dilation // g, -1, r) if r > 1 else 0)


def launch_config() -> tuple[int, int]:
    """``(num_warps, num_stages)`` of every launch."""
    return NUM_WARPS, NUM_STAGES
