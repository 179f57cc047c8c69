"""What every family's tile choice shares: the tile profiles and their limits.

Tiles come in two **profiles** (`TileProfile`): ``gpu`` (the default) picks
tiles that fit sm_80 and sm_90 (shared memory, registers, ``tl.dot``'s 16x16
minimum); ``interpreter`` picks large tiles for Triton's interpreter, whose
cost is about 240 us per program and 50 us per executed ``tl`` op whatever the
block size, so fewer, bigger programs win there. Each family's ``tiles``
module holds its rules for both, from the limits and helpers here. Pure
functions of ints: only the standard library is imported (this is a kernel
contract, below the dialects).
"""

from __future__ import annotations

from typing import Literal

TileProfile = Literal["gpu", "interpreter"]
"""Who the tiles are for: a GPU (sm_80/sm_90) or Triton's CPU interpreter."""
TILE_PROFILES: tuple[TileProfile, ...] = ("gpu", "interpreter")

INTERPRETER_MAX_BLOCK = 2**15
"""The ``interpreter`` profile's largest block (elements of one ``tl`` value).
Measured on YOLOv8n's convolutions: up to about 2**15 elements a bigger block
amortises the fixed cost of each op, past it each element costs more (the
interpreter's temporaries fall out of the CPU caches), so a program with
2**16-element blocks is slower than two with 2**15."""
INTERPRETER_MAX_ROWS = 2048
"""The ``interpreter`` profile's largest tile along output positions:
`INTERPRETER_MAX_BLOCK` over the 16 columns of the narrowest GEMM tile."""
INTERPRETER_MAX_GATHER = 2**18
"""The ``interpreter`` profile's largest gathered operand tile of an implicit
GEMM (``BLOCK_M x BLOCK_K``, the convolution's patch or gradient gather). The
gather's index arithmetic costs per element and its op count per K step, so
one 512x512 step beats sixteen 256x128 ones (the input gradient of LeNet's
second convolution at batch 32: about 0.35 s against 0.8 s); past 2**18 the
temporaries stop paying for themselves."""
INTERPRETER_MAX_GATHER_K = 512
"""The ``interpreter`` profile's largest ``BLOCK_K`` of a gathered GEMM."""
INTERPRETER_MAX_GATHER_ROWS = 4096
"""The ``interpreter`` profile's largest ``BLOCK_M`` of a gathered GEMM."""
GEMM_MIN_BLOCK = 16
"""Smallest tile edge: ``tl.dot`` on a GPU needs 16x16 tiles (and K >= 8)."""
GEMM_MAX_BLOCK_N = 128
"""Largest ``BLOCK_N`` of a convolution GEMM tile."""


def next_power_of_two(value: int) -> int:
    """The smallest power of two ``>= value`` (1 for ``value <= 1``)."""
    return 1 if value <= 1 else 1 << (value - 1).bit_length()


def clamp(value: int, low: int, high: int) -> int:
    """``value`` limited to ``[low, high]`` (``low`` wins if ``high < low``)."""
    return max(low, min(value, high))


def check_profile(profile: str) -> TileProfile:
    """``profile`` if it names a tile profile, else a ValueError naming them."""
    if profile == "gpu":
        return "gpu"
    if profile == "interpreter":
        return "interpreter"
    raise ValueError(f"unknown tile profile '{profile}' (valid: {', '.join(TILE_PROFILES)})")


def interpreter_gather_tiles(n: int, k: int) -> tuple[int, int, int]:
    """``(BLOCK_M, BLOCK_N, BLOCK_K)`` of the ``interpreter`` profile for an
    implicit GEMM that gathers its ``[BLOCK_M, BLOCK_K]`` operand (the forward
    convolution and its input gradient), with ``n`` columns and a reduction of
    ``k``: ``BLOCK_K`` is ``k`` rounded up to a power of two, clamped to
    16..512; ``BLOCK_N`` is ``n`` rounded up, clamped to 16..128; ``BLOCK_M``
    fills ``BLOCK_M x max(BLOCK_K, BLOCK_N) = 2**18`` elements
    (`INTERPRETER_MAX_GATHER`), clamped to 16..4096. The batch is unknown when
    tiles are chosen, so ``BLOCK_M`` does not depend on one image's positions:
    a tile spans images where an image is smaller. These need not fit a GPU."""
    block_k = clamp(next_power_of_two(k), GEMM_MIN_BLOCK, INTERPRETER_MAX_GATHER_K)
    block_n = clamp(next_power_of_two(n), GEMM_MIN_BLOCK, GEMM_MAX_BLOCK_N)
    block_m = clamp(
        INTERPRETER_MAX_GATHER // max(block_k, block_n),
        GEMM_MIN_BLOCK,
        INTERPRETER_MAX_GATHER_ROWS,
    )
    return block_m, block_n, block_k
