"""Options travel with their pointwise entry everywhere: every unary entry, with
each of its option values, trains like PyTorch through insert-backward (whose
`graph.activation_grad` carries the forward op's options, printed and parsed back)
and lowers to an ``activation_grad`` launch that spells them; and a bad table
entry is a named problem of `check_table`, never a crash at import."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest
import torch

import teeny_ir
from dialects.graph.elementwise import ActivationGradOp
from teeny_ir import reference
from teeny_ir.core import pointwise
from teeny_ir.core.diagnostics import DiagnosticError
from teeny_ir.testing.variants import Variant, variants

T = "tensor<?x3x5xf32>"
CASES = variants(arity=1)
"""Every unary entry, once per combination of its sample option values."""


def _torch_fn(name: str, options: dict[str, Any]) -> Any:
    fn = getattr(torch, name, None) or getattr(torch.nn.functional, name)
    return lambda x: fn(x, **options)


@pytest.mark.parametrize("variant", CASES, ids=[v.spelling for v in CASES])
def test_the_gradient_through_each_entry_equals_pytorch(variant: Variant) -> None:
    entry, options = variant.entry, variant.options
    text = (
        f"func.func @forward(%x: {T}) -> tensor<f32> {{\n"
        f'  %w = graph.param "w" : tensor<3x5xf32>\n'
        f"  %z = graph.mul %x, %w : ({T}, tensor<3x5xf32>) -> {T}\n"
        f"  %y = graph.{entry.name} %z {variant.option_text()} : {T}\n"
        f"  %l = graph.reduce_sum %y axes [0, 1, 2] : ({T}) -> tensor<f32>\n"
        f"  func.return %l : tensor<f32>\n}}\n"
    )
    module = teeny_ir.parse_module(text)
    teeny_ir.PassManager.parse("insert-backward").run(module)
    (grad_op,) = [op for op in module.walk() if isinstance(op, ActivationGradOp)]
    assert pointwise.options_of(entry, grad_op) == options
    printed = teeny_ir.print_module(module)
    module = teeny_ir.parse_module(printed)  # the options print and parse back
    rng = np.random.default_rng(7)
    x = (3.0 * rng.standard_normal((2, 3, 5))).astype(np.float32)
    w = rng.standard_normal((3, 5)).astype(np.float32)
    if entry.positive_domain:  # log, sqrt: x * w > 0
        x, w = np.abs(x), np.abs(w)
    _, dw = reference.run(module, {"w": w}, [x])
    tw = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    _torch_fn(entry.name, options)(torch.tensor(x, dtype=torch.float64) * tw).sum().backward()
    assert tw.grad is not None
    expected = tw.grad.numpy()
    assert np.abs(dw - expected).max() <= 1e-4 * max(1.0, np.abs(expected).max())
    (line,) = [line for line in printed.splitlines() if "graph.activation_grad" in line]
    written = line.split(" activation ", 1)[1].split(" : ")[0]
    alone = teeny_ir.parse_module(
        f"func.func @forward(%x: {T}, %g: {T}) -> {T} {{\n"
        f"  %d = graph.activation_grad %x, %g activation {written} : ({T}, {T}) -> {T}\n"
        f"  func.return %d : {T}\n}}\n"
    )
    teeny_ir.PassManager.parse("lower-graph-to-kernel").run(alone)
    kernel_ir = teeny_ir.print_module(alone)
    assert kernel_ir.count("kernel.launch") == 1
    assert f'ACTIVATION = "{pointwise.spell(entry, options)}"' in kernel_ir, kernel_ir


def test_an_activation_grad_without_its_entrys_options_is_a_located_error() -> None:
    text = (
        f"func.func @forward(%x: {T}, %g: {T}) -> {T} {{\n"
        f"  %d = graph.activation_grad %x, %g activation hardtanh min_val 0.0 : ({T}, {T}) -> {T}\n"
        f"  func.return %d : {T}\n}}\n"
    )
    with pytest.raises(DiagnosticError, match=r"2:.*option 'max_val'"):
        teeny_ir.parse_module(text)
    with pytest.raises(DiagnosticError, match=r"'beta' is not an option of graph.hardtanh"):
        teeny_ir.parse_module(text.replace("min_val 0.0", "min_val 0.0 max_val 1.0 beta 2.0"))


def test_a_bad_entry_is_a_named_problem_not_an_import_crash() -> None:
    bad = pointwise.Pointwise("graph.no_backward_example", 1, lambda np, x: x, "x", epilogue=True)
    assert pointwise.check_table((*pointwise.TABLE, bad)) == [
        "pointwise entry 'graph.no_backward_example' needs a derivative and a derivative_triton "
        "(its backward)"
    ]
    assert pointwise.check_table() == []
    # The tools import with such an entry in the table and run what it allows.
    script = (
        "from teeny_ir.core import pointwise\n"
        "bad = pointwise.Pointwise('graph.no_backward_example', 1, lambda np, x: x, 'x', epilogue=True)\n"
        "pointwise.TABLE = (*pointwise.TABLE, bad)\n"
        "import teeny_ir.driver.opt, teeny_ir.reference, passes.insert_backward\n"
        "print(len(pointwise.check_table(pointwise.TABLE)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"
