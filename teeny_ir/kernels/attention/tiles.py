"""Tile and launch choices of the ``attention`` family: pure functions the lowering
asks (``gpu`` or ``interpreter`` profile, `teeny_ir.kernels.tiles`), so the
tests can pin every variant it emits.

A program holds, in fp32, its query block ``[BLOCK_M, BLOCK_DK]``, the
accumulator ``[BLOCK_M, BLOCK_DV]`` and one ``[BLOCK_M, BLOCK_N]`` block of
scores, and stages key and value blocks of ``BLOCK_N`` rows through shared
memory. The head blocks are fixed by the op (`head_block`); the profile picks
the query and key blocks and the launch configuration.
"""

from __future__ import annotations

from teeny_ir.kernels.tiles import (
    GEMM_MIN_BLOCK,
    check_profile,
    clamp,
    next_power_of_two,
)

HEAD_BLOCKS = (16, 32, 64, 128, 256)
"""The head-dimension blocks ``BLOCK_DK`` / ``BLOCK_DV`` may take (the family's
constexpr choices): powers of two from ``tl.dot``'s 16 to 256. One block holds
a whole head, so a head dimension above 256 is refused."""
MAX_HEAD_DIM = HEAD_BLOCKS[-1]


def head_block(size: int) -> int:
    """``BLOCK_DK`` / ``BLOCK_DV`` of a head dimension of ``size``: the next power
    of two, at least 16 (``tl.dot``'s minimum); ValueError past `MAX_HEAD_DIM`."""
    if not 1 <= size <= MAX_HEAD_DIM:
        raise ValueError(f"head dimension must be in 1..{MAX_HEAD_DIM}, got {size}")
    return max(GEMM_MIN_BLOCK, next_power_of_two(size))


GPU_BLOCK = 64
"""The ``gpu`` profile's query and key block for heads up to 64 wide (YOLO11's
C2PSA has Dk = 32, Dv = 64), at 4 warps: ptxas (Triton 3.9) gives that variant
227 registers on sm_80 and 255 on sm_90, no spills, and 32 / 56 KiB of shared
memory. (Key and value pointer blocks carried through the loop instead of
offsets recomputed from the key index spilled there.)"""
GPU_NARROW_BLOCK = 32
"""The ``gpu`` profile's smaller block for wider heads, at 8 warps: the key block
past 64 features, the query block too past 128 (64 x 32 blocks of 128-wide
heads and 32 x 32 blocks of 256-wide heads compile without spills, in at most
100.5 KiB of shared memory)."""
GPU_STAGES = 2
"""Double-buffered key and value blocks, within sm_80's 163 KiB and sm_90's
227 KiB of shared memory for every head width."""
INTERPRETER_MAX_KEYS = 512
"""The ``interpreter`` profile's largest key block: up to 512 keys are one step
of the key loop."""
INTERPRETER_MAX_QUERIES = 1024
"""The ``interpreter`` profile's largest query block."""
INTERPRETER_MAX_SCORES = 2**19
"""The ``interpreter`` profile's largest block of scores (``BLOCK_M x BLOCK_N``).
Triton's interpreter pays several milliseconds per program for this kernel
(each call of a ``@triton.jit`` library function, ``tl.max`` and ``tl.sum``,
re-patches the language, and every op pays its type checks), so the fewest
programs and key steps win until the elements dominate. Measured (CPU time,
one thread) at 2 x 2 heads, N = M = 400, Dk = 32, Dv = 64: 64 x 64 blocks about
530 ms, 128 x 128 220 ms, 128 x 512 120 ms, 512 x 512 (4 programs, one key
step each) 38 ms; at N = M = 1600: 512 x 512 94 ms, 1024 x 512 60 ms,
1024 x 1024 about the same."""


def attention_tiles(
    n: int, m: int, dk: int, dv: int, profile: str = "gpu"
) -> tuple[int, int, int, int]:
    """``(BLOCK_M, BLOCK_N, BLOCK_DK, BLOCK_DV)`` for ``n`` queries and ``m`` keys
    with heads of ``dk`` (scores) and ``dv`` (values) features.

    The head blocks are `head_block` of ``dk`` and ``dv``. ``gpu``: the query
    and key blocks are `GPU_BLOCK` (`GPU_NARROW_BLOCK` for the key block when a
    head block exceeds 64, and for the query block too past 128), capped at
    the next power of two of ``n`` and ``m``, at least 16. ``interpreter``
    (which pays per executed op and per program, `INTERPRETER_MAX_SCORES`):
    the key block is ``m`` rounded up to a power of two, 16..512, and the query
    block ``n`` rounded up, 16..1024, within `INTERPRETER_MAX_SCORES` scores.
    Every size is a power of two of at least 16, so every variant compiles
    with ``tl.dot``."""
    for name, value in (("n", n), ("m", m)):
        if value < 1:
            raise ValueError(f"attention extent {name} must be >= 1, got {value}")
    block_dk, block_dv = head_block(dk), head_block(dv)
    if check_profile(profile) == "gpu":
        widest = max(block_dk, block_dv)
        queries = GPU_BLOCK if widest <= 128 else GPU_NARROW_BLOCK
        keys = GPU_BLOCK if widest <= 64 else GPU_NARROW_BLOCK
        block_m = clamp(next_power_of_two(n), GEMM_MIN_BLOCK, queries)
        block_n = clamp(next_power_of_two(m), GEMM_MIN_BLOCK, keys)
        return block_m, block_n, block_dk, block_dv
    block_n = clamp(next_power_of_two(m), GEMM_MIN_BLOCK, INTERPRETER_MAX_KEYS)
    queries = min(INTERPRETER_MAX_QUERIES, INTERPRETER_MAX_SCORES // block_n)
    block_m = clamp(next_power_of_two(n), GEMM_MIN_BLOCK, queries)
    return block_m, block_n, block_dk, block_dv


def launch_config(block_dk: int, block_dv: int, profile: str = "gpu") -> tuple[int, int]:
    """``(num_warps, num_stages)``: ``gpu``: 4 warps for heads up to 64 wide, 8
    past (the query block and accumulator grow with the head), `GPU_STAGES`
    stages; ``interpreter``: 4 warps and 1 stage (neither costs anything there)."""
    if check_profile(profile) == "interpreter":
        return 4, 1
    return (4 if max(block_dk, block_dv) <= 64 else 8), GPU_STAGES
