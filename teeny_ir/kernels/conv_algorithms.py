"""Which kernel path a convolution takes: a pure decision of select-conv-algorithm.

Deciding lives here, away from rewriting and emitting (the Inductor split):
select-conv-algorithm asks these functions and records their answers in the IR
as attributes, so lit tests can check them and the tests here can pin the
rules at every boundary. Only the standard library is imported.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

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
