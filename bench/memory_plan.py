"""The memory plan's figures: the arena a run needs, next to the live-bytes lower
bound and one allocation per buffer.

For LeNet and YOLOv8n at each ``--size`` (written by
``examples/yolov8n/make_yolov8n.py`` into a temporary folder), an inference plan
(``teeny-inference``) and a training plan (``teeny-training{optimizer=sgd
lr=0.01 momentum=0.9 weight-decay=0.1 profile=interpreter}`` on the model with
`teeny_ir.frontend.losses.add_weighted_sum_loss`), each emitted with
``emit-triton``, at each ``--batch``: ``runtime.load(DIR).memory(batch)`` (the
arena of the run's layout, `teeny_ir.backend.memory.layout`, which places the
per-image and the static buffers together for that batch, and the plan's own
B-affine arena), and both arenas for each strategy of
`teeny_ir.backend.memory` on the same plan. The bar: a run's arena at most
1.05 x the lower bound. A last table gives every plan's ratios (and the
arena over the naive bytes: 0.15 for YOLOv8n's inference plans; a chain like
LeNet's, or a training plan, whose gradients and optimizer state are live to
the end, has a bound near the naive bytes); the exit status is 1 when a plan
as emitted misses the bar.

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
BAR = 1.05
"""A run's arena over the live-bytes bound, at most."""


def compile_plan(text: str, pipeline: str, out: Path, training: bool) -> runtime.Executable:
    module = teeny_ir.parse_module(text)
    if training:
        add_weighted_sum_loss(module)
    teeny_ir.PassManager.parse(f"{pipeline},emit-triton{{out-dir={out}}}").run(module)
    return runtime.load(out)


def report(
    name: str, executable: runtime.Executable, batches: list[int]
) -> list[tuple[int, float, float, float]]:
    """Print the figures of one plan; returns per batch (batch, the run's
    arena / bound, the plan's arena / bound, the run's arena / naive)."""
    plan = executable.plan
    print(
        f"{name}: {len(plan.buffers)} buffers, {len(plan.launches)} launches, "
        f"emitted with memory={plan.memory}, arena '{plan.arena}'"
    )
    rows = []
    for batch in batches:
        figures = executable.memory(batch)
        bound, naive = figures["lower_bound_bytes"], figures["naive_bytes"]
        arena = figures["arena_bytes"]
        rows.append((batch, arena / bound, figures["plan_arena_bytes"] / bound, arena / naive))
        print(f"  memory({batch}) = {figures}")
        for strategy in memory.STRATEGIES:
            placed = memory.with_memory(plan, strategy)
            own = memory.arena_bytes(placed, batch)
            run = memory.layout(placed, batch).arena
            print(
                f"    {strategy:<14} run {run / MIB:9.2f} MiB = {run / bound:5.3f} x bound, "
                f"{run / naive:5.3f} x naive; plan's {own / MIB:9.2f} MiB = "
                f"{own / bound:5.3f} x bound"
            )
        print(
            f"    {'lower bound':<14} {bound / MIB:9.2f} MiB; naive {naive / MIB:9.2f} MiB; "
            f"run's arena {arena / bound:5.3f} x bound{'' if arena <= BAR * bound else ' (BAR MISSED)'}"
        )
    return rows


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
        summary: list[tuple[str, str, int, float, float, float]] = []
        for name, text in models:
            modes = [("inference", INFERENCE, False)]
            if not args.no_training:
                modes.append(("training", TRAINING, True))
            for mode, pipeline, training in modes:
                start = time.perf_counter()
                out = Path(temp, f"plan_{len(list(Path(temp).iterdir()))}")
                executable = compile_plan(text, pipeline, out, training)
                took = time.perf_counter() - start
                rows = report(f"{name} {mode} (compiled in {took:.1f} s)", executable, batches)
                summary += [(name, mode, *row) for row in rows]
    print(f"\n{'model':<18} {'plan':<10} {'batch':>5}  run/bound  plan's/bound  run/naive")
    for name, mode, batch, run, own, naive in summary:
        print(
            f"{name:<18} {mode:<10} {batch:>5}  {run:9.3f}  {own:12.3f}  {naive:9.3f}"
            f"{'' if run <= BAR else '  BAR MISSED'}"
        )
    return 0 if all(row[3] <= BAR for row in summary) else 1


if __name__ == "__main__":
    sys.exit(main())
