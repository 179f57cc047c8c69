"""The ``implicit_gemm_conv`` family: its rendered kernel in Triton's interpreter
against the reference convolution, its AOT compilation for sm_80 and sm_90,
and a small graph end to end (teeny-inference, emit-triton, the runtime).

The kernel runs in one harness process for all cases and the mutant
(`teeny_ir.testing.kernels.run_cases`): inputs are NaN-padded (an unmasked read poisons
the result), outputs NaN-filled (an unwritten element stays NaN) and
canary-padded on both sides (an unmasked write changes a canary). No extent
is a multiple of its tile; batches are 1 and 3; some grids launch more
programs than the tile model needs on every axis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import teeny_ir
from teeny_ir import reference, runtime
from teeny_ir.backend import aot
from teeny_ir.core import pointwise
from teeny_ir.kernels import validator
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.implicit_gemm_conv.tiles import launch_config, pick_implicit_gemm_tile_sizes
from teeny_ir.kernels.render import render
from teeny_ir.reference.conv import _conv2d
from teeny_ir.testing import REDUCTION_TOL
from teeny_ir.testing.kernels import Case, Results, problems

FAMILY = FAMILIES["implicit_gemm_conv"]
ACTIVATIONS = (pointwise.NO_ACTIVATION, *pointwise.epilogue_names())
WARPS = sorted({launch_config(m, n)[0] for m in (64, 128) for n in (16, 32, 64, 128)})
"""Every num_warps the family's launch_config can emit for its tiles."""


@dataclass(frozen=True)
class Conv:
    """One convolution's geometry."""

    batch: int
    c_in: int
    c_out: int
    hw: tuple[int, int]
    kernel: tuple[int, int]
    strides: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1

    def out_hw(self) -> tuple[int, int]:
        (h, w), (kh, kw) = self.hw, self.kernel
        top, left, bottom, right = self.padding
        oh = (h + top + bottom - self.dilation[0] * (kh - 1) - 1) // self.strides[0] + 1
        ow = (w + left + right - self.dilation[1] * (kw - 1) - 1) // self.strides[1] + 1
        return oh, ow


def tiles_of(case: Case) -> tuple[int, int, int]:
    """``(BLOCK_M, BLOCK_N, BLOCK_K)`` of a case."""
    block_m, block_n, block_k = (int(case.constexprs[k]) for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
    return block_m, block_n, block_k


def conv_of(case: Case) -> Conv:
    """The geometry a case was made from."""
    conv: Conv = case.spec
    return conv


def make_case(
    conv: Conv,
    activation: str,
    tiles: tuple[int, int, int],
    rng: np.random.Generator,
    num_warps: int = 4,
    extra: tuple[int, int, int] = (0, 0, 0),
) -> Case:
    group_in = conv.c_in // conv.groups
    oh, ow = conv.out_hw()
    x = rng.standard_normal((conv.batch, conv.c_in, *conv.hw)).astype(np.float32)
    w = rng.standard_normal((conv.c_out, group_in, *conv.kernel))
    w = (w / np.sqrt(group_in * math.prod(conv.kernel))).astype(np.float32)
    scale = rng.uniform(0.5, 1.5, conv.c_out).astype(np.float32)
    shift = rng.standard_normal(conv.c_out).astype(np.float32)
    acc = _conv2d(x, w, conv.strides, conv.padding, conv.dilation, conv.groups)
    v = acc * scale[None, :, None, None].astype(np.float64) + shift[None, :, None, None]
    if activation != pointwise.NO_ACTIVATION:
        v = pointwise.BY_NAME[activation].evaluate(np, [v], {})
    assert v.shape == (conv.batch, conv.c_out, oh, ow)
    args: dict[str, Any] = {
        "x": x,
        "w": w,
        "scale": scale,
        "shift": shift,
        "r": x,  # never read: no residual (test_gemm_epilogue.py tests residuals and views)
        "y": ("output", v.size),
        "B": conv.batch,
        "C_IN": conv.c_in,
        "H": conv.hw[0],
        "W": conv.hw[1],
        "C_OUT": conv.c_out,
        "OH": oh,
        "OW": ow,
        "KH": conv.kernel[0],
        "KW": conv.kernel[1],
        "STRIDE_H": conv.strides[0],
        "STRIDE_W": conv.strides[1],
        "PAD_T": conv.padding[0],
        "PAD_L": conv.padding[1],
        "DIL_H": conv.dilation[0],
        "DIL_W": conv.dilation[1],
        "GROUPS": conv.groups,
        "x_batch_stride": x[0].size,
        "r_batch_stride": x[0].size,
        "y_batch_stride": v[0].size,
        "HAS_RESIDUAL": 0,
    }
    assert list(args) == [a.name for a in FAMILY.args]
    block_m, block_n, block_k = tiles
    name = (
        f"b{conv.batch}-c{conv.c_in}to{conv.c_out}-{conv.hw[0]}x{conv.hw[1]}"
        f"-k{conv.kernel[0]}x{conv.kernel[1]}-s{conv.strides[0]}x{conv.strides[1]}"
        f"-p{''.join(map(str, conv.padding))}-d{conv.dilation[0]}x{conv.dilation[1]}"
        f"-g{conv.groups}-{activation}-t{block_m}x{block_n}x{block_k}-w{num_warps}"
        + (f"-extra{'x'.join(map(str, extra))}" if any(extra) else "")
    )
    # An unmasked store reaches at most one tile of rows (each a whole image's
    # channels) and one tile of channels past the output.
    pad = (block_m + (block_n + extra[1] * block_n) * oh * ow) * (1 + extra[0] + extra[2]) + v.size
    needed = [
        math.ceil(conv.batch * oh * ow / block_m),
        math.ceil(conv.c_out // conv.groups / block_n),
        conv.groups,
    ]
    tensors = {
        name: (value.shape, math.prod(value.shape[1:]))
        for name, value in args.items()
        if isinstance(value, np.ndarray)
    }
    tensors["y"] = (v.shape, v[0].size)
    return Case(
        id=name,
        family=FAMILY.name,
        constexprs={
            "BLOCK_M": block_m,
            "BLOCK_N": block_n,
            "BLOCK_K": block_k,
            "ACTIVATION": activation,
        },
        args=[
            (k, value.ravel() if isinstance(value, np.ndarray) else value)
            for k, value in args.items()
        ],
        grid=tuple(n + e for n, e in zip(needed, extra, strict=True)),
        pad=pad,
        expected={"y": v.ravel()},
        tensors=tensors,
        num_warps=num_warps,
        num_stages=2,
        tol=REDUCTION_TOL,
        spec=conv,
    )


def all_cases() -> list[Case]:
    rng = np.random.default_rng(11)
    small = (64, 16, 16)
    cases = []
    for batch in (1, 3):
        # 3x3 stride 1 pad 1; YOLO's 3x3 stride 2 downsampling; the stem (C_IN 3, K = 27).
        cases.append(
            make_case(Conv(batch, 5, 7, (9, 11), (3, 3), padding=(1, 1, 1, 1)), "silu", small, rng)
        )
        cases.append(
            make_case(
                Conv(batch, 6, 20, (13, 10), (3, 3), (2, 2), (1, 1, 1, 1)),
                "silu",
                (16, 16, 16),
                rng,
            )
        )
        cases.append(
            make_case(
                Conv(batch, 3, 17, (15, 13), (3, 3), (2, 2), (1, 1, 1, 1)), "silu", small, rng
            )
        )
        # The stem at the gpu rule's BLOCK_K: K = 27 in one step of 32 (a tail of 5).
        stem = Conv(batch, 3, 17, (15, 13), (3, 3), (2, 2), (1, 1, 1, 1))
        assert pick_implicit_gemm_tile_sizes(8 * 7, 17, 27)[2] == 32
        cases.append(make_case(stem, "silu", (64, 32, 32), rng))
        # Asymmetric padding with a non-square kernel; dilation; groups; 1x1 stride 2.
        cases.append(
            make_case(Conv(batch, 4, 9, (8, 7), (3, 2), padding=(0, 1, 2, 3)), "relu", small, rng)
        )
        cases.append(
            make_case(
                Conv(batch, 5, 6, (11, 9), (3, 3), padding=(2, 2, 2, 2), dilation=(2, 2)),
                "none",
                small,
                rng,
            )
        )
        cases.append(
            make_case(
                Conv(batch, 6, 10, (7, 9), (3, 3), padding=(1, 1, 1, 1), groups=2),
                "silu",
                small,
                rng,
            )
        )
        cases.append(make_case(Conv(batch, 7, 19, (9, 11), (1, 1), (2, 2)), "sigmoid", small, rng))
    # Several K tiles (K = 12 * 9 = 108 with BLOCK_K 32), mixed geometry, groups 3,
    # dilation (2, 1), stride (1, 2), and more programs than needed on every axis.
    odd = Conv(3, 12, 18, (10, 9), (3, 3), (1, 2), (1, 0, 2, 1), (2, 1), groups=3)
    cases.append(make_case(odd, "relu", (16, 16, 32), rng, extra=(1, 1, 1)))
    # Every epilogue activation (and none), alternating batch 1 and 3.
    for index, activation in enumerate(ACTIVATIONS):
        conv = Conv(1 + 2 * (index % 2), 4, 5, (6, 7), (3, 3), padding=(1, 1, 1, 1))
        cases.append(make_case(conv, activation, small, rng))
    # Every num_warps the launch config emits, at the tiles that emit it.
    for warps in WARPS:
        tiles = (128, 128, 32) if warps == 8 else (64, 64, 16)
        conv = Conv(3, 9, 130 if warps == 8 else 33, (11, 7), (3, 3), (2, 2), (1, 1, 1, 1))
        assert launch_config(*tiles[:2])[0] == warps
        cases.append(make_case(conv, "silu", tiles, rng, num_warps=warps))
    return cases


CASES = all_cases()
MUTANT = replace(
    make_case(
        Conv(1, 3, 5, (5, 6), (3, 3), padding=(1, 1, 1, 1)),
        "none",
        (64, 16, 16),
        np.random.default_rng(1),
    ),
    id="mutant-no-store-mask",
    mutation=("in_image, v, mask=mask)", "in_image, v)"),
)
"""A kernel without its store mask (`test_removing_the_store_mask_is_caught`)."""


HARNESS_CASES = [*CASES, MUTANT]
"""What the `results` fixture (tests/conftest.py) runs, in one interpreter process."""


def test_cases_cover_the_brief() -> None:
    convs = [conv_of(case) for case in CASES]
    assert {c.batch for c in convs} == {1, 3}
    assert {case.constexprs["ACTIVATION"] for case in CASES} == set(ACTIVATIONS)
    assert {case.num_warps for case in CASES} == set(WARPS) == {4, 8}
    assert any(c.c_in == 3 and c.kernel == (3, 3) for c in convs)  # K = 27
    assert any(c.kernel == (1, 1) and c.strides == (2, 2) for c in convs)
    assert any(c.groups > 1 for c in convs) and any(c.dilation != (1, 1) for c in convs)
    assert any(len(set(c.padding)) > 1 for c in convs)
    for case in CASES:
        conv = conv_of(case)
        oh, ow = conv.out_hw()
        block_m, block_n, block_k = tiles_of(case)
        k = conv.c_in // conv.groups * math.prod(conv.kernel)
        assert (conv.batch * oh * ow) % block_m and k % block_k, case.id
        assert (conv.c_out // conv.groups) % block_n, case.id


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_kernel_matches_the_reference(case: Case, results: Results) -> None:
    """Canaries intact, every output element written, the values within the
    tolerance rule."""
    assert problems(case, results) == []


def test_removing_the_store_mask_is_caught(results: Results) -> None:
    """The canary check is not vacuous: without its store mask the kernel
    writes into the padding around the output."""
    assert "canaries after the view overwritten" in " ".join(problems(MUTANT, results))


def test_cases_are_valid_launches() -> None:
    """Each case's launch is one the contract validator proves safe (``r``
    bound to the input, as the lowering binds it without a residual)."""
    for case in CASES:
        validator.validate(case.contract(), batches=(conv_of(case).batch,))


def test_the_validator_refuses_a_wrong_geometry_binding() -> None:
    case = CASES[0]  # the weight says 1 group
    with pytest.raises(validator.ContractError, match="argument 'GROUPS' = '2' is 2"):
        validator.validate(case.contract(GROUPS="2"), batches=(1,))


# ---------------------------------------------------------------- AOT

AOT_TILES = [(64, 16, 16), (64, 128, 16), (128, 64, 32), (128, 128, 32)]
"""The smallest and largest tiles the rule picks, and the two mixed ones."""


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("tiles", AOT_TILES, ids=["x".join(map(str, t)) for t in AOT_TILES])
def test_compiles_ahead_of_time(
    tiles: tuple[int, int, int], arch: int, tmp_path: Path, triton_cache: None
) -> None:
    block_m, block_n, block_k = tiles
    constexprs: dict[str, int | str] = {
        "BLOCK_M": block_m,
        "BLOCK_N": block_n,
        "BLOCK_K": block_k,
        "ACTIVATION": "silu",
    }
    path = tmp_path / "implicit_gemm_conv_0.py"
    path.write_text(render(FAMILY, path.stem, constexprs))
    num_warps, num_stages = launch_config(block_m, block_n)
    variant = aot.compile_variant(path, path.stem, FAMILY, constexprs, arch, num_warps, num_stages)
    assert (variant.arch, variant.num_warps, variant.num_stages) == (arch, num_warps, num_stages)
    assert f".target sm_{arch}" in variant.ptx and variant.cubin[:4] == b"\x7fELF"
    assert 0 <= variant.shared <= aot.SHARED_MEMORY_LIMITS[arch]
    aot.check_shared(variant)
    assert ("wgmma" if arch == 90 else "mma.sync") in variant.ptx


def test_aot_tiles_are_the_rules_extremes() -> None:
    picked = {
        pick_implicit_gemm_tile_sizes(m, n, k) for m in (1, 128) for n in (1, 128) for k in (1, 128)
    }
    assert {(64, 16, 16), (128, 128, 32)} <= picked
    assert {t[:2] for t in AOT_TILES} >= {(64, 16), (64, 128), (128, 128)}


# ---------------------------------------------------------------- end to end

E2E = """\
func.func @forward(%x: tensor<?x5x11x9xf32>) -> tensor<?x24x6x5xf32> {
  %w = graph.param "m.conv.weight" : tensor<24x5x3x3xf32>
  %g = graph.param "m.bn.weight" : tensor<24xf32>
  %b = graph.param "m.bn.bias" : tensor<24xf32>
  %m = graph.param "m.bn.running_mean" : tensor<24xf32>
  %v = graph.param "m.bn.running_var" : tensor<24xf32>
  %c = graph.conv2d %x, %w strides [2, 2] padding [1, 1, 1, 1] : (tensor<?x5x11x9xf32>, tensor<24x5x3x3xf32>) -> tensor<?x24x6x5xf32>
  %n = graph.batch_norm %c, %g, %b, %m, %v eps 1.0e-3 : (tensor<?x24x6x5xf32>, tensor<24xf32>, tensor<24xf32>, tensor<24xf32>, tensor<24xf32>) -> tensor<?x24x6x5xf32>
  %y = graph.silu %n : tensor<?x24x6x5xf32>
  func.return %y : tensor<?x24x6x5xf32>
}
"""


def test_end_to_end_conv_bn_silu(tmp_path: Path) -> None:
    graph = teeny_ir.parse_module(E2E, filename="e2e.mlir")
    kernels = teeny_ir.parse_module(E2E, filename="e2e.mlir")
    teeny_ir.PassManager.parse(f"teeny-inference,emit-triton{{out-dir={tmp_path / 'out'}}}").run(
        kernels
    )
    assert 'kernel.launch "implicit_gemm_conv"' in teeny_ir.print_module(kernels)
    rng = np.random.default_rng(3)
    weights = {
        "m.conv.weight": (rng.standard_normal((24, 5, 3, 3)) / 6).astype(np.float32),
        "m.bn.weight": rng.uniform(0.5, 1.5, 24).astype(np.float32),
        "m.bn.bias": rng.standard_normal(24).astype(np.float32),
        "m.bn.running_mean": rng.standard_normal(24).astype(np.float32),
        "m.bn.running_var": rng.uniform(0.5, 2.0, 24).astype(np.float32),
    }
    executable = runtime.load(tmp_path / "out")
    for batch in (1, 3):
        x = rng.standard_normal((batch, 5, 11, 9)).astype(np.float32)
        (got,) = executable.run([x], weights)
        (want,) = reference.run(graph, weights, [x])
        assert got.shape == want.shape == (batch, 24, 6, 5)
        error = float(np.max(np.abs(got.astype(np.float64) - want)))
        assert error <= 1e-4 * max(1.0, float(np.max(np.abs(want)))), error
