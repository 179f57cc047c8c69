"""Time of the training passes on the bundled models, in process.

For YOLOv8n (loss ``sum_i reduce_sum(P_i * r_i)``) and LeNet (cross-entropy
against a ``targets`` input): ``teeny-training{optimizer=sgd lr=0.01
momentum=0.9 weight-decay=0.1}`` (train-mode, split-bias,
fuse-epilogues{mode=training}, select-conv-algorithm, insert-backward,
apply-optimizer), best of ``--runs``, with the op counts before and after and
the bytes per image the backward keeps (insert-backward's statistic).

Usage: python bench/training_passes.py [--runs N]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import teeny_ir
from passes.insert_backward import differentiate
from teeny_ir.frontend.losses import add_cross_entropy_loss, add_weighted_sum_loss

ROOT = Path(__file__).resolve().parent.parent
MODELS: dict[str, tuple[Path, Callable[..., None]]] = {
    "yolov8n": (ROOT / "examples" / "yolov8n" / "yolov8n.mlir", add_weighted_sum_loss),
    "lenet": (ROOT / "examples" / "lenet" / "lenet.mlir", add_cross_entropy_loss),
}
PIPELINE = "teeny-training{optimizer=sgd lr=0.01 momentum=0.9 weight-decay=0.1}"
BEFORE_BACKWARD = "train-mode,split-bias,fuse-epilogues{mode=training},select-conv-algorithm"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for name, (path, add_loss) in MODELS.items():
        text = path.read_text()
        best = float("inf")
        for _ in range(args.runs):
            module = teeny_ir.parse_module(text, filename=str(path))
            add_loss(module)
            ops = sum(1 for _ in module.walk())
            start = time.perf_counter()
            teeny_ir.PassManager.parse(PIPELINE).run(module)
            best = min(best, time.perf_counter() - start)
        after = sum(1 for _ in module.walk())
        copy = teeny_ir.parse_module(text)
        add_loss(copy)
        teeny_ir.PassManager.parse(BEFORE_BACKWARD).run(copy)
        errors, saved = differentiate(next(iter(copy.ops)))  # type: ignore[arg-type]
        assert not errors
        print(
            f"{name}: teeny-training in {best:.2f} s (best of {args.runs}); {ops} ops -> {after}; "
            f"the backward keeps {saved} bytes ({saved / 2**20:.2f} MiB) per image"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
