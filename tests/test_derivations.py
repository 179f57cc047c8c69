"""Derivations: `evaluate` for every kind, the BN fold against PyTorch's own
Conv+BN fusion, JSON round trips, source checks, and malformed derivations."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from xdsl.utils.exceptions import VerifyException

from dialects.derive import DerivationAttr
from teeny_ir.core import derivations
from teeny_ir.core.derivations import KINDS, Derivation, DerivationError, evaluate

RNG = np.random.default_rng(0)
C = 6
BN = {
    "bn.weight": RNG.uniform(0.5, 1.5, C).astype(np.float32),
    "bn.bias": (0.1 * RNG.standard_normal(C)).astype(np.float32),
    "bn.running_mean": (0.1 * RNG.standard_normal(C)).astype(np.float32),
    "bn.running_var": RNG.uniform(0.5, 1.5, C).astype(np.float32),
    "conv.bias": RNG.standard_normal(C).astype(np.float32),
    "conv.weight": RNG.standard_normal((C, 4, 1, 1)).astype(np.float32),
}
SCALE = derivations.bn_scale("bn.weight", "bn.running_var", 1e-3, C)
SHIFT = derivations.bn_shift("bn.weight", "bn.bias", "bn.running_mean", "bn.running_var", 1e-3, C)
SHIFT_BIAS = derivations.bn_shift(
    "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var", 1e-3, C, bias="conv.bias"
)


def as64(name: str) -> np.ndarray:
    return BN[name].astype(np.float64)


def check_result(result: np.ndarray, expected: np.ndarray) -> None:
    """float32, C-contiguous, and the float64 value rounded once."""
    assert result.dtype == np.float32 and result.flags.c_contiguous
    assert result.shape == expected.shape
    np.testing.assert_array_equal(result, expected.astype(np.float32))


def test_identity() -> None:
    check_result(evaluate(derivations.identity("conv.bias", [C]), BN), BN["conv.bias"])


def test_reshape() -> None:
    result = evaluate(derivations.reshape("conv.weight", [C, 4]), BN)
    check_result(result, BN["conv.weight"].reshape(C, 4))


def test_fill() -> None:
    check_result(evaluate(derivations.fill(1.0, [C]), {}), np.ones(C))
    check_result(evaluate(derivations.fill(-0.25, [2, 3]), {}), np.full((2, 3), -0.25))


def test_bn_scale() -> None:
    expected = as64("bn.weight") / np.sqrt(as64("bn.running_var") + 1e-3)
    check_result(evaluate(SCALE, BN), expected)


def test_bn_shift_with_and_without_bias() -> None:
    scale = as64("bn.weight") / np.sqrt(as64("bn.running_var") + 1e-3)
    shift = as64("bn.bias") - scale * as64("bn.running_mean")
    check_result(evaluate(SHIFT, BN), shift)
    check_result(evaluate(SHIFT_BIAS, BN), shift + scale * as64("conv.bias"))


def test_evaluate_accepts_any_array_like_and_extra_weights() -> None:
    weights: dict[str, Any] = {"w": [[1.0, 2.0]], "num_batches_tracked": np.array(3)}
    check_result(evaluate(derivations.reshape("w", [2]), weights), np.array([1.0, 2.0]))


@pytest.mark.parametrize("conv_bias", [False, True])
def test_bn_fold_matches_torch_fuse_conv_bn_eval(conv_bias: bool) -> None:
    """PyTorch folds BN into the conv weight and bias; our fused epilogue keeps the
    weight and applies scale and shift, so: fused_w == w * scale, fused_b == shift."""
    import torch
    from torch.nn.utils.fusion import fuse_conv_bn_eval

    torch.manual_seed(0)
    conv = torch.nn.Conv2d(5, C, 3, padding=1, bias=conv_bias).eval()
    bn = torch.nn.BatchNorm2d(C, eps=1e-3, momentum=0.03).eval()
    with torch.no_grad():
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.normal_(0.0, 0.1)
        bn.running_mean.normal_(0.0, 0.1)
        bn.running_var.uniform_(0.5, 1.5)
    state = {f"conv.{k}": v for k, v in conv.state_dict().items()}
    state |= {f"bn.{k}": v for k, v in bn.state_dict().items()}
    weights = {name: value.numpy() for name, value in state.items()}
    fused = fuse_conv_bn_eval(conv, bn)

    bias = "conv.bias" if conv_bias else None
    names = ("bn.weight", "bn.bias", "bn.running_mean", "bn.running_var")
    scale = evaluate(derivations.bn_scale(names[0], names[3], 1e-3, C), weights)
    shift = evaluate(derivations.bn_shift(*names, 1e-3, C, bias=bias), weights)
    w = evaluate(derivations.identity("conv.weight", [C, 5, 3, 3]), weights)
    fused_w = fused.weight.detach().numpy()
    assert fused.bias is not None
    fused_b = fused.bias.detach().numpy()
    np.testing.assert_allclose(w * scale[:, None, None, None], fused_w, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(shift, fused_b, rtol=1e-6, atol=1e-6)


def test_reshape_of_a_1x1_weight_is_the_gemm_matrix() -> None:
    """The conv1x1 GEMM weight slot: [O, I, 1, 1] -> [O, I], element for element."""
    w = BN["conv.weight"]
    matrix = evaluate(derivations.reshape("conv.weight", [C, 4]), BN)
    x = RNG.standard_normal((4, 10)).astype(np.float32)
    np.testing.assert_allclose(matrix @ x, np.einsum("oi,il->ol", w[:, :, 0, 0], x), rtol=1e-6)


# JSON


ALL_KINDS = [
    derivations.identity("conv.bias", [C]),
    derivations.reshape("conv.weight", [C, 4]),
    derivations.fill(1.0, [C]),
    derivations.fill(-2.5e-7, []),
    SCALE,
    SHIFT,
    SHIFT_BIAS,
]


@pytest.mark.parametrize("derivation", ALL_KINDS, ids=lambda d: d.kind)
def test_json_round_trip(derivation: Derivation) -> None:
    import json

    data = json.loads(json.dumps(derivation.to_json()))
    assert Derivation.from_json(data) == derivation


def test_json_holds_only_the_kind_s_fields() -> None:
    assert derivations.identity("w", [2]).to_json() == {
        "kind": "identity",
        "sources": ["w"],
        "shape": [2],
    }
    assert derivations.fill(0.5, [2]).to_json() == {
        "kind": "fill",
        "sources": [],
        "shape": [2],
        "value": 0.5,
    }
    assert SCALE.to_json()["eps"] == 1e-3
    assert "value" not in SCALE.to_json()


@given(
    kind=st.sampled_from(KINDS),
    shape=st.lists(st.integers(1, 64), max_size=4),
    eps=st.floats(1e-12, 1.0),
    value=st.floats(allow_nan=False, allow_infinity=False),
    bias=st.booleans(),
)
def test_json_round_trip_any(
    kind: str, shape: list[int], eps: float, value: float, bias: bool
) -> None:
    sources = {
        "identity": ("w",),
        "reshape": ("w",),
        "fill": (),
        "literal": (),
        "bn_scale": ("g", "v"),
        "bn_shift": ("g", "b", "m", "v", "c") if bias else ("g", "b", "m", "v"),
    }[kind]
    bn = kind in ("bn_scale", "bn_shift")
    if kind == "literal":  # the plan holds f32 bits: the values are f32 ones
        shape = shape[:2]
        as_f32 = float(np.float32(value)) if abs(value) < 3e38 else 1.0
        values = tuple(as_f32 * (i % 3 - 1) for i in range(math.prod(shape)))
    else:
        values = ()
    d = Derivation(
        kind,  # type: ignore[arg-type]
        sources,
        tuple(shape),
        eps=eps if bn else 0.0,
        value=value if kind == "fill" else 0.0,
        values=values,
    )
    assert Derivation.from_json(d.to_json()) == d


# Source checks


def test_roles_name_the_sources() -> None:
    assert SHIFT_BIAS.roles() == {
        "gamma": "bn.weight",
        "beta": "bn.bias",
        "mean": "bn.running_mean",
        "var": "bn.running_var",
        "bias": "conv.bias",
    }
    assert derivations.fill(1.0, [2]).roles() == {}


CHECK_SOURCES = [
    (derivations.identity("w", [4]), {"w": (4,)}, []),
    (derivations.identity("w", [4]), {}, ["weight 'w' is missing"]),
    (
        derivations.identity("w", [4]),
        {"w": (2, 2)},
        ["weight 'w' has shape [2, 2], expected 4 elements as [4]"],
    ),
    (derivations.reshape("w", [4, 3]), {"w": (4, 3, 1, 1)}, []),
    (
        derivations.reshape("w", [4, 3]),
        {"w": (4, 2, 1, 1)},
        ["weight 'w' has shape [4, 2, 1, 1], expected 12 elements as [4, 3]"],
    ),
    (derivations.fill(1.0, [3]), {}, []),
    (
        derivations.bn_shift("g", "b", "m", "v", 1e-3, 3),
        {"g": (3,), "m": (3,)},
        ["weight 'b' is missing", "weight 'v' is missing"],
    ),
    (
        derivations.bn_scale("g", "v", 1e-3, 3),
        {"g": (3,), "v": (4,)},
        ["weight 'v' has shape [4], expected [3]"],
    ),
    (
        derivations.bn_shift("g", "b", "m", "v", 1e-3, 3, bias="c"),
        {"g": (3,), "b": (3,), "m": (1, 3), "v": (3,), "c": (2,)},
        ["weight 'm' has shape [1, 3], expected [3]", "weight 'c' has shape [2], expected [3]"],
    ),
]


@pytest.mark.parametrize(("derivation", "shapes", "problems"), CHECK_SOURCES)
def test_check_sources(
    derivation: Derivation, shapes: dict[str, tuple[int, ...]], problems: list[str]
) -> None:
    assert derivation.check_sources(shapes) == problems


def test_evaluate_reports_every_source_problem() -> None:
    weights = {"bn.weight": np.ones(C), "bn.running_var": np.ones(C + 1)}
    message = "weight 'bn.bias' is missing; weight 'bn.running_mean' is missing"
    with pytest.raises(DerivationError, match=re.escape(message)):
        evaluate(SHIFT, weights)
    with pytest.raises(DerivationError, match=re.escape("has shape [7], expected [6]")):
        evaluate(SCALE, weights)


# Malformed derivations

MALFORMED = [
    (("bogus", ("w",), (2,)), {}, "unknown derivation kind 'bogus'"),
    (("identity", (), (2,)), {}, "derivation 'identity' takes 1 source weights, got 0"),
    (("reshape", ("a", "b"), (2,)), {}, "derivation 'reshape' takes 1 source weights, got 2"),
    (("fill", ("w",), (2,)), {}, "derivation 'fill' takes 0 source weights, got 1"),
    (("bn_scale", ("g",), (2,)), {"eps": 1e-3}, "'bn_scale' takes 2 source weights, got 1"),
    (("bn_shift", ("g",) * 6, (2,)), {"eps": 1e-3}, "takes 4 or 5 source weights, got 6"),
    (("identity", ("",), (2,)), {}, "derivation source weight names must be non-empty"),
    (("identity", ("w",), (2, 0)), {}, "derivation shape [2, 0] has a size below 1"),
    (("bn_scale", ("g", "v"), (2,)), {}, "batch-norm derivations need eps > 0, got 0.0"),
    (("bn_scale", ("g", "v"), (2,)), {"eps": -1.0}, "need eps > 0, got -1.0"),
    (("bn_shift", ("g", "b", "m", "v"), (2,)), {"eps": float("nan")}, "need eps > 0, got nan"),
    (("fill", (), (2,)), {"value": float("inf")}, "fill value must be finite, got inf"),
    (("fill", (), (2,)), {"value": float("nan")}, "fill value must be finite, got nan"),
]


@pytest.mark.parametrize(("args", "options", "message"), MALFORMED)
def test_malformed_derivations_raise(
    args: tuple[Any, ...], options: dict[str, float], message: str
) -> None:
    with pytest.raises(DerivationError, match=re.escape(message)):
        Derivation(*args, **options)


def test_derivation_error_is_a_value_error() -> None:
    assert issubclass(DerivationError, ValueError)


def test_derivation_attr_holds_only_derivations() -> None:
    assert DerivationAttr(SCALE).data == SCALE
    with pytest.raises(VerifyException, match="expected a Derivation, got str"):
        DerivationAttr("bn_scale")  # type: ignore[arg-type]
