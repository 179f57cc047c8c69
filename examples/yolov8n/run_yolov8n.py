"""The main job: YOLOv8n (examples/yolov8n) compiled and run end to end.

graph IR (yolov8n.mlir) -> teeny-inference (split-bias, fuse-epilogues,
select-conv-algorithm, lower-graph-to-kernel) -> emit-triton (kernels + plan)
-> runtime (Triton's interpreter, in a process of its own, with a progress
display) -> outputs compared with the numpy reference interpreter at batch 1
and 3, on the bundled weights.

Prints the kernels and launches per family, the launches against the graph ops
they implement, the max error of every output and the time of every stage;
exits 1 if any output misses the tolerance (docs/architecture.md,
teeny_ir.testing: outputs finite, same shapes, max|got - ref| <= 1e-4 *
max(1, max|ref|)).

Usage: python examples/yolov8n/run_yolov8n.py [--out-dir build/yolov8n]
       [--batches 1 3] [--profile gpu|interpreter] [--archs 80,90]
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from safetensors.numpy import load_file

import teeny_ir
from teeny_ir import reference, runtime
from teeny_ir.backend.plan import load_plan
from teeny_ir.driver.pass_manager import Instrumentation, Timing
from teeny_ir.testing import REDUCTION_TOL, compare

HERE = Path(__file__).resolve().parent
NOT_COMPUTE = ("graph.param", "func.return")
"""Ops that compute nothing: weights are bound, not launched."""


def graph_op_counts(module: object) -> collections.Counter[str]:
    """The compute ops of the graph, by name."""
    ops = module.walk()  # type: ignore[attr-defined]
    return collections.Counter(
        op.name for op in ops if op.name.startswith("graph.") and op.name not in NOT_COMPUTE
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", default=str(HERE.parent.parent / "build" / "yolov8n"))
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--profile", choices=("gpu", "interpreter"), default="gpu")
    parser.add_argument("--archs", default="", help="also compile AOT for these archs (80,90)")
    args = parser.parse_args()
    out_dir = Path(args.out_dir)
    console = Console(highlight=False, soft_wrap=True)

    stages: list[tuple[str, float]] = []
    start = time.perf_counter()
    text = (HERE / "yolov8n.mlir").read_text(encoding="utf-8")
    module = teeny_ir.parse_module(text, filename="yolov8n.mlir")
    reference_module = module.clone()
    graph_ops = graph_op_counts(module)
    stages.append(("parse + verify", time.perf_counter() - start))

    timing = Timing()
    start = time.perf_counter()
    pipeline = f"teeny-inference{{profile={args.profile}}}"
    teeny_ir.PassManager.parse(pipeline, Instrumentation(timing=timing)).run(module)
    stages.append((pipeline, time.perf_counter() - start))

    start = time.perf_counter()
    archs = f" archs={args.archs}" if args.archs else ""
    teeny_ir.PassManager.parse(f"emit-triton{{out-dir={out_dir}{archs}}}").run(module)
    stages.append((f"emit-triton{archs}", time.perf_counter() - start))
    plan = load_plan(out_dir)

    console.print(f"[bold]== plan: {out_dir / 'plan.json'} ==")
    family_of = {kernel.name: kernel.family for kernel in plan.kernels}
    variants = collections.Counter(kernel.family for kernel in plan.kernels)
    launches = collections.Counter(family_of[launch.kernel] for launch in plan.launches)
    for family in sorted(variants):
        console.print(
            f"  {family:<20} {variants[family]:3d} kernel variants  {launches[family]:3d} launches"
        )
    total_ops = sum(graph_ops.values())
    implemented = collections.Counter(
        source.op for launch in plan.launches for source in launch.sources
    )
    console.print(
        f"  {len(plan.launches)} launches for {total_ops} graph ops "
        f"({len(plan.launches) / total_ops:.2f} per op); {len(plan.views)} views"
    )
    viewed = collections.Counter(source.op for view in plan.views for source in view.sources)
    console.print("  graph ops, and the launches that implement them (their provenance):")
    for name in sorted(graph_ops):
        if implemented[name]:
            how = f"implemented by {implemented[name]} launches"
        elif viewed[name] or name in (
            "graph.concat",
            "graph.split",
            "graph.reshape",
            "graph.flatten",
        ):
            how = "no launch: views (docs/views.md)"
        else:
            how = "no launch"
        console.print(f"    {graph_ops[name]:3d} {name:<24} {how}")

    weights = load_file(str(HERE / "yolov8n.safetensors"))
    executable = runtime.load(out_dir)
    rng = np.random.default_rng(0)
    failed = False
    for batch in args.batches:
        x = rng.standard_normal((batch, 3, 64, 64), dtype=np.float32)
        start = time.perf_counter()
        with Progress(
            TextColumn(f"interpreter, batch {batch}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("launches"),
            TimeElapsedColumn(),
            console=console,
        ) as bar:
            task = bar.add_task("run", total=len(plan.launches))

            def advance(done: int, total: int, bar: Progress = bar, task: TaskID = task) -> None:
                bar.update(task, completed=done, total=total)

            got = executable.run([x], weights, progress=advance)
        stages.append((f"run, interpreter, batch {batch}", time.perf_counter() - start))
        start = time.perf_counter()
        want = reference.run(reference_module, weights, [x])
        stages.append((f"reference, batch {batch}", time.perf_counter() - start))
        result = compare(got, want, REDUCTION_TOL)
        failed |= not result.ok
        if not result.outputs and not result.ok:  # the output counts differ
            console.print(f"batch {batch}: {result.reason} FAIL")
        for index, (g, output) in enumerate(zip(got, result.outputs, strict=False)):
            verdict = "ok" if output.ok else f"FAIL ({output.reason})"
            console.print(
                f"batch {batch} output {index}: shape {list(g.shape)} "
                f"max|got-ref| = {output.max_error:.3e} (bound {output.bound:.1e}) {verdict}"
            )

    console.print("[bold]== time per stage ==")
    for name, seconds in stages:
        console.print(f"  {seconds:8.3f} s  {name}")
    console.print("[bold]== passes (inside teeny-inference) ==")
    console.print(timing.report(), end="")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
