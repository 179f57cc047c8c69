"""Weights that make a derivation non-finite: `evaluate` raises `DerivationError`
naming the derivation and the weights (and numpy warns nothing on the way), and
both users of `evaluate` report it - the runtime as a `RuntimeInputError`
(teeny-run: one line, exit 1: see test_run_errors.py) and the reference
interpreter as a `DiagnosticError` located at the op.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import teeny_ir
from teeny_ir import reference
from teeny_ir.core import derivations
from teeny_ir.core.derivations import DerivationError, evaluate

C = 4
EPS = 1e-3
NAMES = ("bn.weight", "bn.bias", "bn.running_mean", "bn.running_var")
SCALE = derivations.bn_scale(NAMES[0], NAMES[3], EPS, C)
SHIFT = derivations.bn_shift(*NAMES, eps=EPS, channels=C)


def bn(var: list[float] | None = None, gamma: list[float] | None = None) -> dict[str, np.ndarray]:
    f32 = np.float32
    return {
        NAMES[0]: np.array(gamma or [1.0, 0.5, 2.0, 1.5], f32),
        NAMES[1]: np.array([0.1, 0.2, 0.3, 0.4], f32),
        NAMES[2]: np.array([0.0, 0.1, 0.2, 0.3], f32),
        NAMES[3]: np.array(var or [1.0, 0.5, 2.0, 1.5], f32),
    }


def raises_quietly(derivation: derivations.Derivation, weights: dict[str, Any]) -> str:
    """The DerivationError message; any warning on the way fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DerivationError) as info:
            evaluate(derivation, weights)
    return str(info.value)


def test_negative_running_var_names_the_weight() -> None:
    message = raises_quietly(SCALE, bn(var=[1.0, -2.0, 2.0, -0.5]))
    assert message == (
        "derivation bn_scale('bn.weight', 'bn.running_var') is not finite at 2 of 4 entries "
        "(first at index [1]): the running variance 'bn.running_var' is -2 there, and "
        "variance + eps (0.001) must be positive"
    )
    assert "bn_shift('bn.weight', 'bn.bias', 'bn.running_mean', 'bn.running_var')" in (
        raises_quietly(SHIFT, bn(var=[1.0, -2.0, 2.0, -0.5]))
    )


def test_variance_of_minus_eps_is_refused() -> None:
    message = raises_quietly(SCALE, bn(var=[1.0, 1.0, -EPS, 1.0]))
    assert "first at index [2]" in message and "'bn.running_var'" in message


def test_nan_weight_is_named() -> None:
    weights = {"conv.weight": np.array([[1.0, np.nan], [0.0, 2.0]], np.float32)}
    message = raises_quietly(derivations.identity("conv.weight", [2, 2]), weights)
    assert message == (
        "derivation identity('conv.weight') is not finite at 1 of 4 entries "
        "(first at index [0, 1]): weight 'conv.weight' is not finite there"
    )
    message = raises_quietly(SHIFT, bn() | {NAMES[2]: np.array([0, np.inf, 0, 0], np.float32)})
    assert message.endswith("weight 'bn.running_mean' is not finite there")


def test_overflow_to_float32_names_the_weights() -> None:
    message = raises_quietly(SCALE, bn(gamma=[3e38, 1.0, 1.0, 1.0], var=[1e-4, 1.0, 1.0, 1.0]))
    assert message.startswith("derivation bn_scale('bn.weight', 'bn.running_var') is not finite")
    assert "'bn.weight' = 3e+38, 'bn.running_var' = 0.0001) overflow float32" in message


def test_non_numeric_weight_is_a_derivation_error() -> None:
    weights = {"w": np.array(["a", "b"])}
    message = raises_quietly(derivations.identity("w", [2]), weights)
    assert message == "weight 'w' has dtype <U1, not real numbers (read by identity('w'))"


def test_finite_weights_still_evaluate() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scale = evaluate(SCALE, bn())
    gamma = var = np.array([1.0, 0.5, 2.0, 1.5])
    np.testing.assert_allclose(scale, gamma / np.sqrt(var + EPS), rtol=1e-6)


# --- the reference interpreter ----------------------------------------------

SLICE = Path(__file__).resolve().parent.parent / "examples" / "slice"


def slice_weights(**changes: tuple[int, float]) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    weights = load_file(str(SLICE / "slice.safetensors"))
    for short, (index, value) in changes.items():
        name = f"model.0.bn.{short}"
        weights[name] = weights[name].copy()
        weights[name][index] = value
    return weights


def fused_slice() -> Any:
    module = teeny_ir.parse_module((SLICE / "slice.mlir").read_text(), filename="slice.mlir")
    teeny_ir.PassManager.parse("split-bias,fuse-conv-bn-act").run(module)
    return module


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_reference_refuses_a_fused_bn_with_a_negative_variance() -> None:
    module = fused_slice()
    x = np.zeros((1, 37, 7, 9), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(teeny_ir.DiagnosticError) as info:
            reference.run(module, slice_weights(running_var=(5, -1.0)), [x])
    headers = [d.header() for d in info.value.diagnostics]
    assert len(headers) == 2  # the scale and the shift derivation
    assert all(re.match(r"slice\.mlir:\d+:\d+: error: derivation bn_", h) for h in headers)
    assert all("the running variance 'model.0.bn.running_var' is -1 there" in h for h in headers)
    located = {d.location for d in info.value.diagnostics}
    assert len(located) == 1 and None not in located  # at the fused conv


def test_reference_refuses_a_batch_norm_with_a_negative_variance() -> None:
    text = (SLICE / "slice.mlir").read_text()
    module = teeny_ir.parse_module(text, filename="slice.mlir")
    x = np.zeros((1, 37, 7, 9), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(teeny_ir.DiagnosticError) as info:
            reference.run(module, slice_weights(running_var=(3, -0.5)), [x])
    (header,) = [d.header() for d in info.value.diagnostics]
    line = line_of(text, "graph.batch_norm")
    assert header.startswith(f"slice.mlir:{line}:")
    assert header.endswith(
        "error: batch_norm reads running variance 'model.0.bn.running_var', which is -0.5 at "
        "index 3 (1 of 37 entries): variance + eps (0.001) must be positive"
    )


def test_reference_with_finite_weights_still_runs() -> None:
    x = np.random.default_rng(0).standard_normal((2, 37, 7, 9)).astype(np.float32)
    got = reference.run(fused_slice(), slice_weights(), [x])
    assert all(np.isfinite(r).all() for r in got)
