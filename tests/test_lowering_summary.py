"""lower-graph-to-kernel's refusals: one located error per op, then one
unlocated line counting them per reason (not hundreds of identical lines)."""

from __future__ import annotations

import pytest

import teeny_ir
from teeny_ir import DiagnosticError

UNFUSED = """
func.func @forward(%x: tensor<?x4x6x6xf32>, %p: tensor<4xf32>) -> (tensor<?x4x6x6xf32>, tensor<?x6xf32>) {
  %w = graph.param "w" : tensor<4x4x1x1xf32>
  %c0 = graph.conv2d %x, %w : (tensor<?x4x6x6xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x6x6xf32>
  %c1 = graph.conv2d %c0, %w : (tensor<?x4x6x6xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x6x6xf32>
  %c2 = graph.conv2d %c1, %w : (tensor<?x4x6x6xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x6x6xf32>
  %y = graph.reduce_sum %x axes [1, 3] : (tensor<?x4x6x6xf32>) -> tensor<?x6xf32>
  func.return %c2, %y : tensor<?x4x6x6xf32>, tensor<?x6xf32>
}
"""


def test_refusals_are_located_then_counted_per_reason() -> None:
    module = teeny_ir.parse_module(UNFUSED, "m.mlir")
    before = teeny_ir.print_module(module)
    with pytest.raises(DiagnosticError) as caught:
        teeny_ir.PassManager.parse("lower-graph-to-kernel").run(module)
    diagnostics = caught.value.diagnostics
    located = [d for d in diagnostics if d.location is not None]
    assert [d.location.line for d in located if d.location] == [4, 5, 6, 7]
    assert all(d.message.startswith("cannot lower '") for d in located)
    (total,) = [d for d in diagnostics if d.location is None]
    assert diagnostics[-1] is total
    assert total.message.startswith("lower-graph-to-kernel refused 4 ops: 3 x 'graph.conv2d': ")
    assert "; 1 x 'graph.reduce_sum': " in total.message
    assert teeny_ir.print_module(module) == before  # nothing changed


def test_one_refusal_has_no_summary() -> None:
    text = """
func.func @forward(%x: tensor<?x4x6x6xf32>) -> tensor<?x4x6x6xf32> {
  %w = graph.param "w" : tensor<4x4x1x1xf32>
  %c = graph.conv2d %x, %w : (tensor<?x4x6x6xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x6x6xf32>
  func.return %c : tensor<?x4x6x6xf32>
}
"""
    with pytest.raises(DiagnosticError) as caught:
        teeny_ir.PassManager.parse("lower-graph-to-kernel").run(teeny_ir.parse_module(text))
    (only,) = caught.value.diagnostics
    assert only.location is not None and only.message.startswith("cannot lower 'graph.conv2d'")
