"""The kernel families' Triton sources, rendered and run in Triton's interpreter
against the numpy semantics of the pointwise table.

The kernels run in one harness process (`teeny_ir.testing.kernels.run_cases`)
for all correctness cases and the mutants. Every output is canary-padded on
both sides (see the harness) because the interpreter does not bounds-check: a missing store mask shows up as a changed canary, an
element never written as a NaN, an unmasked tail read of an input as NaN.

Shapes are chosen so that no extent is a multiple of its tile (numel vs
BLOCK; M, C_OUT, C_IN vs BLOCK_M, BLOCK_N, BLOCK_K), with batch 1 and 3, and
some grids launch more programs than the tile model needs.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from teeny_ir.core import pointwise
from teeny_ir.kernels.elementwise.contract import RANK as ELEMENTWISE_RANK
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.render import render as render_variant
from teeny_ir.testing import ELEMENTWISE_TOL, REDUCTION_TOL
from teeny_ir.testing.kernels import Case, Results, problems
from teeny_ir.testing.variants import variants


def render(family: str, constexprs: dict[str, int | str], name: str) -> str:
    return render_variant(FAMILIES[family], name, constexprs)


def _evaluate(spelling: str, *operands: np.ndarray) -> np.ndarray:
    """What the pointwise table's numpy semantics give for ``spelling``, in float64."""
    if spelling == pointwise.NO_ACTIVATION:
        return operands[0].astype(np.float64)
    entry, options = pointwise.parse_spelling(spelling)
    result: np.ndarray = entry.evaluate(np, list(operands), options)
    with np.errstate(over="ignore"):  # the kernel's float32: exp(100) is inf
        return result.astype(np.float32).astype(np.float64)


# ---------------------------------------------------------------- elementwise


def _padded(shape: tuple[int, ...]) -> tuple[int, ...]:
    return (1,) * (ELEMENTWISE_RANK - len(shape)) + shape


def _broadcast_strides(shape: tuple[int, ...]) -> list[int]:
    padded = _padded(shape)
    strides = [int(s) for s in np.cumprod((*padded[1:], 1)[::-1])[::-1]]
    return [0 if extent == 1 else stride for extent, stride in zip(padded, strides, strict=True)]


SAFE_NEGATIVE_INFINITY = ("relu", "sigmoid", "tanh", "leaky_relu")
"""Unary entries whose value at -inf is no IEEE exception (silu(-inf) = -inf * 0
is one, and numpy, which runs Triton's interpreter, warns on it; see
test_specials.py): the special-value cases feed -inf only to these."""


def _specials(array: np.ndarray, values: list[float], rng: np.random.Generator) -> None:
    """Put ``values`` at random distinct positions of ``array`` (in place)."""
    count = min(len(values), array.size)
    array.flat[rng.choice(array.size, count, replace=False)] = values[:count]


def elementwise_case(
    op: str,
    x_shape: tuple[int, ...],
    y_shape: tuple[int, ...] | None,
    block: int,
    rng: np.random.Generator,
    extra_programs: int = 0,
    specials: bool = False,
) -> Case:
    """One elementwise launch; with ``specials``, ``x`` holds NaN and +-inf (-inf
    only for the entries of `SAFE_NEGATIVE_INFINITY` and binary ones) and ``y``
    NaN, where the results are NaN or inf without an IEEE exception from finite
    operands (``y`` is finite and nonzero elsewhere)."""
    x = (rng.standard_normal(x_shape) * 4).astype(np.float32)
    x.flat[: min(4, x.size)] = [-1e4, -100.0, 100.0, 0.0][: min(4, x.size)]
    if pointwise.parse_spelling(op)[0].positive_domain:  # log, sqrt, pow's base
        x = np.abs(x)
    unary = y_shape is None
    if specials:
        name = op.partition("(")[0]
        negative = [] if unary and name not in SAFE_NEGATIVE_INFINITY else [-np.inf]
        _specials(x, [np.nan, np.inf, *negative, np.nan], rng)
    if y_shape is None:
        y, out_shape = np.full((1,), np.nan, np.float32), x_shape
        y_strides = [0] * ELEMENTWISE_RANK
        expected = _evaluate(op, x)
    else:
        y = rng.standard_normal(y_shape).astype(np.float32)
        y[np.abs(y) < 0.01] = 0.5  # no division by (nearly) zero
        if specials:
            _specials(y, [np.nan], rng)
        out_shape = np.broadcast_shapes(x_shape, y_shape)
        y_strides = _broadcast_strides(y_shape)
        expected = _evaluate(op, x, y)
    numel = math.prod(out_shape)
    size = _padded(tuple(out_shape))
    x_strides = _broadcast_strides(x_shape)
    args: dict[str, Any] = {"x": x, "y": y, "out": ("output", numel), "numel": numel}
    args |= {f"size{i}": size[i] for i in range(1, ELEMENTWISE_RANK)}
    args |= {f"x_stride{i}": x_strides[i] for i in range(ELEMENTWISE_RANK)}
    args |= {f"y_stride{i}": y_strides[i] for i in range(ELEMENTWISE_RANK)}
    return Case(
        id=f"{op.replace(' ', '')}-{'x'.join(map(str, x_shape))}"
        + (f"-by-{'x'.join(map(str, y_shape))}" if y_shape else "")
        + f"-block{block}"
        + (f"-grid+{extra_programs}" if extra_programs else "")
        + ("-specials" if specials else ""),
        family="elementwise",
        constexprs={"OP": op, "BLOCK": block},
        args=list(args.items()),
        grid=math.ceil(numel / block) + extra_programs,
        # An unmasked store reaches at most BLOCK elements past the end per extra program.
        pad=block * (1 + extra_programs),
        tol=ELEMENTWISE_TOL,
        expected={"out": np.broadcast_to(expected, out_shape).ravel()},
    )


ODD = (3, 5, 3, 7, 2, 5)
"""Odd extents for ranks 1..6 (a 2 among them; no extent a power of two but it)."""


def broadcast_shapes(rank: int, batch: int) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """(x, y) shapes of rank ``rank`` (batch ``batch`` first when rank >= 2) that
    broadcast on every axis in turn, each operand once, plus a y of lower rank and
    one broadcast on every other axis (nothing to coalesce)."""
    full = (batch, *ODD[1:rank]) if rank >= 2 else ODD[:1]
    pairs = []
    for axis in range(rank):
        reduced = tuple(1 if k == axis else d for k, d in enumerate(full))
        pairs += [(full, reduced), (reduced, full)]
    if rank >= 2:
        pairs.append((full, full[1:]))  # y left-padded: broadcast along the batch
        pairs.append((full[-1:], full))  # x of rank 1
        alternate = tuple(1 if k % 2 else d for k, d in enumerate(full))
        other = tuple(d if k % 2 else 1 for k, d in enumerate(full))
        pairs.append((alternate, other))
    return list(dict.fromkeys(pairs))


def elementwise_cases(rng: np.random.Generator) -> list[Case]:
    cases: list[Case] = []
    unary = [e for e in pointwise.TABLE if e.arity == 1 and not e.options]
    binary = [e for e in pointwise.TABLE if e.arity == 2]
    optioned = [v.spelling for v in variants(arity=1) if v.entry.options]
    for entry in unary:
        cases.append(elementwise_case(entry.name, (2, 5, 7, 9), None, 128, rng))
    for spelling in optioned:
        cases.append(elementwise_case(spelling, (2, 5, 7, 9), None, 128, rng))
    cases.append(elementwise_case(unary[0].name, (3, 1000), None, 1024, rng, extra_programs=2))
    for entry in binary:
        for x_shape, y_shape in (
            ((2, 5, 7, 9), (5, 1, 1)),
            ((2, 5, 7, 9), (1, 5, 1, 9)),
            ((2, 5, 7, 9), (2, 5, 7, 9)),
            ((5, 1, 1), (3, 5, 7, 9)),
            ((6, 11), (11,)),
        ):
            cases.append(elementwise_case(entry.name, x_shape, y_shape, 128, rng))
    cases.append(elementwise_case("add", (3, 16, 13, 11), (16, 1, 1), 1024, rng, extra_programs=1))
    # Ranks 1..6, broadcasting on every axis, batch 1 and 3.
    for rank in range(1, ELEMENTWISE_RANK + 1):
        for batch in (1, 3) if rank >= 2 else (1,):
            for pair in broadcast_shapes(rank, batch):
                cases.append(elementwise_case("add", *pair, 64, rng))
    # Every binary entry at rank 5 and 6, alternating broadcasts, with specials.
    high: list[tuple[tuple[int, ...], tuple[int, ...]]] = [
        ((3, 1, 3, 1, 5), (1, 5, 1, 7, 5)),
        ((3, 1, 3, 1, 2, 1), (1, 5, 1, 7, 1, 5)),
        ((1, 5, 3, 7, 2, 5), (3, 1, 1, 5)),
    ]
    for entry in binary:
        for pair in high:
            cases.append(elementwise_case(entry.name, *pair, 128, rng))
            cases.append(elementwise_case(entry.name, *pair, 128, rng, specials=True))
    # Every unary entry at rank 6 (and an odd rank 5 one) with NaN and infinities.
    for spelling in (*(e.name for e in unary), *optioned):
        cases.append(elementwise_case(spelling, (3, 5, 3, 7, 2, 5), None, 256, rng, specials=True))
        cases.append(elementwise_case(spelling, (1, 3, 5, 3, 7), None, 128, rng, specials=True))
    cases.append(
        elementwise_case("mul", (3, 1, 3, 1, 2, 5), (5,), 128, rng, extra_programs=2, specials=True)
    )
    return cases


# ---------------------------------------------------------------- conv1x1_gemm


def gemm_case(
    c_in: int,
    c_out: int,
    spatial: tuple[int, int],
    batch: int,
    activation: str,
    tiles: tuple[int, int, int],
    rng: np.random.Generator,
    group_m: int = 8,
    image_gap: int = 0,
    extra_images: int = 0,
) -> Case:
    """A conv1x1_gemm launch without residual (``r`` bound to a copy of ``x``,
    never read); with ``image_gap``, the output's images lie that many elements
    apart beyond their size (a batch-strided view) and the gaps must stay NaN.
    Strided inputs and residuals are tested in test_gemm_epilogue.py."""
    block_m, block_n, block_k = tiles
    m = spatial[0] * spatial[1]
    x = rng.standard_normal((batch, c_in, m)).astype(np.float32)
    w = (rng.standard_normal((c_out, c_in)) / np.sqrt(c_in)).astype(np.float32)
    scale = rng.uniform(0.5, 1.5, c_out).astype(np.float32)
    shift = rng.standard_normal(c_out).astype(np.float32)
    acc = np.einsum("nk,bkm->bnm", w.astype(np.float64), x.astype(np.float64))
    ref = _evaluate(activation, acc * scale[:, None].astype(np.float64) + shift[:, None])
    image = c_out * m
    y_stride = image + image_gap
    expected = np.full((batch, y_stride), np.nan)
    expected[:, :image] = ref.reshape(batch, image)
    numel = (batch - 1) * y_stride + image
    tiles_per_image = math.ceil(m / block_m) * math.ceil(c_out / block_n)
    args: dict[str, Any] = {
        "x": x,
        "w": w,
        "scale": scale,
        "shift": shift,
        "r": x,
        "y": ("output", numel),
        "B": batch,
        "C_IN": c_in,
        "C_OUT": c_out,
        "M": m,
        "x_batch_stride": c_in * m,
        "r_batch_stride": c_in * m,
        "y_batch_stride": y_stride,
        "HAS_RESIDUAL": 0,
    }
    return Case(
        id=f"cin{c_in}-cout{c_out}-{spatial[0]}x{spatial[1]}-b{batch}-{activation}"
        + f"-tiles{block_m}x{block_n}x{block_k}-g{group_m}"
        + (f"-gap{image_gap}" if image_gap else "")
        + (f"-images+{extra_images}" if extra_images else ""),
        family="conv1x1_gemm",
        constexprs={
            "BLOCK_M": block_m,
            "BLOCK_N": block_n,
            "BLOCK_K": block_k,
            "GROUP_M": group_m,
            "ACTIVATION": activation,
        },
        args=list(args.items()),
        grid=(batch + extra_images) * tiles_per_image,
        # An unmasked store reaches at most BLOCK_N rows and BLOCK_M columns past the
        # last image, plus the images of extra programs.
        pad=extra_images * y_stride + block_n * m + block_m,
        tol=REDUCTION_TOL,
        expected={"y": expected.ravel()[:numel]},
    )


def all_cases() -> list[Case]:
    rng = np.random.default_rng(42)
    cases = elementwise_cases(rng)
    activations = (pointwise.NO_ACTIVATION, *pointwise.epilogue_names())
    for channels in (5, 32, 37, 48):
        for batch in (1, 3):
            for activation in activations:
                cases.append(
                    gemm_case(channels, channels, (7, 9), batch, activation, (64, 64, 32), rng)
                )
    # Several tiles per axis, partial GROUP_M groups, k tails, gaps between output
    # images, extra programs.
    cases.append(gemm_case(37, 70, (13, 11), 3, "silu", (32, 32, 16), rng, group_m=2))
    cases.append(gemm_case(21, 40, (9, 15), 3, "relu", (16, 16, 8), rng, group_m=3, image_gap=29))
    cases.append(gemm_case(48, 33, (7, 9), 1, "sigmoid", (64, 32, 16), rng, extra_images=2))
    return cases


def _store_mask_edit(text: str) -> tuple[str, str]:
    """The edit dropping the mask of the template's (single) store: masks are the
    last keyword."""
    _, store = text.split("tl.store(")
    masked = store.rindex("mask=")
    closing = store.index(")", masked)
    return "tl.store(" + store[:closing], "tl.store(" + store[:masked]


def _without_store_mask(case: Case) -> Case:
    old, new = _store_mask_edit(render(case.family, case.constexprs, f"{case.family}_0"))
    return replace(case, id=f"mutant-no-store-mask-{case.id}", mutation=(old, new))


def _dropped_stride(axis: int) -> Case:
    """A kernel that forgets dimension ``axis`` of x."""
    case = elementwise_case("add", (3, 5, 3, 7, 2, 5), (5,), 128, np.random.default_rng(9))
    return replace(case, id=f"mutant-no-x-dim{axis}", mutation=(f"+ i{axis} * x_stride{axis}", ""))


CASES = all_cases()
STORE_MUTANTS = [
    _without_store_mask(case)
    for case in (
        elementwise_case("relu", (2, 5, 7, 9), None, 128, np.random.default_rng(7)),
        gemm_case(37, 37, (7, 9), 1, "none", (64, 64, 32), np.random.default_rng(7)),
    )
]
STRIDE_MUTANTS = {axis: _dropped_stride(axis) for axis in (1, 4)}


HARNESS_CASES = [*CASES, *STORE_MUTANTS, *STRIDE_MUTANTS.values()]
"""What the `results` fixture (tests/conftest.py) runs, in one interpreter process."""


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_template_matches_numpy(case: Case, results: Results) -> None:
    """Canaries intact; NaN where the result is NaN or was never to be written
    (a gap between output images); infinities exactly, with their sign; the
    finite values within ``case.tol``."""
    assert problems(case, results) == []


def test_removing_store_mask_is_caught(results: Results) -> None:
    """The canary check is not vacuous: a template whose store lost its mask
    writes into the padding, and the check reports it."""
    for case in STORE_MUTANTS:
        assert "canaries after the view overwritten" in " ".join(problems(case, results)), case.id


def test_mutation_removes_exactly_the_store_mask() -> None:
    for family, constexprs in (
        ("elementwise", {"OP": "relu", "BLOCK": 128}),
        ("conv1x1_gemm", {"ACTIVATION": "none"}),
    ):
        text = render(family, constexprs, f"{family}_0")
        old, new = _store_mask_edit(text)
        assert text.count(old) == 1, family
        mutated = text.replace(old, new)
        store = mutated.split("tl.store(")[1]
        assert "mask=" not in store[: store.index(")")], family
        assert mutated.replace(" ", "").replace("\n", "") != text.replace(" ", "").replace("\n", "")
        compile(mutated, f"{family}_0.py", "exec")


# ---------------------------------------------------------------- elementwise at rank 6


def test_elementwise_cases_cover_every_rank_and_axis() -> None:
    """Ranks 1..6 with each axis broadcast in turn, in either operand, batch 1
    and 3; special values in cases that really produce NaN and infinities."""
    mine = [case for case in CASES if case.family == "elementwise"]
    shapes = {(case.arg("x").shape, case.arg("y").shape) for case in mine}
    for rank in range(1, ELEMENTWISE_RANK + 1):
        for batch in (1, 3) if rank >= 2 else (1,):
            for pair in broadcast_shapes(rank, batch):
                assert pair in shapes, pair
    for rank in range(2, ELEMENTWISE_RANK + 1):
        full = broadcast_shapes(rank, 3)[0][0]
        for axis in range(rank):
            reduced = tuple(1 if k == axis else d for k, d in enumerate(full))
            assert (full, reduced) in shapes and (reduced, full) in shapes, (rank, axis)
    specials = [case for case in mine if case.id.endswith("-specials")]
    ops = {str(case.constexprs["OP"]) for case in specials}
    assert ops >= {e.name for e in pointwise.TABLE if not e.options}
    for case in specials:
        (expected,) = case.expected.values()
        assert np.isinf(case.arg("x")).any(), case.id
        assert np.isnan(expected).any(), case.id
        # An entry whose table value at +-inf is finite saturates (sigmoid, tanh).
        op = str(case.constexprs["OP"])
        arity = pointwise.parse_spelling(op)[0].arity
        with np.errstate(invalid="ignore"):
            ends = _evaluate(op, *[np.array([np.inf, -np.inf])] * arity)
        if np.isinf(ends).any():  # (softsign, sin, cos are NaN at +-inf)
            assert np.isinf(expected).any(), case.id
        assert np.isfinite(expected).mean() > 0.5, case.id


@pytest.mark.parametrize("axis", sorted(STRIDE_MUTANTS))
def test_dropping_a_dimension_is_caught(axis: int, results: Results) -> None:
    """The rank-6 cases are not vacuous: a kernel that ignores one dimension of x
    gives wrong values."""
    found = " ".join(problems(STRIDE_MUTANTS[axis], results))
    assert "out: max|got - ref|" in found or ("out: " in found and "NaN" in found), found


def _lowered_elementwise(text: str) -> list[Any]:
    import teeny_ir
    from dialects.kernel import LaunchOp

    module = teeny_ir.parse_module(text)
    teeny_ir.PassManager.parse("lower-graph-to-kernel").run(module)
    return [op for op in module.walk() if isinstance(op, LaunchOp)]


RANK6 = """\
func.func @forward(%x: tensor<?x1x3x1x5x1xf32>, %y: tensor<2x1x4x1x3xf32>) -> tensor<?x2x3x4x5x3xf32> {
  %z = graph.add %x, %y : (tensor<?x1x3x1x5x1xf32>, tensor<2x1x4x1x3xf32>) -> tensor<?x2x3x4x5x3xf32>
  func.return %z : tensor<?x2x3x4x5x3xf32>
}
"""


def test_rank_6_lowers_with_exact_footprints() -> None:
    """A rank-6 broadcast lowers to one launch whose strides read each operand
    numpy's way; the validator proves its footprints, and a stride that would
    reach past an operand is refused."""
    from dataclasses import replace

    from teeny_ir.kernels import validator

    (launch,) = _lowered_elementwise(RANK6)
    bindings = dict(launch.arg_bindings)
    assert [bindings[f"size{k}"] for k in range(1, 6)] == ["2", "3", "4", "5", "3"]
    assert [bindings[f"x_stride{k}"] for k in range(6)] == ["15", "0", "5", "0", "1", "0"]
    assert [bindings[f"y_stride{k}"] for k in range(6)] == ["0", "12", "0", "3", "0", "1"]
    contract = launch.contract()
    validator.validate(contract)
    wrong = tuple((n, "6" if n == "x_stride2" else b) for n, b in contract.args)
    with pytest.raises(validator.ContractError, match="x_stride2"):
        validator.validate(replace(contract, args=wrong))


def test_rank_7_is_refused() -> None:
    import teeny_ir

    t = "tensor<?x2x1x2x1x2x3xf32>"
    text = f"func.func @forward(%x: {t}) -> {t} {{\n  %y = graph.relu %x : {t}\n  func.return %y : {t}\n}}\n"
    with pytest.raises(teeny_ir.DiagnosticError, match="rank 7 exceeds the elementwise family's 6"):
        _lowered_elementwise(text)
