"""The ``batch_norm_train`` and ``batch_norm_backward`` kernel families: Triton's
interpreter against the float64 reference semantics, the validator's view of
every launch, the lowering's refusals and the conditional rules that split
``graph.batch_norm`` with ``channel_affine``, AOT compilation, and a conv ->
training batch norm -> loss graph stepped once by the compiled trainer against
PyTorch (parameters and running statistics).

Each kernel case is one graph op written as IR with a dynamic batch, lowered by
its family's rule (interpreter profile unless the case shrinks the tiles), so
the dims and the grid are what the compiler emits at the case's batch (1 or 3).
Shapes: odd planes (5x7, 13x11, 1x1, rank 2), channel counts 1, 3, 17, 33;
shrunken tiles so that many chunks and channel blocks run; extra programs past
the last channel block; batch-strided views of x, dy, y and dx (a view input is
a channel slice of a NaN-filled buffer, a view output must stay NaN in the gaps);
values ``1000 + N(0, 1)`` that a one-pass variance gets wrong. All cases run in
one harness process (`teeny_ir.testing.kernels.run_cases`) with NaN-padded
inputs and canary-padded, NaN-filled outputs, warnings as errors.

``n == 1`` (one value per channel: a dynamic batch of 1 over a 1x1 plane) is
the kernels' documented behaviour, not the reference's (which raises, as
PyTorch does): ``y = beta``, ``var_out = NaN``, ``dx = dgamma = 0``, ``dbeta =
dy``; a static shape with ``n == 1`` is refused at lowering.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

import teeny_ir
from dialects.kernel import LaunchOp
from teeny_ir import reference, runtime
from teeny_ir.backend import aot
from teeny_ir.kernels import validator
from teeny_ir.kernels.batch_norm_train.tiles import bn_tiles
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.lowering import Unlowerable
from teeny_ir.kernels.render import render
from teeny_ir.testing import REDUCTION_TOL, compare
from teeny_ir.testing import kernels as harness
from teeny_ir.testing.kernels import Case, Results, View, launch_case, problems

EPS, MOMENTUM = 1e-3, 0.1


def _type(shape: tuple[int | str, ...]) -> str:
    return f"tensor<{'x'.join(str(d) for d in shape)}xf32>"


def op_text(backward: bool, shape: tuple[int | str, ...]) -> str:
    """``func.func @forward`` of one training batch norm (or its backward) over
    arguments of ``shape`` (``?``: the batch)."""
    t, v = _type(shape), _type((shape[1],))
    if backward:
        return (
            f"func.func @forward(%x: {t}, %g: {v}, %dy: {t}) -> ({t}, {v}, {v}) {{\n"
            f"  %dx, %dg, %db = graph.batch_norm_backward %x, %g, %dy eps {EPS} "
            f": ({t}, {v}, {t}) -> ({t}, {v}, {v})\n"
            f"  func.return %dx, %dg, %db : {t}, {v}, {v}\n}}\n"
        )
    return (
        f"func.func @forward(%x: {t}, %g: {v}, %b: {v}, %m: {v}, %v: {v}) -> ({t}, {v}, {v}) {{\n"
        f"  %y:3 = graph.batch_norm %x, %g, %b, %m, %v eps {EPS} momentum {MOMENTUM} training "
        f": ({t}, {v}, {v}, {v}, {v}) -> ({t}, {v}, {v})\n"
        f"  func.return %y#0, %y#1, %y#2 : {t}, {v}, {v}\n}}\n"
    )


def lowered(text: str, profile: str = "interpreter") -> tuple[Any, LaunchOp]:
    """The module of ``text`` and the launch its one graph op's rule builds."""
    return harness.lowered(text, profile=profile)


def _inputs(backward: bool, shape: tuple[int, ...], offset: float, rng: Any) -> list[np.ndarray]:
    channels = shape[1]
    x = (
        offset
        + rng.standard_normal(shape)
        * rng.uniform(0.5, 2.0, channels).reshape((1, channels) + (1,) * (len(shape) - 2))
    ).astype(np.float32)
    gamma = rng.uniform(0.5, 1.5, channels).astype(np.float32)
    if backward:
        return [x, gamma, rng.standard_normal(shape).astype(np.float32)]
    beta = rng.standard_normal(channels).astype(np.float32)
    mean = rng.standard_normal(channels).astype(np.float32)
    var = rng.uniform(0.5, 2.0, channels).astype(np.float32)
    return [x, gamma, beta, mean, var]


def _single_value(backward: bool, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The kernels' outputs at one value per channel (the reference raises)."""
    x = inputs[0].astype(np.float64)
    if backward:
        dy = inputs[2].astype(np.float64)
        channels = x.shape[1]
        return [np.zeros_like(x), np.zeros(channels), dy.reshape(channels)]
    _, _gamma, beta, mean, _var = (a.astype(np.float64) for a in inputs)
    y = np.broadcast_to(beta.reshape((1, -1) + (1,) * (x.ndim - 2)), x.shape)
    new_mean = (1 - MOMENTUM) * mean + MOMENTUM * x.reshape(-1)
    return [np.array(y), new_mean, np.full_like(mean, np.nan)]


def bn_case(
    backward: bool,
    shape: tuple[int, ...],
    rng: Any,
    *,
    blocks: tuple[int, int] | None = None,
    extra_programs: int = 0,
    offset: float = 0.0,
    views: dict[str, View] | None = None,
    profile: str = "interpreter",
) -> Case:
    """One launch of either family over ``shape`` (batch ``shape[0]``, dynamic in
    the IR); ``views`` puts pointers (x, dy, y, dx) in batch-strided views."""
    batch = shape[0]
    module, launch = lowered(op_text(backward, ("?", *shape[1:])), profile)
    inputs = _inputs(backward, shape, offset, rng)
    single = batch * math.prod(shape[2:]) == 1
    if single:
        outs = _single_value(backward, inputs)
    else:
        outs = [np.asarray(o, np.float64) for o in reference.run(module, {}, inputs)]
    views = views or {}
    dims = "x".join(map(str, shape))
    case_id = (
        f"{'bwd' if backward else 'fwd'}-{dims}"
        + (f"-b{blocks[0]}x{blocks[1]}" if blocks else "")
        + (f"-grid+{extra_programs}" if extra_programs else "")
        + (f"-offset{offset:g}" if offset else "")
        + "".join(f"-{n}@{first}of{total}" for n, (total, first) in views.items())
        + (f"-{profile}" if profile != "interpreter" else "")
    )
    case = launch_case(
        case_id,
        launch,
        batch,
        inputs,
        outs,
        pad=2048,
        tol=REDUCTION_TOL,
        views=views,
        constexprs={"BLOCK_C": blocks[0], "BLOCK_R": blocks[1]} if blocks else None,
        extra_programs=extra_programs,
    )
    assert case.grid3()[0] == -(-shape[1] // int(case.constexprs["BLOCK_C"])) + extra_programs
    return case


def all_cases() -> list[Case]:
    rng = np.random.default_rng(31)
    cases: list[Case] = []
    for backward in (False, True):
        out = "dx" if backward else "y"
        grad_view = {"dy": (5, 0)} if backward else {}
        cases += [
            bn_case(backward, (1, 3, 5, 7), rng),
            bn_case(backward, (3, 17, 13, 11), rng, blocks=(4, 64), extra_programs=2, offset=1000),
            bn_case(backward, (3, 33), rng, blocks=(8, 2), extra_programs=1),
            bn_case(backward, (3, 1, 5, 7), rng, offset=1000, profile="gpu"),
            bn_case(
                backward,
                (3, 3, 5, 7),
                rng,
                blocks=(2, 16),
                offset=1000,
                views={"x": (8, 2), **grad_view, out: (6, 1)},
            ),
            bn_case(backward, (1, 3, 1, 1), rng, blocks=(2, 4), extra_programs=1),
        ]
    return cases


def mutants() -> dict[str, Case]:
    """Mutated kernels the checks must catch."""
    rng = np.random.default_rng(37)
    return {
        what: replace(case, id=f"mutant-{what}", mutation=mutation)
        for what, (case, mutation) in {
            # The biased variance in the running statistics (n instead of n - 1).
            "running-var-biased": (
                bn_case(False, (3, 3, 2, 2), rng),
                ("m2 / tl.maximum(n - 1.0, 1.0)", "m2 / n"),
            ),
            # The first pass reads past the tail of each chunk (NaN padding, other channels).
            "mean-load-unmasked": (
                bn_case(False, (1, 3, 5, 7), rng, blocks=(4, 16)),
                (
                    "acc += tl.load(x + plane[:, None] + column[None, :], mask=mask, other=0.0)",
                    "acc += tl.load(x + plane[:, None] + column[None, :])",
                ),
            ),
            # dx stored past the last image.
            "dx-store-unmasked": (
                bn_case(True, (1, 3, 5, 7), rng, blocks=(4, 16)),
                (
                    "(b * dx_batch_stride + r)[None, :], out, mask=mask)",
                    "(b * dx_batch_stride + r)[None, :], out)",
                ),
            ),
            # dgamma about the uncorrected mean and without rstd.
            "dgamma-unscaled": (
                bn_case(True, (3, 3, 5, 7), rng, offset=1000),
                ("sum_dyx = rstd * (", "sum_dyx = 1.0 * ("),
            ),
        }.items()
    }


CASES = all_cases()
MUTANTS = mutants()


HARNESS_CASES = [*CASES, *MUTANTS.values()]
"""What the `results` fixture (tests/conftest.py) runs, in one interpreter process."""


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_kernel_matches_the_reference(case: Case, results: Results) -> None:
    """Canaries, NaN where the reference (or a view's gap, or ``n == 1``'s
    variance) has one and not elsewhere, and the tolerance rule on the rest."""
    assert problems(case, results) == []


def test_the_checks_catch_mutated_kernels(results: Results) -> None:
    found = {what: " ".join(problems(case, results)) for what, case in MUTANTS.items()}
    assert "var_out: max|got - ref|" in found["running-var-biased"], found
    assert "y: " in found["mean-load-unmasked"], found
    assert "NaN or infinite where the reference is finite" in found["mean-load-unmasked"], found
    assert "dx: " in found["dx-store-unmasked"] and "canaries after" in found["dx-store-unmasked"]
    assert "dgamma: max|got - ref|" in found["dgamma-unscaled"], found


def test_errors_are_logged(results: Results, capsys: Any) -> None:
    """Not a check: the largest errors relative to their bound's scale, for ``pytest -s``."""
    errors: dict[str, float] = {}
    for case in CASES:
        for name, want in case.expected.items():
            finite = np.isfinite(want)
            if finite.any():
                got = case.got(results, name).astype(np.float64)[finite]
                errors[f"{case.id}/{name}"] = compare(got, want[finite], 1.0).max_error / max(
                    1.0, float(np.abs(want[finite]).max())
                )
    worst = sorted(errors.items(), key=lambda item: -item[1])[:6]
    with capsys.disabled():
        print("\nlargest relative errors:", ", ".join(f"{k} {v:.2e}" for k, v in worst))


def test_every_case_is_a_valid_launch() -> None:
    for case in [*CASES, *MUTANTS.values()]:
        validator.validate(case.contract())


def test_the_cases_cover_the_brief() -> None:
    """Batches 1 and 3; channels 1, 3, 17, 33; many chunks and channel blocks;
    extra programs; views of x, dy, y and dx; a large common offset; n == 1."""
    for family in ("batch_norm_train", "batch_norm_backward"):
        cases = [c for c in CASES if c.family == family]
        args = [dict(c.args) for c in cases]
        assert {a["B"] for a in args} == {1, 3}
        assert {1, 3, 17, 33} <= {a["C"] for a in args}
        assert any(
            a["B"] * a["HW"] > 4 * int(c.constexprs["BLOCK_R"])
            for a, c in zip(args, cases, strict=True)
        )
        assert any(
            c.grid * int(c.constexprs["BLOCK_C"]) > a["C"] + int(c.constexprs["BLOCK_C"])
            for a, c in zip(args, cases, strict=True)
        )
        assert any(a["B"] * a["HW"] == 1 for a in args)
        strided = {n for c in cases for n, (s, st) in c.tensors.items() if st != math.prod(s[1:])}
        assert strided == ({"x", "dy", "dx"} if family == "batch_norm_backward" else {"x", "y"})
        assert any(
            np.abs(dict(c.args)["x"][np.isfinite(dict(c.args)["x"])]).min() > 900 for c in cases
        )


def test_the_validator_holds_the_dims_to_the_shapes() -> None:
    for family in ("batch_norm_train", "batch_norm_backward"):
        case = next(c for c in CASES if c.family == family)
        args = dict(case.args)
        args["HW"] += 1
        wrong = replace(case, args=list(args.items()))
        with pytest.raises(validator.ContractError, match="imply"):
            validator.validate(wrong.contract())


# ---------------------------------------------------------------- lowering


def test_tiles() -> None:
    assert bn_tiles(3, 35) == (4, 256)
    assert bn_tiles(64, 1024) == (2, 1024)
    assert bn_tiles(64, 64) == (8, 256)
    assert bn_tiles(16, 1, "interpreter") == (16, 2048)
    assert bn_tiles(4096, 1, "interpreter") == (1024, 32)
    for channels in (1, 3, 17, 1000, 5000):
        for plane in (1, 35, 4096, 10**6):
            for profile in ("gpu", "interpreter"):
                block_c, block_r = bn_tiles(channels, plane, profile)
                assert block_c * block_r <= 2**15 and block_c <= max(
                    1, 2 ** math.ceil(math.log2(channels))
                )


@pytest.mark.parametrize("backward", [False, True], ids=["train", "backward"])
def test_refusals(backward: bool) -> None:
    for shape, match in (
        ((1, 3, 1, 1), "more than 1 value per channel, got 1"),
        ((1, 3), "more than 1 value per channel, got 1"),
        (("?", 2**16, 2**8, 2**8), "above the batch_norm_\\w+ family's 32-bit limit"),
    ):
        with pytest.raises(Unlowerable, match=match):
            lowered(op_text(backward, shape), "gpu")
    lowered(op_text(backward, (2, 3, 1, 1)))  # static, 2 values per channel: fine


def test_the_two_forms_of_batch_norm_lower_to_two_families() -> None:
    t, v = "tensor<?x4x3x3xf32>", "tensor<4xf32>"
    params = "\n".join(f'  %{n} = graph.param "{n}" : {v}' for n in "gbmv")
    text = f"""\
func.func @forward(%x: {t}) -> ({t}, {t}, {v}, {v}) {{
{params}
  %i = graph.batch_norm %x, %g, %b, %m, %v : ({t}, {v}, {v}, {v}, {v}) -> {t}
  %y:3 = graph.batch_norm %x, %g, %b, %m, %v training : ({t}, {v}, {v}, {v}, {v}) -> ({t}, {v}, {v})
  func.return %i, %y#0, %y#1, %y#2 : {t}, {t}, {v}, {v}
}}
"""
    module = teeny_ir.parse_module(text)
    teeny_ir.PassManager.parse("lower-graph-to-kernel").run(module)
    launches = [o for o in module.walk() if isinstance(o, LaunchOp)]
    assert [o.family for o in launches] == ["channel_affine", "batch_norm_train"]
    assert len(launches[1].operands) == 5  # gamma, beta and the statistics as tensors


# ---------------------------------------------------------------- AOT


AOT_VARIANTS = [(backward, arch) for backward in (False, True) for arch in (80, 90)]


@pytest.mark.parametrize(
    ("backward", "arch"),
    AOT_VARIANTS,
    ids=[f"{'backward' if b else 'train'}-sm{a}" for b, a in AOT_VARIANTS],
)
def test_compiles_ahead_of_time(
    backward: bool, arch: int, tmp_path: Path, triton_cache: None
) -> None:
    """The largest gpu-profile variant: a full 2048-element block of 1024-chunks."""
    _module, launch = lowered(op_text(backward, ("?", 64, 32, 32)), "gpu")
    constexprs = dict(launch.constexpr_values)
    assert constexprs == {"BLOCK_C": 2, "BLOCK_R": 1024}
    family = FAMILIES[launch.family]
    name = f"{launch.family}_0"
    path = tmp_path / f"{name}.py"
    path.write_text(render(family, name, constexprs))
    compiled = aot.compile_variant(
        path, name, family, constexprs, arch, launch.num_warps, launch.num_stages
    )
    assert f".target sm_{arch}" in compiled.ptx
    assert compiled.cubin[:4] == b"\x7fELF"
    assert re.search(rf"\.reqntid {32 * launch.num_warps}\b", compiled.ptx)
    aot.check_shared(compiled)


# ---------------------------------------------------------------- end to end

E2E = """\
func.func @forward(%x: tensor<?x2x5x7xf32>, %r: tensor<?x3x5x7xf32>) -> (tensor<f32>) {
  %w = graph.param "conv.weight" : tensor<3x2x3x3xf32>
  %g = graph.param "bn.weight" : tensor<3xf32>
  %b = graph.param "bn.bias" : tensor<3xf32>
  %m = graph.param "bn.running_mean" : tensor<3xf32>
  %v = graph.param "bn.running_var" : tensor<3xf32>
  %c = graph.conv2d %x, %w padding [1, 1, 1, 1] : (tensor<?x2x5x7xf32>, tensor<3x2x3x3xf32>) -> tensor<?x3x5x7xf32>
  %y = graph.batch_norm %c, %g, %b, %m, %v eps 1.000000e-03 momentum 3.000000e-02 : (tensor<?x3x5x7xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<?x3x5x7xf32>
  %p = graph.mul %y, %r : (tensor<?x3x5x7xf32>, tensor<?x3x5x7xf32>) -> tensor<?x3x5x7xf32>
  %l = graph.reduce_sum %p axes [0, 1, 2, 3] : (tensor<?x3x5x7xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}
"""


def test_one_sgd_step_matches_pytorch(tmp_path: Path) -> None:
    """conv -> training batch norm -> weighted sum, one SGD step at batch 3:
    every parameter and both running statistics within 1e-4 of PyTorch's
    (float64), the batch norm and its backward run by the new families."""
    module = teeny_ir.parse_module(E2E, filename="bn.mlir")
    out = tmp_path / "plan"
    teeny_ir.PassManager.parse(
        f"teeny-training{{optimizer=sgd lr=0.1 profile=interpreter}},emit-triton{{out-dir={out}}}"
    ).run(module)
    families = {o.family for o in module.walk() if isinstance(o, LaunchOp)}
    assert {"batch_norm_train", "batch_norm_backward"} <= families
    rng = np.random.default_rng(41)
    weights = {
        "conv.weight": (rng.standard_normal((3, 2, 3, 3)) * 0.5).astype(np.float32),
        "bn.weight": rng.uniform(0.5, 1.5, 3).astype(np.float32),
        "bn.bias": rng.standard_normal(3).astype(np.float32),
        "bn.running_mean": rng.standard_normal(3).astype(np.float32),
        "bn.running_var": rng.uniform(0.5, 2, 3).astype(np.float32),
    }
    x = rng.standard_normal((3, 2, 5, 7)).astype(np.float32)
    r = rng.standard_normal((3, 3, 5, 7)).astype(np.float32)
    with runtime.load(out).trainer(weights) as trainer:
        (loss,) = trainer.step([x, r])
        state = trainer.state_dict()
    conv = nn.Conv2d(2, 3, 3, padding=1, bias=False).double()
    bn = nn.BatchNorm2d(3, eps=1e-3, momentum=0.03).double()
    conv.weight.data = torch.tensor(weights["conv.weight"], dtype=torch.float64)
    for name in ("weight", "bias", "running_mean", "running_var"):
        getattr(bn, name).data = torch.tensor(weights[f"bn.{name}"], dtype=torch.float64)
    bn.train()
    sgd = torch.optim.SGD([conv.weight, bn.weight, bn.bias], lr=0.1)
    want_loss = (
        bn(conv(torch.tensor(x, dtype=torch.float64))) * torch.tensor(r, dtype=torch.float64)
    ).sum()
    want_loss.backward()
    sgd.step()
    want = {
        "conv.weight": conv.weight,
        "bn.weight": bn.weight,
        "bn.bias": bn.bias,
        "bn.running_mean": bn.running_mean,
        "bn.running_var": bn.running_var,
    }
    assert set(want) <= set(state)
    for name, value in {
        "loss": (loss, want_loss),
        **{k: (state[k], v) for k, v in want.items()},
    }.items():
        got, ref = np.asarray(value[0], np.float64), value[1].detach().numpy()
        bound = 1e-4 * max(1.0, float(np.abs(ref).max()))
        error = float(np.abs(got - ref).max())
        assert error <= bound, f"{name}: {error:.3g} > {bound:.3g}"
        assert not np.array_equal(got, weights.get(name, np.nan))  # it did change
