"""The epilogue and the batch-strided operands that the GEMM convolution families
(conv1x1_gemm, implicit_gemm_conv) share: ``y = act(scale * conv + shift) + r``,
with ``x``, ``r`` and ``y`` each possibly a channel slice of a larger NCHW buffer.

Every rendered kernel runs in one harness process for all cases
(`teeny_ir.testing.kernels.run_cases`): inputs are NaN-padded (an unmasked read poisons the result), outputs NaN-filled
(an element never written stays NaN) and canary-padded (a write past the
output changes a canary). A strided input is embedded as channels ``[c0, c0 +
C)`` of a larger buffer whose other channels are NaN, so a read of a wrong
channel shows; a strided output's gaps between images must stay NaN. No
extent is a multiple of its tile; batches are 1 and 3. Then: each case is a
launch the validator proves, and a wrong batch stride (or a residual flag
whose footprint does not fit) one it refuses; one variant per tile, its
residual flag the runtime dim ``HAS_RESIDUAL``, compiles for sm_80 and sm_90;
and a split/concat graph with residuals runs end to end through the views,
launches with and without a residual sharing one compiled variant.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import teeny_ir
from dialects.kernel import LaunchOp
from teeny_ir import reference, runtime
from teeny_ir.backend import aot
from teeny_ir.backend.plan import LaunchSpec
from teeny_ir.core import pointwise
from teeny_ir.kernels import validator
from teeny_ir.kernels.conv1x1_gemm import tiles as gemm_tiles
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.implicit_gemm_conv import tiles as igc_tiles
from teeny_ir.kernels.render import render
from teeny_ir.reference.conv import _conv2d
from teeny_ir.testing import REDUCTION_TOL, assert_close
from teeny_ir.testing.kernels import Case, Results, problems

GEMM, IGC = "conv1x1_gemm", "implicit_gemm_conv"
LAUNCH_CONFIGS = {GEMM: gemm_tiles.launch_config, IGC: igc_tiles.launch_config}
EDGES = [2**i for i in range(4, 12)]
"""Every tile edge the tile rules pick, in either profile (16..2048)."""
CONFIG_WARPS = {
    family: {config(m, n)[0] for m in EDGES for n in EDGES}
    for family, config in LAUNCH_CONFIGS.items()
}
"""Every num_warps each family's launch_config can give."""
WARPS = sorted({1, 2}.union(*CONFIG_WARPS.values()))
BIG_TILES = (128, 128, 32)
"""The largest tiles the rules pick: the launch configs give them 8 warps."""


@dataclass(frozen=True)
class View:
    """Channels ``[start, start + C)`` of a buffer of ``total`` channels per image."""

    start: int
    total: int


@dataclass(frozen=True)
class Spec:
    """One launch: the convolution, the tiles, and where each operand lies."""

    family: str
    batch: int
    c_in: int
    c_out: int
    hw: tuple[int, int]
    tiles: tuple[int, int, int]
    kernel: tuple[int, int] = (1, 1)
    strides: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    groups: int = 1
    activation: str = "silu"
    num_warps: int = 4
    x_view: View | None = None
    residual: bool = False
    r_view: View | None = None
    y_channels: int | None = None
    """The channels per image of the buffer the output is a view of (None: contiguous)."""

    def out_hw(self) -> tuple[int, int]:
        (h, w), (kh, kw) = self.hw, self.kernel
        top, left, bottom, right = self.padding
        return (
            (h + top + bottom - kh) // self.strides[0] + 1,
            (w + left + right - kw) // self.strides[1] + 1,
        )

    @property
    def id(self) -> str:
        parts = [
            "gemm" if self.family == GEMM else "igc",
            f"b{self.batch}",
            f"c{self.c_in}to{self.c_out}",
            "x".join(map(str, self.hw)),
            f"k{self.kernel[0]}x{self.kernel[1]}s{self.strides[0]}g{self.groups}",
            self.activation,
            "t" + "x".join(map(str, self.tiles)),
            f"w{self.num_warps}",
        ]
        if self.x_view:
            parts.append(f"x@{self.x_view.start}of{self.x_view.total}")
        if self.residual:
            view = self.r_view
            parts.append(f"r@{view.start}of{view.total}" if view else "r")
        if self.y_channels:
            parts.append(f"y-of{self.y_channels}")
        return "-".join(parts)

    def constexprs(self) -> dict[str, int | str]:
        block_m, block_n, block_k = self.tiles
        values: dict[str, int | str] = {"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": block_k}
        if self.family == GEMM:
            values["GROUP_M"] = gemm_tiles.GROUP_M
        return values | {"ACTIVATION": self.activation}

    def grid(self) -> list[int]:
        block_m, block_n, _ = self.tiles
        oh, ow = self.out_hw()
        if self.family == GEMM:
            tiles = math.ceil(oh * ow / block_m) * math.ceil(self.c_out / block_n)
            return [self.batch * tiles, 1, 1]
        return [
            math.ceil(self.batch * oh * ow / block_m),
            math.ceil(self.c_out // self.groups / block_n),
            self.groups,
        ]


def embed(array: np.ndarray, view: View | None) -> tuple[np.ndarray, int]:
    """The flat data a pointer to ``array`` as that view sees (from the view's first
    element to the end of its buffer, whose other channels are NaN), and the
    batch stride."""
    if view is None:
        return array.ravel(), math.prod(array.shape[1:])
    batch, channels, *plane = array.shape
    buffer = np.full((batch, view.total, *plane), np.nan, np.float32)
    buffer[:, view.start : view.start + channels] = array
    start = view.start * math.prod(plane)
    return buffer.ravel()[start:], view.total * math.prod(plane)


def make_case(spec: Spec, rng: np.random.Generator) -> Case:
    oh, ow = spec.out_hw()
    group_in = spec.c_in // spec.groups
    x = rng.standard_normal((spec.batch, spec.c_in, *spec.hw)).astype(np.float32)
    w = rng.standard_normal((spec.c_out, group_in, *spec.kernel))
    w = (w / np.sqrt(group_in * math.prod(spec.kernel))).astype(np.float32)
    scale = rng.uniform(0.5, 1.5, spec.c_out).astype(np.float32)
    shift = rng.standard_normal(spec.c_out).astype(np.float32)
    conv = _conv2d(x, w, spec.strides, spec.padding, (1, 1), spec.groups)
    want = conv * scale[None, :, None, None].astype(np.float64) + shift[None, :, None, None]
    if spec.activation != pointwise.NO_ACTIVATION:
        want = pointwise.BY_NAME[spec.activation].evaluate(np, [want], {})
    x_data, x_stride = embed(x, spec.x_view)
    tensors = {"x": x.shape, "w": w.shape, "scale": scale.shape, "shift": shift.shape}
    if spec.residual:
        r = rng.standard_normal(want.shape).astype(np.float32)
        want = want + r
        r_data, r_stride = embed(r, spec.r_view)
        tensors["r"] = r.shape
    else:  # bound to the input (as the lowering binds it), never read
        r_data, r_stride = x_data, x_stride
    image = spec.c_out * oh * ow
    y_stride = image if spec.y_channels is None else spec.y_channels * oh * ow
    expected = np.full((spec.batch, y_stride), np.nan)
    expected[:, :image] = want.reshape(spec.batch, image)
    numel = (spec.batch - 1) * y_stride + image
    tensors["y"] = want.shape
    strides = {
        name: stride
        for name, stride, strided in (
            ("x", x_stride, spec.x_view is not None),
            ("r", r_stride, spec.residual and spec.r_view is not None),
            ("y", y_stride, spec.y_channels is not None),
        )
        if strided
    }
    dims: dict[str, int]
    if spec.family == GEMM:
        w = w.reshape(spec.c_out, spec.c_in)
        tensors["w"] = w.shape
        dims = {"B": spec.batch, "C_IN": spec.c_in, "C_OUT": spec.c_out, "M": oh * ow}
    else:
        dims = {
            "B": spec.batch,
            "C_IN": spec.c_in,
            "H": spec.hw[0],
            "W": spec.hw[1],
            "C_OUT": spec.c_out,
            "OH": oh,
            "OW": ow,
            "KH": spec.kernel[0],
            "KW": spec.kernel[1],
            "STRIDE_H": spec.strides[0],
            "STRIDE_W": spec.strides[1],
            "PAD_T": spec.padding[0],
            "PAD_L": spec.padding[1],
            "DIL_H": 1,
            "DIL_W": 1,
            "GROUPS": spec.groups,
        }
    args: dict[str, Any] = {
        "x": x_data,
        "w": w,
        "scale": scale,
        "shift": shift,
        "r": r_data,
        "y": ("output", numel),
        **dims,
        "x_batch_stride": x_stride,
        "r_batch_stride": r_stride,
        "y_batch_stride": y_stride,
        "HAS_RESIDUAL": int(spec.residual),
    }
    assert list(args) == [a.name for a in FAMILIES[spec.family].args], spec.id
    if not spec.residual:  # bound to the input, as the lowering binds it
        tensors["r"] = tensors["x"]
        strides |= {"r": strides["x"]} if "x" in strides else {}
    # An unmasked store would reach at most a tile of channels and of positions past
    # the output: the canaries catch it.
    pad = spec.tiles[1] * oh * ow + spec.tiles[0]
    return Case(
        id=spec.id,
        family=spec.family,
        constexprs=spec.constexprs(),
        args=[(k, v.ravel() if isinstance(v, np.ndarray) else v) for k, v in args.items()],
        grid=tuple(spec.grid()),
        pad=pad,
        expected={"y": expected.ravel()[:numel]},
        tensors={
            name: (tuple(shape), strides.get(name, math.prod(shape[1:])))
            for name, shape in tensors.items()
        },
        num_warps=spec.num_warps,
        num_stages=2,
        tol=REDUCTION_TOL,
        spec=spec,
    )


def all_specs() -> list[Spec]:
    """Both families; odd extents on every axis (M, N and K tails); batch 1 and 3."""
    specs: list[Spec] = []
    gemm = Spec(GEMM, 1, 21, 19, (7, 9), (32, 16, 8))  # M = 63, K = 21: tails everywhere
    igc = Spec(IGC, 1, 5, 19, (9, 7), (32, 16, 16), (3, 3), padding=(1, 1, 1, 1))  # K = 45
    for base in (gemm, igc):
        for batch in (1, 3):
            one = replace(base, batch=batch)
            specs += [
                replace(one, x_view=View(3, base.c_in + 7)),
                replace(one, y_channels=base.c_out + 5, activation="relu"),
                replace(one, residual=True),
                replace(one, residual=True, r_view=View(base.c_out, 2 * base.c_out + 1)),
            ]
        # Every operand a view, at every num_warps (8 at the 128x128 tiles that
        # launch_config gives 8 warps, with two channel tiles). Triton's interpreter
        # ignores num_warps; the launches are the ones a GPU run would make.
        for warps in WARPS:
            tiles, c_out = (BIG_TILES, 130) if warps == 8 else (base.tiles, base.c_out)
            specs.append(
                replace(
                    base,
                    batch=3,
                    tiles=tiles,
                    num_warps=warps,
                    c_out=c_out,
                    x_view=View(2, base.c_in + 4),
                    residual=True,
                    r_view=View(1, c_out + 2),
                    y_channels=2 * c_out,
                )
            )
    # Groups and stride 2, with every operand a view: a group's channels in r and y.
    specs.append(
        Spec(
            IGC,
            3,
            6,
            10,
            (11, 8),
            (16, 16, 16),
            (3, 3),
            (2, 2),
            (1, 1, 1, 1),
            groups=2,
            x_view=View(5, 13),
            residual=True,
            r_view=View(3, 14),
            y_channels=12,
        )
    )
    return specs


SPECS = all_specs()
CASES = [make_case(spec, np.random.default_rng(index)) for index, spec in enumerate(SPECS)]


HARNESS_CASES = CASES
"""What the `results` fixture (tests/conftest.py) runs, in one interpreter process."""


def test_cases_cover_the_brief() -> None:
    assert all(config(*BIG_TILES[:2])[0] == 8 for config in LAUNCH_CONFIGS.values())
    assert max(WARPS) == 8
    for family in (GEMM, IGC):
        specs = [s for s in SPECS if s.family == family]
        assert {s.batch for s in specs} == {1, 3}
        assert {s.num_warps for s in specs} >= CONFIG_WARPS[family] | {1, 2}
        for kind in ("x_view", "r_view", "y_channels"):
            assert {s.batch for s in specs if getattr(s, kind)} == {1, 3}, (family, kind)
        assert any(s.residual and s.r_view is None for s in specs)
        assert any(not s.residual for s in specs)
    for spec in SPECS:
        oh, ow = spec.out_hw()
        block_m, block_n, block_k = spec.tiles
        k = spec.c_in // spec.groups * math.prod(spec.kernel)
        m = oh * ow if spec.family == GEMM else spec.batch * oh * ow
        assert m % block_m and (spec.c_out // spec.groups) % block_n and k % block_k, spec.id


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_kernel_matches_the_reference(case: Case, results: Results) -> None:
    """Canaries intact, the gaps between the output's images unwritten, every
    output element written, the values within the tolerance rule."""
    assert problems(case, results) == []


# ---------------------------------------------------------------- the validator


def contract(case: Case, **dims: str) -> validator.LaunchContract:
    """The case's launch as the validator sees it; ``dims`` override bindings."""
    return case.contract(**dims)


def test_cases_are_valid_launches() -> None:
    """The validator proves each case safe: the footprints fit the views' spans."""
    for case in CASES:
        validator.validate(case.contract(), batches=(case.spec.batch,))


def _first(family: str, *, x_view: bool, residual: bool) -> Case:
    """The first batch-3 case of ``family`` with a strided x or not, a residual or not."""
    return next(
        case
        for case in CASES
        if case.spec.family == family
        and case.spec.batch == 3
        and (case.spec.x_view is not None) == x_view
        and case.spec.residual == residual
    )


@pytest.mark.parametrize("family", [GEMM, IGC])
def test_the_validator_refuses_a_wrong_x_batch_stride(family: str) -> None:
    strided = _first(family, x_view=True, residual=False)
    image = math.prod(strided.tensors["x"][0][1:])
    with pytest.raises(
        validator.ContractError,
        match=rf"argument 'x_batch_stride' = '{image}' is {image} at B = 3, but 'x' .* "
        rf"has batch stride {strided.tensors['x'][1]}",
    ):
        validator.validate(contract(strided, x_batch_stride=str(image)), batches=(3,))
    contiguous = _first(family, x_view=False, residual=True)
    wide = str(strided.tensors["x"][1])
    with pytest.raises(validator.ContractError, match="argument 'x_batch_stride'"):
        validator.validate(contract(contiguous, x_batch_stride=wide), batches=(3,))


@pytest.mark.parametrize("family", [GEMM, IGC])
def test_the_validator_refuses_a_residual_smaller_than_the_output(family: str) -> None:
    case = _first(family, x_view=False, residual=True)
    shape, stride = case.tensors["r"]
    short = replace(case, tensors=case.tensors | {"r": ((shape[0] - 1, *shape[1:]), stride)})
    with pytest.raises(validator.ContractError, match="argument 'r' may touch"):
        validator.validate(contract(short), batches=(3,))


def test_the_residual_flag_is_a_dim_its_footprint_bounds() -> None:
    """``HAS_RESIDUAL`` is a dim no shape implies, but ``r``'s footprint is
    ``HAS_RESIDUAL * (...)``: 0 without a residual (r bound to the 5-channel
    input), and a flag set on that launch reads a 19-channel residual the input
    does not hold; a flag of 2 doubles the footprint past a residual's end."""
    plain = _first(IGC, x_view=False, residual=False)
    validator.validate(contract(plain), batches=(3,))
    with pytest.raises(
        validator.ContractError,
        match=r"argument 'r' may touch 1827 elements at B = 3 \(HAS_RESIDUAL \* .*, "
        r"but 'r' holds 945",
    ):
        validator.validate(contract(plain, HAS_RESIDUAL="1"), batches=(3,))
    residual = _first(IGC, x_view=False, residual=True)
    validator.validate(contract(residual), batches=(3,))
    with pytest.raises(validator.ContractError, match="argument 'r' may touch 7182 elements"):
        validator.validate(contract(residual, HAS_RESIDUAL="2"), batches=(3,))


# ---------------------------------------------------------------- AOT


def compile_variant(
    family: str, tiles: tuple[int, int, int], arch: int, directory: Path
) -> aot.CompiledVariant:
    """The one variant of ``tiles``: with and without a residual alike (the
    residual flag is a runtime argument, so a spec's ``residual`` does not
    change its constexprs)."""
    spec = Spec(family, 1, 8, 8, (4, 4), tiles)
    constexprs = spec.constexprs()
    assert constexprs == replace(spec, residual=True).constexprs()
    path = directory / f"{family}_0.py"
    path.write_text(render(FAMILIES[family], path.stem, constexprs))
    num_warps, num_stages = LAUNCH_CONFIGS[family](*tiles[:2])
    return aot.compile_variant(
        path, path.stem, FAMILIES[family], constexprs, arch, num_warps, num_stages
    )


def read_parameters(variant: aot.CompiledVariant, family: str) -> set[str]:
    """The ABI arguments whose values the PTX loads."""
    indices = {int(i) for i in re.findall(rf"\[{variant.name}_param_(\d+)\]", variant.ptx)}
    args = FAMILIES[family].args
    return {args[i].name for i in indices if i < len(args)}


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("family", [GEMM, IGC])
def test_the_variant_with_its_residual_branch_compiles_ahead_of_time(
    family: str, arch: int, tmp_path: Path, triton_cache: None
) -> None:
    """At the tiles that take 8 warps (the most registers, plus the residual
    tile): the kernel reads the runtime flag, and r with its batch stride
    (under the flag's branch)."""
    variant = compile_variant(family, BIG_TILES, arch, tmp_path)
    assert variant.num_warps == 8
    assert f".target sm_{arch}" in variant.ptx and variant.cubin[:4] == b"\x7fELF"
    aot.check_shared(variant)
    assert ("wgmma" if arch == 90 else "mma.sync") in variant.ptx
    assert {
        "HAS_RESIDUAL",
        "r",
        "r_batch_stride",
        "x_batch_stride",
        "y_batch_stride",
    } <= read_parameters(variant, family)


# ---------------------------------------------------------------- end to end

# A 1x1 convolution whose result is split in channel halves that feed a 1x1
# (conv1x1_gemm) and a 3x3 (implicit_gemm_conv) convolution, each with the
# other half as residual, and a concat of both results feeding a 1x1 without
# residual: with views, every strided operand of both families is exercised
# through lowering, emission and the runtime.
VIEWS = """\
func.func @forward(%x: tensor<?x5x7x9xf32>) -> tensor<?x6x7x9xf32> {
  %w0 = graph.param "w0" : tensor<8x5x1x1xf32>
  %w1 = graph.param "w1" : tensor<4x4x1x1xf32>
  %w3 = graph.param "w3" : tensor<4x4x3x3xf32>
  %w2 = graph.param "w2" : tensor<6x8x1x1xf32>
  %s = graph.fused_conv2d %x, %w0 scale #derive.param<fill(1.0) : [8]> shift #derive.param<fill(0.5) : [8]> activation silu : (tensor<?x5x7x9xf32>, tensor<8x5x1x1xf32>) -> tensor<?x8x7x9xf32>
  %a, %b = graph.split %s axis 1 sizes [4, 4] : (tensor<?x8x7x9xf32>) -> (tensor<?x4x7x9xf32>, tensor<?x4x7x9xf32>)
  %p = graph.fused_conv2d %a, %w1 residual %b scale #derive.param<fill(1.5) : [4]> shift #derive.param<fill(0.25) : [4]> activation silu : (tensor<?x4x7x9xf32>, tensor<4x4x1x1xf32>, tensor<?x4x7x9xf32>) -> tensor<?x4x7x9xf32>
  %q = graph.fused_conv2d %b, %w3 residual %a scale #derive.param<fill(0.5) : [4]> shift #derive.param<fill(-0.25) : [4]> padding [1, 1, 1, 1] activation relu : (tensor<?x4x7x9xf32>, tensor<4x4x3x3xf32>, tensor<?x4x7x9xf32>) -> tensor<?x4x7x9xf32>
  %cat = graph.concat %p, %q axis 1 : (tensor<?x4x7x9xf32>, tensor<?x4x7x9xf32>) -> tensor<?x8x7x9xf32>
  %y = graph.fused_conv2d %cat, %w2 scale #derive.param<fill(1.0) : [6]> shift #derive.param<fill(0.0) : [6]> : (tensor<?x8x7x9xf32>, tensor<6x8x1x1xf32>) -> tensor<?x6x7x9xf32>
  func.return %y : tensor<?x6x7x9xf32>
}
"""


def test_residuals_and_views_end_to_end(tmp_path: Path) -> None:
    graph = teeny_ir.parse_module(VIEWS, filename="views.mlir")
    kernels = teeny_ir.parse_module(VIEWS, filename="views.mlir")
    out = tmp_path / "out"
    teeny_ir.PassManager.parse(f"teeny-inference,emit-triton{{out-dir={out}}}").run(kernels)
    launches = [op for op in kernels.walk() if isinstance(op, LaunchOp)]
    bindings = [dict(op.arg_bindings) for op in launches]
    assert [op.family for op in launches] == [GEMM, GEMM, IGC, GEMM]
    # The residuals are the launches' second operands; without one, r is the input.
    assert [(b["r"], b["r_batch_stride"]) for b in bindings] == [
        ("in0", "315"),
        ("in1", "504"),
        ("in1", "504"),
        ("in0", "504"),
    ]
    assert [b["HAS_RESIDUAL"] for b in bindings] == ["0", "1", "1", "0"]
    assert all("HAS_RESIDUAL" not in op.constexpr_values for op in launches)
    # The halves are views of %s, and the results views of the concat's buffer.
    assert [(b["x_batch_stride"], b["y_batch_stride"]) for b in bindings] == [
        ("315", "504"),
        ("504", "504"),
        ("504", "504"),
        ("504", "378"),
    ]
    rng = np.random.default_rng(5)
    weights = {
        "w0": (rng.standard_normal((8, 5, 1, 1)) / 2).astype(np.float32),
        "w1": (rng.standard_normal((4, 4, 1, 1)) / 2).astype(np.float32),
        "w3": (rng.standard_normal((4, 4, 3, 3)) / 6).astype(np.float32),
        "w2": (rng.standard_normal((6, 8, 1, 1)) / 3).astype(np.float32),
    }
    executable = runtime.load(out)
    # The first GEMM (no residual) and the second (with one) are one variant.
    launched = executable.plan.launches
    assert [launch.kernel for launch in launched if isinstance(launch, LaunchSpec)] == [
        "conv1x1_gemm_0",
        "conv1x1_gemm_0",
        "implicit_gemm_conv_0",
        "conv1x1_gemm_1",
    ]
    for batch in (1, 3):
        x = rng.standard_normal((batch, 5, 7, 9)).astype(np.float32)
        (got,) = executable.run([x], weights)
        (want,) = reference.run(graph, weights, [x])
        assert got.shape == want.shape == (batch, 6, 7, 9)
        assert_close(got.astype(np.float64), want, REDUCTION_TOL)
