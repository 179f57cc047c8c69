"""Compiled training steps in Triton's interpreter: compile time, launches per
phase, and step time, per model and tile profile.

- LeNet (cross-entropy against ``targets``), AdamW, at ``--lenet-batch`` (32):
  steps per second over ``--steps`` steps after a first one (the worker's start,
  Triton's import and the kernel loading are in the first).
- YOLOv8n at 64x64 (loss ``sum_i reduce_sum(P_i * r_i)``), SGD with momentum,
  at ``--yolo-batch`` (2).

Each under the ``interpreter`` and the ``gpu`` tile profile (the gpu profile's
small tiles are slow in the interpreter: it is there to show the difference).

Usage: python bench/training_step.py [--steps 5] [--lenet-batch 32] [--yolo-batch 2]
    [--profile interpreter --profile gpu] [--model lenet --model yolov8n]
"""

from __future__ import annotations

import argparse
import collections
import io
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import teeny_ir
from teeny_ir import runtime
from teeny_ir.driver import opt
from teeny_ir.frontend.losses import add_cross_entropy_loss, add_weighted_sum_loss

ROOT = Path(__file__).resolve().parent.parent


def lenet_inputs(batch: int, rng: np.random.Generator) -> list[np.ndarray]:
    return [
        rng.standard_normal((batch, 1, 28, 28)).astype(np.float32),
        rng.integers(0, 10, batch),
    ]


def yolo_inputs(batch: int, rng: np.random.Generator) -> list[np.ndarray]:
    shapes = [(batch, 3, 64, 64), (batch, 144, 8, 8), (batch, 144, 4, 4), (batch, 144, 2, 2)]
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


MODELS: dict[str, tuple[str, Callable[..., None], str, Callable[..., list[np.ndarray]]]] = {
    "lenet": (
        "examples/lenet/lenet",
        add_cross_entropy_loss,
        "optimizer=adamw lr=0.005 weight-decay=0.01",
        lenet_inputs,
    ),
    "yolov8n": (
        "examples/yolov8n/yolov8n",
        add_weighted_sum_loss,
        "optimizer=sgd lr=0.01 momentum=0.9 weight-decay=0.1",
        yolo_inputs,
    ),
}


def measure(model: str, profile: str, batch: int, steps: int) -> None:
    stem, add_loss, options, make_inputs = MODELS[model]
    module = teeny_ir.parse_module((ROOT / f"{stem}.mlir").read_text())
    add_loss(module)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "plan"
        pipeline = f"teeny-training{{{options} profile={profile}}},emit-triton{{out-dir={out}}}"
        stderr = io.StringIO()
        start = time.perf_counter()
        code = opt.run(
            ["-", "-p", pipeline, "-o", "/dev/null"],
            io.BytesIO(teeny_ir.print_module(module).encode()),
            io.StringIO(),
            stderr,
        )
        compile_time = time.perf_counter() - start
        if code != 0:
            print(f"{model} ({profile}): does not compile: {stderr.getvalue()[-500:]}")
            return
        executable = runtime.load(out)
        phases = collections.Counter(launch.phase for launch in executable.plan.launches)
        rng = np.random.default_rng(0)
        weights = runtime.read_weights(ROOT / f"{stem}.safetensors")
        with executable.trainer(weights) as trainer:
            start = time.perf_counter()
            trainer.step(make_inputs(batch, rng))
            first = time.perf_counter() - start
            times = []
            for _ in range(steps):
                inputs = make_inputs(batch, rng)
                start = time.perf_counter()
                trainer.step(inputs)
                times.append(time.perf_counter() - start)
    per_step = float(np.median(times))
    print(
        f"{model} batch {batch} ({profile} tiles): compile {compile_time:.2f} s; launches "
        f"{phases['forward']} forward, {phases['backward']} backward, {phases['update']} "
        f"update; first step {first:.2f} s; then {per_step:.2f} s per step (median of "
        f"{steps}, {1 / per_step:.2f} steps/s)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--lenet-batch", type=int, default=32)
    parser.add_argument("--yolo-batch", type=int, default=2)
    parser.add_argument("--profile", action="append", choices=("interpreter", "gpu"))
    parser.add_argument("--model", action="append", choices=tuple(MODELS))
    args = parser.parse_args()
    for model in args.model or list(MODELS):
        batch = args.lenet_batch if model == "lenet" else args.yolo_batch
        for profile in args.profile or ["interpreter", "gpu"]:
            measure(model, profile, batch, args.steps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
