"""Pure decision functions of the graph passes: convolution algorithm and GEMM tiles.

Deciding lives here, away from rewriting and emitting (the Inductor split):
select-conv-algorithm asks these functions and records their answers in the IR
as attributes, so lit tests can check them and the tests here can pin the
rules at every boundary. Only the standard library is imported.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

ConvAlgorithm = Literal["gemm", "depthwise", "implicit-gemm"]

UNKNOWN_M_AS = 64
"""The GEMM M extent assumed when it is not known statically (teenygrad's rule)."""


def pick_gemm_tile_sizes(m: int | None, n: int, k: int) -> tuple[int, int, int]:
    """Tile sizes ``(BLOCK_M, BLOCK_N, BLOCK_K)`` of a GEMM ``[M, K] @ [K, N]``.

    The rule carried over from teenygrad (REFERENCE.md, "Tile choice"):
    ``BLOCK_K`` is 32 when ``k >= 128``, 16 when ``k >= 32``, else 8;
    ``(BLOCK_M, BLOCK_N)`` is (128, 128) when both ``m`` and ``n`` are at least
    128, (128, 64) when only ``m`` is, (64, 128) when only ``n`` is, else
    (64, 64). An unknown ``m`` (None) counts as 64. Every size is a power of two.
    """
    for name, value in (("m", m), ("n", n), ("k", k)):
        if value is not None and value < 1:
            raise ValueError(f"GEMM extent {name} must be >= 1, got {value}")
    rows = UNKNOWN_M_AS if m is None else m
    block_k = 32 if k >= 128 else 16 if k >= 32 else 8
    block_m = 128 if rows >= 128 else 64
    block_n = 128 if n >= 128 else 64
    return block_m, block_n, block_k


def is_depthwise(in_channels: int, out_channels: int, groups: int) -> bool:
    """One group per channel, one output channel per input channel."""
    return groups == in_channels == out_channels


def classify_conv(
    in_channels: int,
    weight_shape: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> ConvAlgorithm:
    """The algorithm a convolution takes (ARCHITECTURE.md, select-conv-algorithm).

    ``weight_shape`` is ``[C_out, C_in / groups, KH, KW]``, ``padding`` is
    ``[top, left, bottom, right]``. The rule, first match wins:

    - ``gemm``: 1x1 kernel, stride 1, no padding, dilation 1, one group - any
      channel count (the same test as `dialects.graph.is_gemm_conv`, which the
      graph verifier applies to ``algorithm gemm``);
    - ``depthwise``: ``groups == C_in == C_out``;
    - ``implicit-gemm``: everything else.
    """
    if (
        tuple(weight_shape[2:]) == (1, 1)
        and tuple(strides) == (1, 1)
        and tuple(padding) == (0, 0, 0, 0)
        and tuple(dilation) == (1, 1)
        and groups == 1
    ):
        return "gemm"
    if is_depthwise(in_channels, weight_shape[0], groups):
        return "depthwise"
    return "implicit-gemm"
