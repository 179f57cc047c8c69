"""The memory plan's figures: the arena each strategy needs, next to the
live-bytes lower bound and one allocation per buffer.

For LeNet and YOLOv8n at each ``--size`` (written by
``examples/yolov8n/make_yolov8n.py`` into a temporary folder), an inference plan
(``teeny-inference``) and a training plan (``teeny-training{optimizer=sgd
lr=0.01 momentum=0.9 weight-decay=0.1 profile=interpreter}`` on the model with
`teeny_ir.frontend.losses.add_weighted_sum_loss`), each emitted with
``emit-triton``: ``runtime.load(DIR).memory(batch)`` for the plan as emitted
(the best greedy placement), and the arena of each strategy of
`teeny_ir.backend.memory` on the same plan, at each ``--batch``. The bars: the
arena at most 1.05 x the lower bound and at most 0.2 x the naive bytes.

Usage: python bench/memory_plan.py [--size 64 --size 640] [--batch 1 --batch 16]
       [--no-training]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import teeny_ir
from teeny_ir import runtime
from teeny_ir.backend import memory
from teeny_ir.frontend.losses import add_weighted_sum_loss

ROOT = Path(__file__).resolve().parent.parent
INFERENCE = "teeny-inference"
TRAINING = "teeny-training{optimizer=sgd lr=0.01 momentum=0.9 weight-decay=0.1 profile=interpreter}"
MIB = 1 << 20


def compile_plan(text: str, pipeline: str, out: Path, training: bool) -> runtime.Executable:
    module = teeny_ir.parse_module(text)
    if training:
        add_weighted_sum_loss(module)
    teeny_ir.PassManager.parse(f"{pipeline},emit-triton{{out-dir={out}}}").run(module)
    return runtime.load(out)


def report(name: str, executable: runtime.Executable, batches: list[int]) -> None:
    plan = executable.plan
    print(
        f"{name}: {len(plan.buffers)} buffers, {len(plan.launches)} launches, "
        f"emitted with memory={plan.memory}, arena '{plan.arena}'"
    )
    for batch in batches:
        figures = executable.memory(batch)
        bound, naive = figures["lower_bound_bytes"], figures["naive_bytes"]
        print(f"  memory({batch}) = {figures}")
        for strategy in memory.STRATEGIES:
            arena = memory.arena_bytes(memory.with_memory(plan, strategy), batch)
            ok = arena <= 1.05 * bound and arena <= 0.2 * naive
            print(
                f"    {strategy:<14} arena {arena / MIB:9.2f} MiB = {arena / bound:5.3f} x bound, "
                f"{arena / naive:5.3f} x naive {'(bars met)' if ok else ''}"
            )
        print(f"    {'lower bound':<14} {bound / MIB:9.2f} MiB; naive {naive / MIB:9.2f} MiB")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, action="append", help="YOLOv8n input size")
    parser.add_argument("--batch", type=int, action="append", help="batch sizes to report")
    parser.add_argument("--no-training", action="store_true", help="inference plans only")
    args = parser.parse_args(argv)
    sizes = args.size or [64, 640]
    batches = args.batch or [1, 16]
    models = [("LeNet", (ROOT / "examples" / "lenet" / "lenet.mlir").read_text())]
    with tempfile.TemporaryDirectory() as temp:
        for size in sizes:
            folder = Path(temp, f"yolov8n_{size}")
            subprocess.run(
                [
                    sys.executable,
                    str(ROOT / "examples" / "yolov8n" / "make_yolov8n.py"),
                    "--size",
                    str(size),
                    "--out",
                    str(folder),
                ],
                check=True,
            )
            models.append((f"YOLOv8n {size}x{size}", (folder / "yolov8n.mlir").read_text()))
        for name, text in models:
            modes = [("inference", INFERENCE, False)]
            if not args.no_training:
                modes.append(("training", TRAINING, True))
            for mode, pipeline, training in modes:
                start = time.perf_counter()
                out = Path(temp, f"plan_{len(list(Path(temp).iterdir()))}")
                executable = compile_plan(text, pipeline, out, training)
                took = time.perf_counter() - start
                report(f"{name} {mode} (compiled in {took:.1f} s)", executable, batches)
    return 0


if __name__ == "__main__":
    sys.exit(main())
