"""The depthwise convolution backward: its own families against the grouped GEMMs.

For each shape (the defaults: a [2, 64, 20, 20] input with a 3x3 kernel at
stride 1, padding 1, and with a 5x5 kernel at stride 2, padding 2, both
depthwise: ``groups == C``), builds the input gradient
(``graph.conv2d_backward_data``) and the weight gradient
(``graph.conv2d_backward_weight``) twice: as lower-graph-to-kernel lowers
them now (``depthwise_conv_backward_data`` / ``_weight``) and as the grouped
implicit GEMM families lower them (``conv2d_backward_data`` / ``_weight``,
their rule called directly, as it lowered every convolution before the
depthwise families), and prints for each:

- the interpreter time: the launch in Triton's CPU interpreter with the
  ``interpreter`` profile's tiles (best of ``--repeat``; the worker's start,
  importing triton and the kernels, excluded), checked against the reference;
- the programs and the multiply-adds the ``gpu`` profile's tiles issue per
  useful one (a grouped GEMM pads its per-group extents of 1 to ``tl.dot``'s
  16, the direct kernels only their tails);
- the PTX lines of the ``gpu`` profile's variant compiled for sm_80.

Usage: python bench/depthwise_backward.py [--shape 2,64,20,20,3,1,1] [--repeat 3]
(``B,C,H,W,kernel,stride,padding``).
"""

from __future__ import annotations

import argparse
import math
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.rewriter import Rewriter

import teeny_ir
from dialects.graph.conv import Conv2dBackwardDataOp, Conv2dBackwardWeightOp
from dialects.kernel import LaunchOp
from teeny_ir import reference, runtime
from teeny_ir.backend import aot
from teeny_ir.frontend.losses import add_weighted_sum_loss
from teeny_ir.kernels.conv2d_backward_data.lowering import lower_conv2d_backward_data
from teeny_ir.kernels.conv2d_backward_weight.lowering import lower_conv2d_backward_weight
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.lowering import LoweringContext, lower
from teeny_ir.kernels.render import render
from teeny_ir.kernels.tiles import check_profile
from teeny_ir.testing import REDUCTION_TOL, assert_close
from teeny_ir.testing.kernels import evaluate

DEFAULT_SHAPES = ("2,64,20,20,3,1,1", "2,64,20,20,5,2,2")


@dataclass(frozen=True)
class Shape:
    """A depthwise convolution: input [B, C, H, W], a square kernel, stride, padding."""

    batch: int
    channels: int
    height: int
    width: int
    kernel: int
    stride: int
    padding: int

    def out(self) -> tuple[int, int]:
        p, k, s = self.padding, self.kernel, self.stride
        return (self.height + 2 * p - k) // s + 1, (self.width + 2 * p - k) // s + 1

    def text(self, op: str) -> str:
        """The one-op graph of the input (``data``) or weight gradient."""
        c, k = self.channels, self.kernel
        x = f"tensor<?x{c}x{self.height}x{self.width}xf32>"
        dy = "tensor<?x{}x{}x{}xf32>".format(c, *self.out())
        w = f"tensor<{c}x1x{k}x{k}xf32>"
        p, s = self.padding, self.stride
        options = f"strides [{s}, {s}] padding [{p}, {p}, {p}, {p}] groups {c}"
        if op == "data":
            body = f"%r = graph.conv2d_backward_data %a, %b {options} : ({dy}, {w}) -> {x}"
            return f"func.func @forward(%a: {dy}, %b: {w}) -> {x} {{\n  {body}\n  func.return %r : {x}\n}}\n"
        body = f"%r = graph.conv2d_backward_weight %a, %b {options} : ({x}, {dy}) -> {w}"
        return f"func.func @forward(%a: {x}, %b: {dy}) -> {w} {{\n  {body}\n  func.return %r : {w}\n}}\n"

    def inputs(self, op: str, rng: np.random.Generator) -> list[np.ndarray]:
        x = (self.batch, self.channels, self.height, self.width)
        dy = (self.batch, self.channels, *self.out())
        w = (self.channels, 1, self.kernel, self.kernel)
        shapes = (dy, w) if op == "data" else (x, dy)
        return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def kernel_module(text: str, old: bool, profile: str) -> tuple[ModuleOp, LaunchOp]:
    """The kernel IR of a one-op graph: its graph op replaced by the launch of
    the rule lower-graph-to-kernel picks (``old``: the grouped GEMM family's)."""
    module = teeny_ir.parse_module(text)
    (op,) = [o for o in module.walk() if o.name.startswith("graph.conv2d_backward")]
    ctx = LoweringContext(check_profile(profile))
    if not old:
        launch = lower(ctx, op)
    elif isinstance(op, Conv2dBackwardDataOp):
        launch = lower_conv2d_backward_data(ctx, op)
    else:
        assert isinstance(op, Conv2dBackwardWeightOp)
        launch = lower_conv2d_backward_weight(ctx, op)
    assert isinstance(launch, LaunchOp)
    Rewriter.replace_op(op, launch)
    return module, launch


def interpreter_seconds(
    text: str, old: bool, inputs: list[np.ndarray], repeat: int, scratch: Path
) -> tuple[str, float]:
    """The family and the best launch time in Triton's interpreter, checked
    against the reference."""
    module, launch = kernel_module(text, old, "interpreter")
    out = scratch / ("old" if old else "new")
    teeny_ir.PassManager.parse(f"emit-triton{{out-dir={out}}}").run(module)
    executable = runtime.load(out)
    want = reference.run(teeny_ir.parse_module(text), {}, inputs)
    times = []
    for _ in range(repeat):
        timings: dict[str, float] = {}
        got = executable.run(inputs, {}, timings=timings)
        assert_close(got, want, REDUCTION_TOL)
        times.append(timings["worker: launches"])
    return launch.family, min(times)


def issued_per_program(family: str, dims: dict[str, int], tiles: dict[str, int]) -> int:
    """The multiply-adds one program's loop issues, masked lanes included: its
    steps times its block (a ``tl.dot`` tile, or the direct kernels' gather)."""
    taps = dims["KH"] * dims["KW"]
    positions = dims["B"] * dims["OH"] * dims["OW"]
    if family == "conv2d_backward_data":
        k = dims["C_OUT"] // dims["GROUPS"] * taps
        return (
            math.ceil(k / tiles["BLOCK_K"]) * tiles["BLOCK_M"] * tiles["BLOCK_N"] * tiles["BLOCK_K"]
        )
    if family == "conv2d_backward_weight":
        return (
            math.ceil(positions / tiles["BLOCK_K"])
            * tiles["BLOCK_M"]
            * tiles["BLOCK_N"]
            * tiles["BLOCK_K"]
        )
    block = tiles["BLOCK_P"] * tiles["BLOCK_C"] * tiles["BLOCK_T"]
    if family == "depthwise_conv_backward_data":
        return math.ceil(taps / tiles["BLOCK_T"]) * block
    return math.ceil(positions / tiles["BLOCK_P"]) * block


def gpu_variant(text: str, old: bool, batch: int, scratch: Path) -> tuple[str, int, float, int]:
    """The ``gpu`` profile's launch: its family, its programs at ``batch``, the
    multiply-adds its tiles issue per useful one (``B * C * OH * OW * KH * KW``),
    and the PTX lines of its variant compiled for sm_80."""
    _, launch = kernel_module(text, old, "gpu")
    family = FAMILIES[launch.family]
    dims = {
        arg.name: evaluate(dict(launch.arg_bindings)[arg.name], batch)
        for arg in family.args
        if arg.kind == "dim"
    }
    tiles = {k: v for k, v in launch.constexpr_values.items() if isinstance(v, int)}
    programs = math.prod(evaluate(g, batch) for g in launch.grid)
    issued = programs * issued_per_program(launch.family, dims, tiles)
    channels = dims.get("C", dims.get("C_IN", 0))
    useful = dims["B"] * channels * dims["OH"] * dims["OW"] * dims["KH"] * dims["KW"]
    name = f"{launch.family}_0"
    path = scratch / f"{name}.py"
    constexprs = dict(launch.constexpr_values)
    path.write_text(render(family, name, constexprs))
    variant = aot.compile_variant(
        path, name, family, constexprs, 80, launch.num_warps, launch.num_stages
    )
    return launch.family, programs, issued / useful, variant.ptx.count("\n")


def training_launches(model: Path, out: Path) -> Counter[str]:
    """The launches per family of ``model``'s SGD training plan (the loss
    ``add_weighted_sum_loss``, ``teeny-training{profile=interpreter}``),
    emitted to ``out``; checks that every depthwise convolution's backward
    runs on the depthwise families."""
    module = teeny_ir.parse_module(model.read_text(), str(model))
    add_weighted_sum_loss(module)
    teeny_ir.PassManager.parse(
        "teeny-training{optimizer=sgd lr=0.01 momentum=0.9 weight-decay=0.1 "
        f"profile=interpreter}},emit-triton{{out-dir={out}}}"
    ).run(module)
    launches = [op for op in module.walk() if isinstance(op, LaunchOp)]
    families = Counter(launch.family for launch in launches)
    for launch in launches:
        if launch.family in ("conv2d_backward_data", "conv2d_backward_weight"):
            dims = dict(launch.arg_bindings)
            assert not dims["GROUPS"] == dims["C_IN"] == dims["C_OUT"], launch  # depthwise
    runtime.load(out)  # the plan loads (its schema, files and every launch's contract)
    return families


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", action="append", help="B,C,H,W,kernel,stride,padding")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--model",
        type=Path,
        help="also compile this model's training plan (examples/yolo11n/yolo11n.mlir) and "
        "print its launches per family",
    )
    args = parser.parse_args()
    if args.model is not None:
        with tempfile.TemporaryDirectory() as scratch:
            families = training_launches(args.model, Path(scratch) / "plan")
        print(f"{args.model}: {sum(families.values())} launches in its SGD training plan")
        for family, count in sorted(families.items(), key=lambda item: (-item[1], item[0])):
            print(f"{count:6d}  {family}")
    rng = np.random.default_rng(0)
    print(
        f"{'shape':>22} {'op':>6} {'family':>31} | {'interp':>9} | "
        f"{'programs':>8} {'issued/useful':>13} {'PTX lines':>9}"
    )
    for text in args.shape or DEFAULT_SHAPES:
        shape = Shape(*(int(x) for x in text.split(",")))
        for op in ("data", "weight"):
            graph = shape.text(op)
            inputs = shape.inputs(op, rng)
            for old in (True, False):
                with tempfile.TemporaryDirectory() as scratch:
                    family, seconds = interpreter_seconds(
                        graph, old, inputs, args.repeat, Path(scratch)
                    )
                    gpu_family, programs, ratio, ptx = gpu_variant(
                        graph, old, shape.batch, Path(scratch)
                    )
                assert gpu_family == family
                print(
                    f"{text:>22} {op:>6} {family:>31} | {seconds * 1e3:7.1f}ms | "
                    f"{programs:8d} {ratio:13.1f} {ptx:9d}"
                )
    print(
        "interp: the launch in Triton's CPU interpreter, interpreter-profile tiles (the worker's "
        "start excluded; best of --repeat). programs, issued/useful (multiply-adds the tiles "
        "issue, masked lanes included, per useful one) and PTX lines: the gpu profile's "
        "variant, compiled for sm_80."
    )


if __name__ == "__main__":
    main()
