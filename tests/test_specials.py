"""NaN, +-inf, +-0.0, huge values and subnormals through every entry of the
pointwise table, against PyTorch: the table's numpy semantics (what the
reference interpreter runs), the reference interpreter itself, and each entry's
Triton expression rendered into the ``elementwise`` family and run in Triton's
interpreter (`teeny_ir.testing.kernels.run_cases`).

Agreement means: NaN in the same positions, the same infinities with their
sign, and finite values within ``1e-5 * max(1, |ref|)`` (so the sign of a zero
is not compared).

The oracle is PyTorch in float64 on the float32 inputs, rounded to float32 for
the kernels, never torch's float32 path: that one is not one function on
specials (its vectorised erf GELU gives ``gelu(inf) = nan`` and overflows
``gelu(3.4e38)`` to inf, while its scalar path and float64 give ``inf`` and
``3.4e38``; its hard swish overflows ``x * 6`` near the float32 maximum).

Warnings: the kernels must not warn (the harness runs with ``-W error``) on
inputs whose result is an ordinary number: no intermediate may overflow or be
an invalid operation there. Where the result itself is an IEEE exception from
non-NaN operands (``inf - inf``, ``1e30 * 1e30``, ``1 / 0``, and
``silu(-inf) = -inf * 0 = nan`` as torch defines it), numpy, which executes
Triton's interpreter, warns on the very operation that produces the right
answer, and no spelling of ``x + y`` avoids that; those inputs run in a second
harness process with RuntimeWarnings ignored (every other warning is still an
error).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import teeny_ir
from teeny_ir import reference
from teeny_ir.core import pointwise
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.testing.kernels import Case, Results, problems, run_cases
from teeny_ir.testing.variants import variants

F32 = np.float32
TINY = float(np.finfo(F32).smallest_subnormal)
NORMAL = float(np.finfo(F32).tiny)
BIG = float(np.finfo(F32).max)

SPECIALS = np.array(
    [
        *(math.nan, -math.nan, math.inf, -math.inf, 0.0, -0.0),
        *(1e30, -1e30, 88.8, -88.8, 89.5, -89.5, BIG, -BIG, 3.4e38, -3.4e38),
        *(TINY, -TINY, 1e-40, -1e-40, NORMAL, -NORMAL),
        *(1.0, -1.0, 0.5, -3.0, 10.5, -20.0, 1e-3, -1e-5),
    ],
    F32,
)
SPECIALS[1] = np.frombuffer(np.uint32(0xFFC00000).tobytes(), F32)[0]  # -nan, sign bit set


def _torch(name: str, options: dict[str, Any]) -> Callable[..., torch.Tensor] | None:
    """Torch's function of a table entry's name (``torch.<name>``, else
    ``torch.nn.functional.<name>``), taking the entry's options as keywords; None
    when torch has none of that name."""
    fn = getattr(torch, name, None) or getattr(F, name, None)
    if not callable(fn):
        return None
    return lambda *args: fn(*args, **options)


EXPLICIT_SPELLINGS = (
    "gelu(approximate=none)",
    "gelu(approximate=tanh)",
    "leaky_relu(negative_slope=0.01)",
    "leaky_relu(negative_slope=0.2)",
    "leaky_relu(negative_slope=0.0)",
    "leaky_relu(negative_slope=3.0)",
    "leaky_relu(negative_slope=-0.5)",
    "hardtanh(min_val=-1.0, max_val=1.0)",
    "hardtanh(min_val=0.0, max_val=6.0)",
    "hardtanh(min_val=-2.5, max_val=-2.5)",
)
"""Option values worth covering beyond the sample values every test enumerates."""
SPELLINGS = tuple(dict.fromkeys([*(v.spelling for v in variants()), *EXPLICIT_SPELLINGS]))
"""Every table entry (`teeny_ir.testing.variants`: an entry with options once per
combination of its sample values), then the edge values above."""


def test_every_table_entry_is_covered() -> None:
    covered = {pointwise.parse_spelling(s)[0].name for s in SPELLINGS}
    assert covered == set(pointwise.BY_NAME)


def operands(spelling: str) -> list[np.ndarray]:
    """The specials for a unary entry; every ordered pair of them for a binary one."""
    entry, _ = pointwise.parse_spelling(spelling)
    if entry.arity == 1:
        return [SPECIALS.copy()]
    return [np.repeat(SPECIALS, SPECIALS.size), np.tile(SPECIALS, SPECIALS.size)]


def torch_ref(spelling: str, args: list[np.ndarray], dtype: torch.dtype) -> np.ndarray:
    """Torch's answer in ``dtype``, as float64. An entry torch has no function
    for is held to the table's own numpy semantics (rounded to ``dtype``), so the
    kernel and the reference still have to agree on every special value."""
    entry, options = pointwise.parse_spelling(spelling)
    fn = _torch(entry.name, options)
    if fn is None:
        with np.errstate(all="ignore"):
            exact = np.asarray(entry.evaluate(np, list(args), options), np.float64)
            rounded = exact.astype(np.float32 if dtype == torch.float32 else np.float64)
        return rounded.astype(np.float64)
    out = fn(*(torch.from_numpy(a).to(dtype) for a in args))
    return out.to(torch.float64).numpy()


def mismatches(got: np.ndarray, ref: np.ndarray, args: list[np.ndarray]) -> list[str]:
    """Where ``got`` disagrees with ``ref`` (see the module docstring)."""
    got, ref = got.astype(np.float64), ref.astype(np.float64)
    with np.errstate(invalid="ignore"):
        close = np.abs(got - ref) <= 1e-5 * np.maximum(1.0, np.abs(ref))
    ok = np.where(
        np.isnan(ref), np.isnan(got), np.where(np.isinf(ref), got == ref, np.isfinite(got) & close)
    )
    bad = np.flatnonzero(~ok)
    return [
        f"({', '.join(repr(float(a[i])) for a in args)}) -> {float(got[i])!r}, "
        f"expected {float(ref[i])!r}"
        for i in bad[:10]
    ]


# ------------------------------------------------- numpy semantics and reference


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_table_semantics_match_torch_silently(spelling: str) -> None:
    entry, options = pointwise.parse_spelling(spelling)
    args = operands(spelling)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = entry.evaluate(np, [a.astype(np.float64) for a in args], options)
    ref = torch_ref(spelling, args, torch.float64)
    assert mismatches(got, ref, args) == []


def _hex(values: np.ndarray) -> str:
    return ", ".join(f"0x{int(b):08X}" for b in values.view(np.uint32))


def _op_text(spelling: str, names: list[str], ttype: str) -> str:
    entry, options = pointwise.parse_spelling(spelling)
    text = f"graph.{entry.name} {', '.join(names)}"
    for name in entry.options:
        value = options[name]
        if value == "none":  # gelu's default, which is written by leaving it out
            continue
        text += f" {name} {value!r}" if isinstance(value, float) else f" {name} {value}"
    if entry.arity == 1:
        return f"{text} : {ttype}"
    return f"{text} : ({ttype}, {ttype}) -> {ttype}"


# The reference rounds each result to float32 with a numpy cast, which warns when
# a float64 result is beyond float32 (add(3.4e38, 3.4e38)); the value (inf) is right.
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
@pytest.mark.parametrize("spelling", SPELLINGS)
def test_reference_interpreter_on_hex_constants(spelling: str) -> None:
    """The specials written as hex bit patterns in graph.constant, through the
    reference interpreter: the parser must read the bits, the ops propagate them."""
    args = operands(spelling)
    ttype = f"tensor<{args[0].size}xf32>"
    lines = [f"  %c{i} = graph.constant dense<[{_hex(a)}]> : {ttype}" for i, a in enumerate(args)]
    lines.append(f"  %r = {_op_text(spelling, [f'%c{i}' for i in range(len(args))], ttype)}")
    text = f"func.func @forward() -> {ttype} {{\n" + "\n".join(lines)
    text += f"\n  func.return %r : {ttype}\n}}\n"
    module = teeny_ir.parse_module(text)
    constants = [op for op in module.walk() if op.name == "graph.constant"]
    for arg, op in zip(args, constants, strict=True):
        stored = np.frombuffer(op.value.data.data, np.uint32)
        assert (stored == arg.view(np.uint32)).all()
    (got,) = reference.run(module, {}, [])
    ref = torch.from_numpy(torch_ref(spelling, args, torch.float64)).to(torch.float32)
    assert mismatches(got, ref.numpy(), args) == []


# ------------------------------------------------------------------ Triton kernels


def _regular(spelling: str, args: list[np.ndarray]) -> np.ndarray:
    """Inputs whose result is an ordinary value: not a NaN made from non-NaN
    operands, not an infinity made from finite ones."""
    ref = torch_ref(spelling, args, torch.float64)
    ref32 = torch.from_numpy(ref).to(torch.float32).numpy()
    any_nan = np.logical_or.reduce([np.isnan(a) for a in args])
    all_finite = np.logical_and.reduce([np.isfinite(a) for a in args])
    exceptional = (np.isnan(ref32) & ~any_nan) | (np.isinf(ref32) & all_finite)
    return ~exceptional


def _case(spelling: str, args: list[np.ndarray], part: int) -> Case:
    """A harness case running ``spelling``'s kernel over flat ``args``: its NaN
    and infinities must be torch's (float64, rounded to float32); `mismatches`
    holds the finite values to torch."""
    block = 1024
    x, y = args[0], args[-1]  # a unary entry never reads y
    n = x.size
    flat = [0, 0, 0, 0, 0, 1]  # rank 6 (1, 1, 1, 1, 1, n): strides of the flat operands
    dims = [n, 1, 1, 1, 1, n, *flat, *flat]  # numel, size1..size5, x strides, y strides
    values: list[Any] = [x, y, ("output", n), *dims]
    names = [arg.name for arg in FAMILIES["elementwise"].args]
    ref = torch.from_numpy(torch_ref(spelling, args, torch.float64)).to(torch.float32).numpy()
    return Case(
        id=f"{spelling}-part{part}",
        family="elementwise",
        constexprs={"OP": spelling, "BLOCK": block},
        args=list(zip(names, values, strict=True)),
        grid=math.ceil(n / block),
        pad=block,
        expected={"out": ref},
        tol=None,
    )


def _split(spelling: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The operands with a regular result, and those with an exceptional one."""
    args = operands(spelling)
    regular = _regular(spelling, args)
    return [a[regular] for a in args], [a[~regular] for a in args]


@pytest.fixture(scope="module")
def kernel_results(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[tuple[str, int], tuple[Case, Results]]:
    """(spelling, 0 for the regular inputs or 1 for the exceptional ones) -> that
    kernel run's case and results."""
    outputs: dict[tuple[str, int], tuple[Case, Results]] = {}
    # Regular inputs: every warning is an error. Exceptional ones: see the docstring.
    for part, flags in ((0, ["-W", "error"]), (1, ["-W", "error", "-W", "ignore::RuntimeWarning"])):
        workdir = tmp_path_factory.mktemp(f"specials{part}")
        names = [s for s in SPELLINGS if _split(s)[part][0].size]
        cases = [_case(s, _split(s)[part], part) for s in names]
        results = run_cases(cases, workdir, flags=flags)
        for spelling, case in zip(names, cases, strict=True):
            outputs[spelling, part] = (case, results)
    return outputs


def _check(spelling: str, part: int, results: dict[tuple[str, int], tuple[Case, Results]]) -> None:
    args = _split(spelling)[part]
    if not args[0].size:
        assert (spelling, part) not in results
        return
    case, run = results[spelling, part]
    assert problems(case, run) == []  # canaries, and NaN and infinities where torch has them
    assert mismatches(case.got(run, "out"), case.expected["out"], args) == [], "against torch"


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_kernel_matches_torch_on_regular_results(
    spelling: str, kernel_results: dict[tuple[str, int], tuple[Case, Results]]
) -> None:
    """Run under ``-W error``: on these inputs no intermediate may warn."""
    _check(spelling, 0, kernel_results)


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_kernel_matches_torch_on_exceptional_results(
    spelling: str, kernel_results: dict[tuple[str, int], tuple[Case, Results]]
) -> None:
    _check(spelling, 1, kernel_results)


def test_the_split_is_as_expected() -> None:
    """Only the IEEE exceptions named in the docstring are exempt from ``-W error``."""
    exceptional = {s: int((~_regular(s, operands(s))).sum()) for s in SPELLINGS}
    unary = {s: n for s, n in exceptional.items() if pointwise.parse_spelling(s)[0].arity == 1}
    # silu(-inf), gelu(-inf) (both -inf * 0), leaky_relu(-inf) at slope 0, and the
    # slope-3 overflow of -BIG and -3.4e38; the other unary entries have none. (An
    # entry added to the table later is not pinned here.)
    pinned = {
        "silu": 1,
        "relu": 0,
        "sigmoid": 0,
        "tanh": 0,
        "gelu(approximate=none)": 1,
        "gelu(approximate=tanh)": 1,
        "leaky_relu(negative_slope=0.01)": 0,
        "leaky_relu(negative_slope=0.2)": 0,
        "leaky_relu(negative_slope=0.0)": 1,
        "leaky_relu(negative_slope=3.0)": 2,
        "leaky_relu(negative_slope=-0.5)": 0,
    }
    assert {s: unary[s] for s in pinned} == pinned
