"""The ``channel_affine`` family: ``y[n, c, ...] = act(x[n, c, ...] * scale[c] +
shift[c])``, run in Triton's interpreter, checked by the validator, compiled ahead
of time and run end to end through ``teeny-inference``, ``emit-triton`` and the
runtime.

Each harness case is one graph op (a standalone inference ``graph.batch_norm`` or
a ``graph.bias_add`` with a ``graph.param`` bias), written as IR with a dynamic
batch and lowered by the family's own ``@lowers`` rule: the launch's constexprs,
dims, parameter slots and grid are what the compiler emits, evaluated at the
case's batch; its scale and shift are the slots' derivations evaluated on the
case's weights (`teeny_ir.core.derivations.evaluate`, as the runtime binds them).
Some cases replace the lowering's ``ACTIVATION = "none"`` by every epilogue entry
of the pointwise table (the slot the kernel has for a fused activation). The
kernels run in one harness process (`teeny_ir.testing.kernels.run_cases`), with
NaN-padded inputs and canary-padded, NaN-filled outputs; some grids launch more programs than the tile model needs. The expected values
come from `teeny_ir.reference` (the batch norm itself, not its fold) with the
activation applied by the pointwise table's numpy semantics.

Batch-strided views: some cases pass ``x`` as channels ``[c0, c0 + C)`` of a
larger NaN-filled buffer (a read outside the view is NaN and poisons the
result), or write ``y`` into such a view (the gaps between its images must stay
NaN), with the stride dims rebound as the view formation does; every case is a
launch the validator accepts. Each case shape is odd (no extent a multiple of
the block), at batch 1 and 3, ranks 2 to 5; some inputs hold NaN and infinities.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import teeny_ir
from dialects.kernel import LaunchOp
from teeny_ir import reference, runtime
from teeny_ir.backend import aot
from teeny_ir.core import derivations, pointwise
from teeny_ir.kernels import validator
from teeny_ir.kernels.channel_affine import tiles
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.lowering import families_of
from teeny_ir.kernels.render import render
from teeny_ir.testing import ELEMENTWISE_TOL, REDUCTION_TOL, assert_close
from teeny_ir.testing import kernels as harness
from teeny_ir.testing.kernels import Case, Results, View, launch_case, problems

SAFE_AT_INFINITY = ("none", "relu", "sigmoid", "tanh")
"""Activations whose value at +-inf is no IEEE exception (silu(-inf) = -inf * 0
is one, which numpy, running Triton's interpreter, warns about): the cases with
infinities use only these."""
BN = "batch_norm"
BIAS = "bias_add"


def _shape(shape: tuple[int | str, ...]) -> str:
    return "x".join(str(d) for d in shape)


def graph_text(op: str, shape: tuple[int, ...], eps: float = 1e-3, training: bool = False) -> str:
    """A one-op graph over ``tensor<?x...>`` of ``shape[1:]``: a batch norm over
    params ``bn.*`` or a bias_add of the param ``b``."""
    t = f"tensor<?x{_shape(shape[1:])}xf32>"
    v = f"tensor<{shape[1]}xf32>"
    if op == BN:
        params = "".join(
            f'  %{n} = graph.param "bn.{w}" : {v}\n'
            for n, w in (
                ("g", "weight"),
                ("b", "bias"),
                ("m", "running_mean"),
                ("v", "running_var"),
            )
        )
        mode = " training" if training else ""
        results = f"({t}, {v}, {v})" if training else t
        body = (
            f"  %y{', %rm, %rv' if training else ''} = graph.batch_norm %x, %g, %b, %m, %v "
            f"eps {eps!r}{mode} : ({t}, {v}, {v}, {v}, {v}) -> {results}\n"
        )
    else:
        params = f'  %b = graph.param "b" : {v}\n'
        body = f"  %y = graph.bias_add %x, %b : ({t}, {v}) -> {t}\n"
    return f"func.func @forward(%x: {t}) -> {t} {{\n{params}{body}  func.return %y : {t}\n}}\n"


def weights_for(op: str, channels: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Random weights: gamma of either sign, never near 0; positive variances."""
    if op == BIAS:
        return {"b": rng.standard_normal(channels).astype(np.float32)}
    sign = np.where(rng.random(channels) < 0.5, -1.0, 1.0)
    return {
        "bn.weight": (sign * rng.uniform(0.5, 1.5, channels)).astype(np.float32),
        "bn.bias": rng.standard_normal(channels).astype(np.float32),
        "bn.running_mean": rng.standard_normal(channels).astype(np.float32),
        "bn.running_var": rng.uniform(0.2, 2.0, channels).astype(np.float32),
    }


def lowered(op: str, shape: tuple[int, ...]) -> tuple[Any, LaunchOp]:
    """The graph module and its op's launch, from the family's lowering rule."""
    return harness.lowered(graph_text(op, shape), f"graph.{op}")


def _activate(activation: str, values: np.ndarray) -> np.ndarray:
    if activation == pointwise.NO_ACTIVATION:
        return values.astype(np.float64)
    entry, options = pointwise.parse_spelling(activation)
    result: np.ndarray = entry.evaluate(np, [values], options)
    return result


def affine_case(
    op: str,
    shape: tuple[int, ...],
    rng: np.random.Generator,
    activation: str = "none",
    extra_programs: int = 0,
    specials: bool = False,
    x_view: View | None = None,
    y_view: View | None = None,
    num_warps: int | None = None,
) -> Case:
    """One launch of ``graph.<op>`` on a random ``shape`` input (``specials``: NaN
    and +-inf among it), ``activation`` replacing the lowering's ``none``;
    ``x_view`` and ``y_view`` make the input and the output batch-strided channel
    slices, ``num_warps`` overrides the lowering's."""
    module, launch = lowered(op, shape)
    channels = shape[1]
    weights = weights_for(op, channels, rng)
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    if specials:
        assert activation in SAFE_AT_INFINITY, activation
        count = min(6, x.size)
        x.flat[rng.choice(x.size, count, replace=False)] = [
            np.nan,
            np.inf,
            -np.inf,
            np.nan,
            np.inf,
            -np.inf,
        ][:count]
    (normalised,) = reference.run(module, weights, [x])
    want = _activate(activation, normalised).astype(np.float32)
    warps = launch.num_warps if num_warps is None else num_warps
    case_id = (
        f"{op}-{_shape(shape)}-{activation}"
        + (f"-grid+{extra_programs}" if extra_programs else "")
        + ("-specials" if specials else "")
        + (f"-x@{x_view[1]}of{x_view[0]}" if x_view else "")
        + (f"-y@{y_view[1]}of{y_view[0]}" if y_view else "")
        + (f"-warps{warps}" if warps != launch.num_warps else "")
    )
    views = {name: view for name, view in (("x", x_view), ("y", y_view)) if view is not None}
    return launch_case(
        case_id,
        launch,
        shape[0],
        [x],
        [want],
        # An unmasked store reaches at most BLOCK elements past the end per program.
        pad=int(launch.constexpr_values["BLOCK"]) * (1 + extra_programs),
        # A batch norm is a norm; a bias add is elementwise.
        tol=REDUCTION_TOL if op == BN else ELEMENTWISE_TOL,
        weights=weights,
        views=views,
        constexprs={"ACTIVATION": activation},
        extra_programs=extra_programs,
        num_warps=warps,
    )


SHAPES = ((5, 7, 9), (37,), (3, 2, 5, 3), (6, 13, 11), (1, 1, 1))
"""Per image (C, ...): NCHW, rank 2 [N, C], rank 5, a bias-sized NCHW, one element."""
ACTIVATIONS = (pointwise.NO_ACTIVATION, *pointwise.epilogue_names())


def all_cases() -> list[Case]:
    rng = np.random.default_rng(11)
    cases = []
    for batch in (1, 3):
        for op in (BN, BIAS):
            for image in SHAPES:
                cases.append(affine_case(op, (batch, *image), rng))
            cases += [
                # Batch-strided views: the input, the output, both.
                affine_case(op, (batch, 5, 7, 9), rng, x_view=(8, 2)),
                affine_case(op, (batch, 5, 7, 9), rng, y_view=(7, 1)),
                affine_case(op, (batch, 37), rng, x_view=(40, 3), y_view=(39, 0)),
                affine_case(op, (batch, 3, 2, 5, 3), rng, x_view=(4, 1), y_view=(5, 2)),
                # NaN and infinities propagate.
                affine_case(op, (batch, 5, 7, 9), rng, specials=True),
                affine_case(op, (batch, 6, 13, 11), rng, "relu", specials=True, x_view=(9, 3)),
            ]
        # Every activation the slot takes.
        for activation in ACTIVATIONS:
            cases.append(affine_case(BN, (batch, 7, 5, 3), rng, activation))
            cases.append(affine_case(BIAS, (batch, 37), rng, activation, y_view=(38, 1)))
    cases += [
        # More programs than the tile model needs; more than one program per image.
        affine_case(BN, (3, 16, 13, 11), rng, "silu", extra_programs=2),
        affine_case(BIAS, (3, 5, 7, 9), rng, extra_programs=1, x_view=(6, 1), y_view=(9, 4)),
        affine_case(BN, (1, 3, 1, 1), rng, "tanh", extra_programs=2, y_view=(6, 3)),
        affine_case(BN, (3, 37), rng, "sigmoid", specials=True, extra_programs=1),
    ]
    emitted = {case.num_warps for case in cases}
    # Every num_warps the lowering emits and 1, 2, 4, 8: strided, batch 3, both ops.
    for warps in sorted({1, 2, 4, 8} - emitted):
        cases += [
            affine_case(
                BN, (3, 5, 7, 9), rng, "silu", x_view=(7, 1), y_view=(6, 1), num_warps=warps
            ),
            affine_case(BIAS, (3, 6, 13, 11), rng, x_view=(8, 0), num_warps=warps),
            affine_case(BN, (3, 37), rng, "relu", specials=True, num_warps=warps),
        ]
    return cases


def mutants() -> dict[str, Case]:
    """Cases run on mutated kernels, by what each mutation breaks, to show that
    the checks are not vacuous."""
    rng = np.random.default_rng(12)
    found = {
        # Images addressed as if contiguous.
        "x-contiguous": (
            affine_case(BN, (3, 5, 7, 9), rng, x_view=(6, 1)),
            ("x + image * x_batch_stride", "x + image * image_size"),
        ),
        "y-contiguous": (
            affine_case(BN, (3, 5, 7, 9), rng, y_view=(6, 1)),
            ("y + image * y_batch_stride", "y + image * image_size"),
        ),
        # The wrong channel's scale.
        "channel": (
            affine_case(BN, (3, 5, 7, 9), rng),
            ("channel = within // INNER", "channel = within % C"),
        ),
    }
    return {
        what: replace(case, id=f"mutant-{what}", mutation=mutation)
        for what, (case, mutation) in found.items()
    }


CASES = all_cases()
MUTANTS = mutants()
WARPS = sorted({case.num_warps for case in CASES})


HARNESS_CASES = [*CASES, *MUTANTS.values()]
"""What the `results` fixture (tests/conftest.py) runs, in one interpreter process."""


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_kernel_matches_the_reference(case: Case, results: Results) -> None:
    """Canaries intact, NaN and infinities where the reference has them (the
    gaps of a strided output stay NaN), the finite values within ``case.tol``."""
    assert problems(case, results) == []


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_every_case_is_a_valid_launch(case: Case) -> None:
    """The harness runs only launches the validator accepts (stride dims
    included; the parameter slots bound like pointers, each to its own [C] tensor)."""
    validator.validate(case.contract())


def test_the_checks_catch_mutated_kernels(results: Results) -> None:
    """Reading a strided input as contiguous reads the NaN between its images;
    writing a strided output as contiguous leaves images unwritten and writes
    gaps; the wrong channel's scale and shift give wrong values (and nothing else)."""
    x = " ".join(problems(MUTANTS["x-contiguous"], results))
    assert "NaN or infinite where the reference is finite" in x
    y = " ".join(problems(MUTANTS["y-contiguous"], results))
    assert "not NaN where it must stay NaN" in y
    (channel,) = problems(MUTANTS["channel"], results)
    assert channel.startswith("y: max|got - ref| = "), channel


def test_cases_cover_the_brief() -> None:
    ids = " ".join(case.id for case in CASES)
    assert "-specials" in ids
    for op in (BN, BIAS):
        mine = [case for case in CASES if case.id.startswith(op)]
        assert {case.tensors["x"][0][0] for case in mine} == {1, 3}, op
        assert {len(case.tensors["x"][0]) for case in mine} >= {2, 4, 5}, op
        for pointer in ("x", "y"):
            assert any(
                case.tensors[pointer][1] != math.prod(case.tensors[pointer][0][1:]) for case in mine
            ), (op, pointer)
        assert {case.constexprs["ACTIVATION"] for case in mine} == set(ACTIVATIONS), op
    for case in CASES:
        assert case.family == "channel_affine"
        for shape, _ in case.tensors.values():
            # No extent of the flat index space is a multiple of the block.
            assert math.prod(shape) % int(case.constexprs["BLOCK"]), case.id


def test_special_cases_have_nans_and_infinities() -> None:
    for case in CASES:
        if "-specials" in case.id and "-y@" not in case.id:
            (want,) = case.expected.values()
            assert np.isnan(want).any() and 0 < np.isnan(want).sum() < want.size // 2, case.id
            if case.constexprs["ACTIVATION"] in ("none", "relu"):
                assert np.isinf(want).any(), case.id


def test_every_num_warps_is_run() -> None:
    """The tiles choose 4 warps for every launch; the family also runs at 1, 2, 4 and 8."""
    assert tiles.launch_config() == (1024, 4, 1)
    assert WARPS == [1, 2, 4, 8]
    for op in (BN, BIAS):
        assert {case.num_warps for case in CASES if case.id.startswith(op)} == set(WARPS)


# ---------------------------------------------------------------- lowering


def test_lowering_emits_the_fold_derivations() -> None:
    """A standalone batch norm takes exactly the derivations the convolution fusion
    uses; a param bias takes fill(1.0) and identity; neither has a tensor operand
    but the input."""
    _, launch = lowered(BN, (1, 5, 7, 9))
    scale, shift = launch.param_slots
    assert scale.derivation == derivations.bn_scale("bn.weight", "bn.running_var", 1e-3, 5)
    assert shift.derivation == derivations.bn_shift(
        "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var", 1e-3, 5
    )
    assert len(launch.operands) == 1
    assert launch.constexpr_values == {"ACTIVATION": "none", "BLOCK": 1024}
    assert dict(launch.arg_bindings) == {
        "x": "in0",
        "scale": "param.scale",
        "shift": "param.shift",
        "y": "out0",
        "B": "B",
        "C": "5",
        "INNER": "63",
        "x_batch_stride": "315",
        "y_batch_stride": "315",
    }
    assert launch.grid == ("cdiv(B * 315, 1024)", "1", "1") or list(launch.grid) == [
        "cdiv(B * 315, 1024)",
        "1",
        "1",
    ]
    _, launch = lowered(BIAS, (1, 37))
    scale, shift = launch.param_slots
    assert scale.derivation == derivations.fill(1.0, [37])
    assert shift.derivation == derivations.identity("b", [37])
    assert dict(launch.arg_bindings)["INNER"] == "1"
    validator.validate(launch.contract())


def test_bias_add_goes_by_its_bias() -> None:
    """A param bias runs in channel_affine, an activation bias stays elementwise."""
    from dialects.graph.elementwise import BiasAddOp
    from dialects.graph.norm import BatchNormOp

    assert families_of(BiasAddOp) == ["channel_affine", "elementwise"]
    assert families_of(BatchNormOp) == ["batch_norm_train", "channel_affine"]
    text = """\
func.func @forward(%x: tensor<?x4x3x3xf32>, %c: tensor<4xf32>) -> (tensor<?x4x3x3xf32>, tensor<?x4x3x3xf32>) {
  %b = graph.param "b" : tensor<4xf32>
  %y = graph.bias_add %x, %b : (tensor<?x4x3x3xf32>, tensor<4xf32>) -> tensor<?x4x3x3xf32>
  %z = graph.bias_add %x, %c : (tensor<?x4x3x3xf32>, tensor<4xf32>) -> tensor<?x4x3x3xf32>
  func.return %y, %z : tensor<?x4x3x3xf32>, tensor<?x4x3x3xf32>
}
"""
    module = teeny_ir.parse_module(text)
    teeny_ir.PassManager.parse("lower-graph-to-kernel").run(module)
    launches = [o for o in module.walk() if isinstance(o, LaunchOp)]
    assert [o.family for o in launches] == ["channel_affine", "elementwise"]
    assert [len(o.operands) for o in launches] == [1, 2]


def _refusal(text: str) -> str:
    module = teeny_ir.parse_module(text, filename="bn.mlir")
    with pytest.raises(teeny_ir.DiagnosticError) as caught:
        teeny_ir.PassManager.parse("lower-graph-to-kernel").run(module)
    return str(caught.value)


def test_a_training_batch_norm_is_not_channel_affines() -> None:
    """channel_affine's rule takes only the inference form; batch_norm_train the other."""
    module = teeny_ir.parse_module(graph_text(BN, (1, 5, 7, 9), training=True))
    teeny_ir.PassManager.parse("lower-graph-to-kernel").run(module)
    assert [o.family for o in module.walk() if isinstance(o, LaunchOp)] == ["batch_norm_train"]


def test_a_batch_norm_with_activation_statistics_is_refused() -> None:
    t, v = "tensor<?x4x3x3xf32>", "tensor<4xf32>"
    text = f"""\
func.func @forward(%x: {t}, %m: {v}) -> {t} {{
  %g = graph.param "g" : {v}
  %b = graph.param "b" : {v}
  %v = graph.param "v" : {v}
  %y = graph.batch_norm %x, %g, %b, %m, %v : ({t}, {v}, {v}, {v}, {v}) -> {t}
  func.return %y : {t}
}}
"""
    message = _refusal(text)
    assert re.search(
        r"bn\.mlir:5:\d+: error: cannot lower 'graph\.batch_norm' to a kernel: its running "
        r"mean is not a graph\.param",
        message,
    ), message


def _rebound(launch: LaunchOp, strides: dict[str, int], **changes: str) -> Any:
    """``launch``'s contract with some tensors batch-strided and some dims rebound."""
    contract = launch.contract()
    args = tuple((name, changes.get(name, value)) for name, value in contract.args)
    return replace(contract, args=args, strides=tuple(strides.items()))


@pytest.mark.parametrize("op", [BN, BIAS])
def test_the_validator_holds_the_dims_and_strides(op: str) -> None:
    _, launch = lowered(op, (1, 5, 7, 9))
    image, view = 5 * 7 * 9, 8 * 7 * 9
    validator.validate(_rebound(launch, {"in0": view}, x_batch_stride=str(view)))
    validator.validate(_rebound(launch, {"out0": view + 3}, y_batch_stride=str(view + 3)))
    for strides, changes, message in (
        (
            {"in0": view},
            {},
            f"argument 'x_batch_stride' = '{image}' is {image} at B = 1, but 'in0' "
            f"\\(bound to 'x'\\) has batch stride {view}",
        ),
        ({}, {"y_batch_stride": f"B * {image}"}, "is .* at B = 2, but 'out0'"),
        ({}, {"INNER": "62"}, "argument 'INNER' = '62' is 62"),
        ({}, {"C": "6"}, "argument 'C' = '6' is 6"),
    ):
        with pytest.raises(validator.ContractError, match=message):
            validator.validate(_rebound(launch, strides, **changes))
    short = replace(launch.contract(), grid=("cdiv(B * 315, 1024) - floordiv(B, 8)", "1", "1"))
    with pytest.raises(validator.ContractError, match="tile model of 'channel_affine' needs"):
        validator.validate(short)


# ---------------------------------------------------------------- AOT

ARCHS = (80, 90)
AOT = [("none", warps) for warps in WARPS] + [
    (activation, tiles.NUM_WARPS) for activation in pointwise.epilogue_names()
]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize(("activation", "warps"), AOT)
def test_compiles_ahead_of_time(
    activation: str, warps: int, arch: int, tmp_path: Path, triton_cache: None
) -> None:
    _, launch = lowered(BN, (1, 5, 7, 9))
    family = FAMILIES["channel_affine"]
    constexprs = {**launch.constexpr_values, "ACTIVATION": activation}
    name = "channel_affine_0"
    path = tmp_path / f"{name}.py"
    path.write_text(render(family, name, constexprs))
    compiled = aot.compile_variant(path, name, family, constexprs, arch, warps, launch.num_stages)
    assert f".target sm_{arch}" in compiled.ptx
    assert compiled.cubin[:4] == b"\x7fELF"
    assert compiled.num_warps == warps
    assert re.search(rf"\.reqntid {32 * warps}\b", compiled.ptx)  # threads per block
    match = re.search(rf"\.entry\s+{name}\s*\((.*?)\)", compiled.ptx, re.DOTALL)
    assert match is not None, "no .entry in the PTX"
    params = re.findall(
        r"\.param\s+\.\w+\s+(?:\.ptr\s+\S+\s+)?(?:\.align\s+\d+\s+)?(\w+)", match[1]
    )
    assert len(params) == len(family.args) + 2  # plus Triton's global and profile scratch
    aot.check_shared(compiled)


# ---------------------------------------------------------------- end to end

T = "tensor<?x5x7x9xf32>"
V = "tensor<5xf32>"
E2E_BN_RELU = f"""\
func.func @forward(%x: {T}) -> {T} {{
  %g = graph.param "bn.weight" : {V}
  %b = graph.param "bn.bias" : {V}
  %m = graph.param "bn.running_mean" : {V}
  %v = graph.param "bn.running_var" : {V}
  %n = graph.batch_norm %x, %g, %b, %m, %v eps 1.000000e-03 : ({T}, {V}, {V}, {V}, {V}) -> {T}
  %y = graph.relu %n : {T}
  func.return %y : {T}
}}
"""
E2E_BIAS = f"""\
func.func @forward(%x: {T}, %c: {V}) -> ({T}, {T}) {{
  %b = graph.param "b" : {V}
  %y = graph.bias_add %x, %b : ({T}, {V}) -> {T}
  %z = graph.bias_add %y, %c : ({T}, {V}) -> {T}
  func.return %y, %z : {T}, {T}
}}
"""
R5 = "tensor<?x3x4x5x2xf32>"
R6 = "tensor<?x2x3x4x5x3xf32>"
E2E_BROADCAST = f"""\
func.func @forward(%x: tensor<?x3x1x5x2xf32>, %y: tensor<1x4x1x2xf32>, %u: tensor<?x1x3x1x5x1xf32>, %w: tensor<2x1x4x1x3xf32>) -> ({R5}, {R6}, {R6}) {{
  %a = graph.add %x, %y : (tensor<?x3x1x5x2xf32>, tensor<1x4x1x2xf32>) -> {R5}
  %b = graph.mul %u, %w : (tensor<?x1x3x1x5x1xf32>, tensor<2x1x4x1x3xf32>) -> {R6}
  %c = graph.sub %b, %u : ({R6}, tensor<?x1x3x1x5x1xf32>) -> {R6}
  func.return %a, %b, %c : {R5}, {R6}, {R6}
}}
"""


def _end_to_end(
    text: str, tmp_path: Path, inputs: Any, weights: dict[str, np.ndarray], tol: float
) -> list[str]:
    """Compile ``text`` with teeny-inference and emit-triton, run it at batch 1
    and 3, compare with the reference; the launches' families."""
    graph = teeny_ir.parse_module(text, filename="e2e.mlir")
    kernels = teeny_ir.parse_module(text, filename="e2e.mlir")
    out = tmp_path / "out"
    teeny_ir.PassManager.parse(f"teeny-inference,emit-triton{{out-dir={out}}}").run(kernels)
    executable = runtime.load(out)
    rng = np.random.default_rng(3)
    for batch in (1, 3):
        args = inputs(batch, rng)
        got = executable.run(args, weights)
        want = reference.run(graph, weights, args)
        assert [g.shape for g in got] == [w.shape for w in want]
        assert all(w.shape[0] == batch for w in want)
        assert_close(got, want, tol)
    return [o.family for o in kernels.walk() if isinstance(o, LaunchOp)]


def test_standalone_batch_norm_and_relu_end_to_end(tmp_path: Path) -> None:
    weights = weights_for(BN, 5, np.random.default_rng(1))

    def inputs(batch: int, rng: np.random.Generator) -> list[np.ndarray]:
        return [(rng.standard_normal((batch, 5, 7, 9)) * 3).astype(np.float32)]

    families = _end_to_end(E2E_BN_RELU, tmp_path, inputs, weights, REDUCTION_TOL)
    # fuse-conv-bn-act folds the relu into the batch norm: one launch, ACTIVATION relu.
    assert families == ["channel_affine"]


def test_param_bias_add_end_to_end(tmp_path: Path) -> None:
    weights = weights_for(BIAS, 5, np.random.default_rng(2))

    def inputs(batch: int, rng: np.random.Generator) -> list[np.ndarray]:
        x = rng.standard_normal((batch, 5, 7, 9)).astype(np.float32)
        return [x, rng.standard_normal(5).astype(np.float32)]

    families = _end_to_end(E2E_BIAS, tmp_path, inputs, weights, ELEMENTWISE_TOL)
    assert families == ["channel_affine", "elementwise"]


def test_rank_5_and_6_broadcasts_end_to_end(tmp_path: Path) -> None:
    def inputs(batch: int, rng: np.random.Generator) -> list[np.ndarray]:
        shapes = ((batch, 3, 1, 5, 2), (1, 4, 1, 2), (batch, 1, 3, 1, 5, 1), (2, 1, 4, 1, 3))
        return [rng.standard_normal(s).astype(np.float32) for s in shapes]

    families = _end_to_end(E2E_BROADCAST, tmp_path, inputs, {}, ELEMENTWISE_TOL)
    assert families == ["elementwise"] * 3


E2E_VIEWS = """\
func.func @forward(%x: tensor<?x5x7x9xf32>) -> tensor<?x5x7x9xf32> {
  %g = graph.param "bn.weight" : tensor<3xf32>
  %b = graph.param "bn.bias" : tensor<3xf32>
  %m = graph.param "bn.running_mean" : tensor<3xf32>
  %v = graph.param "bn.running_var" : tensor<3xf32>
  %c = graph.param "b" : tensor<2xf32>
  %p, %q = graph.split %x axis 1 sizes [2, 3] : (tensor<?x5x7x9xf32>) -> (tensor<?x2x7x9xf32>, tensor<?x3x7x9xf32>)
  %n = graph.batch_norm %q, %g, %b, %m, %v : (tensor<?x3x7x9xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<?x3x7x9xf32>
  %a = graph.bias_add %p, %c : (tensor<?x2x7x9xf32>, tensor<2xf32>) -> tensor<?x2x7x9xf32>
  %y = graph.concat %n, %a axis 1 : (tensor<?x3x7x9xf32>, tensor<?x2x7x9xf32>) -> tensor<?x5x7x9xf32>
  func.return %y : tensor<?x5x7x9xf32>
}
"""
"""Both launches read a split's part (a view) and write their part of the concat
in place (a view): every pointer of the family bound to a view, end to end."""


def test_views_end_to_end(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    weights = {**weights_for(BN, 3, rng), **weights_for(BIAS, 2, rng)}

    def inputs(batch: int, rng: np.random.Generator) -> list[np.ndarray]:
        return [rng.standard_normal((batch, 5, 7, 9)).astype(np.float32)]

    families = _end_to_end(E2E_VIEWS, tmp_path, inputs, weights, REDUCTION_TOL)
    assert families == ["channel_affine", "channel_affine"]
    kernels = teeny_ir.parse_module(E2E_VIEWS)
    teeny_ir.PassManager.parse("teeny-inference").run(kernels)
    launches = [o for o in kernels.walk() if isinstance(o, LaunchOp)]
    for launch in launches:
        bindings = dict(launch.arg_bindings)
        assert bindings["x_batch_stride"] == bindings["y_batch_stride"] == "315", bindings
