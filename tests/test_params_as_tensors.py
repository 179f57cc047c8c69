"""Weights and constants that a launch reads as operands: lower-graph-to-kernel
materialises each as a `kernel.param` (a parameter bound at run time), a
constant's values as a ``literal`` derivation whose f32 bits survive the plan's
JSON, NaN and inf included."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import teeny_ir
from dialects.kernel import LaunchOp
from teeny_ir import reference, runtime
from teeny_ir.backend.plan import PlanError, load_plan
from teeny_ir.core.derivations import Derivation, evaluate, f32_bits, f32_from_bits

MODEL = """
func.func @forward(%x: tensor<?x4x5x5xf32>) -> tensor<?x4x5x5xf32> {
  %b = graph.param "b" : tensor<4x1x1xf32>
  %c = graph.constant dense<[[[1.0, 2.0, -0.0, 4.0, 5.0]], [[0x7F800000, -1.0, 0.5, 2.0, 0x7FC00000]], [[1.0, 2.0, 3.0, 4.0, 5.0]], [[0xFF800000, 2.0, 3.0, 4.0, 5.0]]]> : tensor<4x1x5xf32>
  %s = graph.constant dense<0.25> : tensor<5xf32>
  %y = graph.add %x, %b : (tensor<?x4x5x5xf32>, tensor<4x1x1xf32>) -> tensor<?x4x5x5xf32>
  %z = graph.mul %y, %c : (tensor<?x4x5x5xf32>, tensor<4x1x5xf32>) -> tensor<?x4x5x5xf32>
  %w = graph.add %z, %s : (tensor<?x4x5x5xf32>, tensor<5xf32>) -> tensor<?x4x5x5xf32>
  func.return %w : tensor<?x4x5x5xf32>
}
"""


def _emit(tmp_path: Path, text: str = MODEL) -> Path:
    out = tmp_path / "plan"
    module = teeny_ir.parse_module(text, "m.mlir")
    teeny_ir.PassManager.parse(f"teeny-inference,emit-triton{{out-dir={out}}}").run(module)
    return out


def test_weights_and_constants_become_kernel_params() -> None:
    module = teeny_ir.parse_module(MODEL)
    teeny_ir.PassManager.parse("teeny-inference").run(module)
    ir = teeny_ir.print_module(module)
    assert 'kernel.param #derive.param<identity("b") : [4, 1, 1]>' in ir
    assert "kernel.param #derive.param<fill(0.25) : [5]>" in ir
    assert "kernel.param #derive.param<literal(" in ir
    assert "graph." not in ir
    again = teeny_ir.parse_module(ir)  # the printed form parses back to the same text
    assert teeny_ir.print_module(again) == ir


@pytest.mark.parametrize("batch", [1, 3])
def test_params_as_operands_match_the_reference_nan_and_inf_included(
    tmp_path: Path, batch: int
) -> None:
    out = _emit(tmp_path)
    weights = {"b": np.array([1.0, -2.0, 0.5, 3.0], dtype=np.float32).reshape(4, 1, 1)}
    x = np.random.default_rng(batch).standard_normal((batch, 4, 5, 5)).astype(np.float32)
    (got,) = runtime.load(out).run([x], weights)
    (want,) = reference.run(teeny_ir.parse_module(MODEL), weights, [x])
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want))
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
    finite = np.isfinite(want)
    assert finite.sum() > 0 and (~finite).sum() > 0
    assert np.max(np.abs(got[finite] - want[finite])) <= 1e-5 * max(1.0, np.abs(want[finite]).max())


def test_literal_bits_round_trip_exactly() -> None:
    values = (1.0, -0.0, float("inf"), float("-inf"), 3.0e-45, 0.1)
    derivation = Derivation("literal", (), (2, 3), values=values)
    again = Derivation.from_json(json.loads(json.dumps(derivation.to_json())))
    assert [f32_bits(v) for v in again.values] == [f32_bits(v) for v in values]
    nan = f32_from_bits(0x7FC00000)
    assert np.isnan(evaluate(Derivation("literal", (), (1,), values=(nan,)), {}))[0]


def test_an_edited_literal_is_refused(tmp_path: Path) -> None:
    source = _emit(tmp_path)
    copy = tmp_path / "edited"
    shutil.copytree(source, copy)
    data = json.loads((copy / "plan.json").read_text())
    literal = next(p for p in data["params"] if p["derivation"]["kind"] == "literal")
    literal["derivation"]["bits"].pop()
    (copy / "plan.json").write_text(json.dumps(data))
    with pytest.raises(PlanError, match="needs 20 values, got 19"):
        load_plan(copy)


def test_a_returned_weight_or_constant_is_copied_into_the_result(tmp_path: Path) -> None:
    # A result is a buffer a launch writes: a returned weight (bound, never
    # written) or constant (a parameter) gets a reshape_copy launch.
    text = """
func.func @forward(%x: tensor<?x4xf32>) -> (tensor<4xf32>, tensor<2x3xf32>, tensor<?x4xf32>) {
  %b = graph.param "b" : tensor<4xf32>
  %c = graph.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %y = graph.bias_add %x, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  func.return %b, %c, %y : tensor<4xf32>, tensor<2x3xf32>, tensor<?x4xf32>
}
"""
    module = teeny_ir.parse_module(text)
    out = tmp_path / "plan"
    teeny_ir.PassManager.parse(
        f"lower-graph-to-kernel{{profile=interpreter}},emit-triton{{out-dir={out}}}"
    ).run(module)
    families = [op.family for op in module.walk() if isinstance(op, LaunchOp)]
    assert sorted(families) == ["channel_affine", "reshape_copy", "reshape_copy"]
    b = np.array([0.5, -1.0, 2.0, 3.5], np.float32)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = runtime.load(out).run([x], {"b": b})
    np.testing.assert_array_equal(got[0], b)
    np.testing.assert_array_equal(got[1], [[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(got[2], x + b)
