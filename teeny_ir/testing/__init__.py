"""The project's tolerance rule and the checks the tests share (one copy of each).

The rule (docs/architecture.md): the outputs are finite, there are as many as the
reference has, each has the reference's shape, and

    max|got - ref| <= tol * max(1, max|ref|)

with ``tol = ELEMENTWISE_TOL`` (1e-5) for elementwise and structural ops and
``REDUCTION_TOL`` (1e-4) for anything with a reduction (conv, linear, pools,
norms, softmax, whole models).

`compare` returns the check's numbers (for printing, as examples/slice/run_slice.py
does); `assert_close` raises `AssertionError` with `Comparison.reason`.
`assert_round_trips` is the shared print -> parse -> print check.

The package's modules, for the tests and the benches (nothing in the compiler
imports any of them: layer 5 of tests/test_layering.py, so parsing never pays
for numpy), each imported only by who needs it:

- `teeny_ir.testing.kernels`: kernel-test cases (`~teeny_ir.testing.kernels.Case`),
  one interpreter run for many of them (`~teeny_ir.testing.kernels.run_cases`),
  the canary constants and the check of a run (`~teeny_ir.testing.kernels.problems`);
- `teeny_ir.testing.kernel_harness`: the process `run_cases` starts, which runs
  triton in interpreter mode (with `teeny_ir.testing.cuda_fake_harness`, the only
  modules here that do, each in a process of its own);
- `teeny_ir.testing.variants`: every pointwise-table entry with sample option values;
- `teeny_ir.testing.sample_plan`: a small hand-written launch plan and its reference;
- `teeny_ir.testing.fake_cuda` and `teeny_ir.testing.cuda_fake_harness`: a fake
  ``cuda.bindings.driver`` for the cuda backend, and a process running a plan on it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import DTypeLike
    from xdsl.dialects.builtin import ModuleOp

__all__ = [
    "ELEMENTWISE_TOL",
    "REDUCTION_TOL",
    "Comparison",
    "assert_close",
    "assert_round_trips",
    "compare",
]

ELEMENTWISE_TOL = 1e-5
"""Elementwise and structural (data-movement) ops."""
REDUCTION_TOL = 1e-4
"""Anything with a reduction: conv, linear, matmul, pools, norms, softmax, whole models."""


@dataclass(frozen=True)
class Comparison:
    """The numbers of one check.

    ``max_error`` is ``max|got - ref|`` (NaN when the shapes or counts differ, NaN
    or inf when ``got`` is not finite) and ``bound`` is ``tol * max(1, max|ref|)``
    (NaN when the counts differ). ``reason`` says why the check failed, and is
    ``None`` when it passed. For a sequence of outputs, ``outputs`` holds one
    comparison per output and the headline numbers are those of the worst output
    (the first failing one, else the one closest to its bound).
    """

    max_error: float
    bound: float
    reason: str | None = None
    outputs: tuple[Comparison, ...] = ()

    @property
    def ok(self) -> bool:
        return self.reason is None


def _is_one_array(value: object) -> bool:
    return not isinstance(value, list | tuple)


def _not_finite(values: np.ndarray) -> str | None:
    """``None`` if every element is finite, else how many are not (and which kind)."""
    bad = ~np.isfinite(values)
    count = int(np.count_nonzero(bad))
    if count == 0:
        return None
    nans = int(np.count_nonzero(np.isnan(values)))
    return f"{count} of {values.size} elements not finite ({nans} NaN, {count - nans} inf)"


def _margin(comparison: Comparison) -> float:
    """How much of its bound an output's error uses (inf past a zero bound)."""
    if comparison.bound > 0:
        return comparison.max_error / comparison.bound
    return math.inf if comparison.max_error > 0 else 0.0


def _compare_one(got: Any, ref: Any, tol: float, dtype: DTypeLike | None) -> Comparison:
    g = np.asarray(got)
    r = np.asarray(ref, dtype=np.float64)
    ref_bad = _not_finite(r)
    ref_max = float(np.max(np.abs(r), initial=0.0))
    bound = tol * max(1.0, ref_max)
    if g.shape != r.shape:
        return Comparison(math.nan, bound, f"shape {g.shape} != reference shape {r.shape}")
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf: reported below
        error = float(np.max(np.abs(g.astype(np.float64) - r), initial=0.0))
    if dtype is not None and g.dtype != np.dtype(dtype):
        return Comparison(error, bound, f"dtype {g.dtype} != expected {np.dtype(dtype)}")
    got_bad = _not_finite(g)
    if got_bad is not None:
        return Comparison(error, bound, got_bad)
    if ref_bad is not None:
        return Comparison(error, bound, f"reference: {ref_bad}")
    if not error <= bound:
        return Comparison(
            error,
            bound,
            f"max|got - ref| = {error:.3e} above bound {bound:.3e}"
            f" = {tol:g} * max(1, max|ref| = {ref_max:.3e})",
        )
    return Comparison(error, bound)


def compare(got: Any, ref: Any, tol: float, *, dtype: DTypeLike | None = None) -> Comparison:
    """Check ``got`` against ``ref`` under the tolerance rule with ``tol``.

    ``got`` is one array, or a list or tuple of arrays (one per output; ``ref``
    is then a sequence of as many). ``ref`` is compared in float64. With
    ``dtype``, every output must also have that dtype.
    """
    if _is_one_array(got):
        return _compare_one(got, ref, tol, dtype)
    if not isinstance(ref, Sequence):
        raise TypeError(f"a sequence of outputs against a reference of type {type(ref).__name__}")
    if len(got) != len(ref):
        return Comparison(math.nan, math.nan, f"{len(got)} outputs, reference has {len(ref)}")
    outputs = tuple(_compare_one(g, r, tol, dtype) for g, r in zip(got, ref, strict=True))
    if not outputs:
        return Comparison(0.0, tol)
    failing = [(i, c) for i, c in enumerate(outputs) if not c.ok]
    if failing:
        worst = failing[0][1]
        reason = "; ".join(f"output {i}: {c.reason}" for i, c in failing)
        return Comparison(worst.max_error, worst.bound, reason, outputs)
    worst = max(outputs, key=_margin)
    return Comparison(worst.max_error, worst.bound, None, outputs)


def assert_close(got: Any, want: Any, tol: float, *, dtype: DTypeLike | None = None) -> None:
    """`compare`, raising `AssertionError` with the reason when the check fails."""
    result = compare(got, want, tol, dtype=dtype)
    if not result.ok:
        raise AssertionError(result.reason)


def assert_round_trips(module: ModuleOp) -> None:
    """``module`` verifies; its custom and generic text both reparse to a
    structurally equal module, and each text is a fixed point of
    print -> parse -> print."""
    from teeny_ir.ir.parsing import parse_module, print_module

    module.verify()
    for generic in (False, True):
        text = print_module(module, generic=generic)
        reparsed = parse_module(text)
        assert reparsed.is_structurally_equivalent(module), text
        assert print_module(reparsed, generic=generic) == text
