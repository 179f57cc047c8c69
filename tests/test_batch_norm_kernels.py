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
one `kernel_harness.py` subprocess with NaN-padded inputs and canary-padded,
NaN-filled outputs, warnings as errors.

``n == 1`` (one value per channel: a dynamic batch of 1 over a 1x1 plane) is
the kernels' documented behaviour, not the reference's (which raises, as
PyTorch does): ``y = beta``, ``var_out = NaN``, ``dx = dgamma = 0``, ``dbeta =
dy``; a static shape with ``n == 1`` is refused at lowering.
"""

from __future__ import annotations

import importlib.util
import math
import re
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

import teeny_ir
from dialects.kernel import LaunchOp
from teeny_ir import reference, runtime
from teeny_ir.backend import aot
from teeny_ir.core import derivations, expressions
from teeny_ir.kernels import validator
from teeny_ir.kernels.batch_norm_train.tiles import bn_tiles
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.lowering import Unlowerable, lowering_for, lowering_profile
from teeny_ir.kernels.render import render
from teeny_ir.testing import REDUCTION_TOL


def _sibling(name: str) -> ModuleType:
    """Load another test module by path (``tests`` is not an importable package)."""
    spec = importlib.util.spec_from_file_location(f"_teeny_{name}", Path(__file__).with_name(name))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


copies = _sibling("test_concat_split_kernels.py")
CANARY = copies.CANARY
EPS, MOMENTUM = 1e-3, 0.1
View = tuple[int, int]
"""A batch-strided view: (the enclosing buffer's channels, the view's first channel)."""


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
    module = teeny_ir.parse_module(text)
    graph_op = next(o for o in module.walk() if o.name.startswith("graph."))
    rule = lowering_for(type(graph_op))
    assert not isinstance(rule, str), rule
    with lowering_profile(profile):
        launch = rule(graph_op)
    assert isinstance(launch, LaunchOp)
    return module, launch


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


def _strided(data: np.ndarray, view: View | None) -> tuple[np.ndarray, int]:
    """An output's expected buffer: ``data`` [B, C, ...] in its view (NaN in the
    gaps), and the view's batch stride."""
    if view is None:
        return data.ravel(), math.prod(data.shape[1:])
    total, first = view
    plane = math.prod(data.shape[2:])
    buffer = np.full((data.shape[0], total, *data.shape[2:]), np.nan)
    buffer[:, first : first + data.shape[1]] = data
    stride, image = total * plane, math.prod(data.shape[1:])
    start = first * plane
    return buffer.ravel()[start : start + (data.shape[0] - 1) * stride + image], stride


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
) -> Any:
    """One launch of either family over ``shape`` (batch ``shape[0]``, dynamic in
    the IR); ``views`` puts pointers (x, dy, y, dx) in batch-strided views."""
    family_name = "batch_norm_backward" if backward else "batch_norm_train"
    family = FAMILIES[family_name]
    batch = shape[0]
    module, launch = lowered(op_text(backward, ("?", *shape[1:])), profile)
    inputs = _inputs(backward, shape, offset, rng)
    single = batch * math.prod(shape[2:]) == 1
    if single:
        outs = _single_value(backward, inputs)
    else:
        outs = [np.asarray(o, np.float64) for o in reference.run(module, {}, inputs)]
    views = views or {}
    env = {"B": batch}
    slots = {f"param.{slot.name}": slot for slot in launch.param_slots}
    args: list[tuple[str, Any]] = []
    tensors: dict[str, tuple[tuple[int, ...], int]] = {}
    expected: dict[str, np.ndarray] = {}
    strides: dict[str, int] = {}
    for name, binding in launch.arg_bindings:
        kind = family.arg(name).kind
        if kind == "input":
            array = inputs[int(binding[2:])]
            data, stride = copies.channel_slice(array, views.get(name))
            args.append((name, data))
            tensors[name] = (array.shape, stride)
            strides[name] = stride
        elif kind == "output":
            want = outs[int(binding[3:])]
            data, stride = _strided(want, views.get(name))
            args.append((name, ("output", data.size)))
            expected[name] = data
            tensors[name] = (want.shape, stride)
            strides[name] = stride
        elif kind == "param":
            slot = slots[binding]
            args.append((name, derivations.evaluate(slot.derivation, {})))
            tensors[name] = (slot.shape, 1)
        else:
            args.append((name, expressions.eval_text(binding, env)))
    stride_args = {arg: pointer for pointer, arg in family.batch_strides.items()}
    args = [(n, strides[stride_args[n]] if n in stride_args else v) for n, v in args]
    constexprs: dict[str, int | str] = dict(launch.constexpr_values)
    if blocks:
        constexprs |= {"BLOCK_C": blocks[0], "BLOCK_R": blocks[1]}
    grid = -(-shape[1] // int(constexprs["BLOCK_C"]))
    if not blocks:
        assert expressions.eval_text(launch.grid[0], env) == grid
    dims = "x".join(map(str, shape))
    case_id = (
        f"{'bwd' if backward else 'fwd'}-{dims}"
        + (f"-b{blocks[0]}x{blocks[1]}" if blocks else "")
        + (f"-grid+{extra_programs}" if extra_programs else "")
        + (f"-offset{offset:g}" if offset else "")
        + "".join(f"-{n}@{first}of{total}" for n, (total, first) in views.items())
        + (f"-{profile}" if profile != "interpreter" else "")
    )
    return copies.Case(
        id=case_id,
        family=family_name,
        constexprs=constexprs,
        args=args,
        grid=grid + extra_programs,
        pad=2048,
        expected=expected,
        tensors=tensors,
        num_warps=launch.num_warps,
        tol=REDUCTION_TOL,
    )


def all_cases() -> list[Any]:
    rng = np.random.default_rng(31)
    cases: list[Any] = []
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


def mutants() -> dict[str, Any]:
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
ERRORS: dict[str, float] = {}
"""The largest error relative to its bound's scale, per case and output (for the log)."""


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    """The cases and the mutants, in one interpreter process."""
    found: dict[str, np.ndarray] = copies.run_harness(
        [*CASES, *MUTANTS.values()], tmp_path_factory.mktemp("bn")
    )
    return found


def problems(case: Any, results: dict[str, np.ndarray]) -> list[str]:
    """What is wrong with a case's outputs: canaries, NaN where the reference (or
    a view's gap) has one and not elsewhere, and the tolerance rule on the rest:
    ``max|got - want| <= tol * max(1, max|want|)``."""
    found: list[str] = []
    pad = case.pad
    for name, want in case.expected.items():
        buffer = results[f"{case.id}/{name}"]
        if (np.concatenate([buffer[:pad], buffer[-pad:]]) != CANARY).any():
            found.append(f"{name} canaries overwritten")
        got = buffer[pad:-pad].astype(np.float64)
        if got.shape != want.shape:
            found.append(f"{name}: {got.size} elements, expected {want.size}")
            continue
        nan = np.isnan(want)
        if not np.isnan(got[nan]).all():
            found.append(f"{name}: written where it must stay NaN (a gap, or n == 1's variance)")
        if not np.isfinite(got[~nan]).all():
            found.append(f"{name}: non-finite where the reference's is finite")
            continue
        if (~nan).any():
            error = float(np.abs(got[~nan] - want[~nan]).max())
            scale = max(1.0, float(np.abs(want[~nan]).max()))
            ERRORS[f"{case.id}/{name}"] = error / scale
            if error > case.tol * scale:
                found.append(f"{name}: max error {error:.3g} above {case.tol * scale:.3g}")
    return found


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_kernel_matches_the_reference(case: Any, results: dict[str, np.ndarray]) -> None:
    assert problems(case, results) == []


def test_the_checks_catch_mutated_kernels(results: dict[str, np.ndarray]) -> None:
    found = {what: " ".join(problems(case, results)) for what, case in MUTANTS.items()}
    assert "var_out: max error" in found["running-var-biased"], found
    assert "y: non-finite" in found["mean-load-unmasked"], found
    assert "dx canaries overwritten" in found["dx-store-unmasked"], found
    assert "dgamma: max error" in found["dgamma-unscaled"], found


def test_errors_are_logged(results: dict[str, np.ndarray], capsys: Any) -> None:
    """Not a check: the largest relative errors, for ``pytest -s``."""
    ERRORS.clear()
    for case in CASES:
        problems(case, results)
    worst = sorted(ERRORS.items(), key=lambda item: -item[1])[:6]
    with capsys.disabled():
        print("\nlargest relative errors:", ", ".join(f"{k} {v:.2e}" for k, v in worst))


def case_contract(case: Any) -> validator.LaunchContract:
    """The case as a launch contract, the ``hyper`` slot bound like a pointer."""
    contract: validator.LaunchContract = copies.case_contract(case)
    args = tuple((name, "hyper" if name == "hyper" else value) for name, value in contract.args)
    return replace(contract, args=args)


def test_every_case_is_a_valid_launch() -> None:
    for case in [*CASES, *MUTANTS.values()]:
        validator.validate(case_contract(case))


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
            validator.validate(case_contract(wrong))


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
        module = teeny_ir.parse_module(op_text(backward, shape))
        graph_op = next(o for o in module.walk() if o.name.startswith("graph."))
        rule = lowering_for(type(graph_op))
        assert not isinstance(rule, str)
        with pytest.raises(Unlowerable, match=match):
            rule(graph_op)
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


@pytest.fixture(scope="module")
def triton_cache(tmp_path_factory: pytest.TempPathFactory) -> Any:
    import os

    saved = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = str(tmp_path_factory.mktemp("triton-cache"))
    yield
    if saved is None:
        del os.environ["TRITON_CACHE_DIR"]
    else:
        os.environ["TRITON_CACHE_DIR"] = saved


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
