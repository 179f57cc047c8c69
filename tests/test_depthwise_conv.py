"""The ``depthwise_conv`` family: its rendered kernel in Triton's interpreter
against the reference convolution, its AOT compilation for sm_80 and sm_90,
and small graphs end to end (teeny-inference, emit-triton, the runtime).

The kernel runs in one harness process for all cases and the mutants
(`teeny_ir.testing.kernels.run_cases`): inputs are NaN-padded (an unmasked read poisons
the result), outputs NaN-filled (an unwritten element stays NaN) and
canary-padded on both sides (an unmasked write changes a canary). No extent
is a multiple of its tile (taps too, where a step takes several); batches are
1 and 3; some grids launch more programs than the tile model needs. Strided
cases pass ``x``, ``r`` and ``y`` as channel slices of larger buffers whose
other channels are NaN (read: poisoned) or must stay NaN (written: caught).
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import teeny_ir
from teeny_ir import reference, runtime
from teeny_ir.backend import aot
from teeny_ir.core import pointwise
from teeny_ir.kernels import validator
from teeny_ir.kernels.depthwise_conv.tiles import launch_config, pick_depthwise_tile_sizes
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.render import render
from teeny_ir.reference.conv import _conv2d
from teeny_ir.testing import REDUCTION_TOL, assert_close
from teeny_ir.testing.kernels import Case, Results, channel_slice, problems

FAMILY = FAMILIES["depthwise_conv"]
ACTIVATIONS = (pointwise.NO_ACTIVATION, *pointwise.epilogue_names())
_TILE_CHOICES = [
    pick_depthwise_tile_sizes(m, n, k, profile)
    for m in (1, 128, 4096, 1 << 20)
    for n in (1, 17, 256)
    for k in (1, 9, 128)
    for profile in ("gpu", "interpreter")
]
WARPS = sorted({launch_config(*tiles)[0] for tiles in _TILE_CHOICES})
"""Every num_warps the family's launch_config emits for the tiles its rule picks."""


@dataclass(frozen=True)
class Conv:
    """One depthwise convolution's geometry (and its operands' batch strides:
    ``None`` is contiguous, else the view lives in a buffer of that many
    channels, at channel ``offset``)."""

    batch: int
    channels: int
    hw: tuple[int, int]
    kernel: tuple[int, int]
    strides: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilation: tuple[int, int] = (1, 1)
    residual: bool = False
    views: dict[str, tuple[int, int]] = field(default_factory=dict, hash=False, compare=False)
    """operand (``x``, ``r``, ``y``) -> (channels of its buffer, first channel)."""

    def out_hw(self) -> tuple[int, int]:
        (h, w), (kh, kw) = self.hw, self.kernel
        top, left, bottom, right = self.padding
        oh = (h + top + bottom - self.dilation[0] * (kh - 1) - 1) // self.strides[0] + 1
        ow = (w + left + right - self.dilation[1] * (kw - 1) - 1) // self.strides[1] + 1
        return oh, ow

    def plane(self, operand: str) -> int:
        (h, w) = self.hw if operand == "x" else self.out_hw()
        return h * w

    def batch_stride(self, operand: str) -> int:
        buffer_channels = self.views.get(operand, (self.channels, 0))[0]
        return buffer_channels * self.plane(operand)

    def span(self, operand: str) -> int:
        """Elements from the view's start to the end of its last image."""
        return (self.batch - 1) * self.batch_stride(operand) + self.channels * self.plane(operand)

    def offset(self, operand: str) -> int:
        """Elements from the buffer's start to the view's."""
        return self.views.get(operand, (self.channels, 0))[1] * self.plane(operand)


def tiles_of(case: Case) -> tuple[int, int, int]:
    """``(BLOCK_P, BLOCK_C, BLOCK_T)`` of a case."""
    block_p, block_c, block_t = (int(case.constexprs[k]) for k in ("BLOCK_P", "BLOCK_C", "BLOCK_T"))
    return block_p, block_c, block_t


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
    oh, ow = conv.out_hw()
    c = conv.channels
    x = rng.standard_normal((conv.batch, c, *conv.hw)).astype(np.float32)
    w = (rng.standard_normal((c, 1, *conv.kernel)) / np.sqrt(math.prod(conv.kernel))).astype(
        np.float32
    )
    scale = rng.uniform(0.5, 1.5, c).astype(np.float32)
    shift = rng.standard_normal(c).astype(np.float32)
    acc = _conv2d(x, w, conv.strides, conv.padding, conv.dilation, c)
    v = acc * scale[None, :, None, None].astype(np.float64) + shift[None, :, None, None]
    if activation != pointwise.NO_ACTIVATION:
        v = pointwise.BY_NAME[activation].evaluate(np, [v], {})
    assert v.shape == (conv.batch, c, oh, ow)
    if conv.residual:
        r = rng.standard_normal(v.shape).astype(np.float32)
        v = v + r
        r_arg = channel_slice(r, conv.views.get("r"))[0]
    else:
        # Never read: all NaN, so a read would poison the output.
        r_arg = np.full(conv.span("x"), np.nan, np.float32)
    args: dict[str, object] = {
        "x": channel_slice(x, conv.views.get("x"))[0],
        "w": w,
        "scale": scale,
        "shift": shift,
        "r": r_arg,
        "y": ("output", conv.span("y")),
        "B": conv.batch,
        "C": c,
        "H": conv.hw[0],
        "W": conv.hw[1],
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
        "x_batch_stride": conv.batch_stride("x"),
        "r_batch_stride": conv.batch_stride("r" if conv.residual else "x"),
        "y_batch_stride": conv.batch_stride("y"),
        "HAS_RESIDUAL": int(conv.residual),
    }
    assert list(args) == [a.name for a in FAMILY.args]
    block_p, block_c, block_t = tiles
    views = "".join(f"-{k}view{n}at{s}" for k, (n, s) in sorted(conv.views.items()))
    name = (
        f"b{conv.batch}-c{c}-{conv.hw[0]}x{conv.hw[1]}"
        f"-k{conv.kernel[0]}x{conv.kernel[1]}-s{conv.strides[0]}x{conv.strides[1]}"
        f"-p{''.join(map(str, conv.padding))}-d{conv.dilation[0]}x{conv.dilation[1]}"
        f"{'-residual' if conv.residual else ''}{views}-{activation}"
        f"-t{block_p}x{block_c}x{block_t}-w{num_warps}"
        + (f"-extra{'x'.join(map(str, extra))}" if any(extra) else "")
    )
    # An unmasked store reaches at most the last row and channel the grid covers;
    # an unmasked tap read reaches PAD_T rows and PAD_L columns before an image.
    rows = (math.ceil(conv.batch * oh * ow / block_p) + extra[0]) * block_p
    channels = (math.ceil(c / block_c) + extra[1]) * block_c
    reach = ((rows - 1) // (oh * ow) + 1) * conv.batch_stride("y") + channels * oh * ow
    before = conv.padding[0] * conv.hw[1] + conv.padding[1] + conv.offset("x")
    pad = max(reach, before) + 64
    needed = [math.ceil(conv.batch * oh * ow / block_p), math.ceil(c / block_c), 1]
    image = (conv.batch, c, *conv.hw)
    tensors = {
        "x": (image, conv.batch_stride("x")),
        "w": (w.shape, math.prod(w.shape[1:])),
        "scale": (scale.shape, 1),
        "shift": (shift.shape, 1),
        # Without a residual r is bound to the input (and never read).
        "r": (v.shape, conv.batch_stride("r"))
        if conv.residual
        else (image, conv.batch_stride("x")),
        "y": (v.shape, conv.batch_stride("y")),
    }
    return Case(
        id=name,
        family=FAMILY.name,
        constexprs={
            "BLOCK_P": block_p,
            "BLOCK_C": block_c,
            "BLOCK_T": block_t,
            "ACTIVATION": activation,
        },
        args=list(args.items()),
        grid=tuple(n + e for n, e in zip(needed, extra, strict=True)),
        pad=pad,
        # The output view's span: the images, NaN in the buffer's other channels.
        expected={"y": channel_slice(v, conv.views.get("y"), np.float64)[0]},
        tensors=tensors,
        num_warps=num_warps,
        tol=REDUCTION_TOL,
        spec=conv,
    )


def all_cases() -> list[Case]:
    rng = np.random.default_rng(23)
    gpu = (64, 4, 1)
    stepped = (16, 4, 4)  # several taps per step, with a tap tail
    cases = []
    for batch in (1, 3):
        # 3x3 stride 1 pad 1; YOLO-like 3x3 stride 2 downsampling.
        cases.append(
            make_case(Conv(batch, 5, (9, 11), (3, 3), padding=(1, 1, 1, 1)), "silu", gpu, rng)
        )
        cases.append(
            make_case(Conv(batch, 6, (13, 10), (3, 3), (2, 2), (1, 1, 1, 1)), "silu", stepped, rng)
        )
        # Asymmetric padding with a non-square kernel; dilation 2 on a 5x5 kernel.
        cases.append(
            make_case(Conv(batch, 7, (8, 8), (3, 2), padding=(0, 1, 2, 3)), "relu", stepped, rng)
        )
        cases.append(
            make_case(
                Conv(batch, 5, (11, 9), (5, 5), padding=(4, 4, 4, 4), dilation=(2, 2)),
                "none",
                (32, 2, 8),
                rng,
            )
        )
        # A residual; 1x1 stride 2; strided views of x, r and y.
        cases.append(
            make_case(
                Conv(batch, 9, (7, 9), (3, 3), padding=(1, 1, 1, 1), residual=True),
                "silu",
                gpu,
                rng,
            )
        )
        cases.append(make_case(Conv(batch, 3, (9, 11), (1, 1), (2, 2)), "sigmoid", (16, 2, 1), rng))
        strided = Conv(
            batch,
            6,
            (7, 6),
            (3, 3),
            padding=(1, 1, 1, 1),
            residual=True,
            views={"x": (10, 3), "r": (8, 1), "y": (13, 5)},
        )
        cases.append(make_case(strided, "silu", stepped, rng))
    # Mixed geometry: stride (1, 2), dilation (2, 1), asymmetric padding, one
    # step of 16 taps for a 3x5 kernel (interpreter-like), more programs than
    # needed on every axis, a strided input only.
    odd = Conv(3, 11, (10, 9), (3, 5), (1, 2), (1, 0, 2, 1), (2, 1), views={"x": (12, 0)})
    cases.append(make_case(odd, "relu", (64, 8, 16), rng, extra=(1, 1, 0)))
    # Every epilogue activation (and none), alternating batch 1 and 3.
    for index, activation in enumerate(ACTIVATIONS):
        conv = Conv(1 + 2 * (index % 2), 5, (6, 7), (3, 3), padding=(1, 1, 1, 1))
        cases.append(make_case(conv, activation, stepped, rng))
    # Every num_warps the launch config emits, at tiles that emit it.
    for warps in WARPS:
        tiles = (128, 32, 1) if warps == 4 else (256, 8, 16)
        conv = Conv(3, 37, (11, 13), (3, 3), (2, 2), (1, 1, 1, 1), residual=True)
        assert launch_config(*tiles)[0] == warps
        cases.append(make_case(conv, "silu", tiles, rng, num_warps=warps))
    return cases


CASES = all_cases()
MASKS = {
    "store": ("v, mask=mask)", "v)"),
    "top-padding": ("& (in_h >= 0)", ""),
    "right-padding": ("& (in_w < W)", ""),
}
"""Masks of the kernel and an edit removing each (`test_removing_a_mask_is_caught`)."""
MUTANTS = {
    what: dataclasses.replace(
        make_case(
            Conv(1, 3, (5, 6), (3, 3), padding=(1, 1, 1, 1)),
            "none",
            (16, 2, 4),
            np.random.default_rng(1),
        ),
        id=f"mutant-no-{what}-mask",
        mutation=mutation,
    )
    for what, mutation in MASKS.items()
}


HARNESS_CASES = [*CASES, *MUTANTS.values()]
"""What the `results` fixture (tests/conftest.py) runs, in one interpreter process."""


def test_cases_cover_the_brief() -> None:
    convs = [conv_of(case) for case in CASES]
    assert {c.batch for c in convs} == {1, 3}
    assert {case.constexprs["ACTIVATION"] for case in CASES} == set(ACTIVATIONS)
    assert {case.num_warps for case in CASES} == set(WARPS) == {4, 8}
    assert any(c.strides == (2, 2) and c.kernel == (3, 3) for c in convs)
    assert any(c.kernel == (1, 1) and c.strides == (2, 2) for c in convs)
    assert any(c.dilation == (2, 2) for c in convs)
    assert any(len(set(c.padding)) > 1 for c in convs)
    assert any(c.residual for c in convs) and any(not c.residual for c in convs)
    assert {"x", "r", "y"} <= {operand for c in convs for operand in c.views}
    assert any(tiles_of(case)[2] > 1 for case in CASES)
    assert any(tiles_of(case)[2] == 1 for case in CASES)
    for case in CASES:
        conv = conv_of(case)
        oh, ow = conv.out_hw()
        block_p, block_c, block_t = tiles_of(case)
        taps = math.prod(conv.kernel)
        assert (conv.batch * oh * ow) % block_p, case.id
        assert conv.channels % block_c, case.id
        assert block_t == 1 or taps % block_t, case.id


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_kernel_matches_the_reference(case: Case, results: Results) -> None:
    """Canaries intact, the channels outside the output view unwritten, every
    output element written, the values within the tolerance rule."""
    assert problems(case, results) == []


@pytest.mark.parametrize("what", MASKS)
def test_removing_a_mask_is_caught(what: str, results: Results) -> None:
    """The checks are not vacuous: without its store mask the kernel writes
    into the canaries; without a padding mask it reads NaN (the padding around
    the input) or an element the reference does not see (the next row's)."""
    found = " ".join(problems(MUTANTS[what], results))
    if what == "store":
        assert "canaries after the view overwritten" in found, found
    else:
        assert "NaN or infinite where the reference is finite" in found or (
            "y: max|got - ref|" in found
        ), found


def test_cases_are_valid_launches() -> None:
    """Each case's launch is one the contract validator proves safe."""
    for case in CASES:
        validator.validate(case.contract(), batches=(conv_of(case).batch,))


def test_the_validator_refuses_wrong_bindings() -> None:
    case = next(c for c in CASES if conv_of(c).residual and "y" in conv_of(c).views)
    batches = (conv_of(case).batch,)
    with pytest.raises(validator.ContractError, match="argument 'KH' = '2' is 2"):
        validator.validate(case.contract(KH="2"), batches=batches)
    with pytest.raises(validator.ContractError, match=r"'y' .* has batch stride"):
        validator.validate(
            case.contract(y_batch_stride=str(conv_of(case).channels * 42)), batches=batches
        )


def test_the_residual_footprint_counts_only_with_has_residual() -> None:
    """Without a residual, ``r`` is bound to the input and never read (footprint
    0); bound to that same input with the ``HAS_RESIDUAL`` dim set, a padded
    convolution's larger output does not fit in it, and the launch is refused."""
    conv = Conv(2, 3, (4, 4), (3, 3), padding=(2, 2, 2, 2))  # 4x4 -> 6x6
    case = make_case(conv, "none", (16, 2, 1), np.random.default_rng(2))
    contract = case.contract()
    assert ("HAS_RESIDUAL", "0") in contract.args
    validator.validate(contract, batches=(2,))
    with pytest.raises(validator.ContractError, match="argument 'r' may touch 156 elements"):
        validator.validate(case.contract(HAS_RESIDUAL="1"), batches=(2,))


# ---------------------------------------------------------------- AOT

AOT_TILES = [(64, 1, 1), (64, 16, 1), (128, 32, 1), (128, 64, 1), (64, 8, 16)]
"""The gpu rule's smallest and largest tiles, and 8-warp and several-taps ones."""


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("tiles", AOT_TILES, ids=["x".join(map(str, t)) for t in AOT_TILES])
def test_compiles_ahead_of_time(
    tiles: tuple[int, int, int], arch: int, tmp_path: Path, triton_cache: None
) -> None:
    block_p, block_c, block_t = tiles
    constexprs: dict[str, int | str] = {
        "BLOCK_P": block_p,
        "BLOCK_C": block_c,
        "BLOCK_T": block_t,
        "ACTIVATION": "silu",
    }
    path = tmp_path / "depthwise_conv_0.py"
    path.write_text(render(FAMILY, path.stem, constexprs))
    num_warps, num_stages = launch_config(*tiles)
    variant = aot.compile_variant(path, path.stem, FAMILY, constexprs, arch, num_warps, num_stages)
    assert (variant.arch, variant.num_warps, variant.num_stages) == (arch, num_warps, num_stages)
    assert f".target sm_{arch}" in variant.ptx and variant.cubin[:4] == b"\x7fELF"
    assert 0 <= variant.shared <= aot.SHARED_MEMORY_LIMITS[arch]
    aot.check_shared(variant)
    # One variant with and without a residual: it reads the runtime flag and,
    # under its branch, r and its batch stride.
    loaded = {int(i) for i in re.findall(rf"\[{variant.name}_param_(\d+)\]", variant.ptx)}
    names = {FAMILY.args[i].name for i in loaded if i < len(FAMILY.args)}
    assert {"HAS_RESIDUAL", "r", "r_batch_stride"} <= names


def test_aot_tiles_cover_the_gpu_rule() -> None:
    picked = {
        pick_depthwise_tile_sizes(m, n, k)
        for m in (1, 127, 128, 1 << 20)
        for n in (1, 16, 17, 4096)
        for k in (1, 9, 128)
    }
    assert {(64, 1, 1), (128, 32, 1)} <= picked
    assert {t for t in AOT_TILES if t[2] == 1} >= {min(picked), max(picked)}
    assert {launch_config(*t)[0] for t in AOT_TILES} == set(WARPS)


# ---------------------------------------------------------------- end to end

E2E = """\
func.func @forward(%x: tensor<?x24x11x9xf32>) -> (tensor<?x24x6x5xf32>, tensor<?x24x11x9xf32>) {
  %w = graph.param "m.conv.weight" : tensor<24x1x3x3xf32>
  %g = graph.param "m.bn.weight" : tensor<24xf32>
  %b = graph.param "m.bn.bias" : tensor<24xf32>
  %m = graph.param "m.bn.running_mean" : tensor<24xf32>
  %v = graph.param "m.bn.running_var" : tensor<24xf32>
  %c = graph.conv2d %x, %w strides [2, 2] padding [1, 1, 1, 1] groups 24 : (tensor<?x24x11x9xf32>, tensor<24x1x3x3xf32>) -> tensor<?x24x6x5xf32>
  %n = graph.batch_norm %c, %g, %b, %m, %v eps 1.0e-3 : (tensor<?x24x6x5xf32>, tensor<24xf32>, tensor<24xf32>, tensor<24xf32>, tensor<24xf32>) -> tensor<?x24x6x5xf32>
  %y = graph.silu %n : tensor<?x24x6x5xf32>
  %w2 = graph.param "k.conv.weight" : tensor<24x1x5x5xf32>
  %b2 = graph.param "k.conv.bias" : tensor<24xf32>
  %c2 = graph.conv2d %x, %w2, %b2 padding [2, 2, 2, 2] groups 24 : (tensor<?x24x11x9xf32>, tensor<24x1x5x5xf32>, tensor<24xf32>) -> tensor<?x24x11x9xf32>
  %s2 = graph.silu %c2 : tensor<?x24x11x9xf32>
  %r2 = graph.add %x, %s2 : (tensor<?x24x11x9xf32>, tensor<?x24x11x9xf32>) -> tensor<?x24x11x9xf32>
  func.return %y, %r2 : tensor<?x24x6x5xf32>, tensor<?x24x11x9xf32>
}
"""


def _weights(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "m.conv.weight": (rng.standard_normal((24, 1, 3, 3)) / 3).astype(np.float32),
        "m.bn.weight": rng.uniform(0.5, 1.5, 24).astype(np.float32),
        "m.bn.bias": rng.standard_normal(24).astype(np.float32),
        "m.bn.running_mean": rng.standard_normal(24).astype(np.float32),
        "m.bn.running_var": rng.uniform(0.5, 2.0, 24).astype(np.float32),
        "k.conv.weight": (rng.standard_normal((24, 1, 5, 5)) / 5).astype(np.float32),
        "k.conv.bias": rng.standard_normal(24).astype(np.float32),
    }


@pytest.mark.parametrize(
    "pipeline",
    [
        "teeny-inference",
        "split-bias,fuse-conv-bn-act{mode=inference},"
        "select-conv-algorithm{profile=interpreter},lower-graph-to-kernel",
    ],
    ids=["gpu", "interpreter"],
)
def test_end_to_end_depthwise_bn_silu(pipeline: str, tmp_path: Path) -> None:
    graph = teeny_ir.parse_module(E2E, filename="e2e.mlir")
    kernels = teeny_ir.parse_module(E2E, filename="e2e.mlir")
    out = tmp_path / "out"
    teeny_ir.PassManager.parse(f"{pipeline},emit-triton{{out-dir={out}}}").run(kernels)
    text = teeny_ir.print_module(kernels)
    assert text.count('kernel.launch "depthwise_conv"') == 2, text
    rng = np.random.default_rng(3)
    weights = _weights(rng)
    executable = runtime.load(out)
    for batch in (1, 3):
        x = rng.standard_normal((batch, 24, 11, 9)).astype(np.float32)
        got = executable.run([x], weights)
        want = reference.run(graph, weights, [x])
        assert [g.shape for g in got] == [(batch, 24, 6, 5), (batch, 24, 11, 9)]
        assert_close(got, want, REDUCTION_TOL)


def test_interpreter_profile_tiles_reach_the_plan(tmp_path: Path) -> None:
    """The pass's profile decides the launch's constexprs (and the interpreter
    tiles run the whole 6x5 image's rows and all channels in one program)."""
    module = teeny_ir.parse_module(E2E, filename="e2e.mlir")
    teeny_ir.PassManager.parse(
        "split-bias,fuse-conv-bn-act{mode=inference},"
        "select-conv-algorithm{profile=interpreter},lower-graph-to-kernel"
    ).run(module)
    text = teeny_ir.print_module(module)
    assert "BLOCK_P = 32, BLOCK_C = 32, BLOCK_T = 16" in text, text
    assert "BLOCK_P = 128, BLOCK_C = 8, BLOCK_T = 32" in text, text


E2E_RESIDUAL = """\
func.func @forward(%x: tensor<?x10x9x8xf32>, %r: tensor<?x10x5x4xf32>) -> tensor<?x10x5x4xf32> {
  %w = graph.param "w" : tensor<10x1x3x3xf32>
  %y = graph.fused_conv2d %x, %w residual %r strides [2, 2] padding [1, 1, 1, 1] groups 10 scale #derive.param<fill(1.0) : [10]> shift #derive.param<identity("b") : [10]> activation relu : (tensor<?x10x9x8xf32>, tensor<10x1x3x3xf32>, tensor<?x10x5x4xf32>) -> tensor<?x10x5x4xf32>
  func.return %y : tensor<?x10x5x4xf32>
}
"""


@pytest.mark.parametrize("profile", ["gpu", "interpreter"])
def test_end_to_end_fused_residual(profile: str, tmp_path: Path) -> None:
    """A fused depthwise convolution with a residual operand: ``r = in1`` and
    the dim ``HAS_RESIDUAL = "1"``, added after the activation, as the reference does."""
    graph = teeny_ir.parse_module(E2E_RESIDUAL, filename="residual.mlir")
    kernels = teeny_ir.parse_module(E2E_RESIDUAL, filename="residual.mlir")
    out = tmp_path / "out"
    teeny_ir.PassManager.parse(
        f"select-conv-algorithm{{profile={profile}}},lower-graph-to-kernel,"
        f"emit-triton{{out-dir={out}}}"
    ).run(kernels)
    text = teeny_ir.print_module(kernels)
    assert 'HAS_RESIDUAL = "1"' in text and "r = in1" in text, text
    rng = np.random.default_rng(5)
    weights = {
        "w": (rng.standard_normal((10, 1, 3, 3)) / 3).astype(np.float32),
        "b": rng.standard_normal(10).astype(np.float32),
    }
    executable = runtime.load(out)
    for batch in (1, 3):
        x = rng.standard_normal((batch, 10, 9, 8)).astype(np.float32)
        r = rng.standard_normal((batch, 10, 5, 4)).astype(np.float32)
        got = executable.run([x, r], weights)
        want = reference.run(graph, weights, [x, r])
        assert_close(got, want, REDUCTION_TOL)
