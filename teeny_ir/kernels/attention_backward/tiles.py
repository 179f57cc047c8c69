"""Tile and launch choices of the ``attention_backward`` family: pure functions
of the static extents that its lowering asks, so the tests can pin them.

The head tiles ``BLOCK_DK`` / ``BLOCK_DV`` hold a whole head dimension: its
next power of two, at least 16 (``tl.dot``'s minimum on a GPU), at most
`MAX_HEAD` (a larger head is refused). The query and key tiles ``BLOCK_M`` /
``BLOCK_N`` depend on the profile:

- ``gpu`` (sm_80 / sm_90, fp32 operands): a role-0 program keeps four
  ``BLOCK_N x head`` tiles (``k``, ``v`` and the two accumulators) live across
  its loop besides the loop's own tiles, so the tiles shrink and the warps grow
  with the head (`GPU_TILES`); never more than the extent's next power of two
  (small problems get small tiles), never less than 16.
- ``interpreter`` (Triton's CPU interpreter, which pays per program and per op
  rather than per element): each tile is the extent's next power of two, from
  16 up to `INTERPRETER_MAX_TILE`; these need not fit a GPU.
"""

from __future__ import annotations

from teeny_ir.kernels.tiles import GEMM_MIN_BLOCK, check_profile, clamp, next_power_of_two

MAX_HEAD = 256
"""The largest head dimension (``Dk`` or ``Dv``) the kernel's one head tile holds."""
GPU_TILES = ((32, 32, 4), (64, 32, 8), (128, 16, 8), (MAX_HEAD, 16, 8))
"""``(largest head tile, BLOCK_M = BLOCK_N, num_warps)`` of the ``gpu`` profile,
smallest head first. The largest tiles that Triton 3.9 compiles for sm_80 and
sm_90 (one stage, ``BLOCK_DK = BLOCK_DV``) without spilling registers
(cuobjdump: 244 / 223 registers at head 32, 223 / 202 at 64, 196 / 168 at 128
on sm_80 / sm_90); at head 256 every tile spills (16 x 16 at 8 warps the least:
176 / 152 bytes of stack). 64 x 64 tiles spill from head 32 up (440 bytes on
sm_80 at 4 warps)."""
INTERPRETER_MAX_TILE = 512
"""The ``interpreter`` profile's largest ``BLOCK_M`` or ``BLOCK_N``. Measured on
B = 2, 2 heads, N = M = 400, Dk = 32, Dv = 64 (one BLAS thread): 512 x 512
tiles (one program per matrix and role) take about 0.12 s, 256 x 512 0.22 s,
256 x 256 0.26 s; at N = M = 1000, 1024 x 1024 tiles gain little on 512 x 512
(0.25 s against 0.29 s) for four times the temporaries."""
NUM_STAGES = 1
"""One stage: a second buffer of the loop's fp32 tiles would cost shared memory
and registers that the live tiles already use up."""
INTERPRETER_NUM_WARPS = 4
"""The ``interpreter`` profile's warps (the interpreter ignores them)."""


def head_tile(size: int) -> int:
    """The head tile of a head dimension of ``size``: its next power of two, at
    least 16. Raises ValueError above `MAX_HEAD` or below 1."""
    if not 1 <= size <= MAX_HEAD:
        raise ValueError(f"head dimension must be in 1..{MAX_HEAD}, got {size}")
    return max(GEMM_MIN_BLOCK, next_power_of_two(size))


def pick_tiles(
    queries: int, keys: int, dk: int, dv: int, profile: str = "gpu"
) -> tuple[int, int, int, int]:
    """``(BLOCK_M, BLOCK_N, BLOCK_DK, BLOCK_DV)`` for ``queries`` (N) and
    ``keys`` (M) of one matrix and head dimensions ``dk`` and ``dv`` (raises
    ValueError for an extent below 1 or a head above `MAX_HEAD`)."""
    for name, value in (("queries", queries), ("keys", keys)):
        if value < 1:
            raise ValueError(f"attention {name} must be >= 1, got {value}")
    block_dk, block_dv = head_tile(dk), head_tile(dv)
    wanted_m, wanted_n = next_power_of_two(queries), next_power_of_two(keys)
    if check_profile(profile) == "gpu":
        tile, _ = _gpu_row(block_dk, block_dv)
        return (
            clamp(wanted_m, GEMM_MIN_BLOCK, tile),
            clamp(wanted_n, GEMM_MIN_BLOCK, tile),
            block_dk,
            block_dv,
        )
    return (
        clamp(wanted_m, GEMM_MIN_BLOCK, INTERPRETER_MAX_TILE),
        clamp(wanted_n, GEMM_MIN_BLOCK, INTERPRETER_MAX_TILE),
        block_dk,
        block_dv,
    )


def _gpu_row(block_dk: int, block_dv: int) -> tuple[int, int]:
    """``(BLOCK_M = BLOCK_N cap, num_warps)`` of `GPU_TILES` for the head tiles."""
    head = max(block_dk, block_dv)
    return next((tile, warps) for largest, tile, warps in GPU_TILES if head <= largest)


def launch_config(block_dk: int, block_dv: int, profile: str = "gpu") -> tuple[int, int]:
    """``(num_warps, num_stages)`` of a launch with head tiles ``block_dk`` and
    ``block_dv``: `GPU_TILES`'s warps on a GPU, 4 in the interpreter."""
    if check_profile(profile) == "gpu":
        return _gpu_row(block_dk, block_dv)[1], NUM_STAGES
    return INTERPRETER_NUM_WARPS, NUM_STAGES
