"""YOLOv8n (examples/yolov8n, 64x64) through the compiler and Triton's interpreter.

Prints: the time of teeny-inference + emit-triton without AOT (in-process, after
imports), the launches against the graph ops and the kernel variants per family,
the AOT time for every unique variant for sm_80 and sm_90 (with a cold Triton
cache), and for each tile profile (gpu, interpreter) the interpreter time at
batch 1 (best of ``--runs``) with the max error against the reference
interpreter. Aims: passes +
emission <= 2 s, interpreter <= 15 s at batch 1.

Usage: .venv/bin/python bench/yolov8n.py [--runs N] [--no-aot]
"""

from __future__ import annotations

import argparse
import collections
import io
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

import teeny_ir
from teeny_ir import reference, runtime
from teeny_ir.driver import opt
from teeny_ir.testing import REDUCTION_TOL, compare

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "examples" / "yolov8n" / "yolov8n.mlir"
WEIGHTS = ROOT / "examples" / "yolov8n" / "yolov8n.safetensors"


def compile_to(directory: Path, archs: str = "", profile: str = "gpu") -> float:
    suffix = f" archs={archs}" if archs else ""
    start = time.perf_counter()
    pipeline = f"teeny-inference{{profile={profile}}},emit-triton{{out-dir={directory}{suffix}}}"
    code = opt.run(
        [str(MODEL), "-p", pipeline],
        io.BytesIO(),
        io.StringIO(),
        err := io.StringIO(),
    )
    if code != 0:
        raise SystemExit(err.getvalue())
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--no-aot", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        plan_dir = Path(tmp) / "yolov8n"
        compile_to(Path(tmp) / "warm-up")  # imports and first-use costs
        seconds = compile_to(plan_dir)
        print(f"passes + emission (no AOT): {seconds:.2f} s")
        plan = json.loads((plan_dir / "plan.json").read_text())
        families = {k["name"]: k["family"] for k in plan["kernels"]}
        launches = collections.Counter(families[launch["kernel"]] for launch in plan["launches"])
        variants = collections.Counter(families.values())
        graph_ops = sum(
            1
            for op in teeny_ir.parse_module(MODEL.read_text()).walk()
            if op.name.startswith("graph.") and op.name != "graph.param"
        )
        print(
            f"launches: {sum(launches.values())} for {graph_ops} graph ops "
            f"({dict(sorted(launches.items()))}); views: {len(plan['views'])}"
        )
        print(f"kernel variants: {len(families)} ({dict(sorted(variants.items()))})")
        if not args.no_aot:
            # A cold Triton cache of our own, so that the figure is a real compile.
            os.environ["TRITON_CACHE_DIR"] = str(Path(tmp) / "triton-cache")
            seconds = compile_to(Path(tmp) / "aot", "80,90")
            print(f"AOT for sm_80 and sm_90, {len(families)} variants: {seconds:.1f} s")
        weights = load_file(WEIGHTS)
        x = np.random.default_rng(0).standard_normal((1, 3, 64, 64)).astype(np.float32)
        ref = reference.run(teeny_ir.parse_module(MODEL.read_text()), weights, [x])
        for profile in ("gpu", "interpreter"):
            profile_dir = Path(tmp) / f"profile-{profile}"
            compile_to(profile_dir, profile=profile)
            executable = runtime.load(profile_dir)
            best, got = float("inf"), []
            for _ in range(args.runs):
                start = time.perf_counter()
                got = executable.run([x], weights)
                best = min(best, time.perf_counter() - start)
            result = compare(got, ref, REDUCTION_TOL)
            verdict = "ok" if result.ok else "FAIL " + str(result.reason)
            print(
                f"interpreter, batch 1, profile={profile}: {best:.1f} s "
                f"({len(executable.plan.kernels)} variants); max|got-ref| = "
                f"{result.max_error:.3g} (bound {result.bound:.3g}) {verdict}"
            )


if __name__ == "__main__":
    main()
