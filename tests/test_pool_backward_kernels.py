"""The ``max_pool2d_backward`` and ``avg_pool2d_backward`` kernel families: Triton's
interpreter against the reference semantics, the validator's view of their
launches, AOT compilation, and a graph end to end through
``lower-graph-to-kernel``, ``emit-triton`` and the runtime.

Each kernel case is one ``graph.max_pool2d_backward`` or
``graph.avg_pool2d_backward`` written as IR with a dynamic batch and lowered by
the family's ``@lowers`` rule: the constexprs, dims and grid are what the
compiler emits at the case's batch; some cases shrink ``BLOCK`` so many
programs run, some launch more programs than the tile model needs. All cases
and mutants run in one harness process (`teeny_ir.testing.kernels.run_cases`)
with NaN-padded inputs and canary-padded, NaN-filled outputs (an unwritten element stays NaN, a write
out of bounds overwrites a canary). The expected dx is the float64 reference's
(teeny_ir/reference/pool.py), ties and NaN included: PyTorch's CPU rule (the
first maximum in row-major window order; a NaN takes over); the max cases are
also held to torch autograd of ``F.max_pool2d`` itself (kernel sizes 1 x 33 to
13 x 13, strides 1 to 4, paddings 0 to 6, dilation, ceil mode, ties, NaN, -inf).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import teeny_ir
from dialects.graph import pool
from dialects.kernel import LaunchOp
from teeny_ir import reference, runtime
from teeny_ir.backend import aot
from teeny_ir.kernels import validator
from teeny_ir.kernels.avg_pool2d_backward import tiles as avg_tiles
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.lowering import Unlowerable
from teeny_ir.kernels.max_pool2d_backward import tiles as max_tiles
from teeny_ir.kernels.render import render
from teeny_ir.testing import REDUCTION_TOL, assert_close
from teeny_ir.testing import kernels as harness
from teeny_ir.testing.kernels import Case, Results, launch_case, problems


def _shape(shape: tuple[int, ...]) -> str:
    return "x".join(str(d) for d in shape)


def _options(text: str) -> dict[str, list[int]]:
    """``kernel [3, 3] ceil_mode`` -> {"kernel": [3, 3], "ceil_mode": []}."""
    found: dict[str, list[int]] = {}
    rest = text.strip()
    while rest:
        word, _, rest = rest.partition(" ")
        rest = rest.strip()
        if rest.startswith("["):
            values, _, rest = rest[1:].partition("]")
            found[word] = [int(v) for v in values.split(",")]
            rest = rest.strip()
        else:
            found[word] = []
    return found


def dy_shape(options: str, x_shape: tuple[int, ...]) -> tuple[int, ...]:
    """The forward pool's result shape (the gradient's), by the op's own rule."""
    words = _options(options)
    kernel = words["kernel"]
    return tuple(
        pool.infer_pool2d_shape(
            list(x_shape),
            kernel,
            words.get("strides", kernel),
            words.get("padding", [0, 0, 0, 0]),
            words.get("dilation", [1, 1]),
            "ceil_mode" in words,
        )
    )


def graph_text(kind: str, options: str, x_shape: tuple[int, ...]) -> str:
    """One ``graph.<kind>_pool2d_backward`` over a dynamic batch."""
    x = f"tensor<?x{_shape(x_shape[1:])}xf32>"
    dy = f"tensor<?x{_shape(dy_shape(options, x_shape)[1:])}xf32>"
    if kind == "max":
        return (
            f"func.func @forward(%x: {x}, %dy: {dy}) -> {x} {{\n"
            f"  %dx = graph.max_pool2d_backward %x, %dy {options} : ({x}, {dy}) -> {x}\n"
            f"  func.return %dx : {x}\n}}\n"
        )
    return (
        f"func.func @forward(%dy: {dy}) -> {x} {{\n"
        f"  %dx = graph.avg_pool2d_backward %dy {options} : ({dy}) -> {x}\n"
        f"  func.return %dx : {x}\n}}\n"
    )


def lowered(kind: str, options: str, x_shape: tuple[int, ...]) -> tuple[Any, LaunchOp]:
    return harness.lowered(graph_text(kind, options, x_shape))


def _x(shape: tuple[int, ...], data: str, rng: np.random.Generator) -> np.ndarray:
    """``normal``; ``ties`` (values in {0, 1, 2}: many windows hold their maximum
    more than once); ``nan`` (normal, with NaNs and infinities, some windows with
    two NaNs); ``neg-inf`` (mostly -inf: windows whose maximum is -inf)."""
    if data == "ties":
        return rng.integers(0, 3, shape).astype(np.float32)
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    if data == "nan":
        x.flat[rng.choice(x.size, max(2, x.size // 12), replace=False)] = np.nan
        x.flat[rng.choice(x.size, 2, replace=False)] = [np.inf, -np.inf]
    elif data == "neg-inf":
        x[rng.random(shape) < 0.8] = -np.inf
    return x


MAX_OPTIONS: dict[str, str] = {}
"""Each max case's pool options by case id (for the check against torch)."""


def kernel_case(
    kind: str,
    options: str,
    x_shape: tuple[int, ...],
    rng: np.random.Generator,
    *,
    data: str = "normal",
    block: int | None = None,
    extra_programs: int = 0,
    dy_nans: int = 0,
) -> Case:
    """One launch of ``kind`` ("max" or "avg") with the pool ``options`` on dx of
    ``x_shape``; ``block`` overrides the lowering's ``BLOCK``; ``dy_nans`` NaNs
    in dy (they reach dx only through the windows that pass them)."""
    module, launch = lowered(kind, options, x_shape)
    grad_shape = dy_shape(options, x_shape)
    dy = rng.standard_normal(grad_shape).astype(np.float32)
    if dy_nans:
        dy.flat[rng.choice(dy.size, dy_nans, replace=False)] = np.nan
    x = _x(x_shape, data, rng)
    inputs = [x, dy] if kind == "max" else [dy]
    (want,) = reference.run(module, {}, inputs)
    assert want.shape == x_shape
    case_id = (
        f"{kind}-{options.replace(' ', '').replace(',', '_')}-{_shape(x_shape)}"
        + (f"-{data}" if data != "normal" else "")
        + (f"-dynan{dy_nans}" if dy_nans else "")
        + (f"-b{block}" if block else "")
        + (f"-grid+{extra_programs}" if extra_programs else "")
    )
    block_size = block or int(launch.constexpr_values["BLOCK"])
    if kind == "max":
        MAX_OPTIONS[case_id] = options
    return launch_case(
        case_id,
        launch,
        x_shape[0],
        inputs,
        [want],
        # An unmasked store reaches at most BLOCK elements past the end per program.
        pad=block_size * (1 + extra_programs),
        tol=REDUCTION_TOL,
        constexprs=None if block is None else {"BLOCK": block},
        extra_programs=extra_programs,
    )


LENET_MAX = "kernel [2, 2] strides [2, 2]"
OVERLAP = "kernel [3, 3] strides [1, 1] padding [1, 1, 1, 1]"
CEIL = "kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] ceil_mode"
DILATED = "kernel [3, 3] strides [1, 1] padding [1, 1, 1, 1] dilation [2, 2]"
DILATED_CEIL = "kernel [3, 2] strides [2, 3] padding [1, 0, 1, 1] dilation [2, 3] ceil_mode"
PADDING_ONLY = "kernel [2, 2] strides [1, 1] padding [1, 1, 1, 1] dilation [4, 1]"
"""On H = 3: the one row of windows reads rows -1 and 3, both padding."""
SPPF = "kernel [5, 5] strides [1, 1] padding [2, 2, 2, 2]"
"""YOLOv8n's SPPF window: 25 taps, each input read by up to 25 windows."""
SPPF_STRIDED = "kernel [5, 5] strides [2, 2] padding [2, 2, 2, 2] ceil_mode"
SMALL_PADDED = "kernel [2, 2] strides [1, 1] padding [1, 1, 1, 1]"
UNPADDED = "kernel [3, 3] strides [2, 2]"
GAPPED = "kernel [2, 3] strides [3, 4]"
"""Strides past the kernel: some rows and columns no window reads."""
DILATED_5 = "kernel [5, 3] strides [1, 2] padding [2, 1, 2, 1] dilation [2, 1]"
WIDE_7 = "kernel [7, 7] strides [2, 2] padding [3, 3, 3, 3]"
"""49 windows per element: the kernel's int64 word, one band."""
SPP_9 = "kernel [9, 9] strides [1, 1] padding [4, 4, 4, 4]"
"""SPP's (YOLOv3-SPP, YOLOv5 before v6) middle pool: 81 windows, two bands of 7
window rows."""
SPP_13 = "kernel [13, 13] strides [1, 1] padding [6, 6, 6, 6]"
"""SPP's largest pool: four bands of 4 window rows."""
ROW_33 = "kernel [1, 33] strides [1, 1] padding [0, 16, 0, 16]"
"""A row of more than 31 windows: int64 columns, one window row per band."""
LENET_AVG = "kernel [2, 2]"
AVG_CEIL = "kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] ceil_mode"
AVG_CEIL_EXCLUDE = "kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] ceil_mode exclude_pad"
AVG_OVERLAP_EXCLUDE = "kernel [3, 3] strides [1, 1] padding [1, 1, 1, 1] exclude_pad"
AVG_FLOOR_EXCLUDE = "kernel [2, 3] strides [1, 2] padding [1, 1, 0, 1] exclude_pad"
AVG_STRIDE3_CEIL = "kernel [2, 3] strides [3, 2] padding [1, 1, 1, 1] ceil_mode"


def all_cases() -> list[Case]:
    rng = np.random.default_rng(21)
    cases: list[Case] = []
    for batch in (1, 3):
        cases += [
            kernel_case("max", LENET_MAX, (batch, 6, 28, 28), rng),
            kernel_case("max", OVERLAP, (batch, 3, 9, 10), rng),
            kernel_case("max", CEIL, (batch, 2, 10, 7), rng),
            kernel_case("max", DILATED, (batch, 2, 9, 10), rng),
            kernel_case("max", OVERLAP, (batch, 2, 7, 9), rng, data="ties"),
            kernel_case("avg", LENET_AVG, (batch, 16, 10, 10), rng),
            kernel_case("avg", AVG_CEIL, (batch, 2, 10, 7), rng),
            kernel_case("avg", AVG_CEIL_EXCLUDE, (batch, 2, 10, 7), rng),
        ]
    cases += [
        kernel_case("max", DILATED_CEIL, (3, 2, 11, 13), rng),
        kernel_case("max", SPPF, (3, 3, 7, 6), rng),
        kernel_case("max", SPPF, (1, 2, 5, 9), rng, data="ties", block=64),
        kernel_case("max", LENET_MAX, (3, 2, 9, 11), rng, data="ties", block=32),
        kernel_case("max", CEIL, (3, 2, 10, 7), rng, data="ties", extra_programs=2),
        kernel_case("max", CEIL, (3, 2, 10, 7), rng, data="nan", dy_nans=3),
        kernel_case("max", OVERLAP, (1, 2, 7, 9), rng, data="nan", block=64),
        kernel_case("max", DILATED_CEIL, (1, 2, 11, 13), rng, data="neg-inf"),
        kernel_case("max", PADDING_ONLY, (3, 2, 3, 5), rng),
        kernel_case("max", DILATED_CEIL, (3, 2, 11, 13), rng, block=256, extra_programs=3),
        kernel_case("max", SPPF, (3, 3, 7, 6), rng, data="nan"),
        kernel_case("max", SPPF, (3, 2, 6, 7), rng, data="neg-inf"),
        kernel_case("max", SPPF, (2, 3, 3, 2), rng, data="ties", block=16, extra_programs=1),
        kernel_case("max", SPPF_STRIDED, (3, 2, 9, 11), rng, data="ties"),
        kernel_case("max", SMALL_PADDED, (3, 2, 7, 5), rng, data="ties"),
        kernel_case("max", UNPADDED, (3, 2, 9, 8), rng, data="ties"),
        kernel_case("max", GAPPED, (3, 2, 11, 13), rng),
        kernel_case("max", DILATED_5, (3, 2, 13, 9), rng, data="ties"),
        kernel_case("max", WIDE_7, (3, 2, 11, 9), rng, data="ties"),
        kernel_case("max", SPP_9, (2, 2, 11, 10), rng, data="ties"),
        kernel_case("max", SPP_9, (1, 2, 9, 11), rng, data="nan"),
        kernel_case("max", SPP_13, (1, 2, 15, 14), rng, data="ties"),
        kernel_case("max", ROW_33, (2, 2, 3, 37), rng, data="ties"),
        kernel_case("avg", AVG_OVERLAP_EXCLUDE, (3, 3, 9, 10), rng, block=64),
        kernel_case("avg", AVG_FLOOR_EXCLUDE, (3, 2, 9, 8), rng),
        kernel_case("avg", AVG_STRIDE3_CEIL, (3, 2, 11, 10), rng, extra_programs=1),
        kernel_case("avg", AVG_CEIL, (1, 2, 10, 7), rng, dy_nans=2),
        kernel_case("avg", LENET_AVG, (3, 5, 7, 9), rng, block=64, extra_programs=2),
    ]
    return cases


def mutants() -> dict[str, Case]:
    """Mutated kernels the checks must catch: ties going to a later maximum
    (an equal tap in a row above no longer beats the element); a NaN element
    beaten by every tap after it (compared as NaN, not +inf); the neighbour
    rows below loaded without their bound (reads past the plane: the next
    plane's values, or the NaN padding); a dy load missing its bound on the
    output rows (it reads past the plane on the odd rows a floor-mode pool
    drops: the next plane's gradients, or the NaN padding); the exclude_pad
    divisor counting the padding."""
    rng = np.random.default_rng(22)
    found = {
        "last-tie": (
            kernel_case("max", OVERLAP, (3, 2, 7, 9), rng, data="ties"),
            (
                "tl.where(inside != (n < v), column_bits(c, KW), 0)",
                "tl.where(inside & (n > v), column_bits(c, KW), 0)",
            ),
        ),
        "nan-bound": (
            kernel_case("max", OVERLAP, (3, 2, 7, 9), rng, data="nan"),
            ('tl.where(number, v, float("inf"))', "v"),
        ),
        "no-neighbour-bound": (
            kernel_case("max", SPPF, (3, 2, 7, 6), rng),
            ("row_in = a * DH < below", "row_in = a * DH < below + 3"),
        ),
        "no-row-bound": (
            kernel_case("max", LENET_MAX, (3, 2, 9, 11), rng),
            ("(oh >= 0) & (oh < OH)", "(oh >= 0)"),
        ),
        "avg-no-row-bound": (
            kernel_case("avg", LENET_AVG, (3, 2, 9, 11), rng),
            ("(top >= 0) & (oh < OH)", "(top >= 0)"),
        ),
        "avg-divisor": (
            kernel_case("avg", AVG_CEIL_EXCLUDE, (3, 2, 10, 7), rng),
            (
                "rows = tl.minimum(h0 + KH, H) - tl.maximum(h0, 0)",
                "rows = tl.minimum(h0 + KH, H + PB) - h0",
            ),
        ),
    }
    return {
        what: replace(case, id=f"mutant-{what}", mutation=mutation)
        for what, (case, mutation) in found.items()
    }


CASES = all_cases()
MUTANTS = mutants()


HARNESS_CASES = [*CASES, *MUTANTS.values()]
"""What the `results` fixture (tests/conftest.py) runs, in one interpreter process."""


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_kernel_matches_the_reference(case: Case, results: Results) -> None:
    """Canaries intact, NaN and infinities where the reference has them (ties
    and NaN by PyTorch's rule), the finite values within ``case.tol``."""
    assert problems(case, results) == []


def torch_dx(options: str, x: np.ndarray, dy: np.ndarray) -> np.ndarray | str:
    """torch autograd's dx of ``F.max_pool2d`` with ``options``, in float64 and
    rounded to float32 once; or why torch cannot be the judge: an asymmetric
    padding (torch pads both sides alike), or a window that covers only padding
    (torch sends its gradient to an index outside the window, past the plane;
    graph.max_pool2d_backward passes nothing)."""
    import torch
    import torch.nn.functional as F

    words = _options(options)
    top, left, bottom, right = words.get("padding", [0, 0, 0, 0])
    if (top, left) != (bottom, right):
        return "asymmetric padding"
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)

    def pool(value: torch.Tensor) -> torch.Tensor:
        return F.max_pool2d(
            value,
            tuple(words["kernel"]),
            tuple(words.get("strides", words["kernel"])),
            (top, left),
            tuple(words.get("dilation", [1, 1])),
            ceil_mode="ceil_mode" in words,
        )

    if torch.isinf(pool(torch.zeros_like(xt))).any():
        return "a window covers only padding"
    y = pool(xt)
    assert tuple(y.shape) == dy.shape, options
    (dx,) = torch.autograd.grad(y, xt, torch.tensor(dy, dtype=torch.float64))
    return dx.numpy().astype(np.float32)


MAX_CASES = [case for case in CASES if case.id in MAX_OPTIONS]


@pytest.mark.parametrize("case", MAX_CASES, ids=[case.id for case in MAX_CASES])
def test_max_kernel_matches_torch_autograd(case: Case, results: Results) -> None:
    """The kernel's dx is torch's (CPU autograd of ``F.max_pool2d``): ties to the
    first maximum, NaN where torch has NaN, padding never winning."""
    values = dict(case.args)
    x = values["x"].reshape(case.tensors["x"][0])
    dy = values["dy"].reshape(case.tensors["dy"][0])
    want = torch_dx(MAX_OPTIONS[case.id], x, dy)
    if isinstance(want, str):
        pytest.skip(want)
    got = case.got(results, "dx").reshape(want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, equal_nan=True)


def test_every_case_is_a_valid_launch() -> None:
    for case in [*CASES, *MUTANTS.values()]:
        validator.validate(case.contract())


def test_the_checks_catch_mutated_kernels(results: Results) -> None:
    found = {what: " ".join(problems(case, results)) for what, case in MUTANTS.items()}
    close = "dx: max|got - ref|"
    assert close in found["last-tie"], found
    assert "NaN or infinite where" in found["nan-bound"] or close in found["nan-bound"], found
    assert found["no-neighbour-bound"], found
    for what in ("no-row-bound", "avg-no-row-bound"):
        assert "NaN or infinite where" in found[what] or close in found[what], (what, found)
    assert close in found["avg-divisor"], found


def test_the_cases_are_not_vacuous() -> None:
    """Ties that decide the argmax, NaN gradients, many programs, both batches,
    and the padding-only windows passing nothing."""
    ids = " ".join(case.id for case in CASES)
    for word in ("ceil_mode", "dilation", "exclude_pad", "-ties", "-nan", "-neg-inf", "-grid+"):
        assert word in ids, word
    for family in ("max_pool2d_backward", "avg_pool2d_backward"):
        mine = [case for case in CASES if case.family == family]
        assert {case.tensors["dx"][0][0] for case in mine} >= {1, 3}, family
        assert any(np.prod(case.grid) >= 10 for case in mine), family
    assert any(np.isnan(case.expected["dx"]).any() for case in CASES)
    padding_only = next(case for case in CASES if "dilation[4_1]" in case.id)
    assert not padding_only.expected["dx"].any()
    # Ties decide: the first maximum's dx differs from the last maximum's.
    for case in CASES:
        if "-ties" in case.id:
            assert _last_tie_differs(case), case.id


def _last_tie_differs(case: Any) -> bool:
    """Whether ``case``'s x has a window whose maximum occurs twice or more among
    its taps inside the input (so the tie rule decides where dy goes)."""
    values = dict(case.args)
    x = values["x"].reshape(case.tensors["x"][0]).astype(np.float64)
    kh, kw = int(case.constexprs["KH"]), int(case.constexprs["KW"])
    sh, sw = int(case.constexprs["SH"]), int(case.constexprs["SW"])
    dh, dw = int(case.constexprs["DH"]), int(case.constexprs["DW"])
    pt, pl = int(case.constexprs["PT"]), int(case.constexprs["PL"])
    for oh in range(int(values["OH"])):
        for ow in range(int(values["OW"])):
            taps = [
                x[:, :, h, w]
                for h in range(oh * sh - pt, oh * sh - pt + dh * kh, dh)
                for w in range(ow * sw - pl, ow * sw - pl + dw * kw, dw)
                if 0 <= h < x.shape[2] and 0 <= w < x.shape[3]
            ]
            stacked = np.stack(taps)
            if ((stacked == stacked.max(axis=0)).sum(axis=0) > 1).any():
                return True
    return False


def test_the_validator_holds_the_dims_to_the_shapes() -> None:
    for kind, options in (("max", CEIL), ("avg", AVG_CEIL_EXCLUDE)):
        _, launch = lowered(kind, options, (1, 2, 10, 7))
        validator.validate(launch.contract())
        for name in ("H", "OW"):
            bad = tuple(
                (arg, str(int(value) + 1) if arg == name else value)
                for arg, value in launch.contract().args
            )
            with pytest.raises(validator.ContractError, match="imply"):
                validator.validate(replace(launch.contract(), args=bad))
        short = (f"cdiv(B * {2 * 10 * 7}, {2 * int(launch.constexpr_values['BLOCK'])})", "1", "1")
        with pytest.raises(validator.ContractError, match="tile model"):
            validator.validate(replace(launch.contract(), grid=short))


# ---------------------------------------------------------------- AOT


AOT = [
    ("max", CEIL, 80),
    ("max", SPPF, 90),
    ("max", SPPF, 80),
    ("max", SPP_9, 80),  # two bands of int64 words
    ("avg", AVG_CEIL_EXCLUDE, 80),
    ("max", LENET_MAX, 90),
    ("avg", LENET_AVG, 90),
]
"""One variant of each family per architecture (the lowering has one tile
choice, so the variants differ only in window geometry), and the max pool's
int32 and int64 words."""

PTX_LINES = {SPPF: 2_000, SPP_9: 4_000}
"""The PTX budgets of the O(KH * KW) max-pool backward (issue 26: SPPF's
recomputing kernel was 4,067 lines at sm_80; the neighbourhood one is about
700, bench/max_pool_backward.py prints it)."""


@pytest.mark.parametrize(("kind", "options", "arch"), AOT)
def test_compiles_ahead_of_time(
    kind: str, options: str, arch: int, tmp_path: Path, triton_cache: None
) -> None:
    _, launch = lowered(kind, options, (1, 3, 23, 19))
    family = FAMILIES[launch.family]
    name = f"{launch.family}_0"
    path = tmp_path / f"{name}.py"
    path.write_text(render(family, name, launch.constexpr_values))
    compiled = aot.compile_variant(
        path, name, family, launch.constexpr_values, arch, launch.num_warps, launch.num_stages
    )
    assert f".target sm_{arch}" in compiled.ptx
    assert compiled.cubin[:4] == b"\x7fELF"
    # An unrolled window nest (SPPF's: 625 taps, 78,000 PTX lines) takes ptxas minutes.
    assert compiled.ptx.count("\n") < PTX_LINES.get(options, 20_000), compiled.ptx.count("\n")
    assert re.search(rf"\.reqntid {32 * launch.num_warps}\b", compiled.ptx)
    entry = compiled.ptx[compiled.ptx.index(f".entry {name}") :]
    assert entry[: entry.index(")")].count(".param") == len(family.args) + 2
    aot.check_shared(compiled)


def test_an_image_past_32_bits_is_unlowerable() -> None:
    for kind in ("max", "avg"):
        with pytest.raises(Unlowerable, match="32-bit offsets"):
            lowered(kind, LENET_MAX, (1, 2, 65536, 16384))


def test_a_window_past_63_columns_is_unlowerable() -> None:
    """A row of its windows would not fit the kernel's 63-bit word; 63 does."""
    lowered("max", "kernel [1, 63] strides [1, 1]", (1, 2, 3, 70))
    with pytest.raises(Unlowerable, match="64 columns exceeds the kernel's 63"):
        lowered("max", "kernel [1, 64] strides [1, 1]", (1, 2, 3, 70))


@pytest.mark.parametrize(
    ("stride", "dilation", "expected"),
    [(1, 1, (1, 1, 0)), (2, 1, (2, 1, 1)), (2, 2, (1, 2, 0)), (3, 2, (3, 1, 2)), (6, 4, (3, 2, 2))],
)
def test_residues(stride: int, dilation: int, expected: tuple[int, int, int]) -> None:
    """The taps the kernel visits are exactly those whose window start is a
    multiple of the stride."""
    assert max_tiles.residues(stride, dilation) == expected
    step, gcd, inverse = expected
    for t in range(30):
        want = {p for p in range(9) if (t - p * dilation) % stride == 0}
        got = set() if t % gcd else {p for p in range(9) if p % step == (t // gcd) * inverse % step}
        assert got == want, t


def test_tiles() -> None:
    """The tiles the lowering emits, within Triton's block limit."""
    assert max_tiles.element_tiles() == 128  # one element per thread of 4 warps
    assert avg_tiles.element_tiles() == 1024
    assert max_tiles.launch_config() == avg_tiles.launch_config() == (4, 1)
    _, launch = lowered("max", LENET_MAX, (1, 6, 28, 28))
    assert launch.grid == ("cdiv(B * 4704, 128)", "1", "1")


# ---------------------------------------------------------------- end to end

X = "tensor<?x3x11x9xf32>"
DY_MAX = "tensor<?x3x6x5xf32>"
DY_AVG = "tensor<?x3x6x5xf32>"
E2E = f"""\
func.func @forward(%x: {X}, %dm: {DY_MAX}, %da: {DY_AVG}) -> ({X}, {X}) {{
  %gm = graph.max_pool2d_backward %x, %dm {CEIL} : ({X}, {DY_MAX}) -> {X}
  %ga = graph.avg_pool2d_backward %da {AVG_CEIL_EXCLUDE} : ({DY_AVG}) -> {X}
  func.return %gm, %ga : {X}, {X}
}}
"""


def test_end_to_end_matches_the_reference(tmp_path: Path) -> None:
    assert dy_shape(CEIL, (1, 3, 11, 9)) == (1, 3, 6, 5)
    assert dy_shape(AVG_CEIL_EXCLUDE, (1, 3, 11, 9)) == (1, 3, 6, 5)
    out = tmp_path / "plan"
    module = teeny_ir.parse_module(E2E, filename="pool_backward.mlir")
    teeny_ir.PassManager.parse(f"lower-graph-to-kernel,emit-triton{{out-dir={out}}}").run(module)
    families = sorted(o.family for o in module.walk() if isinstance(o, LaunchOp))
    assert families == ["avg_pool2d_backward", "max_pool2d_backward"]
    rng = np.random.default_rng(7)
    x = rng.integers(0, 4, (3, 3, 11, 9)).astype(np.float32)  # ties
    x[0, 0, 0, :3] = np.nan
    dm = rng.standard_normal((3, 3, 6, 5)).astype(np.float32)
    da = rng.standard_normal((3, 3, 6, 5)).astype(np.float32)
    got = runtime.load(out).run([x, dm, da], {})
    want = reference.run(teeny_ir.parse_module(E2E), {}, [x, dm, da])
    assert [g.shape for g in got] == [(3, 3, 11, 9)] * 2
    assert_close(got, want, REDUCTION_TOL)
