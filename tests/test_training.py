"""Training at the graph level, end to end through the reference interpreter:
train-mode, insert-backward and apply-optimizer on LeNet (and small graphs)
against PyTorch autograd and torch.optim in float64.

The tolerance is the training rule: per tensor, ``max|got - ref| <= tol *
max(max|ref|, 1e-3 * max over all gradients)`` with tol 1e-4 (the reference
computes in float64 and returns float32).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

import teeny_ir
from teeny_ir import reference
from teeny_ir.core.diagnostics import DiagnosticError
from teeny_ir.frontend.losses import add_cross_entropy_loss, add_weighted_sum_loss
from teeny_ir.testing.variants import Variant, variants

ROOT = Path(__file__).resolve().parents[1]
LENET = ROOT / "examples" / "lenet" / "lenet.mlir"
TOL = 1e-4
GRAPH_PASSES = "train-mode,split-bias,fuse-conv-bn-act{mode=training},insert-backward"


class LeNet(nn.Module):
    """examples/lenet/lenet.mlir in PyTorch (state-dict names match)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = nn.functional.avg_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.relu(self.fc1(x.flatten(1)))
        return self.fc3(torch.relu(self.fc2(x)))


def results_by_attr(module: Any, outputs: Sequence[np.ndarray], key: str) -> dict[str, np.ndarray]:
    """@forward's results carrying the result attribute ``key``, by its value."""
    function = next(op for op in module.ops if getattr(op, "sym_name", None) is not None)
    attrs = function.res_attrs.data if function.res_attrs is not None else []
    found = {}
    for value, attr in zip(outputs, attrs, strict=False):
        if key in attr.data:
            found[attr.data[key].data] = value
    return found


def check(got: dict[str, np.ndarray], want: dict[str, np.ndarray], scale: float) -> None:
    assert sorted(got) == sorted(want)
    for name, reference_value in want.items():
        bound = TOL * max(float(np.abs(reference_value).max()), 1e-3 * scale)
        error = float(np.abs(got[name].astype(np.float64) - reference_value).max())
        assert error <= bound, f"{name}: {error:.3g} > {bound:.3g}"


def lenet_training_module() -> Any:
    module = teeny_ir.parse_module(LENET.read_text(), filename="lenet.mlir")
    add_cross_entropy_loss(module)
    teeny_ir.PassManager.parse(GRAPH_PASSES).run(module)
    return module


def _lenet_weights(seed: int) -> tuple[LeNet, dict[str, np.ndarray]]:
    torch.manual_seed(seed)
    model = LeNet().double()
    weights = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}
    model.load_state_dict({k: torch.tensor(v, dtype=torch.float64) for k, v in weights.items()})
    return model, weights


@pytest.mark.parametrize("batch", [1, 3])
def test_lenet_gradients_match_autograd(batch: int) -> None:
    module = lenet_training_module()
    model, weights = _lenet_weights(batch)
    rng = np.random.default_rng(batch)
    x = rng.standard_normal((batch, 1, 28, 28)).astype(np.float32)
    targets = rng.integers(0, 10, batch).astype(np.int64)
    outputs = reference.run(module, weights, [x, targets])
    logits = model(torch.tensor(x, dtype=torch.float64))
    loss = nn.functional.cross_entropy(logits, torch.tensor(targets))
    loss.backward()
    want = {k: p.grad.numpy() for k, p in model.named_parameters() if p.grad is not None}
    got = results_by_attr(module, outputs, "teeny.grad")
    scale = max(float(np.abs(g).max()) for g in want.values())
    check(got, want, scale)
    assert abs(float(outputs[0]) - loss.item()) <= TOL * max(1.0, abs(loss.item()))
    np.testing.assert_allclose(outputs[1], logits.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_insert_backward_is_deterministic() -> None:
    first, second = (teeny_ir.print_module(lenet_training_module()) for _ in range(2))
    assert first == second


def test_every_trainable_parameter_gets_one_gradient_result() -> None:
    module = lenet_training_module()
    function = next(iter(module.ops))
    names = [a.data["teeny.grad"].data for a in function.res_attrs.data if "teeny.grad" in a.data]
    assert names == [
        f"{layer}.{kind}"
        for layer in ("conv1", "conv2", "fc1", "fc2", "fc3")
        for kind in ("weight", "bias")
    ]


BN_GRAPH = """
func.func @forward(%x: tensor<?x3x5x7xf32>, %r: tensor<?x3x5x7xf32>) -> (tensor<f32>) {
  %w = graph.param "conv.weight" : tensor<3x3x3x3xf32>
  %g = graph.param "bn.weight" : tensor<3xf32>
  %b = graph.param "bn.bias" : tensor<3xf32>
  %m = graph.param "bn.running_mean" : tensor<3xf32>
  %v = graph.param "bn.running_var" : tensor<3xf32>
  %c = graph.conv2d %x, %w padding [1, 1, 1, 1] : (tensor<?x3x5x7xf32>, tensor<3x3x3x3xf32>) -> tensor<?x3x5x7xf32>
  %y = graph.batch_norm %c, %g, %b, %m, %v eps 1.000000e-03 momentum 3.000000e-02 : (tensor<?x3x5x7xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<?x3x5x7xf32>
  %s = graph.silu %y : tensor<?x3x5x7xf32>
  %a = graph.add %s, %x : (tensor<?x3x5x7xf32>, tensor<?x3x5x7xf32>) -> tensor<?x3x5x7xf32>
  %p = graph.mul %a, %r : (tensor<?x3x5x7xf32>, tensor<?x3x5x7xf32>) -> tensor<?x3x5x7xf32>
  %l = graph.reduce_sum %p axes [0, 1, 2, 3] : (tensor<?x3x5x7xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}
"""
"""A YOLO bottleneck: conv, training batch norm, SiLU and a residual add."""


@pytest.mark.parametrize("batch", [1, 3])
def test_train_mode_batch_norm_and_residual_match_pytorch(batch: int) -> None:
    module = teeny_ir.parse_module(BN_GRAPH, filename="bn.mlir")
    teeny_ir.PassManager.parse(GRAPH_PASSES).run(module)
    rng = np.random.default_rng(10 + batch)
    weights = {
        "conv.weight": rng.standard_normal((3, 3, 3, 3)).astype(np.float32) * 0.5,
        "bn.weight": rng.uniform(0.5, 1.5, 3).astype(np.float32),
        "bn.bias": rng.standard_normal(3).astype(np.float32),
        "bn.running_mean": rng.standard_normal(3).astype(np.float32),
        "bn.running_var": rng.uniform(0.5, 2, 3).astype(np.float32),
    }
    x = rng.standard_normal((batch, 3, 5, 7)).astype(np.float32)
    r = rng.standard_normal((batch, 3, 5, 7)).astype(np.float32)
    outputs = reference.run(module, weights, [x, r])
    conv = nn.Conv2d(3, 3, 3, padding=1, bias=False).double()
    bn = nn.BatchNorm2d(3, eps=1e-3, momentum=0.03).double()
    conv.weight.data = torch.tensor(weights["conv.weight"], dtype=torch.float64)
    for name in ("weight", "bias", "running_mean", "running_var"):
        getattr(bn, name).data = torch.tensor(weights[f"bn.{name}"], dtype=torch.float64)
    bn.train()
    tx = torch.tensor(x, dtype=torch.float64)
    loss = ((nn.functional.silu(bn(conv(tx))) + tx) * torch.tensor(r, dtype=torch.float64)).sum()
    loss.backward()
    grads = {"conv.weight": conv.weight.grad, "bn.weight": bn.weight.grad, "bn.bias": bn.bias.grad}
    want = {k: v.numpy() for k, v in grads.items()}
    check(
        results_by_attr(module, outputs, "teeny.grad"),
        want,
        max(float(np.abs(v).max()) for v in want.values()),
    )
    running = results_by_attr(module, outputs, "teeny.running")
    want_running = {
        "bn.running_mean": bn.running_mean.numpy(),
        "bn.running_var": bn.running_var.numpy(),
    }
    check(running, want_running, 1.0)


def test_a_loss_that_is_not_a_scalar_is_a_located_error() -> None:
    module = teeny_ir.parse_module(LENET.read_text(), filename="lenet.mlir")
    with pytest.raises(DiagnosticError, match="first result to be the loss, a scalar"):
        teeny_ir.PassManager.parse("insert-backward").run(module)


def test_an_op_without_a_gradient_is_a_located_error_and_nothing_changes() -> None:
    text = """
func.func @forward(%x: tensor<?x4xf32>, %g: tensor<?x4xf32>) -> tensor<f32> {
  %w = graph.param "w" : tensor<4xf32>
  %y = graph.mul %x, %w : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %d = graph.activation_grad %y, %g activation relu : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %l = graph.reduce_sum %d axes [0, 1] : (tensor<?x4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}
"""
    module = teeny_ir.parse_module(text, filename="g.mlir")
    before = teeny_ir.print_module(module)
    with pytest.raises(DiagnosticError) as caught:
        teeny_ir.PassManager.parse("insert-backward").run(module)
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.location is not None and diagnostic.location.line == 5
    assert "'graph.activation_grad' is not differentiable" in diagnostic.message
    assert teeny_ir.print_module(module) == before


# ------------------------------------------------------ random graphs (hypothesis)

UNARY = {variant.spelling: variant for variant in variants(arity=1)}
"""Every unary entry of the pointwise table, each option at its sample values
(`teeny_ir.testing.variants`), by its kernel spelling."""
BINARY = {variant.spelling: variant for variant in variants(arity=2)}
"""Every binary entry of the pointwise table."""
REAL = {s: not v.entry.positive_domain for s, v in {**UNARY, **BINARY}.items()}
"""Whether an entry is real on any operands (log, sqrt, pow are not: random graphs skip them)."""


def torch_function(variant: Variant) -> Callable[..., torch.Tensor]:
    """Torch's function of a table entry (``torch.<name>``, else
    ``torch.nn.functional.<name>``), the entry's options as keywords."""
    fn = getattr(torch, variant.name, None) or getattr(nn.functional, variant.name, None)
    assert callable(fn), f"no torch function for pointwise entry '{variant.name}'"
    options = variant.options
    return lambda *operands: fn(*operands, **options)


def test_every_table_entry_has_a_torch_equivalent() -> None:
    x = torch.linspace(-3.0, 3.0, 13, dtype=torch.float64)
    y = torch.linspace(0.5, 2.0, 13, dtype=torch.float64)
    for spelling, variant in {**UNARY, **BINARY}.items():
        operands = [x, y][: variant.entry.arity]
        want = variant.entry.evaluate(np, [o.numpy() for o in operands], variant.options)
        got = torch_function(variant)(*operands).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=spelling)


@st.composite
def random_graphs(draw: Any) -> tuple[str, list[tuple[str, tuple[int, ...]]], Any]:
    """A chain over x [B, F] of linear layers, activations, broadcast binaries
    with parameters, softmax / log_softmax and fan-out adds; returns the IR,
    the parameters and a torch function of (x, params) giving the output."""
    features = draw(st.sampled_from([3, 5]))
    lines: list[str] = []
    params: list[tuple[str, tuple[int, ...]]] = []
    steps: list[Any] = []
    current, width = "%x", features

    def t(w: int) -> str:
        return f"tensor<?x{w}xf32>"

    for index in range(draw(st.integers(2, 5))):
        kinds = ["linear", "unary", "binary", "softmax", "fanout"]
        kind = draw(st.sampled_from(kinds if index else ["linear", "binary"]))
        count = index + 1
        name = f"%v{index}"
        if kind == "linear":
            out = draw(st.sampled_from([2, 4, width]))
            pw, pb = f"w{count}", f"b{count}"
            params += [(pw, (out, width)), (pb, (out,))]
            lines.append(f'  %{pw} = graph.param "{pw}" : tensor<{out}x{width}xf32>')
            lines.append(f'  %{pb} = graph.param "{pb}" : tensor<{out}xf32>')
            lines.append(
                f"  {name} = graph.linear {current}, %{pw}, %{pb} : ({t(width)}, "
                f"tensor<{out}x{width}xf32>, tensor<{out}xf32>) -> {t(out)}"
            )
            steps.append(("linear", pw, pb))
            width = out
        elif kind == "unary":
            spelling = draw(st.sampled_from(sorted(s for s in UNARY if REAL[s])))
            variant = UNARY[spelling]
            options = f" {variant.option_text()}" if variant.option_text() else ""
            lines.append(f"  {name} = graph.{variant.name} {current}{options} : {t(width)}")
            steps.append(("unary", spelling))
        elif kind == "binary":
            op = BINARY[draw(st.sampled_from(sorted(s for s in BINARY if REAL[s])))].name
            pname = f"p{count}"
            params.append((pname, (width,)))
            lines.append(f'  %{pname} = graph.param "{pname}" : tensor<{width}xf32>')
            lines.append(
                f"  {name} = graph.{op} {current}, %{pname} : ({t(width)}, tensor<{width}xf32>)"
                f" -> {t(width)}"
            )
            steps.append(("binary", op, pname))
        elif kind == "softmax":
            op = draw(st.sampled_from(["softmax", "log_softmax"]))
            lines.append(f"  {name} = graph.{op} {current} axis 1 : ({t(width)}) -> {t(width)}")
            steps.append(("softmax", op))
        else:
            lines.append(
                f"  {name} = graph.mul {current}, {current} : ({t(width)}, {t(width)}) -> {t(width)}"
            )
            steps.append(("fanout",))
        current = name
    text = (
        f"func.func @forward(%x: tensor<?x{features}xf32>) -> {t(width)} {{\n"
        + "\n".join(lines)
        + f"\n  func.return {current} : {t(width)}\n}}\n"
    )

    def run(x: torch.Tensor, p: dict[str, torch.Tensor]) -> torch.Tensor:
        for step in steps:
            if step[0] == "linear":
                x = nn.functional.linear(x, p[step[1]], p[step[2]])
            elif step[0] == "unary":
                x = torch_function(UNARY[step[1]])(x)
            elif step[0] == "binary":
                x = torch_function(BINARY[step[1]])(x, p[step[2]])
            elif step[0] == "softmax":
                fn = torch.softmax if step[1] == "softmax" else torch.log_softmax
                x = fn(x, 1)
            else:
                x = x * x
        return x

    return text, params, (features, run)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=random_graphs(), batch=st.sampled_from([1, 3]), seed=st.integers(0, 2**16))
def test_random_graphs_match_autograd(graph: Any, batch: int, seed: int) -> None:
    text, params, (features, run) = graph
    module = teeny_ir.parse_module(text)
    add_weighted_sum_loss(module)
    teeny_ir.PassManager.parse("insert-backward").run(module)
    rng = np.random.default_rng(seed)
    weights = {n: rng.uniform(0.5, 1.5, s).astype(np.float32) for n, s in params}
    x = rng.standard_normal((batch, features)).astype(np.float32)
    tp = {n: torch.tensor(v, dtype=torch.float64, requires_grad=True) for n, v in weights.items()}
    y = run(torch.tensor(x, dtype=torch.float64), tp)
    r = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    outputs = reference.run(module, weights, [x, r])
    (y * torch.tensor(r, dtype=torch.float64)).sum().backward()
    want = {n: t.grad.numpy() if t.grad is not None else np.zeros(t.shape) for n, t in tp.items()}
    scale = max([float(np.abs(v).max()) for v in want.values()] + [1e-30])
    check(results_by_attr(module, outputs, "teeny.grad"), want, scale)


def test_lenet_twenty_sgd_steps_track_pytorch() -> None:
    """20 steps of SGD (momentum, weight decay on the conv and linear weights only)
    through the reference: every step's loss is PyTorch's, and so are the final
    parameters; each step's updated parameters and momentum buffers (found by
    their teeny.updated names) are the next step's weights."""
    module = lenet_training_module()
    teeny_ir.PassManager.parse(
        "apply-optimizer{kind=sgd lr=0.05 momentum=0.9 weight-decay=5e-4}"
    ).run(module)
    model, weights = _lenet_weights(20)
    rng = np.random.default_rng(20)
    x = rng.standard_normal((8, 1, 28, 28)).astype(np.float32)
    targets = rng.integers(0, 10, 8).astype(np.int64)
    decay = [p for name, p in model.named_parameters() if name.endswith("weight")]
    rest = [p for name, p in model.named_parameters() if name.endswith("bias")]
    sgd = torch.optim.SGD(
        [{"params": decay, "weight_decay": 5e-4}, {"params": rest, "weight_decay": 0.0}],
        lr=0.05,
        momentum=0.9,
    )
    state: dict[str, np.ndarray] = dict(weights)
    got_losses, want_losses = [], []
    for _ in range(20):
        outputs = reference.run(module, state, [x, targets])
        got_losses.append(float(outputs[0]))
        state |= results_by_attr(module, outputs, "teeny.updated")
        sgd.zero_grad()
        loss = nn.functional.cross_entropy(
            model(torch.tensor(x, dtype=torch.float64)), torch.tensor(targets)
        )
        want_losses.append(loss.item())
        loss.backward()
        sgd.step()
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-4)
    assert want_losses[-1] < 0.75 * want_losses[0]  # it trains: not a vacuous comparison
    final = {k: v.detach().numpy() for k, v in model.named_parameters()}
    check({k: state[k] for k in final}, final, 1.0)


def test_lenet_adamw_steps_match_pytorch() -> None:
    """Three AdamW steps (bias correction from the step state, decoupled decay on
    the conv and linear weights only): parameters, exp_avg, exp_avg_sq and step
    as torch.optim.AdamW keeps them, state absent from the first step's weights."""
    module = lenet_training_module()
    teeny_ir.PassManager.parse(
        "apply-optimizer{kind=adamw lr=1e-3 betas=0.9,0.999 eps=1e-8 weight-decay=0.01}"
    ).run(module)
    model, weights = _lenet_weights(21)
    rng = np.random.default_rng(21)
    x = rng.standard_normal((4, 1, 28, 28)).astype(np.float32)
    targets = rng.integers(0, 10, 4).astype(np.int64)
    named = dict(model.named_parameters())
    decay = [p for name, p in named.items() if name.endswith("weight")]
    rest = [p for name, p in named.items() if name.endswith("bias")]
    adamw = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.01}, {"params": rest, "weight_decay": 0.0}],
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
    )
    state: dict[str, np.ndarray] = dict(weights)
    for _ in range(3):
        outputs = reference.run(module, state, [x, targets])
        state |= results_by_attr(module, outputs, "teeny.updated")
        adamw.zero_grad()
        nn.functional.cross_entropy(
            model(torch.tensor(x, dtype=torch.float64)), torch.tensor(targets)
        ).backward()
        adamw.step()
    want: dict[str, np.ndarray] = {}
    for name, p in named.items():
        kept = adamw.state[p]
        want[name] = p.detach().numpy()
        want[f"{name}.exp_avg"] = kept["exp_avg"].numpy()
        want[f"{name}.exp_avg_sq"] = kept["exp_avg_sq"].numpy()
        want[f"{name}.step"] = np.asarray(float(kept["step"]))
    check({k: state[k] for k in want}, want, 1.0)
