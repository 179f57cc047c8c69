"""The pure decision functions of `teeny_ir.kernels.conv_algorithms` and the GEMM,
implicit-GEMM and depthwise families' tile choices in both profiles, pinned at
every boundary; the select-conv-algorithm pass's profile option and the
named pipelines that pass it on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dialects.graph.shapes import is_gemm_conv
from passes.select_conv_algorithm import SelectConvAlgorithmPass
from teeny_ir import DiagnosticError, PassManager
from teeny_ir.driver.pass_options import OptionError
from teeny_ir.driver.pipeline_syntax import NestedSpec, PassSpec, parse_any
from teeny_ir.driver.pipelines import PIPELINES
from teeny_ir.kernels.conv1x1_gemm.tiles import UNKNOWN_M_AS, pick_gemm_tile_sizes
from teeny_ir.kernels.conv_algorithms import (
    TILE_PICKERS,
    ConvAlgorithm,
    classify_conv,
    conv_extents,
    conv_tiles,
    is_depthwise,
)
from teeny_ir.kernels.depthwise_conv.tiles import launch_config as depthwise_launch_config
from teeny_ir.kernels.depthwise_conv.tiles import pick_depthwise_tile_sizes
from teeny_ir.kernels.implicit_gemm_conv.tiles import launch_config as implicit_gemm_launch_config
from teeny_ir.kernels.implicit_gemm_conv.tiles import pick_implicit_gemm_tile_sizes
from teeny_ir.kernels.tiles import (
    INTERPRETER_MAX_BLOCK,
    INTERPRETER_MAX_ROWS,
    TILE_PROFILES,
    TileProfile,
    check_profile,
    clamp,
    next_power_of_two,
)


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
        (129, 27, 128, 32),
        (4096, 4608, 128, 32),
    ],
)
def test_implicit_gemm_block_m_k_thresholds(m: int, k: int, block_m: int, block_k: int) -> None:
    block = pick_implicit_gemm_tile_sizes(m, 16, k)
    assert (block[0], block[2]) == (block_m, block_k)


@pytest.mark.parametrize(
    ("k", "block_k"),
    [
        (1, 16),
        (16, 16),
        (17, 32),
        (27, 32),  # the 3-channel 3x3 stem: one K step of 32, not two of 16
        (32, 32),
        (33, 16),
        (127, 16),
        (128, 32),
        (4608, 32),
    ],
)
def test_implicit_gemm_block_k_is_one_step_up_to_32_then_32_from_128(k: int, block_k: int) -> None:
    """BLOCK_K is 32 where ``16 < k <= 32`` (one K step, padded to 32 as two
    steps of 16 would be) or ``k >= 128``, else 16."""
    assert pick_implicit_gemm_tile_sizes(64, 16, k)[2] == block_k
    steps = -(-k // block_k)
    assert steps * block_k <= -(-k // 16) * 16 or k >= 128


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


def test_gpu_is_the_default_profile() -> None:
    for m, n, k in [(1, 1, 1), (127, 16, 127), (128, 17, 128), (4096, 4096, 4096)]:
        assert pick_gemm_tile_sizes(m, n, k) == pick_gemm_tile_sizes(m, n, k, "gpu")
        assert pick_implicit_gemm_tile_sizes(m, n, k) == pick_implicit_gemm_tile_sizes(
            m, n, k, "gpu"
        )
        assert pick_depthwise_tile_sizes(m, n, k) == pick_depthwise_tile_sizes(m, n, k, "gpu")


@pytest.mark.parametrize(
    "pick", [pick_gemm_tile_sizes, pick_implicit_gemm_tile_sizes, pick_depthwise_tile_sizes]
)
def test_an_unknown_profile_is_rejected(pick: Callable[..., tuple[int, int, int]]) -> None:
    with pytest.raises(ValueError, match=r"unknown tile profile 'cpu' \(valid: gpu, interpreter\)"):
        pick(64, 64, 64, "cpu")


def test_helpers() -> None:
    assert [next_power_of_two(v) for v in (0, 1, 2, 3, 4, 5, 127, 128, 129)] == [
        1,
        1,
        2,
        4,
        4,
        8,
        128,
        128,
        256,
    ]
    assert (clamp(5, 1, 3), clamp(0, 1, 3), clamp(2, 1, 3), clamp(9, 4, 2)) == (3, 1, 2, 4)
    assert TILE_PROFILES == ("gpu", "interpreter")
    assert check_profile("interpreter") == "interpreter"
    assert (INTERPRETER_MAX_BLOCK, INTERPRETER_MAX_ROWS) == (2**15, 2048)


# ---------------------------------------------------------------- interpreter: gemm


@pytest.mark.parametrize(
    ("m", "block_m"),
    [
        (None, 64),
        (1, 16),
        (16, 16),
        (17, 32),
        (127, 128),
        (128, 128),
        (129, 256),
        (2048, 2048),
        (2049, 2048),
        (1 << 20, 2048),
    ],
)
def test_interpreter_gemm_block_m_is_the_image_rounded_up(m: int | None, block_m: int) -> None:
    assert pick_gemm_tile_sizes(m, 16, 8, "interpreter")[0] == block_m


@pytest.mark.parametrize(
    ("m", "n", "block_n"),
    [
        (128, 1, 16),
        (128, 16, 16),
        (128, 17, 32),
        (128, 256, 256),
        (128, 257, 256),
        (1024, 32, 32),
        (1024, 33, 32),
        (2048, 17, 16),
        (16, 2048, 2048),
        (16, 4096, 2048),
    ],
)
def test_interpreter_gemm_block_n_fills_the_block(m: int, n: int, block_n: int) -> None:
    """``BLOCK_N`` is ``n`` rounded up, at most 2**15 // BLOCK_M (and at least 16)."""
    assert pick_gemm_tile_sizes(m, n, 8, "interpreter")[1] == block_n


@pytest.mark.parametrize(
    ("m", "n", "k", "block_k"),
    [
        (16, 16, 1, 8),
        (16, 16, 8, 8),
        (16, 16, 9, 16),
        (16, 16, 127, 128),
        (16, 16, 128, 128),
        (16, 16, 129, 256),
        (16, 128, 4096, 256),
        (128, 16, 4096, 256),
        (2048, 16, 4096, 16),
    ],
)
def test_interpreter_gemm_block_k_fills_the_block(m: int, n: int, k: int, block_k: int) -> None:
    """``BLOCK_K`` is ``k`` rounded up, at most 2**15 // max(BLOCK_M, BLOCK_N)."""
    assert pick_gemm_tile_sizes(m, n, k, "interpreter")[2] == block_k


@given(
    m=st.one_of(st.none(), st.integers(1, 1 << 20)),
    n=st.integers(1, 1 << 20),
    k=st.integers(1, 1 << 20),
)
def test_interpreter_gemm_tiles_are_the_documented_rule(m: int | None, n: int, k: int) -> None:
    block_m, block_n, block_k = pick_gemm_tile_sizes(m, n, k, "interpreter")
    rows = 64 if m is None else m
    assert block_m == min(2048, max(16, next_power_of_two(rows)))
    assert block_n == max(16, min(next_power_of_two(n), 2**15 // block_m))
    assert block_k == max(8, min(next_power_of_two(k), 2**15 // max(block_m, block_n)))
    assert all(t & (t - 1) == 0 for t in (block_m, block_n, block_k))
    # Every block stays within the interpreter's sweet spot (and Triton's limit).
    for block in (block_m * block_n, block_m * block_k, block_k * block_n):
        assert block <= INTERPRETER_MAX_BLOCK


# ---------------------------------------------------------------- interpreter: implicit gemm


@pytest.mark.parametrize(
    ("m", "n", "k", "tiles"),
    [
        (1, 1, 1, (4096, 16, 16)),
        (127, 16, 127, (2048, 16, 128)),
        (128, 17, 128, (2048, 32, 128)),
        (128, 16, 129, (1024, 16, 256)),
        # YOLOv8n at 64x64: the stem; a 3x3 stride-2 conv; the 2x2 level.
        (1024, 16, 27, (4096, 16, 32)),
        (256, 32, 144, (1024, 32, 256)),
        (4, 256, 1152, (512, 128, 512)),
        # LeNet: conv1 (K 25) and conv2 (K 150).
        (784, 6, 25, (4096, 16, 32)),
        (100, 16, 150, (1024, 16, 256)),
        # The caps: 512 taps, 128 columns.
        (4096, 4096, 4096, (512, 128, 512)),
        (16, 1 << 20, 1 << 20, (512, 128, 512)),
    ],
)
def test_interpreter_implicit_gemm_boundaries(
    m: int, n: int, k: int, tiles: tuple[int, int, int]
) -> None:
    assert pick_implicit_gemm_tile_sizes(m, n, k, "interpreter") == tiles


@given(m=st.integers(1, 1 << 20), n=st.integers(1, 1 << 20), k=st.integers(1, 1 << 20))
def test_interpreter_implicit_gemm_tiles_are_the_documented_rule(m: int, n: int, k: int) -> None:
    block_m, block_n, block_k = pick_implicit_gemm_tile_sizes(m, n, k, "interpreter")
    assert block_k == max(16, min(next_power_of_two(k), 512))
    assert block_n == max(16, min(next_power_of_two(n), 128))
    assert block_m == min(4096, 2**18 // max(block_k, block_n))
    assert all(t >= 16 and t & (t - 1) == 0 for t in (block_m, block_n, block_k))
    # The gathered tile is the largest block, within Triton's 2**20 limit.
    assert max(block_m * block_n, block_m * block_k, block_k * block_n) <= 2**18


# ---------------------------------------------------------------- depthwise tiles


@pytest.mark.parametrize(
    ("m", "n", "tiles"),
    [
        (1, 1, (64, 1, 1)),
        (127, 16, (64, 16, 1)),
        (128, 17, (128, 32, 1)),
        (127, 17, (64, 32, 1)),
        (128, 16, (128, 16, 1)),
        (1 << 20, 3, (128, 4, 1)),
        (4096, 4096, (128, 32, 1)),
    ],
)
def test_gpu_depthwise_boundaries(m: int, n: int, tiles: tuple[int, int, int]) -> None:
    for k in (1, 9, 127, 128):  # one tap per step, whatever the window
        assert pick_depthwise_tile_sizes(m, n, k) == tiles


@pytest.mark.parametrize(
    ("m", "n", "k", "tiles"),
    [
        (1, 1, 1, (1, 1, 1)),
        (64, 16, 9, (64, 16, 16)),
        (127, 16, 9, (128, 16, 16)),
        (128, 17, 9, (128, 16, 16)),  # 2**15 / (128 * 16) = 16 channels
        (128, 16, 127, (128, 2, 128)),
        (128, 16, 128, (128, 2, 128)),
        (128, 16, 129, (128, 2, 128)),  # at most 128 taps per step
        (4096, 64, 9, (2048, 1, 16)),
        (1 << 20, 1, 121, (256, 1, 128)),  # 2**15 / 128 rows
        (4, 1 << 20, 1, (4, 8192, 1)),
    ],
)
def test_interpreter_depthwise_boundaries(
    m: int, n: int, k: int, tiles: tuple[int, int, int]
) -> None:
    assert pick_depthwise_tile_sizes(m, n, k, "interpreter") == tiles


@given(
    m=st.integers(1, 1 << 20),
    n=st.integers(1, 1 << 20),
    k=st.integers(1, 1 << 10),
    profile=st.sampled_from(["gpu", "interpreter"]),
)
def test_depthwise_tiles_are_the_documented_rule(m: int, n: int, k: int, profile: str) -> None:
    block_p, block_c, block_t = pick_depthwise_tile_sizes(m, n, k, profile)  # type: ignore[arg-type]
    assert all(t >= 1 and t & (t - 1) == 0 for t in (block_p, block_c, block_t))
    if profile == "gpu":
        assert (block_p, block_c, block_t) == (
            128 if m >= 128 else 64,
            min(32, next_power_of_two(n)),
            1,
        )
        assert depthwise_launch_config(block_p, block_c, block_t) == (4, 1)
    else:
        assert block_t == min(128, next_power_of_two(k))
        assert block_p == min(next_power_of_two(m), 2048, 2**15 // block_t)
        assert block_c == max(1, min(next_power_of_two(n), 2**15 // (block_p * block_t)))
        assert block_p * block_t * block_c <= INTERPRETER_MAX_BLOCK


@pytest.mark.parametrize(
    ("tiles", "warps"),
    [
        ((128, 32, 1), 4),
        ((64, 64, 1), 4),
        ((128, 64, 1), 8),
        ((256, 2, 16), 8),
        ((1, 1, 1), 4),
        ((511, 1, 16), 4),
        ((512, 1, 16), 8),
    ],
)
def test_depthwise_launch_config(tiles: tuple[int, int, int], warps: int) -> None:
    """8 warps from a gathered block of 8192 elements, one stage."""
    assert depthwise_launch_config(*tiles) == (warps, 1)


# ---------------------------------------------------------------- extents


def test_conv_extents_per_algorithm() -> None:
    out = (1, 32, 7, 9)  # M = 63 whatever the algorithm
    assert conv_extents("gemm", (32, 16, 1, 1), out, 1) == (63, 32, 16)
    assert conv_extents("implicit-gemm", (32, 16, 3, 3), out, 1) == (63, 32, 144)
    assert conv_extents("implicit-gemm", (32, 4, 3, 5), out, 4) == (63, 8, 60)
    assert conv_extents("depthwise", (32, 1, 5, 3), out, 32) == (63, 32, 15)


@pytest.mark.parametrize("profile", ["gpu", "interpreter"])
@pytest.mark.parametrize(
    ("algorithm", "pick"),
    [
        ("gemm", pick_gemm_tile_sizes),
        ("implicit-gemm", pick_implicit_gemm_tile_sizes),
        ("depthwise", pick_depthwise_tile_sizes),
    ],
)
def test_conv_tiles_asks_the_family_of_the_algorithm(
    algorithm: ConvAlgorithm, pick: Callable[..., tuple[int, int, int]], profile: TileProfile
) -> None:
    # Extents where the three rules disagree, so a wrong route shows.
    for m, n, k in [(63, 32, 144), (4096, 3, 9), (1, 256, 1)]:
        assert conv_tiles(algorithm, m, n, k, profile) == pick(m, n, k, profile)
    assert len({conv_tiles(a, 63, 32, 144, profile) for a in TILE_PICKERS}) == 3


def test_conv_tiles_rejects_an_unknown_profile() -> None:
    with pytest.raises(ValueError, match="unknown tile profile 'cpu'"):
        conv_tiles("gemm", 64, 64, 64, "cpu")  # type: ignore[arg-type]


# ---------------------------------------------------------------- the pass and the pipelines


def test_the_pass_checks_its_profile() -> None:
    assert SelectConvAlgorithmPass().profile == "gpu"
    assert SelectConvAlgorithmPass(profile="interpreter").profile == "interpreter"
    with pytest.raises(ValueError, match="unknown tile profile 'fast'"):
        SelectConvAlgorithmPass(profile="fast")  # type: ignore[arg-type]


def _flatten(spec: NestedSpec) -> list[PassSpec]:
    found: list[PassSpec] = []
    for element in spec.elements:
        found += _flatten(element) if isinstance(element, NestedSpec) else [element]
    return found


def test_teeny_inference_passes_the_profile_on() -> None:
    pipeline = PIPELINES["teeny-inference"]
    assert [o.name for o in pipeline.options] == ["profile"]
    default = _flatten(pipeline.expand())
    assert [p.name for p in default] == [
        "split-bias",
        "fuse-attention",
        "fuse-epilogues",
        "fuse-pointwise",
        "select-conv-algorithm",
        "lower-graph-to-kernel",
    ]
    assert default == _flatten(parse_any(pipeline.text))
    for profile in ("gpu", "interpreter"):
        chosen = _flatten(pipeline.expand([("profile", (profile,))]))
        routed = ("select-conv-algorithm", "lower-graph-to-kernel")
        for name in routed:
            chosen_pass = [p for p in chosen if p.name == name]
            assert [p.options for p in chosen_pass] == [(("profile", (profile,)),)], name
        others = [p for p in chosen if p.name not in routed]
        assert others == [p for p in default if p.name not in routed]
    assert "profile=gpu|interpreter" in pipeline.options[0].describe()


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        (
            "teeny-inference",
            [("profle", ("gpu",))],
            "named pipeline 'teeny-inference' has no option 'profle' (valid options: "
            "profile); did you mean 'profile'?",
        ),
        (
            "teeny-inference",
            [("mode", ("training",))],
            "named pipeline 'teeny-inference' has no option 'mode' (valid options: profile)",
        ),
        (
            "teeny-inference",
            [("profile", ("fast",))],
            "bad value 'fast' for option 'profile' of named pipeline 'teeny-inference': "
            "expected one of gpu, interpreter",
        ),
        (
            "teeny-inference",
            [("profile", ("gpu", "interpreter"))],
            "expected a single gpu|interpreter, got a list of 2",
        ),
        ("cleanup", [("x", ("1",))], "named pipeline 'cleanup' takes no options"),
    ],
)
def test_pipeline_option_errors(name: str, options: list[Any], message: str) -> None:
    with pytest.raises(OptionError) as caught:
        PIPELINES[name].expand(options)
    assert message in str(caught.value)


def test_pipeline_option_through_the_pass_manager() -> None:
    text = PassManager.parse("teeny-inference{profile=interpreter}").pipeline_string()
    assert text == (
        "builtin.module(split-bias,fuse-attention,fuse-epilogues,fuse-pointwise,"
        "select-conv-algorithm{profile=interpreter},"
        "lower-graph-to-kernel{profile=interpreter})"
    )
    assert PassManager.parse(text).pipeline_string() == text
    default = PassManager.parse("teeny-inference{profile=gpu}").pipeline_string()
    assert default == PassManager.parse("teeny-inference").pipeline_string()
    with pytest.raises(DiagnosticError, match="valid options: profile"):
        PassManager.parse("teeny-inference{tiles=big}")
    with pytest.raises(DiagnosticError, match="expected one of gpu, interpreter"):
        PassManager.parse("teeny-inference{profile=tpu}")
