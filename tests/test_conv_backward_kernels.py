"""The ``conv2d_backward_data`` and ``conv2d_backward_weight`` kernel families:
Triton's interpreter against the float64 reference semantics, the validator's
view of their launches, AOT compilation, and both ops end to end through
lower-graph-to-kernel, emit-triton and the runtime.

Each kernel case is one ``graph.conv2d_backward_data`` or
``graph.conv2d_backward_weight`` written as IR with a dynamic batch and lowered
by the family's ``@lowers`` rule, so the dims and the grid are what the
compiler emits at the case's batch (1 or 3). The convolutions are LeNet's two
(5x5 pad 2 on 1x28x28 -> 6, 5x5 on 6x14x14 -> 16) and odd ones: stride 2 with
padding 1 on odd sizes, dilation 2, groups 2, one group per input channel with
two output channels each (a depthwise convolution, one output channel per
input channel, is the depthwise backward families'), asymmetric padding
and kernels, stride 3 over a 2x2 kernel (rows no window reads). Most cases
run the lowering's tiles (the ``gpu`` profile: the backward ops carry no tile
profile); some shrink them to 16x16x16 (many programs, many K chunks), three
input gradients at batch 3 take the ``interpreter`` profile's (fewer programs
for the interpreter), some launch extra programs, some bind batch-strided
views. All cases and the mutants run in one harness process
(`teeny_ir.testing.kernels.run_cases`) with NaN-padded inputs and canary-padded,
NaN-filled outputs: an unwritten element stays NaN, a write out of bounds
changes a canary, an unmasked read of the padding poisons the result.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import teeny_ir
from dialects.kernel import LaunchOp
from teeny_ir import reference, runtime
from teeny_ir.backend import aot
from teeny_ir.kernels import validator
from teeny_ir.kernels.conv2d_backward_data import tiles as data_tiles
from teeny_ir.kernels.conv2d_backward_weight import tiles as weight_tiles
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.lowering import Unlowerable
from teeny_ir.kernels.render import render
from teeny_ir.testing import REDUCTION_TOL, assert_close
from teeny_ir.testing import kernels as harness
from teeny_ir.testing.kernels import Case, Results, launch_case, problems

PAD = 256


@dataclass(frozen=True)
class Conv:
    """A forward convolution: input [C_IN, H, W], C_OUT, the kernel and options."""

    name: str
    c_in: int
    size: tuple[int, int]
    c_out: int
    kernel: tuple[int, int]
    strides: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1

    def out_size(self) -> tuple[int, int]:
        top, left, bottom, right = self.padding
        h, w = self.size
        return (
            (h + top + bottom - self.dilation[0] * (self.kernel[0] - 1) - 1) // self.strides[0] + 1,
            (w + left + right - self.dilation[1] * (self.kernel[1] - 1) - 1) // self.strides[1] + 1,
        )

    def shapes(self, batch: int | str) -> tuple[tuple[Any, ...], ...]:
        """x, w, dy shapes (the batch may be ``?``)."""
        return (
            (batch, self.c_in, *self.size),
            (self.c_out, self.c_in // self.groups, *self.kernel),
            (batch, self.c_out, *self.out_size()),
        )

    def options(self) -> str:
        return (
            f" strides {list(self.strides)} padding {list(self.padding)}"
            f" dilation {list(self.dilation)} groups {self.groups}"
        )


CONVS = {
    c.name: c
    for c in (
        Conv("lenet1", 1, (28, 28), 6, (5, 5), padding=(2, 2, 2, 2)),
        Conv("lenet2", 6, (14, 14), 16, (5, 5)),
        Conv("s2p1", 5, (11, 9), 8, (3, 3), strides=(2, 2), padding=(1, 1, 1, 1)),
        Conv("dil2", 4, (13, 10), 6, (3, 3), padding=(2, 1, 2, 1), dilation=(2, 2)),
        Conv("groups2", 6, (9, 7), 10, (3, 3), padding=(1, 1, 1, 1), groups=2),
        Conv("multiplier2", 8, (10, 9), 16, (3, 3), strides=(2, 2), padding=(1, 1, 0, 0), groups=8),
        Conv("asym", 3, (8, 11), 5, (2, 3), strides=(1, 2), padding=(0, 2, 1, 0)),
        Conv("s3k2", 3, (8, 8), 4, (2, 2), strides=(3, 3)),
        Conv("wide16", 16, (6, 7), 8, (3, 3), strides=(2, 2), padding=(1, 1, 1, 1)),
    )
}


def _t(shape: tuple[Any, ...]) -> str:
    return "tensor<" + "x".join(str(d) for d in shape) + "xf32>"


def graph_text(op: str, conv: Conv) -> str:
    x, w, dy = conv.shapes("?")
    if op == "data":
        return f"""\
func.func @forward(%dy: {_t(dy)}, %w: {_t(w)}) -> {_t(x)} {{
  %dx = graph.conv2d_backward_data %dy, %w{conv.options()} : ({_t(dy)}, {_t(w)}) -> {_t(x)}
  func.return %dx : {_t(x)}
}}
"""
    return f"""\
func.func @forward(%x: {_t(x)}, %dy: {_t(dy)}) -> {_t(w)} {{
  %dw = graph.conv2d_backward_weight %x, %dy{conv.options()} : ({_t(x)}, {_t(dy)}) -> {_t(w)}
  func.return %dw : {_t(w)}
}}
"""


def lowered(op: str, conv: Conv) -> tuple[Any, LaunchOp]:
    return harness.lowered(graph_text(op, conv), f"graph.conv2d_backward_{op}")


def _rand(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def kernel_case(
    op: str,
    conv_name: str,
    batch: int,
    rng: np.random.Generator,
    *,
    blocks: tuple[int, int, int] | None = None,
    extra_programs: int = 0,
    views: dict[str, tuple[int, int]] | None = None,
    specials: str = "",
) -> Case:
    """One launch of ``op`` (``data`` or ``weight``) on ``conv`` at ``batch``;
    ``views`` makes activation pointers (``dy``, ``dx``, ``x``) channel slices
    ``(total, first)`` of NaN-filled buffers. ``specials`` ``nan`` puts two
    NaNs into ``dy``; ``inf`` a +inf into its first image and a -inf into its
    last (the reference's NaN and inf must come out where they are). The
    harness runs with warnings as errors and the interpreter's ``tl.dot``
    warns on ``inf * 0``, so an inf case needs a tile without masked columns
    or taps: `CONVS` ``wide16`` (16 input channels, one 16-column tile)."""
    views = dict(views or {})
    conv = CONVS[conv_name]
    module, launch = lowered(op, conv)
    x_shape, w_shape, dy_shape = conv.shapes(batch)
    dy = _rand(rng, dy_shape)
    if specials == "nan":
        dy.flat[[0, dy.size // 2]] = np.nan
    elif specials == "inf":
        dy.flat[[5, dy.size - 3]] = [np.inf, -np.inf]
    inputs = [dy, _rand(rng, w_shape)] if op == "data" else [_rand(rng, x_shape), dy]
    with np.errstate(invalid="ignore"):
        (want,) = reference.run(module, {}, inputs)
    case_id = (
        f"{op}-{conv_name}-b{batch}"
        + (f"-t{'x'.join(map(str, blocks))}" if blocks else "")
        + "".join(f"-{name}@{first}of{total}" for name, (total, first) in views.items())
        + (f"-grid+{extra_programs}" if extra_programs else "")
        + (f"-{specials}" if specials else "")
    )
    tiles = (
        None
        if blocks is None
        else dict(zip(("BLOCK_M", "BLOCK_N", "BLOCK_K"), blocks, strict=True))
    )
    case = launch_case(
        case_id,
        launch,
        batch,
        inputs,
        [want],
        pad=PAD,
        tol=REDUCTION_TOL,
        views=views,
        constexprs=tiles,  # shrunken tiles: the grid is the tile model's at them
        extra_programs=extra_programs,
    )
    assert isinstance(case.grid, int), case.grid
    return case


INTERPRETER_TILED = ("lenet1", "lenet2", "multiplier2")
"""Convolutions whose input gradient at batch 3 runs the ``interpreter``
profile's tiles (the most programs at the ``gpu`` tiles: they cost the
interpreter the most); every other case runs the lowering's ``gpu`` tiles or
shrunken ones."""


def all_cases() -> list[Case]:
    rng = np.random.default_rng(5)
    cases: list[Case] = []
    for op in ("data", "weight"):
        for name, conv in CONVS.items():
            for batch in (1, 3):
                blocks = None
                if op == "data" and batch == 3 and name in INTERPRETER_TILED:
                    x_shape, w_shape, _ = conv.shapes(batch)
                    blocks = data_tiles.pick_tiles(
                        x_shape[2] * x_shape[3],
                        w_shape[1],
                        conv.c_out // conv.groups * w_shape[2] * w_shape[3],
                        "interpreter",
                    )
                cases.append(kernel_case(op, name, batch, rng, blocks=blocks))
    small = (16, 16, 16)
    # Shrunken tiles: many row and column tiles and K chunks; extra programs.
    cases.append(kernel_case("data", "dil2", 1, rng, blocks=small))
    cases.append(kernel_case("data", "groups2", 1, rng, blocks=small, extra_programs=3))
    cases.append(kernel_case("data", "s2p1", 1, rng, extra_programs=2))
    cases.append(kernel_case("weight", "lenet2", 1, rng, blocks=small))
    cases.append(kernel_case("weight", "dil2", 3, rng, blocks=(16, 16, 32), extra_programs=3))
    cases.append(kernel_case("weight", "multiplier2", 1, rng, extra_programs=2))
    # Batch-strided views of the activations.
    cases.append(kernel_case("data", "s2p1", 3, rng, views={"dy": (11, 2), "dx": (9, 3)}))
    cases.append(kernel_case("weight", "groups2", 3, rng, views={"x": (9, 1), "dy": (13, 3)}))
    # NaN and inf in the gradient.
    cases.append(kernel_case("data", "s2p1", 3, rng, specials="nan"))
    cases.append(kernel_case("data", "wide16", 3, rng, specials="inf"))
    cases.append(kernel_case("weight", "asym", 3, rng, specials="nan"))
    return cases


def mutants() -> dict[str, Case]:
    """Mutated kernels the checks must catch: a data gradient that does not
    check the stride divides the offset gathers wrong outputs; a weight gradient
    whose input taps are not masked to the image reads the padding; a row mask
    one row too long writes past dx."""
    rng = np.random.default_rng(6)
    return {
        what: replace(case, id=f"mutant-{what}", mutation=mutation)
        for what, (case, mutation) in {
            "no-stride-check": (
                kernel_case("data", "s2p1", 3, rng),
                (
                    "hit = (num_h >= 0) & (out_h * stride_h == num_h) & (out_h < OH)",
                    "hit = (num_h >= 0) & (out_h < OH)",
                ),
            ),
            "no-image-mask": (
                kernel_case("weight", "lenet1", 1, rng),
                (
                    "mask=mask_k[:, None] & mask_n[None, :] & inside,",
                    "mask=mask_k[:, None] & mask_n[None, :],",
                ),
            ),
            "no-row-mask": (
                kernel_case("data", "s3k2", 1, rng, blocks=(16, 16, 16), extra_programs=1),
                (
                    "mask_m = offs_m < B.to(tl.int64) * plane",
                    "mask_m = offs_m <= B.to(tl.int64) * plane",
                ),
            ),
        }.items()
    }


CASES = all_cases()
MUTANTS = mutants()


HARNESS_CASES = [*CASES, *MUTANTS.values()]
"""What the `results` fixture (tests/conftest.py) runs, in one interpreter process."""


def _output(case: Case) -> np.ndarray:
    """The case's expected output (NaN in a view's gaps)."""
    (want,) = case.expected.values()
    return want


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_kernel_matches_the_reference(case: Case, results: Results) -> None:
    """Canaries intact, a view's gaps unwritten, NaN and inf where the reference
    has them, the finite values within ``case.tol``."""
    assert problems(case, results) == []


def test_every_case_is_a_valid_launch() -> None:
    for case in CASES:
        validator.validate(case.contract())


def test_the_checks_catch_mutated_kernels(results: Results) -> None:
    found = {what: " ".join(problems(case, results)) for what, case in MUTANTS.items()}
    assert "dx: max|got - ref|" in found["no-stride-check"], found
    image = found["no-image-mask"]
    assert "dw: " in image and ("NaN or infinite" in image or "max|got - ref|" in image), found
    assert "dx: " in found["no-row-mask"] and "canaries after the view" in found["no-row-mask"]


def test_the_cases_are_not_vacuous() -> None:
    """Many programs and K chunks, several groups, zero rows, the grid's extra programs."""
    data = [c for c in CASES if c.family == "conv2d_backward_data"]
    weight = [c for c in CASES if c.family == "conv2d_backward_weight"]
    assert max(c.grid for c in data) >= 16 and max(c.grid for c in weight) >= 8
    assert {dict(c.args)["GROUPS"] for c in CASES} >= {1, 2, 8}
    s3 = next(c for c in data if c.id == "data-s3k2-b3")
    dx = s3.expected["dx"].reshape(3, 3, 8, 8)
    assert (dx[:, :, 2, :] == 0).all() and (dx[:, :, :, 5] == 0).all()
    assert np.abs(dx).max() > 0.5
    nan = [_output(c) for c in CASES if c.id.endswith("-nan")]
    assert len(nan) == 2 and all(np.isnan(w).any() and np.isfinite(w).any() for w in nan)
    (inf,) = [_output(c) for c in CASES if c.id.endswith("-inf")]
    assert np.isposinf(inf).any() and np.isneginf(inf).any() and np.isfinite(inf).any()

    def chunks(case: Any, k: int) -> int:
        return -(-k // int(case.constexprs["BLOCK_K"]))

    # Both K loops run several chunks: (C_OUT / G) * KH * KW for the input
    # gradient, B * OH * OW for the weight gradient.
    dil2 = next(c for c in data if c.id == "data-dil2-b1-t16x16x16")
    assert chunks(dil2, 6 * 3 * 3) == 4
    lenet2 = next(c for c in weight if c.id == "weight-lenet2-b1-t16x16x16")
    assert chunks(lenet2, 10 * 10) == 7
    lenet1 = next(c for c in weight if c.id == "weight-lenet1-b3")
    assert chunks(lenet1, 3 * 28 * 28) == 37


def test_the_validator_holds_the_dims_to_the_shapes() -> None:
    case = next(c for c in CASES if c.id == "data-groups2-b3")
    validator.validate(case.contract())
    for family_case, dim in ((case, "GROUPS"), (CASES[-1], "KW")):
        bad = dict(family_case.args)
        bad[dim] += 1
        wrong = replace(family_case, args=list(bad.items()))
        with pytest.raises(validator.ContractError, match="imply"):
            validator.validate(wrong.contract())
    short = replace(case, grid=case.grid - 1)
    with pytest.raises(validator.ContractError, match="tile model"):
        validator.validate(short.contract())


def test_the_lowerings_verify_at_every_batch() -> None:
    """lower-graph-to-kernel on every case's graph: the kernel dialect's verifier
    proves each launch for batches 1..64. The weight gradient's grid is a number
    (its K loop takes the batch), the input gradient's grows with the batch."""
    for conv in CONVS.values():
        for op in ("data", "weight"):
            module = teeny_ir.parse_module(graph_text(op, conv))
            teeny_ir.PassManager.parse("lower-graph-to-kernel").run(module)
            (launch,) = [o for o in module.walk() if isinstance(o, LaunchOp)]
            assert launch.family == f"conv2d_backward_{op}"
            assert dict(launch.arg_bindings)["B"] == "B"
            assert ("B" in launch.grid[0]) == (op == "data"), launch.grid


@pytest.mark.parametrize("op", ["data", "weight"])
def test_an_image_past_32_bit_offsets_is_unlowerable(op: str) -> None:
    huge = Conv("huge", 2, (32768, 32768), 1, (1, 1))
    with pytest.raises(Unlowerable, match="32-bit offsets"):
        lowered(op, huge)


def test_tile_rules() -> None:
    assert data_tiles.pick_tiles(784, 1, 150) == (128, 16, 32)
    assert data_tiles.pick_tiles(9, 200, 8) == (64, 128, 16)
    assert weight_tiles.pick_tiles(6, 25, 784) == (16, 32, 64)
    assert weight_tiles.pick_tiles(200, 2000, 10) == (64, 128, 16)
    assert data_tiles.pick_tiles(196, 6, 400, "interpreter") == (512, 16, 512)
    # LeNet's weight gradients: conv1, conv2, fc1 (a 1x1 convolution).
    assert weight_tiles.pick_tiles(6, 25, 784, "interpreter") == (16, 32, 8192)
    assert weight_tiles.pick_tiles(16, 150, 100, "interpreter") == (16, 256, 1024)
    assert weight_tiles.pick_tiles(120, 400, 1, "interpreter") == (128, 512, 64)
    assert data_tiles.pick_tiles(4, 300, 9, "interpreter") == (2048, 128, 16)
    limits = {data_tiles.pick_tiles: 2**18, weight_tiles.pick_tiles: 2**18}
    for pick, limit in limits.items():
        for m, n, k in ((1, 1, 1), (5000, 3, 70), (7, 5000, 9000)):
            tiles = pick(m, n, k, "interpreter")
            assert min(tiles) >= 16 and all(t & (t - 1) == 0 for t in tiles)
            assert max(a * b for a, b in itertools.combinations(tiles, 2)) <= limit <= 2**20
        with pytest.raises(ValueError, match="must be >= 1"):
            pick(0, 1, 1)


# ---------------------------------------------------------------- AOT


def _largest_gpu_variant(op: str) -> tuple[dict[str, int | str], int, int]:
    """The largest tiles the lowering emits under the gpu profile (most shared memory)."""
    if op == "data":
        block_m, block_n, block_k = data_tiles.pick_tiles(4096, 512, 4096)
        num_warps, num_stages = data_tiles.launch_config(block_m, block_n)
    else:
        block_m, block_n, block_k = weight_tiles.pick_tiles(512, 4096, 4096)
        num_warps, num_stages = weight_tiles.launch_config(block_m, block_n)
    constexprs: dict[str, int | str] = {"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": block_k}
    if op == "data":  # the general stride path (the unit-stride one is a subset of it)
        constexprs["UNIT_STRIDE"] = 0
    return constexprs, num_warps, num_stages


@pytest.mark.parametrize(("op", "arch"), [("data", 80), ("weight", 90)])
def test_compiles_ahead_of_time(op: str, arch: int, tmp_path: Path, triton_cache: None) -> None:
    """One variant per architecture (each compile costs about 2 s of the file's
    budget), each family's largest ``gpu`` tiles: the input gradient's on sm_80
    (mma.sync), the weight gradient's on sm_90 (wgmma), which needs the most
    shared memory of any variant either family emits (96 KiB)."""
    family = FAMILIES[f"conv2d_backward_{op}"]
    constexprs, num_warps, num_stages = _largest_gpu_variant(op)
    assert constexprs == (
        {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "UNIT_STRIDE": 0}
        if op == "data"
        else {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64}
    )
    name = f"{family.name}_0"
    path = tmp_path / f"{name}.py"
    path.write_text(render(family, name, constexprs))
    variant = aot.compile_variant(path, name, family, constexprs, arch, num_warps, num_stages)
    assert f".target sm_{arch}" in variant.ptx and variant.cubin[:4] == b"\x7fELF"
    assert 0 < variant.shared <= aot.SHARED_MEMORY_LIMITS[arch]
    aot.check_shared(variant)
    assert ("wgmma" if arch == 90 else "mma.sync") in variant.ptx


# ---------------------------------------------------------------- end to end

E2E = """\
func.func @forward(%x: tensor<?x3x9x8xf32>, %dy: tensor<?x6x5x4xf32>)
    -> (tensor<?x3x9x8xf32>, tensor<6x3x3x3xf32>) {
  %w = graph.param "conv.weight" : tensor<6x3x3x3xf32>
  %dx = graph.conv2d_backward_data %dy, %w strides [2, 2] padding [1, 1, 1, 0]
      : (tensor<?x6x5x4xf32>, tensor<6x3x3x3xf32>) -> tensor<?x3x9x8xf32>
  %dw = graph.conv2d_backward_weight %x, %dy strides [2, 2] padding [1, 1, 1, 0]
      : (tensor<?x3x9x8xf32>, tensor<?x6x5x4xf32>) -> tensor<6x3x3x3xf32>
  func.return %dx, %dw : tensor<?x3x9x8xf32>, tensor<6x3x3x3xf32>
}
"""


def test_end_to_end_matches_the_reference(tmp_path: Path) -> None:
    out = tmp_path / "plan"
    module = teeny_ir.parse_module(E2E, filename="bw.mlir")
    teeny_ir.PassManager.parse(f"lower-graph-to-kernel,emit-triton{{out-dir={out}}}").run(module)
    families = sorted(o.family for o in module.walk() if isinstance(o, LaunchOp))
    assert families == ["conv2d_backward_data", "conv2d_backward_weight"]
    rng = np.random.default_rng(9)
    weights = {"conv.weight": _rand(rng, (6, 3, 3, 3))}
    inputs = [_rand(rng, (3, 3, 9, 8)), _rand(rng, (3, 6, 5, 4))]
    got = runtime.load(out).run(inputs, weights)
    want = reference.run(teeny_ir.parse_module(E2E), weights, inputs)
    assert [g.shape for g in got] == [(3, 3, 9, 8), (6, 3, 3, 3)]
    assert_close(got, want, REDUCTION_TOL)
