"""The compiled trainer: LeNet's training graph through ``teeny-training`` and
``emit-triton``, stepped by ``runtime.load(DIR).trainer(weights)`` in Triton's
interpreter, against PyTorch in float64 (torch.optim.SGD and AdamW, weight decay
on the conv and linear weights only).

Each trainer is one worker session (Triton imported once for all its steps).
The rule: per tensor ``max|got - ref| <= 1e-4 * max(1, max|ref|)``.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file
from torch import nn

import teeny_ir
from teeny_ir import runtime
from teeny_ir.driver import opt
from teeny_ir.frontend.losses import add_cross_entropy_loss

ROOT = Path(__file__).resolve().parents[1]
LENET = ROOT / "examples" / "lenet" / "lenet.mlir"
TOL = 1e-4


class LeNet(nn.Module):
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


def compiled(tmp_path: Path, options: str) -> Path:
    module = teeny_ir.parse_module(LENET.read_text(), filename="lenet.mlir")
    add_cross_entropy_loss(module)
    out = tmp_path / "plan"
    stderr = io.StringIO()
    pipeline = f"teeny-training{{{options} profile=interpreter}},emit-triton{{out-dir={out}}}"
    code = opt.run(
        ["-", "-p", pipeline, "-o", "/dev/null"],
        io.BytesIO(teeny_ir.print_module(module).encode()),
        io.StringIO(),
        stderr,
    )
    assert code == 0, stderr.getvalue()
    return out


def close(got: np.ndarray, want: np.ndarray, what: str) -> None:
    bound = TOL * max(1.0, float(np.abs(want).max()))
    error = float(np.abs(np.asarray(got, np.float64) - want).max())
    assert error <= bound, f"{what}: {error:.3g} > {bound:.3g}"


def _model_and_weights() -> tuple[LeNet, dict[str, np.ndarray]]:
    weights = load_file(ROOT / "examples" / "lenet" / "lenet.safetensors")
    model = LeNet().double()
    model.load_state_dict({k: torch.tensor(v, dtype=torch.float64) for k, v in weights.items()})
    return model, weights


def _groups(model: LeNet) -> list[dict[str, Any]]:
    named = dict(model.named_parameters())
    return [
        {"params": [p for n, p in named.items() if n.endswith("weight")]},
        {"params": [p for n, p in named.items() if n.endswith("bias")], "weight_decay": 0.0},
    ]


def _batches(count: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [
        (
            rng.standard_normal((2, 1, 28, 28)).astype(np.float32),
            rng.integers(0, 10, 2).astype(np.int64),
        )
        for _ in range(count)
    ]


def _run(trainer: Any, model: LeNet, optimizer: torch.optim.Optimizer, batches: list[Any]) -> None:
    for step, (x, targets) in enumerate(batches):
        results = trainer.step([x, targets])
        optimizer.zero_grad()
        logits = model(torch.tensor(x, dtype=torch.float64))
        loss = nn.functional.cross_entropy(logits, torch.tensor(targets))
        loss.backward()
        optimizer.step()
        assert len(results) == 2  # the loss and the logits: no gradients, no updates
        close(results[0], loss.detach().numpy(), f"loss of step {step}")
        close(results[1], logits.detach().numpy(), f"logits of step {step}")


def test_sgd_steps_match_pytorch(tmp_path: Path) -> None:
    """Five SGD steps on five batches; then the trainer's state dict, its
    checkpoint, and its refusals of bad inputs (before any launch)."""
    out = compiled(tmp_path, "optimizer=sgd lr=0.05 momentum=0.9 weight-decay=5e-4")
    model, weights = _model_and_weights()
    sgd = torch.optim.SGD(_groups(model), lr=0.05, momentum=0.9, weight_decay=5e-4)
    executable = runtime.load(out)
    with executable.trainer(weights) as trainer:
        _run(trainer, model, sgd, _batches(5, seed=1))
        state = trainer.state_dict()
        for name, p in model.named_parameters():
            close(state[name], p.detach().numpy(), name)
            close(state[f"{name}.momentum_buffer"], sgd.state[p]["momentum_buffer"].numpy(), name)
        x, targets = _batches(1, seed=2)[0]
        with pytest.raises(
            runtime.RuntimeInputError, match=r"target 10 at index 1 is out of range"
        ):
            trainer.step([x, np.array([3, 10], np.int64)])
        with pytest.raises(runtime.RuntimeInputError, match="expected int64"):
            trainer.step([x, targets.astype(np.float32)])
        with pytest.raises(runtime.RuntimeInputError, match="shape"):
            trainer.step([x[:, :, :27], targets])
        assert trainer.steps == 5  # nothing ran
        trainer.save(tmp_path / "checkpoint.safetensors")
    saved = load_file(tmp_path / "checkpoint.safetensors")
    assert sorted(saved) == sorted(state)
    assert all(np.array_equal(saved[k], state[k]) for k in state)
    assert not list(tmp_path.glob(".checkpoint*"))  # the temporary file is gone


def test_adamw_steps_match_pytorch(tmp_path: Path) -> None:
    """Three AdamW steps, the optimizer state starting absent (zero), as
    torch.optim.AdamW with bias correction and decoupled decay."""
    out = compiled(tmp_path, "optimizer=adamw lr=1e-3 betas=0.9,0.999 eps=1e-8 weight-decay=0.01")
    model, weights = _model_and_weights()
    adamw = torch.optim.AdamW(
        _groups(model), lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01
    )
    with runtime.load(out).trainer(weights) as trainer:
        _run(trainer, model, adamw, _batches(3, seed=3))
        state = trainer.state_dict()
    for name, p in model.named_parameters():
        kept = adamw.state[p]
        close(state[name], p.detach().numpy(), name)
        close(state[f"{name}.exp_avg"], kept["exp_avg"].numpy(), f"{name}.exp_avg")
        close(state[f"{name}.exp_avg_sq"], kept["exp_avg_sq"].numpy(), f"{name}.exp_avg_sq")
        assert float(state[f"{name}.step"]) == float(kept["step"]) == 3.0


def test_an_inference_plan_has_no_trainer(tmp_path: Path) -> None:
    out = tmp_path / "plan"
    teeny_ir.PassManager.parse(f"teeny-inference,emit-triton{{out-dir={out}}}").run(
        teeny_ir.parse_module(LENET.read_text())
    )
    with pytest.raises(runtime.RuntimeInputError, match="not a training plan"):
        runtime.load(out).trainer(_model_and_weights()[1])


def test_the_plan_names_each_forward_launchs_gradient_launches(tmp_path: Path) -> None:
    """Launch phases and, per forward launch, the backward launches computing its
    gradients (from provenance): every forward launch of LeNet has some; the
    loader refuses a gradient link to a launch that is not a backward one."""
    out = compiled(tmp_path, "optimizer=sgd lr=0.05")
    plan = runtime.load(out).plan
    phases = [launch.phase for launch in plan.launches]
    assert phases == sorted(phases, key=("forward", "backward", "update").index)
    assert phases.count("update") == 10  # one per parameter
    forward = [launch for launch in plan.launches if launch.phase == "forward"]
    assert forward and all(launch.gradients for launch in forward)
    text = (out / "plan.json").read_text()
    first = plan.launches[0].gradients[0]
    (out / "plan.json").write_text(
        text.replace(f'"gradients": [\n        {first}', '"gradients": [\n        0', 1)
    )
    with pytest.raises(runtime.PlanError, match="no backward launch"):
        runtime.load(out)


@pytest.mark.slow
def test_yolov8n_training_compiles(tmp_path: Path) -> None:
    """YOLOv8n's training graph (loss ``sum_i reduce_sum(P_i * r_i)``) lowers whole
    and emits a training plan (interpreter tiles; the gpu profile's plan compiles
    AOT, which is a bench/ check for its time): batch norms in training
    form, their backward, SiLU, concat/split, upsample and SPPF's pools all have
    kernels. Every forward launch but the loss's names its gradient launches, and
    every parameter and BN statistic has its update or running output."""
    from teeny_ir.frontend.losses import add_weighted_sum_loss

    model = ROOT / "examples" / "yolov8n" / "yolov8n.mlir"
    module = teeny_ir.parse_module(model.read_text(), filename="yolov8n.mlir")
    add_weighted_sum_loss(module)
    text = teeny_ir.print_module(module)
    for profile in ("interpreter",):  # the gpu profile's variants: bench/, AOT for sm_80/sm_90
        out = tmp_path / profile
        pipeline = (
            f"teeny-training{{optimizer=sgd lr=0.01 momentum=0.9 weight-decay=0.1 "
            f"profile={profile}}},emit-triton{{out-dir={out}}}"
        )
        stderr = io.StringIO()
        code = opt.run(
            ["-", "-p", pipeline, "-o", "/dev/null"],
            io.BytesIO(text.encode()),
            io.StringIO(),
            stderr,
        )
        assert code == 0, "\n".join(
            line for line in stderr.getvalue().splitlines() if "error" in line
        )
        plan = runtime.load(out).plan
        families = {k.name: k.family for k in plan.kernels}
        used = {families[launch.kernel] for launch in plan.launches}
        assert {"batch_norm_train", "batch_norm_backward", "max_pool2d_backward"} <= used
        phases = [launch.phase for launch in plan.launches]
        assert phases.count("update") == 183  # one per parameter (momentum SGD)
        roles = [role for role, _ in plan.roles]
        assert roles.count("running") == 2 * 57  # each BN's mean and variance
        without = [
            launch for launch in plan.launches if launch.phase == "forward" and not launch.gradients
        ]
        # Only launches of the loss itself (weights r_i, sums) may lack a backward.
        assert all(
            all(
                source.op in ("graph.mul", "graph.reduce_sum", "graph.add")
                for source in launch.sources
            )
            for launch in without
        ), [launch.sources for launch in without]
