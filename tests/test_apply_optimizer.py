"""apply-optimizer and the optimizer ops: one step of torch.optim.SGD / AdamW,
checked against torch over consecutive steps, results found by attribute."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.dialects.func import FuncOp

from dialects.graph.optim import AdamwUpdateOp, SgdUpdateOp
from dialects.graph.param import ParamOp
from passes.apply_optimizer import ApplyOptimizerPass, decayed_params
from teeny_ir.core.diagnostics import DiagnosticError
from teeny_ir.driver.pass_manager import PassManager
from teeny_ir.ir.parsing import parse_module, print_module
from teeny_ir.reference import SEMANTICS, run

SHAPES = {
    "conv.weight": (4, 3, 3, 3),
    "conv.bias": (4,),
    "bn.weight": (4,),
    "fc.weight": (5, 16),
    "fc.bias": (5,),
}
"""The trainable parameters of `MODEL`, in gradient-result order."""
DECAYED = {"conv.weight", "fc.weight"}
"""The conv and linear weights: what weight decay applies to by default."""


MODEL = """
func.func @forward(%x: tensor<2x3x4x4xf32>, %t0: tensor<4x3x3x3xf32>, %t1: tensor<4xf32>,
    %t2: tensor<4xf32>, %t3: tensor<5x16xf32>, %t4: tensor<5xf32>)
    -> (tensor<f32>, tensor<2x5xf32>, tensor<4xf32> {teeny.running = "bn.running_mean"},
        tensor<4x3x3x3xf32> {teeny.grad = "conv.weight"}, tensor<4xf32> {teeny.grad = "conv.bias"},
        tensor<4xf32> {teeny.grad = "bn.weight"}, tensor<5x16xf32> {teeny.grad = "fc.weight"},
        tensor<5xf32> {teeny.grad = "fc.bias"}) {
  %w = graph.param "conv.weight" : tensor<4x3x3x3xf32>
  %b = graph.param "conv.bias" : tensor<4xf32>
  %gamma = graph.param "bn.weight" : tensor<4xf32>
  %beta = graph.param "bn.bias" : tensor<4xf32>
  %rm = graph.param "bn.running_mean" : tensor<4xf32>
  %rv = graph.param "bn.running_var" : tensor<4xf32>
  %fw = graph.param "fc.weight" : tensor<5x16xf32>
  %fb = graph.param "fc.bias" : tensor<5xf32>
  %c = graph.conv2d %x, %w, %b : (tensor<2x3x4x4xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>)
      -> tensor<2x4x2x2xf32>
  %n = graph.batch_norm %c, %gamma, %beta, %rm, %rv : (tensor<2x4x2x2xf32>, tensor<4xf32>,
      tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x2x2xf32>
  %f = graph.flatten %n : (tensor<2x4x2x2xf32>) -> tensor<2x16xf32>
  %y = graph.linear %f, %fw, %fb : (tensor<2x16xf32>, tensor<5x16xf32>, tensor<5xf32>)
      -> tensor<2x5xf32>
  %l = graph.reduce_sum %y axes [0, 1] : (tensor<2x5xf32>) -> tensor<f32>
  %g0 = graph.sub %w, %t0 : (tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>) -> tensor<4x3x3x3xf32>
  %g1 = graph.sub %b, %t1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %g2 = graph.sub %gamma, %t2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %g3 = graph.sub %fw, %t3 : (tensor<5x16xf32>, tensor<5x16xf32>) -> tensor<5x16xf32>
  %g4 = graph.sub %fb, %t4 : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  func.return %l, %y, %rm, %g0, %g1, %g2, %g3, %g4 : tensor<f32>, tensor<2x5xf32>, tensor<4xf32>,
      tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<5x16xf32>, tensor<5xf32>
}
"""
"""A model whose gradients are ``param - target`` (the gradient of
``0.5 * |param - target|^2``), computed by graph ops from the params and inputs."""


def _rng_weights(seed: int = 0) -> tuple[dict[str, np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    weights = {n: rng.standard_normal(s).astype(np.float32) for n, s in SHAPES.items()}
    weights["bn.bias"] = rng.standard_normal(4).astype(np.float32)
    weights["bn.running_mean"] = rng.standard_normal(4).astype(np.float32)
    weights["bn.running_var"] = rng.uniform(0.5, 2.0, 4).astype(np.float32)
    inputs = [rng.standard_normal((2, 3, 4, 4)).astype(np.float32)]
    inputs += [rng.standard_normal(s).astype(np.float32) for s in SHAPES.values()]
    return weights, inputs


def _optimized(pipeline: str, text: str = MODEL) -> ModuleOp:
    module = parse_module(text)
    PassManager.parse(pipeline).run(module)
    return module


def _forward(module: ModuleOp) -> FuncOp:
    found = [op for op in module.ops if isinstance(op, FuncOp) and op.sym_name.data == "forward"]
    assert len(found) == 1
    return found[0]


def _marked(module: ModuleOp, key: str) -> dict[str, int]:
    """Result index of each result carrying ``key``, by the name it holds."""
    res_attrs = _forward(module).res_attrs
    assert res_attrs is not None
    found: dict[str, int] = {}
    for index, attrs in enumerate(res_attrs.data):
        value = attrs.data.get(key)
        if value is not None:
            assert isinstance(value, StringAttr)
            assert value.data not in found
            found[value.data] = index
    return found


def _step(
    module: ModuleOp, weights: dict[str, np.ndarray], inputs: list[np.ndarray]
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """One run: (gradients, updated values), each by name."""
    outs = run(module, weights, inputs)
    grads = {n: outs[i] for n, i in _marked(module, "teeny.grad").items()}
    updated = {n: outs[i] for n, i in _marked(module, "teeny.updated").items()}
    return grads, updated


def _torch_step(
    kind: str,
    options: dict[str, Any],
    weights: dict[str, np.ndarray],
    grads: dict[str, np.ndarray],
    decayed: set[str],
) -> dict[str, np.ndarray]:
    """One torch step in float64 from ``weights`` (params and any state by name);
    returns the updated params and state by name."""
    params = {n: torch.tensor(weights[n], dtype=torch.float64) for n in SHAPES}
    for name, p in params.items():
        p.grad = torch.tensor(grads[name], dtype=torch.float64)
    weight_decay = options.pop("weight_decay", 0.0)
    groups = [
        {"params": [params[n] for n in SHAPES if n in decayed], "weight_decay": weight_decay},
        {"params": [params[n] for n in SHAPES if n not in decayed], "weight_decay": 0.0},
    ]
    groups = [g for g in groups if g["params"]]
    optimizer: torch.optim.Optimizer
    if kind == "sgd":
        optimizer = torch.optim.SGD(groups, foreach=False, **options)
        keys = {"momentum_buffer": "momentum_buffer"} if options.get("momentum") else {}
    else:
        optimizer = torch.optim.AdamW(groups, foreach=False, **options)
        keys = {"exp_avg": "exp_avg", "exp_avg_sq": "exp_avg_sq", "step": "step"}
    for name, p in params.items():
        present = {k: weights[f"{name}.{k}"] for k in keys if f"{name}.{k}" in weights}
        if present:
            assert len(present) == len(keys)
            optimizer.state[p] = {
                k: torch.tensor(v, dtype=torch.float32 if k == "step" else torch.float64)
                for k, v in present.items()
            }
    optimizer.step()
    result = {n: p.detach().numpy() for n, p in params.items()}
    for name, p in params.items():
        for key in keys:
            result[f"{name}.{key}"] = np.asarray(optimizer.state[p][key], dtype=np.float64)
    return result


def _assert_rounds_to(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """``got`` (float32) is the float64 ``want`` rounded once (to 1 ulp)."""
    assert got.dtype == np.float32 and got.shape == want.shape, what
    np.testing.assert_array_max_ulp(got, want.astype(np.float32), maxulp=1)
    bound = np.abs(want) * 2.0**-23 + 1e-38
    assert np.all(np.abs(got.astype(np.float64) - want) <= bound), what


def _check_against_torch(
    pipeline: str,
    kind: str,
    options: dict[str, Any],
    decayed: set[str],
    *,
    state: dict[str, np.ndarray] | None = None,
    steps: int = 3,
) -> dict[str, np.ndarray]:
    """Run ``steps`` consecutive steps (each feeding its updated values back as the
    next weights, by name) and compare each with torch's step from the same
    values; returns the last weights."""
    module = _optimized(pipeline)
    weights, inputs = _rng_weights()
    weights.update(state or {})
    for step in range(steps):
        grads, updated = _step(module, weights, inputs)
        want = _torch_step(kind, dict(options), weights, grads, decayed)
        assert set(updated) == set(want), step
        for name, value in want.items():
            _assert_rounds_to(updated[name], value, f"step {step}: {name}")
        weights = {**weights, **updated}
    return weights


SGD_CASES = [
    ("apply-optimizer{kind=sgd lr=0.1}", {"lr": 0.1}, DECAYED),
    ("apply-optimizer{lr=0.05 momentum=0.9}", {"lr": 0.05, "momentum": 0.9}, DECAYED),
    (
        "apply-optimizer{kind=sgd lr=0.05 momentum=0.9 weight-decay=5e-4}",
        {"lr": 0.05, "momentum": 0.9, "weight_decay": 5e-4},
        DECAYED,
    ),
    ("apply-optimizer{lr=0.1 weight-decay=0.3}", {"lr": 0.1, "weight_decay": 0.3}, DECAYED),
    (
        "apply-optimizer{lr=0.1 momentum=0.5 weight-decay=0.3 decay-all=true}",
        {"lr": 0.1, "momentum": 0.5, "weight_decay": 0.3},
        set(SHAPES),
    ),
]


@pytest.mark.parametrize(("pipeline", "options", "decayed"), SGD_CASES)
def test_sgd_matches_torch_over_three_steps(
    pipeline: str, options: dict[str, Any], decayed: set[str]
) -> None:
    _check_against_torch(pipeline, "sgd", options, decayed)


ADAMW_CASES = [
    ("apply-optimizer{kind=adamw lr=0.01}", {"lr": 0.01, "weight_decay": 1e-2}, DECAYED),
    (
        "apply-optimizer{kind=adamw lr=0.02 betas=0.8,0.99 eps=1e-6 weight-decay=0.1}",
        {"lr": 0.02, "betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.1},
        DECAYED,
    ),
    (
        "apply-optimizer{kind=adamw lr=0.02 weight-decay=0.5 decay-all=true}",
        {"lr": 0.02, "weight_decay": 0.5},
        set(SHAPES),
    ),
    (
        "apply-optimizer{kind=adamw lr=0.01 weight-decay=0}",
        {"lr": 0.01, "weight_decay": 0.0},
        set(),
    ),
]


@pytest.mark.parametrize(("pipeline", "options", "decayed"), ADAMW_CASES)
def test_adamw_matches_torch_over_three_steps(
    pipeline: str, options: dict[str, Any], decayed: set[str]
) -> None:
    _check_against_torch(pipeline, "adamw", options, decayed)


def _state(kind: str, seed: int = 7) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    state: dict[str, np.ndarray] = {}
    for name, shape in SHAPES.items():
        if kind == "sgd":
            state[f"{name}.momentum_buffer"] = rng.standard_normal(shape).astype(np.float32)
        else:
            state[f"{name}.exp_avg"] = rng.standard_normal(shape).astype(np.float32)
            state[f"{name}.exp_avg_sq"] = rng.uniform(0.1, 2.0, shape).astype(np.float32)
            state[f"{name}.step"] = np.array(5.0, np.float32)
    return state


@pytest.mark.parametrize(
    ("pipeline", "kind", "options"),
    [
        (SGD_CASES[2][0], "sgd", SGD_CASES[2][1]),
        (ADAMW_CASES[1][0], "adamw", ADAMW_CASES[1][1]),
    ],
)
def test_state_present_in_the_weights_is_read(
    pipeline: str, kind: str, options: dict[str, Any]
) -> None:
    """Steps from given state (step count 5) match torch resumed from it, and
    differ from the first steps (state missing: zeros)."""
    resumed = _check_against_torch(pipeline, kind, options, DECAYED, state=_state(kind))
    fresh = _check_against_torch(pipeline, kind, options, DECAYED)
    if kind == "adamw":
        assert resumed["conv.weight.step"] == 8.0 and fresh["conv.weight.step"] == 3.0
    assert not np.allclose(resumed["conv.weight"], fresh["conv.weight"], atol=1e-3)


def test_missing_state_is_zero_and_present_state_is_used() -> None:
    module = _optimized("apply-optimizer{kind=adamw lr=0.01}")
    weights, inputs = _rng_weights()
    _, first = _step(module, weights, inputs)
    assert first["fc.bias.step"] == 1.0
    grad = weights["fc.bias"].astype(np.float64) - inputs[5]
    np.testing.assert_allclose(first["fc.bias.exp_avg"], 0.1 * grad, rtol=1e-6)
    np.testing.assert_allclose(first["fc.bias.exp_avg_sq"], 0.001 * grad * grad, rtol=1e-6)
    # Adam's first step moves each entry by about lr, against the gradient's sign.
    moved = first["fc.bias"] - weights["fc.bias"]
    np.testing.assert_allclose(moved, -0.01 * np.sign(grad), rtol=1e-4)
    _, again = _step(module, {**weights, "fc.bias.step": np.array(4.0, np.float32)}, inputs)
    assert again["fc.bias.step"] == 5.0
    assert not np.allclose(again["fc.bias"], first["fc.bias"])


@pytest.mark.parametrize("kind", ["sgd", "adamw"])
def test_weight_decay_reaches_conv_and_linear_weights_only(kind: str) -> None:
    """A large decay changes the conv and linear weights' steps and nothing
    else; with decay-all every parameter's."""
    extra = "momentum=0.9" if kind == "sgd" else ""

    def step(options: str) -> dict[str, np.ndarray]:
        pipeline = f"apply-optimizer{{kind={kind} lr=0.1 {extra} {options}}}"
        return _step(_optimized(pipeline), weights, inputs)[1]

    weights, inputs = _rng_weights()
    plain, decayed = step("weight-decay=0"), step("weight-decay=2.0")
    every = step("weight-decay=2.0 decay-all=true")
    for name in SHAPES:
        differs = float(np.abs(decayed[name] - plain[name]).max())
        if name in DECAYED:
            assert differs > 1e-2, name
        else:
            np.testing.assert_array_equal(decayed[name], plain[name], err_msg=name)
        assert float(np.abs(every[name] - plain[name]).max()) > 1e-2, name


def test_decayed_params_are_the_weights_of_convs_and_linears() -> None:
    module = parse_module(MODEL)
    assert decayed_params(_forward(module)) == DECAYED
    fused = parse_module("""
func.func @forward(%x: tensor<1x2x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %w = graph.param "f.weight" : tensor<4x2x1x1xf32>
  %y = graph.fused_conv2d %x, %w scale #derive.param<fill(1.0) : [4]>
      shift #derive.param<identity("f.bias") : [4]>
      : (tensor<1x2x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<1x4x4x4xf32>
  func.return %y : tensor<1x4x4x4xf32>
}""")
    assert decayed_params(_forward(fused)) == {"f.weight"}


@pytest.mark.parametrize(
    ("kind", "options", "steps"),
    [
        ("sgd", {"lr": 0.07, "momentum": 0.8, "weight_decay": 0.3}, 3),
        ("sgd", {"lr": 0.07, "weight_decay": 0.3}, 3),
        ("adamw", {"lr": 0.03, "betas": (0.85, 0.95), "eps": 1e-7, "weight_decay": 0.2}, 3),
    ],
)
def test_float64_semantics_match_torch_to_1e_12(
    kind: str, options: dict[str, Any], steps: int
) -> None:
    """The ops' semantics, evaluated in float64 without the per-op rounding to
    float32, agree with torch's float64 steps to 1e-12 over consecutive steps."""
    betas = options.get("betas", (0.9, 0.999))
    if kind == "sgd":
        op: SgdUpdateOp | AdamwUpdateOp = SgdUpdateOp(
            ParamOp("p", _tensor(3, 4)),
            ParamOp("g", _tensor(3, 4)),
            ParamOp("b", _tensor(3, 4)) if "momentum" in options else None,
            lr=options["lr"],
            momentum=options.get("momentum"),
            weight_decay=options["weight_decay"],
        )
    else:
        pv, gv, mv, vv = (ParamOp(n, _tensor(3, 4)) for n in "pgmv")
        op = AdamwUpdateOp(
            pv,
            gv,
            mv,
            vv,
            ParamOp("s", _tensor()),
            lr=options["lr"],
            beta1=betas[0],
            beta2=betas[1],
            eps=options["eps"],
            weight_decay=options["weight_decay"],
        )
    op.verify()
    rule = SEMANTICS.lookup(type(op))
    assert callable(rule)
    rng = np.random.default_rng(3)
    p = torch.tensor(rng.standard_normal((3, 4)), dtype=torch.float64, requires_grad=True)
    optimizer = (torch.optim.SGD if kind == "sgd" else torch.optim.AdamW)(
        [p], foreach=False, **options
    )
    ours: list[np.ndarray] = [p.detach().numpy().copy()]
    if kind == "sgd" and "momentum" in options:
        ours.append(np.zeros((3, 4)))
    elif kind == "adamw":
        ours += [np.zeros((3, 4)), np.zeros((3, 4)), np.zeros(())]
    for _ in range(steps):
        grad = rng.standard_normal((3, 4))
        p.grad = torch.tensor(grad, dtype=torch.float64)
        optimizer.step()
        param, *state = ours
        ours = rule(op, [param, grad, *state], {})
        np.testing.assert_allclose(ours[0], p.detach().numpy(), rtol=0, atol=1e-12)
        if len(ours) > 1:
            key = "momentum_buffer" if kind == "sgd" else "exp_avg"
            np.testing.assert_allclose(ours[1], optimizer.state[p][key].numpy(), atol=1e-12)
    if kind == "adamw":
        assert float(ours[3]) == steps == float(optimizer.state[p]["step"])


def _tensor(*shape: int) -> Any:
    from xdsl.dialects.builtin import TensorType, f32

    return TensorType(f32, list(shape))


# --- the contract's attributes ------------------------------------------------------------


def test_results_are_appended_with_updated_attributes() -> None:
    module = _optimized("apply-optimizer{kind=sgd lr=0.05 momentum=0.9 weight-decay=5e-4}")
    forward = _forward(module)
    assert forward.res_attrs is not None
    attrs = [dict(a.data) for a in forward.res_attrs.data]
    original = 3 + len(SHAPES)
    assert attrs[:3] == [{}, {}, {"teeny.running": StringAttr("bn.running_mean")}]
    assert [a["teeny.grad"] for a in attrs[3:original]] == [StringAttr(n) for n in SHAPES]
    assert [a["teeny.updated"] for a in attrs[original:]] == [
        StringAttr(n) for name in SHAPES for n in (name, f"{name}.momentum_buffer")
    ]
    outputs = forward.function_type.outputs.data
    assert len(outputs) == len(attrs) == original + 2 * len(SHAPES)
    for name, index in _marked(module, "teeny.updated").items():
        assert outputs[index] == outputs[_marked(module, "teeny.grad")[name.split(".m")[0]]]
    # No momentum: no buffer. AdamW: moments and a scalar step.
    assert set(_marked(_optimized("apply-optimizer{lr=0.1}"), "teeny.updated")) == set(SHAPES)
    adamw = _optimized("apply-optimizer{kind=adamw}")
    marked = _marked(adamw, "teeny.updated")
    assert set(marked) == {
        f"{n}{s}" for n in SHAPES for s in ("", ".exp_avg", ".exp_avg_sq", ".step")
    }
    assert str(_forward(adamw).function_type.outputs.data[marked["fc.weight.step"]]) == (
        "tensor<f32>"
    )
    state = {op.param_name.data for op in _forward(adamw).walk() if isinstance(op, ParamOp)}
    assert {f"{n}.exp_avg" for n in SHAPES} <= state
    assert all(
        op.zero_default == (op.param_name.data.count(".") > 1)
        for op in _forward(adamw).walk()
        if isinstance(op, ParamOp)
    )


def test_the_optimized_module_round_trips() -> None:
    for pipeline in (SGD_CASES[2][0], ADAMW_CASES[1][0]):
        text = print_module(_optimized(pipeline))
        assert print_module(parse_module(text)) == text
        generic = print_module(parse_module(text), generic=True)
        assert print_module(parse_module(generic)) == text


# --- options --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        (
            "apply-optimizer{kind=sgd lr=0.05 momentum=0.9 weight-decay=5e-4}",
            "builtin.module(apply-optimizer{lr=0.05 momentum=0.9 weight-decay=0.0005})",
        ),
        (
            "apply-optimizer{kind=adamw lr=0.0123456789 betas=0.8,0.99 eps=1e-6 decay-all=true}",
            "builtin.module(apply-optimizer{kind=adamw lr=0.0123456789 betas=0.8,0.99 "
            "eps=1e-06 decay-all=true})",
        ),
        ("apply-optimizer", "builtin.module(apply-optimizer)"),
    ],
)
def test_options_round_trip(text: str, canonical: str) -> None:
    manager = PassManager.parse(text)
    assert manager.pipeline_string() == canonical
    assert PassManager.parse(canonical).pipeline_string() == canonical


def test_options_reach_the_ops_exactly() -> None:
    module = _optimized(
        "apply-optimizer{kind=adamw lr=0.0123456789 betas=0.8,0.99 eps=1e-6 weight-decay=0.3}"
    )
    updates = [op for op in _forward(module).walk() if isinstance(op, AdamwUpdateOp)]
    assert len(updates) == len(SHAPES)
    for op in updates:
        assert (op.lr, op.beta1, op.beta2, op.eps) == (0.0123456789, 0.8, 0.99, 1e-6)
        param = op.param.owner
        assert isinstance(param, ParamOp)
        assert op.weight_decay == (0.3 if param.param_name.data in DECAYED else 0.0)
    text = print_module(module)
    again = parse_module(text)
    assert [op.lr for op in _forward(again).walk() if isinstance(op, AdamwUpdateOp)] == [
        0.0123456789
    ] * len(SHAPES)


def test_pass_defaults_are_pytorchs() -> None:
    sgd = _optimized("apply-optimizer")
    (op, *_) = [op for op in _forward(sgd).walk() if isinstance(op, SgdUpdateOp)]
    assert (op.lr, op.momentum, op.weight_decay) == (1e-3, 0.0, 0.0)
    adamw = [
        op
        for op in _forward(_optimized("apply-optimizer{kind=adamw}")).walk()
        if isinstance(op, AdamwUpdateOp)
    ]
    assert (adamw[0].lr, adamw[0].beta1, adamw[0].beta2, adamw[0].eps) == (1e-3, 0.9, 0.999, 1e-8)
    assert adamw[0].weight_decay == 1e-2  # conv.weight: AdamW's default decay


# --- errors -------------------------------------------------------------------------------


def _errors(pipeline: str, text: str = MODEL) -> list[tuple[str, int | None]]:
    module = parse_module(text, "m.mlir")
    with pytest.raises(DiagnosticError) as info:
        PassManager.parse(pipeline).run(module)
    return [(d.message, d.location.line if d.location else None) for d in info.value.diagnostics]


FORWARD_LINE = (
    MODEL.splitlines().index(next(line for line in MODEL.splitlines() if "func.func" in line)) + 1
)


@pytest.mark.parametrize(
    ("pipeline", "message"),
    [
        ("apply-optimizer{lr=0}", "expected lr to be finite and > 0, got 0.0"),
        ("apply-optimizer{lr=-0.1}", "expected lr to be finite and > 0, got -0.1"),
        ("apply-optimizer{lr=inf}", "expected lr to be finite and > 0, got inf"),
        ("apply-optimizer{momentum=1}", "expected momentum in [0, 1), got 1.0"),
        ("apply-optimizer{weight-decay=-1}", "expected weight-decay to be finite and >= 0"),
        ("apply-optimizer{kind=adamw betas=1.0,0.9}", "expected betas[0] in [0, 1), got 1.0"),
        ("apply-optimizer{kind=adamw betas=0.9,-0.1}", "expected betas[1] in [0, 1), got -0.1"),
        ("apply-optimizer{kind=adamw betas=0.9}", "expected betas to be two values, got 1"),
        ("apply-optimizer{kind=adamw eps=0}", "expected eps to be finite and > 0, got 0.0"),
        (
            "apply-optimizer{kind=adamw momentum=0.9}",
            "momentum=0.9 does not apply to kind=adamw (its momentum is betas[0])",
        ),
        ("apply-optimizer{betas=0.9,1.5}", "expected betas[1] in [0, 1), got 1.5"),
        ("apply-optimizer{eps=-1}", "expected eps to be finite and > 0, got -1.0"),
    ],
)
def test_bad_options_are_located_errors(pipeline: str, message: str) -> None:
    errors = _errors(pipeline)
    assert len(errors) == 1
    assert errors[0][0].startswith("apply-optimizer: ")
    assert message in errors[0][0]
    assert errors[0][1] == FORWARD_LINE


def test_options_of_the_other_kind_are_ignored() -> None:
    """A script may pass every option whatever the kind: SGD ignores betas and
    eps, AdamW a zero momentum."""
    weights, inputs = _rng_weights()
    for kind, plain, extra in (
        ("sgd", "momentum=0.9", "betas=0.5,0.5 eps=0.1"),
        ("adamw", "betas=0.8,0.9", "momentum=0"),
    ):
        base = f"apply-optimizer{{kind={kind} lr=0.1 {plain}"
        _, want = _step(_optimized(base + "}"), weights, inputs)
        _, got = _step(_optimized(f"{base} {extra}}}"), weights, inputs)
        assert got.keys() == want.keys()
        for name, value in want.items():
            np.testing.assert_array_equal(got[name], value, err_msg=f"{kind}: {name}")


def test_unknown_option_values_are_refused_by_the_pipeline_parser() -> None:
    with pytest.raises(DiagnosticError, match="expected one of sgd, adamw"):
        PassManager.parse("apply-optimizer{kind=adam}")


NO_GRAD = """
func.func @forward(%x: tensor<2x4xf32>) -> (tensor<f32>, tensor<4xf32> {teeny.running = "m"}) {
  %m = graph.param "m" : tensor<4xf32>
  %l = graph.reduce_sum %x axes [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  func.return %l, %m : tensor<f32>, tensor<4xf32>
}
"""

BAD_GRADS = """
func.func @forward(%x: tensor<4xf32>) -> (tensor<4xf32> {teeny.grad = "a"},
    tensor<4xf32> {teeny.grad = "a"}, tensor<4xf32> {teeny.grad = "nope"},
    tensor<4xf32> {teeny.grad = "b"}, tensor<4xf32> {teeny.grad = ""}) {
  %a = graph.param "a" : tensor<4xf32>
  %b = graph.param "b" : tensor<2x2xf32>
  func.return %x, %x, %x, %x, %x : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
      tensor<4xf32>
}
"""


def test_no_gradient_is_a_located_error() -> None:
    assert _errors("apply-optimizer", NO_GRAD) == [
        (
            "apply-optimizer found no gradient: no result of @forward carries a "
            "'teeny.grad' attribute (run insert-backward first)",
            2,
        )
    ]


def test_bad_gradients_are_all_reported() -> None:
    messages = [m for m, line in _errors("apply-optimizer", BAD_GRADS) if line == 2]
    assert messages == [
        "results #0 and #1 are both the gradient of 'a'",
        "result #2 is the gradient of 'nope', which no graph.param of @forward declares",
        "result #3, the gradient of 'b', has type tensor<4xf32>; the parameter is tensor<2x2xf32>",
        "result #4: 'teeny.grad' must be a non-empty string, got \"\"",
    ]


def test_running_twice_is_a_located_error() -> None:
    module = _optimized("apply-optimizer{lr=0.1}")
    with pytest.raises(DiagnosticError, match="apply-optimizer has already run on @forward"):
        ApplyOptimizerPass(lr=0.1).apply(None, module)  # type: ignore[arg-type]


def test_a_module_without_forward_is_a_located_error() -> None:
    text = NO_GRAD.replace("@forward", "@other")
    assert [m for m, _ in _errors("apply-optimizer", text)] == [
        "apply-optimizer needs a func.func @forward (the training function)"
    ]


# --- graph.param zero_default and the ops ----------------------------------------------------


def test_zero_default_param_reads_zeros_when_missing() -> None:
    text = """
func.func @forward(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<f32>) {
  %m = graph.param "m" zero_default : tensor<3xf32>
  %s = graph.param "s" zero_default {note = "kept"} : tensor<f32>
  %y = graph.add %x, %m : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %y, %s : tensor<3xf32>, tensor<f32>
}
"""
    module = parse_module(text)
    printed = print_module(module)
    assert '%m = graph.param "m" zero_default : tensor<3xf32>' in printed
    assert '%s = graph.param "s" zero_default {note = "kept"} : tensor<f32>' in printed
    assert "zero_default" in print_module(module, generic=True)
    assert print_module(parse_module(print_module(module, generic=True))) == printed
    x = np.arange(3, dtype=np.float32)
    y, s = run(module, {}, [x])
    np.testing.assert_array_equal(y, x)
    assert s.shape == () and s == 0
    y, s = run(module, {"m": np.ones(3, np.float32), "s": np.array(2.0, np.float32)}, [x])
    np.testing.assert_array_equal(y, x + 1)
    assert s == 2
    with pytest.raises(DiagnosticError, match=r"weight 'm' has shape \[2\], expected \[3\]"):
        run(module, {"m": np.ones(2, np.float32)}, [x])
    plain = parse_module(text.replace('"m" zero_default', '"m"'))
    with pytest.raises(DiagnosticError, match="weight 'm' is missing"):
        run(plain, {}, [x])


OP_ERRORS = [
    (
        "%r = graph.sgd_update %p, %p : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>",
        "expected the 'lr' option of graph.sgd_update",
    ),
    (
        "%r = graph.sgd_update %p, %p lr 0.0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>",
        "expected lr to be finite and > 0, got 0.0",
    ),
    (
        "%r = graph.sgd_update %p, %p lr 0.1 momentum 0.9 : (tensor<4xf32>, tensor<4xf32>)"
        " -> tensor<4xf32>",
        "momentum 0.9 needs a momentum_buffer operand (the third)",
    ),
    (
        "%r, %b = graph.sgd_update %p, %p, %p lr 0.1 : (tensor<4xf32>, tensor<4xf32>,"
        " tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)",
        "a momentum_buffer operand needs a nonzero momentum",
    ),
    (
        "%r = graph.sgd_update %p, %p, %p lr 0.1 momentum 0.5 : (tensor<4xf32>, tensor<4xf32>,"
        " tensor<4xf32>) -> tensor<4xf32>",
        "expected 2 result(s) (param, buffer), got 1",
    ),
    (
        "%r = graph.sgd_update %p, %q lr 0.1 : (tensor<4xf32>, tensor<2x2xf32>) -> tensor<4xf32>",
        "expected grad type tensor<4xf32>, got tensor<2x2xf32>",
    ),
    (
        "%r = graph.sgd_update %p, %p lr 0.1 weight_decay -1.0 : (tensor<4xf32>, tensor<4xf32>)"
        " -> tensor<4xf32>",
        "expected weight_decay to be finite and >= 0, got -1.0",
    ),
    (
        "%a, %b, %c, %d = graph.adamw_update %p, %p, %p, %p, %p lr 0.1 : (tensor<4xf32>,"
        " tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>,"
        " tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)",
        "expected step type tensor<f32>, got tensor<4xf32>",
    ),
    (
        "%a, %b, %c, %d = graph.adamw_update %p, %p, %p, %p, %s lr 0.1 beta2 1.0 :"
        " (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) ->"
        " (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>)",
        "expected beta2 in [0, 1), got 1.0",
    ),
    (
        "%a, %b, %c, %d = graph.adamw_update %p, %p, %p, %p, %s lr 0.1 eps 0.0 :"
        " (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) ->"
        " (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>)",
        "expected eps to be finite and > 0, got 0.0",
    ),
    (
        "%a, %b, %c, %d = graph.adamw_update %p, %p, %p, %p, %s lr 0.1 :"
        " (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) ->"
        " (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)",
        "expected result #3 type tensor<f32>, got tensor<4xf32>",
    ),
]


@pytest.mark.parametrize(("line", "message"), OP_ERRORS)
def test_op_errors(line: str, message: str) -> None:
    text = f"""
func.func @f(%p: tensor<4xf32>, %q: tensor<2x2xf32>, %s: tensor<f32>) {{
  {line}
  func.return
}}
"""
    with pytest.raises(DiagnosticError) as info:
        parse_module(text)
    assert message in str(info.value)


def test_op_text_round_trips() -> None:
    text = """
func.func @f(%p: tensor<4xf32>, %s: tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<f32>) {
  %0 = graph.sgd_update %p, %p lr 1.000000e-02 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1, %2 = graph.sgd_update %p, %p, %p lr 5.000000e-02 momentum 9.000000e-01 weight_decay 5.000000e-04 {tag} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %3, %4, %5, %6 = graph.adamw_update %p, %p, %p, %p, %s lr 1.000000e-03 beta1 8.000000e-01 beta2 9.900000e-01 eps 1.000000e-06 weight_decay 1.000000e-02 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>)
  func.return %0, %3, %6 : tensor<4xf32>, tensor<4xf32>, tensor<f32>
}
"""
    module = parse_module(text)
    printed = print_module(module)
    assert printed.strip().splitlines()[2:5] == [
        "    " + line.strip() for line in text.strip().splitlines()[1:4]
    ]
    assert print_module(parse_module(print_module(module, generic=True))) == printed
