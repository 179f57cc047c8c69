"""The pure decision functions of `teeny_ir.kernels.conv_algorithms` and the GEMM
and implicit-GEMM families' tile choices, pinned at every boundary."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dialects.graph.shapes import is_gemm_conv
from teeny_ir.kernels.conv1x1_gemm.tiles import UNKNOWN_M_AS, pick_gemm_tile_sizes
from teeny_ir.kernels.conv_algorithms import classify_conv, is_depthwise
from teeny_ir.kernels.implicit_gemm_conv.tiles import launch_config as implicit_gemm_launch_config
from teeny_ir.kernels.implicit_gemm_conv.tiles import pick_implicit_gemm_tile_sizes


@pytest.mark.parametrize(
    ("k", "block_k"),
    [(1, 8), (31, 8), (32, 16), (33, 16), (127, 16), (128, 32), (129, 32), (4096, 32)],
)
def test_block_k_thresholds(k: int, block_k: int) -> None:
    assert pick_gemm_tile_sizes(64, 64, k)[2] == block_k


@pytest.mark.parametrize(
    ("m", "n", "block_mn"),
    [
        (127, 127, (64, 64)),
        (1, 1, (64, 64)),
        (128, 127, (128, 64)),
        (127, 128, (64, 128)),
        (128, 128, (128, 128)),
        (129, 4096, (128, 128)),
        (4096, 1, (128, 64)),
        (1, 4096, (64, 128)),
    ],
)
def test_block_m_n_thresholds(m: int, n: int, block_mn: tuple[int, int]) -> None:
    assert pick_gemm_tile_sizes(m, n, 8)[:2] == block_mn


def test_unknown_m_counts_as_64() -> None:
    assert UNKNOWN_M_AS == 64
    assert pick_gemm_tile_sizes(None, 128, 32) == pick_gemm_tile_sizes(64, 128, 32)
    assert pick_gemm_tile_sizes(None, 8, 8) == (64, 64, 8)


@pytest.mark.parametrize(("m", "n", "k"), [(0, 8, 8), (8, 0, 8), (8, 8, 0), (-1, 8, 8)])
def test_gemm_extents_below_one_are_rejected(m: int, n: int, k: int) -> None:
    with pytest.raises(ValueError, match="must be >= 1"):
        pick_gemm_tile_sizes(m, n, k)


@given(
    m=st.one_of(st.none(), st.integers(1, 1 << 20)),
    n=st.integers(1, 1 << 20),
    k=st.integers(1, 1 << 20),
)
def test_tiles_are_the_documented_rule(m: int | None, n: int, k: int) -> None:
    block_m, block_n, block_k = pick_gemm_tile_sizes(m, n, k)
    rows = 64 if m is None else m
    assert block_m == (128 if rows >= 128 else 64)
    assert block_n == (128 if n >= 128 else 64)
    assert block_k == (32 if k >= 128 else 16 if k >= 32 else 8)
    assert all(t & (t - 1) == 0 for t in (block_m, block_n, block_k))


def test_gemm_needs_every_condition() -> None:
    base = dict(strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1)
    assert classify_conv(8, (16, 8, 1, 1), **base) == "gemm"
    # Any channel count takes the GEMM path (the original needed C_OUT >= 32).
    assert classify_conv(1, (1, 1, 1, 1), **base) == "gemm"
    spoilers = [
        {"weight_shape": (16, 8, 3, 3)},
        {"weight_shape": (16, 8, 1, 3)},
        {"weight_shape": (16, 8, 3, 1)},
        {"strides": (2, 1)},
        {"strides": (1, 2)},
        {"padding": (0, 0, 0, 1)},
        {"padding": (1, 0, 0, 0)},
        {"dilation": (1, 2)},
        {"in_channels": 16, "weight_shape": (16, 8, 1, 1), "groups": 2},
    ]
    for spoiler in spoilers:
        args = {"in_channels": 8, "weight_shape": (16, 8, 1, 1), **base, **spoiler}
        assert classify_conv(**args) == "implicit-gemm", spoiler


def test_depthwise_is_one_group_per_channel() -> None:
    assert is_depthwise(8, 8, 8)
    assert not is_depthwise(8, 16, 8)  # channel multiplier 2: grouped, not depthwise
    assert not is_depthwise(8, 8, 4)
    window = dict(strides=(1, 1), padding=(1, 1, 1, 1), dilation=(1, 1))
    assert classify_conv(8, (8, 1, 3, 3), groups=8, **window) == "depthwise"
    assert classify_conv(8, (16, 1, 3, 3), groups=8, **window) == "implicit-gemm"
    assert classify_conv(8, (8, 2, 3, 3), groups=4, **window) == "implicit-gemm"
    # A 1x1 depthwise conv with one channel is a GEMM first.
    gemm_window = dict(strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1))
    assert classify_conv(1, (1, 1, 1, 1), groups=1, **gemm_window) == "gemm"
    # A 1x1 depthwise conv with several channels is not (groups > 1).
    assert classify_conv(4, (4, 1, 1, 1), groups=4, **gemm_window) == "depthwise"


@given(
    groups=st.sampled_from([1, 2, 4]),
    per_group_in=st.integers(1, 3),
    per_group_out=st.integers(1, 3),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    strides=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    padding=st.tuples(*[st.integers(0, 1)] * 4),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
)
def test_classification_agrees_with_the_graph_verifier(
    groups: int,
    per_group_in: int,
    per_group_out: int,
    kernel: tuple[int, int],
    strides: tuple[int, int],
    padding: tuple[int, int, int, int],
    dilation: tuple[int, int],
) -> None:
    in_channels = groups * per_group_in
    weight = (groups * per_group_out, per_group_in, *kernel)
    algorithm = classify_conv(in_channels, weight, strides, padding, dilation, groups)
    assert (algorithm == "gemm") == is_gemm_conv(weight, strides, padding, dilation, groups)
    if algorithm != "gemm":
        expected = "depthwise" if groups == in_channels == weight[0] else "implicit-gemm"
        assert algorithm == expected


# ---------------------------------------------------------------- implicit-gemm tiles


@pytest.mark.parametrize(
    ("n", "block_n"),
    [
        (1, 16),
        (15, 16),
        (16, 16),
        (17, 32),
        (32, 32),
        (33, 64),
        (64, 64),
        (65, 128),
        (128, 128),
        (129, 128),
        (4096, 128),
    ],
)
def test_implicit_gemm_block_n_is_n_rounded_up_and_clamped(n: int, block_n: int) -> None:
    assert pick_implicit_gemm_tile_sizes(64, n, 27)[1] == block_n


@pytest.mark.parametrize(
    ("m", "k", "block_m", "block_k"),
    [
        (1, 1, 64, 16),
        (127, 127, 64, 16),
        (128, 128, 128, 32),
        (129, 27, 128, 16),
        (4096, 4608, 128, 32),
    ],
)
def test_implicit_gemm_block_m_k_thresholds(m: int, k: int, block_m: int, block_k: int) -> None:
    block = pick_implicit_gemm_tile_sizes(m, 16, k)
    assert (block[0], block[2]) == (block_m, block_k)


@pytest.mark.parametrize(("m", "n", "k"), [(0, 8, 8), (8, 0, 8), (8, 8, 0), (-1, 8, 8)])
def test_implicit_gemm_extents_below_one_are_rejected(m: int, n: int, k: int) -> None:
    with pytest.raises(ValueError, match="must be >= 1"):
        pick_implicit_gemm_tile_sizes(m, n, k)


@given(m=st.integers(1, 1 << 20), n=st.integers(1, 1 << 20), k=st.integers(1, 1 << 20))
def test_implicit_gemm_tiles_fit_tl_dot_and_the_launch_config(m: int, n: int, k: int) -> None:
    block_m, block_n, block_k = pick_implicit_gemm_tile_sizes(m, n, k)
    assert all(t >= 16 and t & (t - 1) == 0 for t in (block_m, block_n, block_k))
    assert block_n >= min(n, 128) and block_n < 2 * max(n, 16)
    warps, stages = implicit_gemm_launch_config(block_m, block_n)
    assert (warps, stages) == ((8 if (block_m, block_n) == (128, 128) else 4), 2)
    # fp32 A and B tiles, double-buffered, well within sm_86's 99 KiB.
    assert 2 * 4 * (block_m + block_n) * block_k <= 64 * 1024
