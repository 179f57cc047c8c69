"""The main job: the spine end to end on the bundled slice model.

graph IR (slice.mlir) -> teeny-inference (split-bias, fuse-epilogues,
select-conv-algorithm, lower-graph-to-kernel) -> emit-triton (kernels + plan)
-> runtime (Triton's interpreter, in a process of its own) -> outputs compared
with the numpy reference interpreter at batch 1 and 3.

Prints the kernel IR, the kernels and launches of the plan, the max error of
every output and the time of every stage; exits 1 if any output misses the
tolerance (docs/architecture.md, teeny_ir.testing: outputs finite, same shapes,
max|got - ref| <= 1e-4 * max(1, max|ref|)).

Usage: python examples/slice/run_slice.py [--out-dir build/slice] [--batches 1 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

import teeny_ir
from teeny_ir import reference, runtime
from teeny_ir.backend.plan import load_plan
from teeny_ir.driver.pass_manager import Instrumentation, Timing
from teeny_ir.testing import REDUCTION_TOL, compare

HERE = Path(__file__).resolve().parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", default=str(HERE.parent.parent / "build" / "slice"))
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 3])
    args = parser.parse_args()
    out_dir = Path(args.out_dir)

    stages: list[tuple[str, float]] = []
    start = time.perf_counter()
    module = teeny_ir.parse_module((HERE / "slice.mlir").read_text(), filename="slice.mlir")
    reference_module = module.clone()
    stages.append(("parse + verify", time.perf_counter() - start))

    timing = Timing()
    start = time.perf_counter()
    teeny_ir.PassManager.parse("teeny-inference", Instrumentation(timing=timing)).run(module)
    stages.append(("teeny-inference", time.perf_counter() - start))
    print("== kernel IR after teeny-inference ==")
    print(teeny_ir.print_module(module))

    start = time.perf_counter()
    teeny_ir.PassManager.parse(f"emit-triton{{out-dir={out_dir}}}").run(module)
    stages.append(("emit-triton", time.perf_counter() - start))
    plan = load_plan(out_dir)
    print(f"== plan: {out_dir / 'plan.json'} ==")
    for kernel in plan.kernels:
        constexprs = ", ".join(f"{k}={v}" for k, v in sorted(kernel.constexprs.items()))
        print(f"kernel {kernel.name:<20} family {kernel.family:<14} {constexprs}")
    for index, launch in enumerate(plan.launches):
        grid = ", ".join(launch.grid)
        print(f"launch {index}: {launch.kernel:<20} grid [{grid}] warps {launch.num_warps}")

    weights = load_file(str(HERE / "slice.safetensors"))
    executable = runtime.load(out_dir)
    rng = np.random.default_rng(0)
    failed = False
    for batch in args.batches:
        x = rng.standard_normal((batch, 37, 7, 9), dtype=np.float32)
        start = time.perf_counter()
        got = executable.run([x], weights)
        stages.append((f"run, interpreter, batch {batch}", time.perf_counter() - start))
        start = time.perf_counter()
        want = reference.run(reference_module, weights, [x])
        stages.append((f"reference, batch {batch}", time.perf_counter() - start))
        result = compare(got, want, REDUCTION_TOL)
        failed |= not result.ok
        if not result.outputs and not result.ok:  # the output counts differ
            print(f"batch {batch}: {result.reason} FAIL")
        for index, (g, output) in enumerate(zip(got, result.outputs, strict=False)):
            verdict = "ok" if output.ok else f"FAIL ({output.reason})"
            print(
                f"batch {batch} output {index}: shape {list(g.shape)} "
                f"max|got-ref| = {output.max_error:.3e} (bound {output.bound:.1e}) {verdict}"
            )

    print("== time per stage ==")
    for name, seconds in stages:
        print(f"  {seconds:8.3f} s  {name}")
    print("== passes (inside teeny-inference) ==")
    print(timing.report(), end="")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
