"""teeny_ir.testing: the tolerance rule the other tests and the slice example use,
and the kernel-test library (`teeny_ir.testing.kernels`, `teeny_ir.testing.variants`).

The rule must pass what is within ``tol * max(1, max|ref|)`` and fail, with a
reason, on a count mismatch, a shape mismatch, a dtype mismatch (when asked), a
NaN or an inf, and an error just above the bound. `problems` must name, with the
output and the first element concerned, each way a kernel run can go wrong (on
buffers made here, no harness process); `launch_case` binds a lowered launch as
the runtime would; importing the package loads neither triton nor torch.
"""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import VerifyException

import teeny_ir
from teeny_ir.core import pointwise
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.testing import (
    ELEMENTWISE_TOL,
    REDUCTION_TOL,
    Comparison,
    assert_close,
    assert_round_trips,
    compare,
    kernels,
    variants,
)
from teeny_ir.testing.kernels import CANARY, I64_CANARY, Case, Results, problems


def test_tolerances_are_the_documented_ones() -> None:
    assert ELEMENTWISE_TOL == 1e-5
    assert REDUCTION_TOL == 1e-4


def ramp(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (scale * np.linspace(-1.0, 1.0, math.prod(shape))).reshape(shape).astype(np.float32)


def test_passes_within_tolerance() -> None:
    ref = ramp(2, 3, 4).astype(np.float64)
    got = (ref + 0.5e-4).astype(np.float32)
    result = compare(got, ref, REDUCTION_TOL)
    assert result.ok and result.reason is None
    assert result.bound == pytest.approx(1e-4)
    assert 0.4e-4 < result.max_error < 0.6e-4
    assert_close(got, ref, REDUCTION_TOL)
    assert_close([got, got], [ref, ref], REDUCTION_TOL, dtype=np.float32)
    assert_close(got, ref.tolist(), REDUCTION_TOL)  # any array-like reference


def test_equal_arrays_pass_with_zero_error() -> None:
    x = ramp(5)
    result = compare(x, x, ELEMENTWISE_TOL)
    assert result.ok and result.max_error == 0.0


def test_empty_outputs_compare_equal() -> None:
    empty = np.zeros((0, 3), np.float32)
    assert compare(empty, empty, ELEMENTWISE_TOL).ok
    assert compare([], [], ELEMENTWISE_TOL).ok


def test_error_just_above_the_bound_fails() -> None:
    ref = np.zeros(4)
    got = np.zeros(4, np.float32)
    got[2] = np.float32(1e-4) * np.float32(1 + 1e-3)
    result = compare(got, ref, REDUCTION_TOL)
    assert not result.ok
    assert result.max_error > result.bound == REDUCTION_TOL
    assert result.reason is not None and "above bound" in result.reason
    with pytest.raises(AssertionError, match="above bound"):
        assert_close(got, ref, REDUCTION_TOL)
    got[2] = np.float32(1e-4) * np.float32(1 - 1e-3)
    assert_close(got, ref, REDUCTION_TOL)


@pytest.mark.parametrize("peak", [0.25, 1.0, 8.0, 1000.0])
def test_bound_scales_with_max_of_one_and_max_abs_ref(peak: float) -> None:
    ref = np.array([0.0, -peak, peak / 2])
    scale = max(1.0, peak)
    assert compare(ref, ref, REDUCTION_TOL).bound == pytest.approx(REDUCTION_TOL * scale)
    inside = ref + np.array([0.0, 0.0, 0.9 * REDUCTION_TOL * scale])
    outside = ref + np.array([0.0, 0.0, 1.1 * REDUCTION_TOL * scale])
    assert compare(inside, ref, REDUCTION_TOL).ok
    assert not compare(outside, ref, REDUCTION_TOL).ok


def test_bound_uses_the_largest_magnitude_even_if_negative() -> None:
    ref = np.array([-50.0, 1.0])
    got = ref + np.array([0.0, 40 * ELEMENTWISE_TOL])
    result = compare(got, ref, ELEMENTWISE_TOL)
    assert result.ok and result.bound == pytest.approx(50 * ELEMENTWISE_TOL)


def test_shape_mismatch_fails_even_when_broadcastable() -> None:
    ref = np.ones((1, 4))
    got = np.ones((4,), np.float32)
    result = compare(got, ref, REDUCTION_TOL)
    assert not result.ok and math.isnan(result.max_error)
    assert result.reason == "shape (4,) != reference shape (1, 4)"
    with pytest.raises(AssertionError, match=r"shape \(4,\) != reference shape \(1, 4\)"):
        assert_close(got, ref, REDUCTION_TOL)
    with pytest.raises(AssertionError, match=r"output 1: shape \(4,\)"):
        assert_close([ref, got], [ref, ref], REDUCTION_TOL)


def test_count_mismatch_fails() -> None:
    x = ramp(3)
    result = compare([x, x], [x], REDUCTION_TOL)
    assert not result.ok and result.outputs == ()
    assert result.reason == "2 outputs, reference has 1"
    with pytest.raises(AssertionError, match="1 outputs, reference has 2"):
        assert_close([x], [x, x], REDUCTION_TOL)
    with pytest.raises(AssertionError, match="0 outputs, reference has 1"):
        assert_close([], [x], REDUCTION_TOL)


@pytest.mark.parametrize(
    ("value", "kind"),
    [(math.nan, "1 NaN, 0 inf"), (math.inf, "0 NaN, 1 inf"), (-math.inf, "0 NaN, 1 inf")],
)
def test_non_finite_output_fails(value: float, kind: str) -> None:
    ref = ramp(2, 3)
    got = ref.copy()
    got[1, 2] = value
    result = compare(got, ref, REDUCTION_TOL)
    assert not result.ok
    assert result.reason == f"1 of 6 elements not finite ({kind})"
    with pytest.raises(AssertionError, match="1 of 6 elements not finite"):
        assert_close([got], [ref], REDUCTION_TOL)


def test_non_finite_output_fails_even_where_the_reference_is_the_same() -> None:
    ref = np.array([1.0, math.inf])
    assert not compare(ref.astype(np.float32), ref, REDUCTION_TOL).ok
    assert not compare(np.array([1.0, 2.0], np.float32), ref, REDUCTION_TOL).ok
    with pytest.raises(AssertionError, match="2 of 2 elements not finite"):
        assert_close(np.full(2, np.nan, np.float32), np.zeros(2), REDUCTION_TOL)


def test_non_finite_reference_fails() -> None:
    ref = np.array([0.0, math.nan, math.inf])
    result = compare(np.zeros(3, np.float32), ref, REDUCTION_TOL)
    assert result.reason == "reference: 2 of 3 elements not finite (1 NaN, 1 inf)"


def test_dtype_is_checked_only_when_asked() -> None:
    ref = ramp(3).astype(np.float64)
    assert compare(ref, ref, ELEMENTWISE_TOL).ok
    result = compare(ref, ref, ELEMENTWISE_TOL, dtype=np.float32)
    assert result.reason == "dtype float64 != expected float32"
    with pytest.raises(AssertionError, match="output 0: dtype float64 != expected float32"):
        assert_close([ref], [ref], ELEMENTWISE_TOL, dtype=np.float32)


def test_error_is_measured_in_float64() -> None:
    # float32(1 + 2**-23) - float32(1) is exactly representable; a float64 reference
    # that differs in the 30th bit must not be rounded onto the output.
    ref = np.array([1.0 + 2.0**-30])
    got = np.array([1.0], np.float32)
    assert compare(got, ref, ELEMENTWISE_TOL).max_error == pytest.approx(2.0**-30)


def test_sequence_headline_is_the_worst_output() -> None:
    ref = [np.zeros(2), np.full(2, 10.0), np.zeros(3)]
    got = [
        np.array([0.5e-4, 0.0], np.float32),  # half its bound
        np.array([10.0, 10.0 + 9e-4], np.float32),  # ~0.9 of its bound 1e-3
        np.zeros(3, np.float32),
    ]
    result = compare(got, ref, REDUCTION_TOL)
    assert result.ok and len(result.outputs) == 3
    assert all(isinstance(c, Comparison) and c.ok for c in result.outputs)
    assert result.bound == pytest.approx(1e-3)
    assert result.max_error == result.outputs[1].max_error

    got[0] = np.array([np.nan, 0.0], np.float32)
    got[2] = np.ones(3, np.float32)
    result = compare(got, ref, REDUCTION_TOL)
    assert not result.ok and [c.ok for c in result.outputs] == [False, True, False]
    assert result.reason is not None
    assert result.reason.startswith("output 0: 1 of 2 elements not finite")
    assert "; output 2: max|got - ref| = 1.000e+00 above bound" in result.reason


def test_one_output_against_a_sequence_reference_is_a_shape_mismatch() -> None:
    x = ramp(3)
    assert not compare(x, [x], ELEMENTWISE_TOL).ok


def test_a_sequence_of_outputs_needs_a_sequence_reference() -> None:
    x = ramp(3)
    with pytest.raises(TypeError, match="sequence of outputs"):
        compare([x], x, ELEMENTWISE_TOL)


SILU = (
    "func.func @f(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {\n"
    "  %y = graph.silu %x : tensor<?x4xf32>\n  func.return %y : tensor<?x4xf32>\n}\n"
)


def test_round_trips_pass_on_a_parsed_module() -> None:
    assert_round_trips(teeny_ir.parse_module(SILU))


def test_round_trips_fail_on_an_unverifiable_module() -> None:
    module = teeny_ir.parse_module(SILU)
    (function,) = module.ops
    module = ModuleOp([function.clone(), function.clone()])  # two @f: a symbol clash
    with pytest.raises(VerifyException, match='Redefinition of symbol "f"'):
        assert_round_trips(module)


# ---------------------------------------------------------------- the kernel-test library


def test_importing_the_library_loads_neither_triton_nor_torch() -> None:
    script = (
        "import sys, teeny_ir.testing, teeny_ir.testing.kernels, teeny_ir.testing.variants\n"
        "heavy = [n for n in ('triton', 'torch') if n in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)


PAD = 4


def _case(want: np.ndarray, tol: float | None = 0.0) -> Case:
    return Case("c", "elementwise", {}, [], 1, PAD, expected={"y": want}, tol=tol)


def _run(got: np.ndarray, before: float = CANARY, after: float = CANARY) -> Results:
    """A run's padded buffer around ``got``, as the harness returns it."""
    dtype = got.dtype
    head = np.full(PAD, before if dtype != np.int64 else I64_CANARY, dtype)
    tail = np.full(PAD, after if dtype != np.int64 else I64_CANARY, dtype)
    return {"c/y": np.concatenate([head, got, tail])}


WANT = np.array([1.0, -0.0, np.nan, np.inf, 2.0])
"""An expected view: NaN where nothing may be written (a gap), an infinity, a -0.0."""


def test_a_clean_run_has_no_problems() -> None:
    got = WANT.astype(np.float32)
    assert problems(_case(WANT), _run(got)) == []
    assert problems(_case(WANT, REDUCTION_TOL), _run(got + np.float32(1e-5))) == []


@pytest.mark.parametrize(
    ("got", "before", "after", "message"),
    [
        (
            [1, -0.0, np.nan, np.inf, 2],
            0.0,
            CANARY,
            "y: 4 of the 4 canaries before the view overwritten",
        ),
        (
            [1, -0.0, np.nan, np.inf, 2],
            CANARY,
            np.nan,
            "canaries after the view overwritten (the first at element 0",
        ),
        (
            [1, -0.0, 7.0, np.inf, 2],
            CANARY,
            CANARY,
            "1 of 5 elements not NaN where it must stay NaN (a view's gap, an unused output, or the reference's NaN) (the first at element 2: 7.0",
        ),
        (
            [1, -0.0, np.nan, -np.inf, 2],
            CANARY,
            CANARY,
            "not the reference's infinity (the first at element 3: -inf, expected inf)",
        ),
        (
            [1, -0.0, np.nan, np.inf, np.nan],
            CANARY,
            CANARY,
            "elements NaN or infinite where the reference is finite (never written, or read NaN) (the first at element 4",
        ),
        (
            [1, 0.0, np.nan, np.inf, 2],
            CANARY,
            CANARY,
            "y: 1 of 5 elements differ from the reference bit for bit (the first at element 1: 0.0, expected -0.0)",
        ),
    ],
    ids=["canary-before", "canary-after", "gap-written", "infinity", "unwritten", "sign-of-zero"],
)
def test_problems_name_the_output_and_the_first_element(
    got: list[float], before: float, after: float, message: str
) -> None:
    (found,) = problems(_case(WANT), _run(np.array(got, np.float32), before, after))
    assert message in found, found


def test_problems_hold_finite_values_to_the_tolerance_rule() -> None:
    got = WANT.astype(np.float32)
    got[4] = 2.01
    (found,) = problems(_case(WANT, REDUCTION_TOL), _run(got))
    assert found.startswith("y: max|got - ref| = 1.000e-02 above bound 2.000e-04")
    assert found.endswith("(the largest error at element 4)")
    assert problems(_case(WANT, None), _run(got)) == []  # the test checks the numbers itself


def test_problems_of_int64_outputs_and_sizes() -> None:
    status = np.array([0, 3, 0], np.int64)
    assert problems(_case(status), _run(status)) == []
    (found,) = problems(_case(status), _run(np.array([1, 3, 0], np.int64)))
    assert (
        found == "y: 1 of 3 elements differ (the first at element 0: [1, 3, 0], expected [0, 3, 0])"
    )
    (found,) = problems(_case(WANT), _run(np.zeros(4, np.float32)))
    assert found == "y: 4 elements, expected 5"


def test_channel_slice_is_a_view_of_a_nan_filled_buffer() -> None:
    x = ramp(2, 3, 2)
    data, stride = kernels.channel_slice(x, (5, 1))
    assert stride == 10 and data.size == 10 + 6
    assert np.array_equal(data[:6], x[0].ravel()) and np.isnan(data[6:10]).all()
    assert np.array_equal(data[10:], x[1].ravel())
    assert kernels.channel_slice(x, None)[1] == 6


SPLIT = """\
func.func @forward(%x: tensor<?x3x4xf32>) -> (tensor<?x1x4xf32>, tensor<?x2x4xf32>) {
  %a, %b = graph.split %x axis 1 sizes [1, 2] : (tensor<?x3x4xf32>) -> (tensor<?x1x4xf32>, tensor<?x2x4xf32>)
  func.return %a, %b : tensor<?x1x4xf32>, tensor<?x2x4xf32>
}
"""


def test_launch_case_binds_a_lowered_launch_with_views() -> None:
    """Dims at the batch, a view's stride in its batch-stride dim, the expected
    output NaN in its gaps, unused output slots NaN throughout, and a contract
    the validator accepts; a wrong dim is refused."""
    from teeny_ir.kernels import validator

    module, launch = kernels.lowered(SPLIT)
    x = ramp(3, 3, 4)
    want = teeny_ir.reference.run(module, {}, [x])
    case = kernels.launch_case("split", launch, 3, [x], want, pad=64, tol=0.0, views={"y1": (4, 1)})
    assert case.family == "split" and case.grid == 1
    assert case.arg("numel") == 36 and case.arg("y1_batch_stride") == 16
    assert case.tensors["y1"] == ((3, 2, 4), 16) and case.tensors["x"] == ((3, 3, 4), 12)
    y1 = case.expected["y1"].reshape(-1)
    assert y1.size == 2 * 16 + 8 and not np.isnan(y1[:8]).any() and np.isnan(y1[8:16]).all()
    assert np.isnan(case.expected["y2"]).all() and np.isnan(case.expected["y3"]).all()
    validator.validate(case.contract())
    with pytest.raises(validator.ContractError, match="argument 'numel'"):
        validator.validate(case.contract(numel="35"))
    wider = replace(case, constexprs=case.constexprs | {"BLOCK": 16})
    assert kernels.tile_grid(FAMILIES["split"], dict(wider.args), wider.constexprs) == (3,)


def test_variants_follow_the_pointwise_table(monkeypatch: pytest.MonkeyPatch) -> None:
    found = variants.variants()
    assert {v.entry for v in found} == set(pointwise.TABLE)
    assert all(len(v.values) == len(v.entry.options) for v in found)
    gelu = [v for v in found if v.name == "gelu"]
    assert [v.option_text() for v in gelu] == ["", "approximate tanh"]
    assert gelu[0].option_text(every=True) == "approximate none"
    monkeypatch.delitem(variants.OPTION_VALUES, "approximate")
    with pytest.raises(
        ValueError, match="entry 'gelu' has option\\(s\\) approximate with no sample"
    ):
        variants.variants()
