"""The backward of the binary pointwise entries whose gradients are masked or split
(`graph.maximum`, `graph.minimum`, `graph.pow`), through insert-backward and the
reference interpreter, against PyTorch's autograd in float64 on operand pairs that
hit the masks: ties, zero bases, zero exponents, negative integer powers, and
broadcasting (the gradient of a broadcast operand is summed back)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import teeny_ir
from teeny_ir import reference

N = 12
"""The operand length: the pairs below, two per row of a [2, N] left operand."""
X = np.array([1.5, -2.0, 3.0, 0.0, 0.0, 0.0, 2.0, -1.0, 0.5, 4.0, 0.0, -3.0], np.float32)
Y = np.array([1.5, 1.0, -2.0, 2.0, 0.0, -1.0, 0.0, 2.0, -0.5, 0.5, 3.0, 3.0], np.float32)
"""x against y: ties (1.5), a zero base with positive, zero and negative exponents,
zero exponents, integer powers of negative bases."""
TORCH = {"maximum": torch.maximum, "minimum": torch.minimum, "pow": torch.pow}


def _gradients(op: str, x: np.ndarray, y: np.ndarray) -> tuple[Any, Any]:
    """d(sum(op(x, y) * r)) / dx and / dy by insert-backward and the reference
    (x: [2, N] batched input times the ones parameter ``a``; y: a [N] parameter)."""
    t, v = f"tensor<?x{N}xf32>", f"tensor<{N}xf32>"
    text = (
        f"func.func @forward(%x: {t}, %r: {t}) -> tensor<f32> {{\n"
        f'  %a = graph.param "a" : {v}\n'
        f'  %b = graph.param "b" : {v}\n'
        f"  %xa = graph.mul %x, %a : ({t}, {v}) -> {t}\n"
        f"  %z = graph.{op} %xa, %b : ({t}, {v}) -> {t}\n"
        f"  %w = graph.mul %z, %r : ({t}, {t}) -> {t}\n"
        f"  %l = graph.reduce_sum %w axes [0, 1] : ({t}) -> tensor<f32>\n"
        f"  func.return %l : tensor<f32>\n}}\n"
    )
    module = teeny_ir.parse_module(text)
    teeny_ir.PassManager.parse("insert-backward").run(module)
    r = np.array([np.linspace(0.5, 1.5, N), np.linspace(-1.0, 1.0, N)], np.float32)
    ones = np.ones(N, np.float32)
    _, da, db = reference.run(module, {"a": ones, "b": y}, [x, r])
    ta = torch.ones(N, dtype=torch.float64, requires_grad=True)
    tb = torch.tensor(y, dtype=torch.float64, requires_grad=True)
    out = TORCH[op](torch.tensor(x, dtype=torch.float64) * ta, tb)
    (out * torch.tensor(r, dtype=torch.float64)).sum().backward()
    assert ta.grad is not None and tb.grad is not None
    return (da, db), (ta.grad.numpy(), tb.grad.numpy())


@pytest.mark.parametrize("ties", [False, True], ids=["mixed", "all-ties"])
@pytest.mark.parametrize("op", sorted(TORCH))
def test_masked_and_split_gradients_equal_pytorch(op: str, ties: bool) -> None:
    x = np.stack([Y, Y]) if ties else np.stack([X, X[::-1]])
    (da, db), (want_a, want_b) = _gradients(op, x, Y)
    for got, want in ((da, want_a), (db, want_b)):
        assert np.array_equal(np.isnan(got), np.isnan(want)), (got, want)
        assert np.array_equal(np.isinf(got), np.isinf(want)), (got, want)
        finite = np.isfinite(want)
        assert np.allclose(got[finite], want[finite], rtol=1e-5, atol=1e-5), (got, want)
