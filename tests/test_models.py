"""The bundled models end to end: the reference interpreter on ``examples/yolov8n``
and ``examples/lenet`` against the same models written in PyTorch (no
ultralytics), loaded with the same weights (``load_state_dict(strict=True)``),
at batch 1 and 3.

Twice per model: with the bundled weights (PyTorch's default initialisation),
and with every conv/linear weight redrawn with std 1.6/sqrt(fan_in) so that
activations stay large through the network. With the default initialisation,
YOLOv8n's outputs are nearly all the head's biases, which would hide mistakes;
the test asserts that the outputs vary a lot per channel with the scaled weights.

The PyTorch reference runs in float64; tolerance (docs/architecture.md, whole models):
``max|got - ref| <= 1e-4 * max(1, max|ref|)``, outputs finite, same shapes.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from safetensors.numpy import load_file
from torch import nn
from xdsl.dialects.builtin import ModuleOp

import teeny_ir
from teeny_ir import reference
from teeny_ir.testing import REDUCTION_TOL, assert_close

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
BATCHES = (1, 3)


# YOLOv8n, module for module as ultralytics defines it (attribute names = state-dict keys).


class Conv(nn.Module):
    """Conv2d (no bias, padding k // 2) + BatchNorm2d(eps 1e-3, momentum 0.03) + SiLU."""

    def __init__(self, c1: int, c2: int, k: int = 1, s: int = 1) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(c2, eps=1e-3, momentum=0.03)
        self.act = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c: int, shortcut: bool) -> None:
        super().__init__()
        self.cv1 = Conv(c, c, 3)
        self.cv2 = Conv(c, c, 3)
        self.add = shortcut

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C2f(nn.Module):
    def __init__(self, c1: int, c2: int, n: int = 1, shortcut: bool = False) -> None:
        super().__init__()
        self.c = c2 // 2
        self.cv1 = Conv(c1, 2 * self.c, 1)
        self.cv2 = Conv((2 + n) * self.c, c2, 1)
        self.m = nn.ModuleList(Bottleneck(self.c, shortcut) for _ in range(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = list(self.cv1(x).chunk(2, 1))
        y.extend(m(y[-1]) for m in self.m)
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, c1: int, c2: int, k: int = 5) -> None:
        super().__init__()
        c_ = c1 // 2
        self.cv1 = Conv(c1, c_, 1)
        self.cv2 = Conv(c_ * 4, c2, 1)
        self.m = nn.MaxPool2d(kernel_size=k, stride=1, padding=k // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = [self.cv1(x)]
        y.extend(self.m(y[-1]) for _ in range(3))
        return self.cv2(torch.cat(y, 1))


class Concat(nn.Module):
    def forward(self, xs: list[torch.Tensor]) -> torch.Tensor:
        return torch.cat(xs, 1)


class Detect(nn.Module):
    """The decoupled head without DFL or decoding: per level concat(box, class)."""

    def __init__(self, nc: int, ch: tuple[int, ...], reg_max: int = 16) -> None:
        super().__init__()
        c2, c3 = max(16, ch[0] // 4, reg_max * 4), max(ch[0], min(nc, 100))
        self.cv2 = nn.ModuleList(
            nn.Sequential(Conv(x, c2, 3), Conv(c2, c2, 3), nn.Conv2d(c2, 4 * reg_max, 1))
            for x in ch
        )
        self.cv3 = nn.ModuleList(
            nn.Sequential(Conv(x, c3, 3), Conv(c3, c3, 3), nn.Conv2d(c3, nc, 1)) for x in ch
        )

    def forward(self, xs: list[torch.Tensor]) -> list[torch.Tensor]:
        return [
            torch.cat((box(x), cls(x)), 1)
            for x, box, cls in zip(xs, self.cv2, self.cv3, strict=True)
        ]


class YOLOv8n(nn.Module):
    """ultralytics' yolov8.yaml at scale n; ``sources`` is its "from" column."""

    sources: ClassVar[dict[int, tuple[int, ...]]] = {
        11: (-1, 6),
        14: (-1, 4),
        17: (-1, 12),
        20: (-1, 9),
        22: (15, 18, 21),
    }

    def __init__(self) -> None:
        super().__init__()
        self.model = nn.ModuleList(
            [
                Conv(3, 16, 3, 2),
                Conv(16, 32, 3, 2),
                C2f(32, 32, 1, True),
                Conv(32, 64, 3, 2),
                C2f(64, 64, 2, True),
                Conv(64, 128, 3, 2),
                C2f(128, 128, 2, True),
                Conv(128, 256, 3, 2),
                C2f(256, 256, 1, True),
                SPPF(256, 256, 5),
                nn.Upsample(scale_factor=2, mode="nearest"),
                Concat(),
                C2f(384, 128, 1),
                nn.Upsample(scale_factor=2, mode="nearest"),
                Concat(),
                C2f(192, 64, 1),
                Conv(64, 64, 3, 2),
                Concat(),
                C2f(192, 128, 1),
                Conv(128, 128, 3, 2),
                Concat(),
                C2f(384, 256, 1),
                Detect(80, (64, 128, 256)),
            ]
        )

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        outputs: list[torch.Tensor] = []
        for index, layer in enumerate(self.model):
            sources = self.sources.get(index)
            if sources is not None:
                x = layer([x if s == -1 else outputs[s] for s in sources])
            else:
                x = layer(x)
            outputs.append(x)
        return x


class LeNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.avg_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        x = F.relu(self.fc2(x))
        return [self.fc3(x)]


MODELS = {
    "yolov8n": (YOLOv8n, (3, 64, 64), [(144, 8, 8), (144, 4, 4), (144, 2, 2)]),
    "lenet": (LeNet, (1, 28, 28), [(10,)]),
}


def bundled_weights(name: str) -> dict[str, np.ndarray]:
    return load_file(str(EXAMPLES / name / f"{name}.safetensors"))


def scaled_weights(name: str, seed: int = 1) -> dict[str, np.ndarray]:
    """The bundled weights with every conv/linear weight drawn from N(0, 1.6^2 / fan_in)."""
    rng = np.random.default_rng(seed)
    weights = bundled_weights(name)
    for key, value in sorted(weights.items()):
        if key.endswith("weight") and value.ndim in (2, 4):
            std = 1.6 / math.sqrt(math.prod(value.shape[1:]))
            weights[key] = (std * rng.standard_normal(value.shape)).astype(np.float32)
    return weights


def torch_outputs(name: str, weights: dict[str, np.ndarray], x: np.ndarray) -> list[np.ndarray]:
    """The PyTorch model, in float64 and eval mode, with ``weights`` loaded strictly."""
    model = MODELS[name][0]()
    model.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()}, strict=True)
    model = model.double().eval()
    with torch.no_grad():
        return [y.numpy() for y in model(torch.from_numpy(x).double())]


@pytest.fixture(scope="module")
def modules() -> dict[str, ModuleOp]:
    return {
        name: teeny_ir.parse_module((EXAMPLES / name / f"{name}.mlir").read_text())
        for name in MODELS
    }


def spread(outputs: list[np.ndarray]) -> float:
    """The smallest, over outputs, of the mean per-channel std over batch and
    positions: how much of an output is not a per-channel constant (a bias)."""
    return min(
        float(np.mean(np.std(y.swapaxes(0, 1).reshape(y.shape[1], -1), axis=1))) for y in outputs
    )


@pytest.mark.parametrize("weights_kind", ["bundled", "scaled"])
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("name", list(MODELS))
def test_model_matches_pytorch(
    modules: dict[str, ModuleOp], name: str, batch: int, weights_kind: str
) -> None:
    weights = bundled_weights(name) if weights_kind == "bundled" else scaled_weights(name)
    _, input_shape, output_shapes = MODELS[name]
    x = np.random.default_rng(batch).standard_normal((batch, *input_shape)).astype(np.float32)
    got = reference.run(modules[name], weights, [x])
    want = torch_outputs(name, weights, x)
    assert [g.shape for g in got] == [(batch, *shape) for shape in output_shapes]
    assert_close(got, want, REDUCTION_TOL, dtype=np.float32)
    if weights_kind == "scaled" and name == "yolov8n":
        assert spread(want) > 0.5, spread(want)


def test_default_init_yolov8n_outputs_are_mostly_head_bias(modules: dict[str, ModuleOp]) -> None:
    """Why the scaled weights are needed: with the bundled ones, every output
    channel is nearly constant."""
    x = np.random.default_rng(0).standard_normal((3, 3, 64, 64)).astype(np.float32)
    bundled = reference.run(modules["yolov8n"], bundled_weights("yolov8n"), [x])
    scaled = reference.run(modules["yolov8n"], scaled_weights("yolov8n"), [x])
    assert spread(bundled) < 0.05 < 0.5 < spread(scaled), (spread(bundled), spread(scaled))
