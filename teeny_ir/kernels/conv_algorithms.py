"""Which kernel path a convolution takes: a pure decision of select-conv-algorithm.

Deciding lives here, away from rewriting and emitting (the Inductor split):
select-conv-algorithm asks these functions and records their answers in the IR
as attributes, so lit tests can check them and the tests here can pin the
rules at every boundary. `classify_conv` picks the algorithm, `conv_extents`
gives its tile rule the extents, and `conv_tiles` asks the rule of the
algorithm's kernel family (its ``tiles`` module) for a tile profile
(`teeny_ir.kernels.tiles`). Only the standard library and those pure tile
modules are imported.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from teeny_ir.kernels.conv1x1_gemm.tiles import pick_gemm_tile_sizes
from teeny_ir.kernels.depthwise_conv.tiles import pick_depthwise_tile_sizes
from teeny_ir.kernels.implicit_gemm_conv.tiles import pick_implicit_gemm_tile_sizes
from teeny_ir.kernels.tiles import TileProfile

ConvAlgorithm = Literal["gemm", "depthwise", "implicit-gemm"]


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
    """The algorithm a convolution takes (docs/architecture.md, select-conv-algorithm).

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


def conv_extents(
    algorithm: ConvAlgorithm,
    weight_shape: Sequence[int],
    output_shape: Sequence[int],
    groups: int,
) -> tuple[int, int, int]:
    """The extents ``(m, n, k)`` that ``algorithm``'s tile rule takes.

    ``weight_shape`` is ``[C_out, C_in / groups, KH, KW]`` and
    ``output_shape`` ``[B, C_out, OH, OW]`` (the batch is not used: it is
    unknown when tiles are chosen). ``m`` is always one image's output
    positions ``OH * OW``. Then:

    - ``gemm``: ``n = C_out``, ``k = C_in``;
    - ``implicit-gemm``: ``n = C_out / groups``, ``k = C_in / groups * KH * KW``;
    - ``depthwise``: ``n = C_out`` (the channels), ``k = KH * KW`` (the taps).
    """
    c_out, group_in, kernel_h, kernel_w = weight_shape
    m = output_shape[2] * output_shape[3]
    if algorithm == "gemm":
        return m, c_out, group_in
    if algorithm == "depthwise":
        return m, c_out, kernel_h * kernel_w
    return m, c_out // groups, group_in * kernel_h * kernel_w


TilePicker = Callable[[int, int, int, TileProfile], tuple[int, int, int]]
"""A family's tile rule: ``(m, n, k, profile)`` to ``(BLOCK_M, BLOCK_N, BLOCK_K)``."""

TILE_PICKERS: dict[ConvAlgorithm, TilePicker] = {
    "gemm": pick_gemm_tile_sizes,
    "implicit-gemm": pick_implicit_gemm_tile_sizes,
    "depthwise": pick_depthwise_tile_sizes,
}
"""Each algorithm's tile rule (its kernel family's ``tiles`` module)."""


def conv_tiles(
    algorithm: ConvAlgorithm, m: int, n: int, k: int, profile: TileProfile
) -> tuple[int, int, int]:
    """The tiles ``[BLOCK_M, BLOCK_N, BLOCK_K]`` of a convolution that takes
    ``algorithm``, over the extents `conv_extents` gives, for ``profile``:
    the rule of the family that runs the algorithm (`TILE_PICKERS`)."""
    return TILE_PICKERS[algorithm](m, n, k, profile)
