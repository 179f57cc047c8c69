"""Time `teeny-opt -p teeny-inference` (verify-each on) on large stacked graphs.

The graph stacks blocks of a 1x1 Conv + BatchNorm + SiLU + residual add at a
constant shape (4 compute ops per block; the weights' ``graph.param`` ops are
not counted), written as IR text, and runs the real driver on it in a fresh
process: parse, verify, the passes with verify-each, print. For 1k and 10k
compute ops it prints the wall time (best of ``--runs``) and the driver's own
``--mlir-timing`` report for the largest size. Bars: 10k ops take at most 12x
the 1k time and at most 15 s.

Usage: .venv/bin/python bench/compile_scale.py [--runs N] [--sizes 1000,10000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHANNELS = 16
SIZE = 8
SCALING_BAR = 12.0
TIME_BAR = 15.0


def graph_text(ops: int) -> str:
    """``@forward`` with ``ops // 4`` Conv+BN+SiLU+add blocks."""
    t = f"tensor<?x{CHANNELS}x{SIZE}x{SIZE}xf32>"
    w = f"tensor<{CHANNELS}x{CHANNELS}x1x1xf32>"
    v = f"tensor<{CHANNELS}xf32>"
    lines = [f"func.func @forward(%x: {t}) -> {t} {{"]
    previous = "%x"
    for i in range(ops // 4):
        p = f"model.{i}"
        lines += [
            f'  %w{i} = graph.param "{p}.conv.weight" : {w}',
            *(
                f'  %{n}{i} = graph.param "{p}.bn.{key}" : {v}'
                for n, key in (
                    ("g", "weight"),
                    ("b", "bias"),
                    ("m", "running_mean"),
                    ("s", "running_var"),
                )
            ),
            f"  %c{i} = graph.conv2d {previous}, %w{i} : ({t}, {w}) -> {t}",
            f"  %n{i} = graph.batch_norm %c{i}, %g{i}, %b{i}, %m{i}, %s{i} eps 1.0e-03 "
            f": ({t}, {v}, {v}, {v}, {v}) -> {t}",
            f"  %a{i} = graph.silu %n{i} : {t}",
            f"  %r{i} = graph.add %a{i}, {previous} : ({t}, {t}) -> {t}",
        ]
        previous = f"%r{i}"
    lines += [f"  func.return {previous} : {t}", "}", ""]
    return "\n".join(lines)


def run_driver(path: Path, *flags: str) -> tuple[float, str]:
    opt = Path(sys.executable).with_name("teeny-opt")
    start = time.perf_counter()
    done = subprocess.run(
        [str(opt), str(path), "-p", "teeny-inference", "-o", "/dev/null", *flags],
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"teeny-opt failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed, done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--sizes", default="1000,10000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    times: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for ops in sizes:
            path = Path(tmp) / f"stack{ops}.mlir"
            path.write_text(graph_text(ops), encoding="utf-8")
            times[ops] = min(run_driver(path)[0] for _ in range(args.runs))
            print(f"{ops:>6} ops: {times[ops]:7.2f} s")
        _, report = run_driver(Path(tmp) / f"stack{sizes[-1]}.mlir", "--mlir-timing")
        print(report.rstrip())
    ok = True
    if len(sizes) >= 2:
        ratio = times[sizes[-1]] / times[sizes[0]]
        print(f"ratio {sizes[-1]}/{sizes[0]}: {ratio:.1f} (bar <= {SCALING_BAR:g})")
        ok = ratio <= SCALING_BAR and times[sizes[-1]] <= TIME_BAR
        print(f"{sizes[-1]} ops: {times[sizes[-1]]:.2f} s (bar <= {TIME_BAR:g} s)")
    print("PASS" if ok else "FAIL")


if __name__ == "__main__":
    main()
