"""Random graphs over the graph dialect, compiled and run against the reference.

Each graph starts from an input ``[B, C, H, W]`` and applies random ops (convs,
batch norms, every pointwise op, pools, upsampling, concat, split, reshape,
flatten, linear, matmul, softmax, reductions, constants, ...) with shapes that
fit; a rank-2 graph may end in a cross-entropy loss against i64 targets (now and
then one out of range, which the reference and the run must both refuse). Each must either compile (``teeny-inference,emit-triton``) and equal the
reference at batch 1 and 3 - NaN and inf included, within the 1e-4 rule - or
be refused with a located error (exit 1). An exit 2, a traceback or a wrong
number is a failure, printed with the graph's IR.

Usage: python bench/random_graphs.py [--graphs N] [--seed S] [--ops K] [--keep DIR]
"""

from __future__ import annotations

import argparse
import collections
import io
import random
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np

import teeny_ir
from teeny_ir import GraphBuilder, reference, runtime
from teeny_ir.driver import opt
from teeny_ir.runtime.divergence import _mismatch
from teeny_ir.testing import REDUCTION_TOL

Shape = tuple[int, ...]


class Maker:
    """Builds one random graph with a `GraphBuilder`, tracking shapes."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.b = GraphBuilder()
        self.params = 0

    def param(self, shape: Shape) -> object:
        self.params += 1
        return self.b.param(f"p{self.params}", shape)

    def step(self, x: object, shape: Shape) -> tuple[object, Shape]:
        """One random op applied to ``x`` of ``shape`` (rank 4 NCHW or rank 2)."""
        rng, b = self.rng, self.b
        options: list[Callable[[], tuple[object, Shape]]] = []
        unary = ["relu", "silu", "sigmoid", "tanh", "gelu", "leaky_relu"]
        options.append(lambda: (getattr(b, rng.choice(unary))(x), shape))
        binary = ["add", "sub", "mul", "div"]

        def with_param() -> tuple[object, Shape]:
            other = (
                self.param(shape[1:])
                if rng.random() < 0.5
                else b.constant([rng.uniform(-2, 2)], shape[1:])
            )
            return getattr(b, rng.choice(binary))(x, other), shape

        options.append(with_param)
        if len(shape) == 4:
            n, c, h, w = shape

            def conv() -> tuple[object, Shape]:
                k = rng.choice([1, 3])
                out = rng.choice([c, c + 3, 8])
                groups = c if (rng.random() < 0.2 and out == c) else 1
                weight = self.param((out, c // groups, k, k))
                bias = self.param((out,)) if rng.random() < 0.5 else None
                y = b.conv2d(x, weight, bias, padding=[k // 2] * 4, groups=groups)
                if rng.random() < 0.6:
                    y = b.batch_norm(
                        y,
                        self.param((out,)),
                        self.param((out,)),
                        self.param((out,)),
                        self.param((out,)),
                    )
                return y, (n, out, h, w)

            options += [conv, conv]
            if h >= 2 and w >= 2:
                options.append(
                    lambda: (b.max_pool2d(x, [2, 2], strides=[2, 2]), (n, c, h // 2, w // 2))
                )
                options.append(
                    lambda: (b.avg_pool2d(x, [2, 2], strides=[2, 2]), (n, c, h // 2, w // 2))
                )
            if h * w <= 64:
                options.append(lambda: (b.upsample_nearest2d(x, [2, 2]), (n, c, 2 * h, 2 * w)))

            def cat() -> tuple[object, Shape]:
                y = b.relu(x)
                return b.concat([x, y], 1), (n, 2 * c, h, w)

            options.append(cat)
            if c >= 2:

                def split() -> tuple[object, Shape]:
                    first = rng.randint(1, c - 1)
                    parts = b.split(x, [first, c - first], 1)
                    pick = rng.randrange(2)
                    return parts[pick], (n, first if pick == 0 else c - first, h, w)

                options.append(split)
            options.append(lambda: (b.flatten(x), (n, c * h * w)))
            options.append(lambda: (b.softmax(x, rng.choice([1, 2, 3])), shape))
            options.append(lambda: (b.reduce_sum(x, [3], keepdims=True), (n, c, h, 1)))
            options.append(lambda: (b.reduce_mean(x, [2], keepdims=True), (n, c, 1, w)))
        else:
            n, f = shape

            def linear() -> tuple[object, Shape]:
                out = rng.choice([5, 10, f])
                bias = self.param((out,)) if rng.random() < 0.7 else None
                return b.linear(x, self.param((out, f)), bias), (n, out)

            options += [linear, linear]
            options.append(lambda: (b.log_softmax(x, 1), shape))
            options.append(lambda: (b.matmul(x, self.param((f, 6))), (n, 6)))
        return rng.choice(options)()

    def build(self, ops: int) -> tuple[str, Shape]:
        rng = self.rng
        shape: Shape = (-1, rng.choice([1, 3, 4]), rng.choice([5, 6, 8]), rng.choice([5, 7]))
        x = self.b.input([None, *shape[1:]])
        current, now = x, shape
        for _ in range(ops):
            current, now = self.step(current, now)
        if len(now) == 2 and rng.random() < 0.5:  # a loss: class indices as a second input
            targets = self.b.input([None], "i64")
            self.b.output(self.b.cross_entropy(current, targets), current)
        else:
            self.b.output(current)
        return teeny_ir.print_module(self.b.build()), shape


def _weights(text: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    weights: dict[str, np.ndarray] = {}
    variances: set[str] = set()
    for op in teeny_ir.parse_module(text).walk():
        if op.name == "graph.param":
            shape = op.results[0].type.get_shape()  # type: ignore[attr-defined]
            value = 0.5 * rng.standard_normal(shape)
            weights[op.param_name.data] = value.astype(np.float32)  # type: ignore[attr-defined]
        if op.name == "graph.batch_norm":  # its running variance must be positive
            variances.add(op.operands[4].owner.param_name.data)  # type: ignore[union-attr]
    for name in variances:
        weights[name] = np.abs(weights[name]) + 0.5
    return weights


def check(text: str, shape: Shape, seed: int, keep: Path | None) -> str:
    """``compiled``, ``refused`` or a failure description."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "plan"
        stderr = io.StringIO()
        code = opt.run(
            ["-", "-p", f"teeny-inference,emit-triton{{out-dir={out}}}", "-o", "/dev/null"],
            io.BytesIO(text.encode()),
            io.StringIO(),
            stderr,
        )
        if code == 1 and "error:" in stderr.getvalue() and "Traceback" not in stderr.getvalue():
            return "refused: " + stderr.getvalue().splitlines()[0].split("error: ", 1)[-1][:90]
        if code != 0:
            return f"exit {code}: {stderr.getvalue()[-400:]}"
        rng = np.random.default_rng(seed)
        weights = _weights(text, rng)
        module = teeny_ir.parse_module(text)
        try:
            for batch in (1, 3):
                x = rng.standard_normal((batch, *shape[1:])).astype(np.float32)
                if seed % 3 == 0:
                    x.reshape(-1)[:: max(1, x.size // 5)] = np.nan
                inputs = [x]
                if len(module.ops.first.body.block.args) == 2:  # type: ignore[union-attr]
                    classes = module.ops.first.function_type.outputs.data[1].get_shape()[1]  # type: ignore[union-attr]
                    # Now and then one out of range: the reference and the run must both refuse.
                    high = classes + (1 if seed % 4 == 1 else 0)
                    inputs.append(rng.integers(0, high, batch).astype(np.int64))
                try:
                    want = reference.run(module, weights, inputs)
                except teeny_ir.DiagnosticError as err:
                    try:
                        runtime.load(out).run(inputs, weights)
                    except runtime.StatusCheckError:
                        return "refused by the reference and the run: " + str(err)[:80]
                    return "the reference refuses but the run does not: " + str(err)[:90]
                got = runtime.load(out).run(inputs, weights)
                for g, w in zip(got, want, strict=True):
                    problem = _mismatch(g, w, REDUCTION_TOL)
                    if problem is not None:
                        if keep is not None:
                            keep.mkdir(parents=True, exist_ok=True)
                            (keep / f"graph{seed}.mlir").write_text(text)
                        return f"wrong at batch {batch}: {problem}"
        except Exception as err:  # noqa: BLE001 - reported as a failure with its traceback
            return f"crash: {type(err).__name__}: {err} {traceback.format_exc()[-300:]}"
    return "compiled"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ops", type=int, default=4)
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args()
    outcomes: collections.Counter[str] = collections.Counter()
    failures = 0
    for index in range(args.graphs):
        seed = args.seed + index
        text, shape = Maker(random.Random(seed)).build(args.ops)
        verdict = check(text, shape, seed, args.keep)
        kind = verdict.split(":")[0]
        kind = "refused" if kind.startswith("refused") else kind
        outcomes[kind if kind in ("compiled", "refused") else "FAIL"] += 1
        if kind not in ("compiled", "refused"):
            failures += 1
            print(f"graph {seed}: {verdict}\n{text}")
        elif kind == "refused":
            print(f"graph {seed}: {verdict}")
    print(dict(outcomes))
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
