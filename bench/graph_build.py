"""Time building and verifying large graphs with `teeny_ir.GraphBuilder`.

The graph stacks YOLO-style stages at a constant shape, each a Conv (3x3 conv,
BN, SiLU) then a C2f block with one shortcut bottleneck, named like ultralytics
(``model.N.cv1.conv.weight``...), until it holds at least N ops (``graph.param``
ops and the ``func.return`` count). For N = 10k and 20k it prints the time to
add the ops, to ``build()`` (which verifies), and of `teeny_ir.ir.verifier.verify_ops`
on the built module, each the best of ``--runs``. Bars: at 10k ops, adding the
ops plus ``build()`` <= 1 s and ``verify_ops`` <= 1 s; 20k ops take at most
2.4x the 10k figures.

Usage: .venv/bin/python bench/graph_build.py [--runs N]
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable

from xdsl.dialects.builtin import ModuleOp

from teeny_ir import GraphBuilder
from teeny_ir.frontend.graph_builder import Value
from teeny_ir.ir.verifier import verify_ops

CHANNELS = 32
SIZE = 16
OPS_PER_STAGE = 43
"""Conv: param, conv2d, 4 BN params, batch_norm, silu (8); C2f: cv1 (8), split,
bottleneck cv1 and cv2 (16), add, concat, cv2 (8) (35)."""
BARS = {"build": 1.0, "verify": 1.0}
SCALING_BAR = 2.4


def conv(b: GraphBuilder, x: Value, c_in: int, c_out: int, k: int) -> Value:
    weight = b.param("conv.weight", [c_out, c_in, k, k])
    y = b.conv2d(x, weight, padding=[k // 2] * 4)
    stats = [b.param(f"bn.{n}", [c_out]) for n in ("weight", "bias", "running_mean", "running_var")]
    return b.silu(b.batch_norm(y, *stats, eps=1e-3, momentum=0.03))


def c2f(b: GraphBuilder, x: Value, c: int) -> Value:
    half = c // 2
    with b.scope("cv1"):
        chunks = b.split(conv(b, x, c, c, 1), [half, half], 1)
    with b.scope("m.0"):
        with b.scope("cv1"):
            y = conv(b, chunks[1], half, half, 3)
        with b.scope("cv2"):
            y = conv(b, y, half, half, 3)
        chunks.append(b.add(chunks[1], y))
    with b.scope("cv2"):
        return conv(b, b.concat(chunks, 1), 3 * half, c, 1)


def build_graph(ops: int) -> tuple[GraphBuilder, float, Callable[[], ModuleOp]]:
    """Add the ops of a graph of at least ``ops`` ops; return the builder, the
    seconds it took and its ``build``."""
    start = time.perf_counter()
    b = GraphBuilder()
    x = b.input([None, CHANNELS, SIZE, SIZE])
    for stage in range(-(-(ops - 1) // OPS_PER_STAGE)):
        with b.scope(f"model.{2 * stage}"):
            x = conv(b, x, CHANNELS, CHANNELS, 3)
        with b.scope(f"model.{2 * stage + 1}"):
            x = c2f(b, x, CHANNELS)
    b.output(x)
    return b, time.perf_counter() - start, b.build


def measure(ops: int, runs: int) -> dict[str, float]:
    """Best-of-``runs`` seconds for adding the ops, build() and verify_ops; and the op count."""
    best = {"add": float("inf"), "build": float("inf"), "verify": float("inf"), "ops": 0.0}
    for _ in range(runs):
        gc.collect()
        _, added, build = build_graph(ops)
        start = time.perf_counter()
        module = build()
        built = time.perf_counter() - start
        start = time.perf_counter()
        errors = verify_ops(module)
        verified = time.perf_counter() - start
        assert not errors, errors
        best["add"] = min(best["add"], added)
        best["build"] = min(best["build"], added + built)
        best["verify"] = min(best["verify"], verified)
        best["ops"] = float(sum(1 for _ in module.walk()) - 2)  # not the module and func
        del module
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    figures = {size: measure(size, args.runs) for size in (10_000, 20_000)}
    print(f"{'ops':>7} {'add ops':>9} {'+build()':>9} {'verify':>9} {'us/op build':>12}")
    for f in figures.values():
        per_op = 1e6 * f["build"] / f["ops"]
        print(
            f"{int(f['ops']):>7} {f['add']:>8.3f}s {f['build']:>8.3f}s {f['verify']:>8.3f}s "
            f"{per_op:>12.1f}"
        )
    small, large = figures[10_000], figures[20_000]
    ok = True
    for key, bar in BARS.items():
        ratio = large[key] / small[key]
        passed = small[key] <= bar and ratio <= SCALING_BAR
        ok &= passed
        print(
            f"{key}: {small[key]:.3f} s at 10k (bar {bar} s), 20k/10k = {ratio:.2f} "
            f"(bar {SCALING_BAR}): {'ok' if passed else 'FAIL'}"
        )
    print("all bars met" if ok else "some bars missed")


if __name__ == "__main__":
    main()
