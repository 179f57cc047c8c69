"""The ``depthwise_conv_backward_data`` and ``depthwise_conv_backward_weight``
kernel families: Triton's interpreter against the float64 reference semantics
(and against torch autograd), the validator's view of their launches, which
family lowers which backward convolution, their tiles, AOT compilation for
sm_80, and both ops end to end through lower-graph-to-kernel, emit-triton and
the runtime.

Each kernel case is one ``graph.conv2d_backward_data`` or
``graph.conv2d_backward_weight`` of a depthwise convolution (``groups == C``),
written as IR with a dynamic batch and lowered by the family's ``@lowers``
rule, so the dims and the grid are what the compiler emits at the case's batch
(1 or 3). The shapes are odd (5 channels over 7x9 images, 37 channels, 3x3,
5x5 and 2x3 kernels, strides 1, 2 and 3, padding 0, 1 and 2 and asymmetric,
dilation 2), so positions, channels and taps all have tails. Cases run the
``gpu`` and the ``interpreter`` profile's tiles, or tiles shrunk to many
programs, tap steps and reduction chunks; some launch extra programs on both
grid axes, some bind batch-strided views, some carry NaN in ``dy``. All cases
and the mutants run in one harness process
(`teeny_ir.testing.kernels.run_cases`) with NaN-padded inputs and
canary-padded, NaN-filled outputs: an unwritten element stays NaN, a write out
of bounds changes a canary, an unmasked read of the padding poisons the result.
"""

from __future__ import annotations

import ast
import io
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import teeny_ir
from dialects.graph.conv import Conv2dBackwardDataOp, Conv2dBackwardWeightOp
from dialects.kernel import LaunchOp
from teeny_ir import reference, runtime
from teeny_ir.backend import aot
from teeny_ir.driver import opt
from teeny_ir.kernels import validator
from teeny_ir.kernels.depthwise_conv import tiles as forward_tiles
from teeny_ir.kernels.depthwise_conv_backward_data import lowering as data_lowering
from teeny_ir.kernels.depthwise_conv_backward_weight import lowering as weight_lowering
from teeny_ir.kernels.depthwise_conv_backward_weight import tiles as weight_tiles
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.lowering import LoweringContext, Unlowerable
from teeny_ir.kernels.render import render
from teeny_ir.testing import REDUCTION_TOL, assert_close, compare
from teeny_ir.testing import kernels as harness
from teeny_ir.testing.kernels import Case, Results, launch_case, problems, tile_grid

PAD = 256
DATA = "depthwise_conv_backward_data"
WEIGHT = "depthwise_conv_backward_weight"


@dataclass(frozen=True)
class Spec:
    """A depthwise convolution: ``channels`` over images of ``size``, its kernel
    and options (``groups == channels``; ``out_channels`` other than
    ``channels`` makes a channel multiplier, for the refusals)."""

    name: str
    channels: int
    size: tuple[int, int]
    kernel: tuple[int, int]
    strides: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilation: tuple[int, int] = (1, 1)
    out_channels: int | None = None
    groups: int | None = None

    def out_size(self) -> tuple[int, int]:
        top, left, bottom, right = self.padding
        (h, w), (kh, kw) = self.size, self.kernel
        return (
            (h + top + bottom - self.dilation[0] * (kh - 1) - 1) // self.strides[0] + 1,
            (w + left + right - self.dilation[1] * (kw - 1) - 1) // self.strides[1] + 1,
        )

    def shapes(self, batch: int | str) -> tuple[tuple[Any, ...], ...]:
        """x, w, dy (the batch may be ``?``)."""
        out = self.out_channels or self.channels
        groups = self.groups or self.channels
        return (
            (batch, self.channels, *self.size),
            (out, self.channels // groups, *self.kernel),
            (batch, out, *self.out_size()),
        )

    def options(self) -> str:
        return (
            f" strides {list(self.strides)} padding {list(self.padding)}"
            f" dilation {list(self.dilation)} groups {self.groups or self.channels}"
        )

    def text(self, op: str) -> str:
        """A one-op graph: the input gradient (``data``) or the weight gradient."""
        x, w, dy = (_t(s) for s in self.shapes("?"))
        if op == "data":
            return (
                f"func.func @forward(%dy: {dy}, %w: {w}) -> {x} {{\n"
                f"  %dx = graph.conv2d_backward_data %dy, %w{self.options()} : ({dy}, {w}) -> {x}\n"
                f"  func.return %dx : {x}\n}}\n"
            )
        return (
            f"func.func @forward(%x: {x}, %dy: {dy}) -> {w} {{\n"
            f"  %dw = graph.conv2d_backward_weight %x, %dy{self.options()} : ({x}, {dy}) -> {w}\n"
            f"  func.return %dw : {w}\n}}\n"
        )


def _t(shape: tuple[Any, ...]) -> str:
    return "tensor<" + "x".join(str(d) for d in shape) + "xf32>"


SPECS = {
    s.name: s
    for s in (
        Spec("k3s1p1", 5, (7, 9), (3, 3), padding=(1, 1, 1, 1)),
        Spec("k3s2p1", 5, (7, 9), (3, 3), strides=(2, 2), padding=(1, 1, 1, 1)),
        Spec("k3s2p0", 5, (7, 9), (3, 3), strides=(2, 2)),
        Spec("k5s1p2", 5, (7, 9), (5, 5), padding=(2, 2, 2, 2)),
        Spec("k5s2p2", 5, (7, 9), (5, 5), strides=(2, 2), padding=(2, 2, 2, 2)),
        Spec("k5s1p0", 5, (7, 9), (5, 5)),
        Spec("dil2", 5, (9, 8), (3, 3), padding=(2, 1, 2, 1), dilation=(2, 2)),
        Spec("asym", 6, (8, 11), (2, 3), strides=(1, 2), padding=(0, 2, 1, 0)),
        Spec("s3k2", 3, (8, 8), (2, 2), strides=(3, 3)),
        Spec("wide37", 37, (6, 5), (3, 3), strides=(2, 2), padding=(1, 1, 1, 1)),
    )
}
MAIN = ("k3s1p1", "k3s2p1", "k3s2p0", "k5s1p2", "k5s2p2", "k5s1p0")
"""The brief's grid of kernels, strides and paddings: each runs the gpu
profile's tiles at one batch (1 or 3) and the interpreter profile's at the
other; the other specs run at batch 3 with the gpu tiles (the weight gradient
of ``wide37`` with the interpreter's: its gpu tiles are 333 programs of one
(channel, tap) each, the costliest case for Triton's interpreter)."""


def lowered(op: str, spec: Spec, profile: str = "gpu") -> tuple[Any, LaunchOp]:
    return harness.lowered(spec.text(op), f"graph.conv2d_backward_{op}", profile=profile)


def _rand(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def kernel_case(
    op: str,
    spec_name: str,
    batch: int,
    rng: np.random.Generator,
    *,
    profile: str = "gpu",
    blocks: tuple[int, int, int] | None = None,
    extra: tuple[int, int] = (0, 0),
    views: dict[str, tuple[int, int]] | None = None,
    nan: bool = False,
) -> Case:
    """One launch of ``op`` (``data`` or ``weight``) on ``spec`` at ``batch``,
    with the tiles of ``profile`` or ``blocks`` (BLOCK_P, BLOCK_C, BLOCK_T) and
    ``extra`` programs on grid axes 0 and 1; ``views`` makes activation
    pointers (``dy``, ``dx``, ``x``) channel slices ``(total, first)`` of
    NaN-filled buffers; ``nan`` puts two NaNs into ``dy`` (the reference's NaN
    must come out where it is). ``spec`` is (the spec, the inputs)."""
    views = dict(views or {})
    spec = SPECS[spec_name]
    module, launch = lowered(op, spec, profile)
    x_shape, w_shape, dy_shape = spec.shapes(batch)
    dy = _rand(rng, dy_shape)
    if nan:
        dy.flat[[3, dy.size // 2]] = np.nan
    inputs = [dy, _rand(rng, w_shape)] if op == "data" else [_rand(rng, x_shape), dy]
    with np.errstate(invalid="ignore"):
        (want,) = reference.run(module, {}, inputs)
    case_id = (
        f"{op}-{spec_name}-b{batch}"
        + ("-interp" if profile == "interpreter" else "")
        + (f"-t{'x'.join(map(str, blocks))}" if blocks else "")
        + "".join(f"-{name}@{first}of{total}" for name, (total, first) in views.items())
        + (f"-grid+{extra[0]}+{extra[1]}" if extra != (0, 0) else "")
        + ("-nan" if nan else "")
    )
    tiles = (
        None
        if blocks is None
        else dict(zip(("BLOCK_P", "BLOCK_C", "BLOCK_T"), blocks, strict=True))
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
        constexprs=tiles,
        spec=(spec, inputs),
    )
    if extra != (0, 0):
        needed = tile_grid(FAMILIES[case.family], dict(case.args), case.constexprs)
        case = replace(case, grid=(needed[0] + extra[0], needed[1] + extra[1]))
    return case


SMALL = (16, 2, 4)
"""Shrunken tiles: 16 positions (many programs, many reduction chunks), 2 of 5
channels and 4 of 9 or 25 taps per program or step (tails everywhere)."""


def all_cases() -> list[Case]:
    rng = np.random.default_rng(26)
    cases: list[Case] = []
    for op in ("data", "weight"):
        for index, name in enumerate(MAIN):
            gpu, interpreter = (1, 3) if index % 2 == 0 else (3, 1)
            cases.append(kernel_case(op, name, gpu, rng))
            cases.append(kernel_case(op, name, interpreter, rng, profile="interpreter"))
        for name in [name for name in SPECS if name not in MAIN]:
            profile = "interpreter" if (op, name) == ("weight", "wide37") else "gpu"
            cases.append(kernel_case(op, name, 3, rng, profile=profile))
        cases.append(kernel_case(op, "k3s2p1", 3, rng, blocks=SMALL))
        cases.append(kernel_case(op, "k5s1p2", 1, rng, blocks=SMALL, extra=(2, 1)))
        cases.append(kernel_case(op, "dil2", 3, rng, blocks=SMALL))
        cases.append(kernel_case(op, "k3s1p1", 3, rng, extra=(1, 2)))
        cases.append(kernel_case(op, "k5s2p2", 3, rng, profile="interpreter", nan=True))
    cases.append(kernel_case("data", "k3s2p1", 3, rng, views={"dy": (9, 2), "dx": (8, 3)}))
    cases.append(
        kernel_case("weight", "k5s2p2", 3, rng, blocks=SMALL, views={"x": (8, 1), "dy": (7, 2)})
    )
    return cases


def mutants() -> dict[str, Case]:
    """Mutated kernels the checks must catch: an input gradient that does not
    check that the stride divides the offset gathers the wrong outputs; one
    that stores without its channel mask writes past ``dx``; a weight gradient
    whose input taps are not masked to the image reads the padding (and the
    neighbouring rows); one that stores without its tap mask writes its tap
    tail over the next channel's taps and past ``dw``."""
    rng = np.random.default_rng(27)
    return {
        what: replace(case, id=f"mutant-{what}", mutation=mutation)
        for what, (case, mutation) in {
            "no-stride-check": (
                kernel_case("data", "k3s2p1", 3, rng),
                (
                    "hit = (num_h >= 0) & (out_h * stride_h == num_h) & (out_h < OH)",
                    "hit = (num_h >= 0) & (out_h < OH)",
                ),
            ),
            "no-channel-mask": (
                kernel_case("data", "k3s1p1", 3, rng),
                ("mask = mask_p[:, None] & mask_c[None, :]", "mask = mask_p[:, None]"),
            ),
            "no-image-mask": (
                kernel_case("weight", "k3s1p1", 1, rng),
                (
                    "mask_k[:, None] & mask_t[None, :] & (in_h >= 0) & (in_h < H) & (in_w >= 0) & (in_w < W)",
                    "mask_k[:, None] & mask_t[None, :]",
                ),
            ),
            "no-tap-mask": (
                kernel_case("weight", "k3s2p0", 3, rng, profile="interpreter"),
                ("mask=mask_t[:, None] & mask_c[None, :],\n    )", "mask=mask_c[None, :],\n    )"),
            ),
        }.items()
    }


CASES = all_cases()
MUTANTS = mutants()
HARNESS_CASES = [*CASES, *MUTANTS.values()]
"""What the `results` fixture (tests/conftest.py) runs, in one interpreter process."""


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_kernel_matches_the_reference(case: Case, results: Results) -> None:
    """Canaries intact, a view's gaps unwritten, NaN where the reference has it,
    the finite values within the reduction tolerance."""
    assert problems(case, results) == []


def test_the_checks_catch_mutated_kernels(results: Results) -> None:
    caught = {
        "no-stride-check": r"dx: max\|got - ref\|",
        "no-channel-mask": r"dx: .* canaries after the view overwritten",
        "no-image-mask": r"dw: .*(NaN or infinite|max\|got - ref\|)",
        "no-tap-mask": r"dw: .* canaries after the view overwritten",
    }
    for what, case in MUTANTS.items():
        assert re.search(caught[what], " ".join(problems(case, results))), (
            what,
            problems(case, results),
        )


def test_cases_cover_the_brief() -> None:
    """Both kernel sizes at strides 1 and 2 and paddings 0, 1 and 2, batches 1
    and 3, tails on every tiled extent, several tap steps and reduction chunks,
    extra programs on both grid axes, views, NaN, rows no window reads."""
    for family in (DATA, WEIGHT):
        found = [c for c in CASES if c.family == family]
        geometry = {(c.spec[0].kernel, c.spec[0].strides, c.spec[0].padding[0]) for c in found}
        for kernel in ((3, 3), (5, 5)):
            for stride in ((1, 1), (2, 2)):
                assert any(g[:2] == (kernel, stride) for g in geometry), (family, kernel, stride)
        assert {g[2] for g in geometry} >= {0, 1, 2}
        assert {c.arg("B") for c in found} == {1, 3}
        blocks = {
            (c.constexprs["BLOCK_P"], c.constexprs["BLOCK_C"], c.constexprs["BLOCK_T"])
            for c in found
        }
        assert len(blocks) >= 4, blocks
        tails = [
            c
            for c in found
            if c.arg("C") % c.constexprs["BLOCK_C"]
            and (c.arg("KH") * c.arg("KW")) % c.constexprs["BLOCK_T"]
        ]
        assert tails, family
        needed = [tile_grid(FAMILIES[family], dict(c.args), c.constexprs) for c in found]
        assert any(
            c.grid3()[0] > n[0] and c.grid3()[1] > n[1] for c, n in zip(found, needed, strict=True)
        )
        assert any(c.id.endswith("-nan") for c in found)
        assert any("@" in c.id for c in found)
    # Positions and chunks: the input gradient's rows run past B * H * W in a
    # tile; the weight gradient's reduction takes several chunks of B * OH * OW.
    small = next(c for c in CASES if c.id == "weight-k3s2p1-b3-t16x2x4")
    assert -(-3 * 4 * 5 // int(small.constexprs["BLOCK_P"])) == 4
    data = [c for c in CASES if c.family == DATA]
    assert any((c.arg("B") * c.arg("H") * c.arg("W")) % c.constexprs["BLOCK_P"] for c in data)
    s3 = next(c for c in CASES if c.id == "data-s3k2-b3")
    dx = s3.expected["dx"].reshape(3, 3, 8, 8)
    assert (dx[:, :, 2, :] == 0).all() and (dx[:, :, :, 5] == 0).all() and np.abs(dx).max() > 0.1


def _torch_grads(spec: Spec, x: Any, w: Any, dy: Any, wrt: str) -> np.ndarray:
    """torch autograd's gradient of the depthwise conv2d wrt ``x`` or ``w`` in float64."""
    torch: Any = pytest.importorskip("torch")
    tensors = {
        name: torch.from_numpy(np.asarray(a, np.float64)) for name, a in (("x", x), ("w", w))
    }
    tensors[wrt].requires_grad_()
    top, left, bottom, right = spec.padding
    padded = torch.nn.functional.pad(tensors["x"], (left, right, top, bottom))
    y = torch.nn.functional.conv2d(
        padded, tensors["w"], stride=spec.strides, dilation=spec.dilation, groups=spec.channels
    )
    y.backward(torch.from_numpy(np.asarray(dy, np.float64)))
    grad = tensors[wrt].grad
    assert grad is not None
    result: np.ndarray = grad.numpy()
    return result


@pytest.mark.parametrize(
    ("spec_name", "tiles"), [("k5s2p2", "-interp"), ("k3s2p1", ""), ("asym", "")]
)
def test_against_torch_autograd(spec_name: str, tiles: str, results: Results) -> None:
    """The kernels' gradients against torch's conv2d (groups = C) differentiated
    in float64, at batch 3."""
    pytest.importorskip("torch")
    spec = SPECS[spec_name]
    x_shape, w_shape, _ = spec.shapes(3)
    for op, wrt in (("data", "x"), ("weight", "w")):
        case = next(c for c in CASES if c.id == f"{op}-{spec_name}-b3{tiles}")
        _, inputs = case.spec
        if op == "data":
            dy, w = inputs
            x = np.zeros(x_shape)
            name = "dx"
        else:
            x, dy = inputs
            w = np.zeros(w_shape)
            name = "dw"
        want = _torch_grads(spec, x, w, dy, wrt)
        got = case.got(results, name).reshape(want.shape)
        comparison = compare(got, want, REDUCTION_TOL)
        assert comparison.ok, (case.id, comparison.reason)
        assert comparison.max_error > 0.0  # float32 kernels, float64 torch


# ---------------------------------------------------------------- the validator


def test_every_case_is_a_valid_launch() -> None:
    for case in CASES:
        validator.validate(case.contract(), batches=(case.arg("B"),))


def test_the_validator_refuses_wrong_bindings() -> None:
    for family in (DATA, WEIGHT):
        case = next(c for c in CASES if c.family == family and c.id.endswith("k3s2p1-b3-t16x2x4"))
        batch = (case.arg("B"),)
        validator.validate(case.contract(), batches=batch)
        channels = case.arg("C")
        with pytest.raises(
            validator.ContractError, match=rf"argument 'C' = '6' is 6 .* imply {channels}"
        ):
            validator.validate(case.contract(C=str(channels + 1)), batches=batch)
        with pytest.raises(validator.ContractError, match=r"argument 'KW' .* imply 3"):
            validator.validate(case.contract(KW="4"), batches=batch)
        with pytest.raises(validator.ContractError, match=r"argument 'OH' .* imply"):
            validator.validate(case.contract(OH=str(case.arg("OH") + 1)), batches=batch)
        stride = "dy_batch_stride"
        with pytest.raises(
            validator.ContractError, match=rf"argument '{stride}' = '1' .* batch stride"
        ):
            validator.validate(case.contract(**{stride: "1"}), batches=batch)
        needed = tile_grid(FAMILIES[family], dict(case.args), case.constexprs)
        for short in ((needed[0] - 1, needed[1]), (needed[0], needed[1] - 1)):
            with pytest.raises(validator.ContractError, match=f"tile model of '{family}'"):
                validator.validate(replace(case, grid=short).contract(), batches=batch)
        # A grouped (not depthwise) weight bound to the pointer: no dims fit it.
        weight = "w" if family == DATA else "dw"
        (shape, stride_w) = case.tensors[weight]
        grouped = replace(
            case, tensors=case.tensors | {weight: ((shape[0], 2, *shape[2:]), stride_w)}
        )
        with pytest.raises(validator.ContractError, match=f"family '{family}' cannot take tensors"):
            validator.validate(grouped.contract(), batches=batch)


def _teeny_opt(*argv: str) -> tuple[int, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = opt.run(list(argv), io.BytesIO(), stdout, stderr)
    return code, stderr.getvalue()


@pytest.mark.parametrize("op", ["data", "weight"])
def test_a_bad_binding_in_kernel_ir_is_a_located_error(op: str, tmp_path: Path) -> None:
    """Kernel IR whose channel count disagrees with the tensors: teeny-opt
    refuses it with one located error (no traceback)."""
    graph = tmp_path / "graph.mlir"
    graph.write_text(SPECS["k3s2p1"].text(op))
    kernel = tmp_path / "kernel.mlir"
    code, err = _teeny_opt(str(graph), "-p", "lower-graph-to-kernel", "-o", str(kernel))
    assert code == 0, err
    text = kernel.read_text()
    assert f'"depthwise_conv_backward_{op}"' in text and 'C = "5"' in text
    bad = tmp_path / "bad.mlir"
    bad.write_text(text.replace('C = "5"', 'C = "6"', 1))
    code, err = _teeny_opt(str(bad), "-o", str(tmp_path / "out.mlir"))
    assert code == 1 and "Traceback" not in err, err
    assert re.match(rf"{re.escape(str(bad))}:\d+:\d+: error: ", err), err
    assert "argument 'C' = '6' is 6" in err and "imply 5" in err, err


# ---------------------------------------------------------------- which family


def test_the_lowerings_verify_at_every_batch() -> None:
    """lower-graph-to-kernel on every spec, both ops: the depthwise families run
    them, and the kernel dialect's verifier proves each launch for batches
    1..64. The weight gradient's grid is numbers (its reduction takes the
    batch), the input gradient's grows with the batch."""
    for spec in SPECS.values():
        for op in ("data", "weight"):
            for profile in ("gpu", "interpreter"):
                module = teeny_ir.parse_module(spec.text(op))
                teeny_ir.PassManager.parse(f"lower-graph-to-kernel{{profile={profile}}}").run(
                    module
                )
                (launch,) = [o for o in module.walk() if isinstance(o, LaunchOp)]
                assert launch.family == f"depthwise_conv_backward_{op}"
                assert dict(launch.arg_bindings)["B"] == "B"
                assert ("B" in launch.grid[0]) == (op == "data"), launch.grid


NOT_DEPTHWISE = [
    Spec("grouped", 6, (7, 9), (3, 3), padding=(1, 1, 1, 1), groups=2),
    Spec("multiplier2", 4, (7, 9), (3, 3), padding=(1, 1, 1, 1), out_channels=8, groups=4),
    Spec("dense", 3, (7, 9), (3, 3), out_channels=5, groups=1),
]


@pytest.mark.parametrize("spec", NOT_DEPTHWISE, ids=[s.name for s in NOT_DEPTHWISE])
@pytest.mark.parametrize("op", ["data", "weight"])
def test_every_other_convolution_keeps_the_grouped_gemm(op: str, spec: Spec) -> None:
    """Groups below the channels, a channel multiplier, one dense group: the
    implicit GEMM families lower them, and the depthwise rules refuse them,
    saying why."""
    _, launch = lowered(op, spec)
    assert launch.family == f"conv2d_backward_{op}"
    module = teeny_ir.parse_module(spec.text(op))
    graph_op = next(o for o in module.walk() if o.name == f"graph.conv2d_backward_{op}")
    context = LoweringContext("gpu")
    refused = r"not the (input|weight) gradient of a depthwise convolution: groups"
    with pytest.raises(Unlowerable, match=refused):
        if isinstance(graph_op, Conv2dBackwardDataOp):
            assert not data_lowering.accepts(graph_op)
            data_lowering.lower_depthwise_conv_backward_data(context, graph_op)
        else:
            assert isinstance(graph_op, Conv2dBackwardWeightOp)
            assert not weight_lowering.accepts(graph_op)
            weight_lowering.lower_depthwise_conv_backward_weight(context, graph_op)


@pytest.mark.parametrize("op", ["data", "weight"])
def test_an_image_past_32_bit_offsets_is_unlowerable(op: str) -> None:
    huge = Spec("huge", 2, (32768, 32768), (1, 1))
    with pytest.raises(Unlowerable, match="32-bit offsets"):
        lowered(op, huge)


def test_tile_rules() -> None:
    # The input gradient takes the forward depthwise convolution's tiles (its rule).
    assert forward_tiles.pick_depthwise_tile_sizes(63, 5, 9) == (64, 8, 1)
    assert forward_tiles.pick_depthwise_tile_sizes(400, 64, 9) == (128, 32, 1)
    assert forward_tiles.pick_depthwise_tile_sizes(400, 64, 25, "interpreter") == (512, 2, 32)
    # The weight gradient: one program per (channel, tap) on a GPU.
    assert weight_tiles.pick_tiles(20, 5, 25) == (128, 1, 1)
    assert weight_tiles.pick_tiles(400, 64, 9) == (512, 1, 1)
    assert weight_tiles.pick_tiles(6400, 64, 9) == (1024, 1, 1)
    assert weight_tiles.pick_tiles(400, 64, 9, "interpreter") == (512, 4, 16)
    assert weight_tiles.pick_tiles(100, 64, 25, "interpreter") == (128, 8, 32)
    for pick in (forward_tiles.pick_depthwise_tile_sizes, weight_tiles.pick_tiles):
        for profile in ("gpu", "interpreter"):
            for m, n, k in ((1, 1, 1), (5000, 3, 70), (7, 5000, 121)):
                tiles = pick(m, n, k, profile)
                assert all(t >= 1 and t & (t - 1) == 0 for t in tiles)
                assert tiles[0] * tiles[1] * tiles[2] <= 2**15
            with pytest.raises(ValueError, match="must be >= 1"):
                pick(0, 1, 1, profile)
    assert weight_tiles.launch_config(1024, 1, 1) == (4, 1)
    assert forward_tiles.launch_config(128, 32, 1) == (4, 1)
    assert forward_tiles.launch_config(2048, 1, 16) == (8, 1)


def test_no_atomics_and_no_dot() -> None:
    """Deterministic: every output element is stored by one program after a
    reduction in a fixed order (no ``tl.atomic_*``); and direct, with no
    ``tl.dot`` whose 16-wide minimum would pad a per-channel extent of 1."""
    for family in (DATA, WEIGHT):
        calls = {
            node.attr
            for node in ast.walk(ast.parse(FAMILIES[family].source()))
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "tl"
        }
        assert {"load", "store", "sum"} <= calls, calls
        assert not {call for call in calls if call.startswith("atomic") or call == "dot"}


# ---------------------------------------------------------------- AOT


AOT_VARIANTS = [
    (DATA, {"BLOCK_P": 128, "BLOCK_C": 32, "BLOCK_T": 1, "UNIT_STRIDE": 1}),
    (DATA, {"BLOCK_P": 128, "BLOCK_C": 32, "BLOCK_T": 1, "UNIT_STRIDE": 0}),
    (WEIGHT, {"BLOCK_P": 1024, "BLOCK_C": 1, "BLOCK_T": 1}),
]
"""Each variant the gpu profile emits at its largest: the input gradient with
unit and with other strides, the weight gradient."""


@pytest.mark.parametrize(
    ("family_name", "constexprs"), AOT_VARIANTS, ids=["data-unit", "data-strided", "weight"]
)
def test_compiles_ahead_of_time_for_sm80(
    family_name: str, constexprs: dict[str, int | str], tmp_path: Path, triton_cache: None
) -> None:
    family = FAMILIES[family_name]
    tiles = (constexprs["BLOCK_P"], constexprs["BLOCK_C"], constexprs["BLOCK_T"])
    assert all(isinstance(t, int) for t in tiles)
    pick = (
        forward_tiles.pick_depthwise_tile_sizes if family_name == DATA else weight_tiles.pick_tiles
    )
    assert pick(1 << 20, 4096, 9) == tiles  # the largest tiles of the gpu rule
    config = forward_tiles.launch_config if family_name == DATA else weight_tiles.launch_config
    num_warps, num_stages = config(*(int(t) for t in tiles))
    name = f"{family.name}_0"
    path = tmp_path / f"{name}.py"
    path.write_text(render(family, name, constexprs))
    variant = aot.compile_variant(path, name, family, constexprs, 80, num_warps, num_stages)
    assert ".target sm_80" in variant.ptx and variant.cubin[:4] == b"\x7fELF"
    assert "mma" not in variant.ptx and "atom." not in variant.ptx
    entry = variant.ptx[variant.ptx.index(f".entry {name}") :]
    assert entry[: entry.index(")")].count(".param") == len(family.args) + 2
    assert 0 <= variant.shared <= aot.SHARED_MEMORY_LIMITS[80]
    aot.check_shared(variant)


# ---------------------------------------------------------------- end to end

E2E = """\
func.func @forward(%x: tensor<?x5x7x9xf32>, %dy: tensor<?x5x4x5xf32>)
    -> (tensor<?x5x7x9xf32>, tensor<5x1x3x3xf32>) {
  %w = graph.param "conv.weight" : tensor<5x1x3x3xf32>
  %dx = graph.conv2d_backward_data %dy, %w strides [2, 2] padding [1, 1, 1, 1] groups 5
      : (tensor<?x5x4x5xf32>, tensor<5x1x3x3xf32>) -> tensor<?x5x7x9xf32>
  %dw = graph.conv2d_backward_weight %x, %dy strides [2, 2] padding [1, 1, 1, 1] groups 5
      : (tensor<?x5x7x9xf32>, tensor<?x5x4x5xf32>) -> tensor<5x1x3x3xf32>
  func.return %dx, %dw : tensor<?x5x7x9xf32>, tensor<5x1x3x3xf32>
}
"""


@pytest.mark.parametrize("profile", ["gpu", "interpreter"])
def test_end_to_end_matches_the_reference(profile: str, tmp_path: Path) -> None:
    """One plan, run at batch 1 and 3 (the dynamic batch), against the reference."""
    out = tmp_path / "plan"
    module = teeny_ir.parse_module(E2E, filename="dw.mlir")
    teeny_ir.PassManager.parse(
        f"lower-graph-to-kernel{{profile={profile}}},emit-triton{{out-dir={out}}}"
    ).run(module)
    families = sorted(o.family for o in module.walk() if isinstance(o, LaunchOp))
    assert families == [DATA, WEIGHT]
    rng = np.random.default_rng(28)
    weights = {"conv.weight": _rand(rng, (5, 1, 3, 3))}
    executable = runtime.load(out)
    for batch in (1, 3):
        inputs = [_rand(rng, (batch, 5, 7, 9)), _rand(rng, (batch, 5, 4, 5))]
        got = executable.run(inputs, weights)
        want = reference.run(teeny_ir.parse_module(E2E), weights, inputs)
        assert [g.shape for g in got] == [(batch, 5, 7, 9), (5, 1, 3, 3)]
        assert_close(got, want, REDUCTION_TOL)
