"""The ``max_pool2d_backward`` kernel on SPPF's window (5x5, stride 1, padding 2):
its PTX size and its time in Triton's interpreter.

For each shape of x ([N, C, H, W]; the defaults are YOLOv8n's SPPF at 64x64,
[1, 128, 2, 2], at 640x640, [1, 128, 20, 20], and a batch-2 one, [2, 32, 20,
20]) the script compiles one ``graph.max_pool2d_backward`` with
``lower-graph-to-kernel{profile=interpreter}`` and ``emit-triton``, times the
plan's launch in Triton's interpreter (the worker's ``launches`` stage, best of
``--repeat``; the worker's start and Triton's import excluded) and checks dx
against the reference interpreter and against torch autograd of
``F.max_pool2d`` (float64), on data with many ties (values in {0, 1, 2}). It
also compiles the GPU variant ahead of time (``triton.compile`` for sm_80, no
GPU needed) and prints the PTX line count.

The figures before and after issue 26. Before, the kernel was input-centric
and recomputed the argmax of every window that reads an element: 25 windows of
25 taps per dx element, O((KH * KW)**2). Now each element reads its 9 x 9
neighbourhood once and decides all 25 windows from it, O(KH * KW), with the
same results bit for bit (the family's kernel.py says how). Measured on this
2-core machine while it was shared with other jobs (load average about 2.5),
the old and new kernels run alternately, best of 5 runs in each of two rounds;
"before" is the parent commit's kernel through this same script:

=====================  ==========  ==========  =====
SPPF 5x5 s1 p2         before      after       ratio
=====================  ==========  ==========  =====
PTX lines (sm_80)      4,067       685         0.17
x [1, 128, 2, 2]       1.026 s     0.136 s     0.13
x [1, 128, 20, 20]     4.538 s     0.418 s     0.09
x [2, 32, 20, 20]      2.523 s     0.290 s     0.11
=====================  ==========  ==========  =====

([1, 128, 2, 2] is YOLOv8n's SPPF at 64x64, [1, 128, 20, 20] at 640x640.) The
PTX lines are code size, not work: the GPU variant also went from 1024
elements per program (8 per thread) to 128 (1 per thread), and that is what
cuts them, since a thread's code repeats per element it holds. At one block
size the two are alike (old 570, new 685 lines at 128; 4,067 and 3,252 at
1024: the old kernel's window loop ran at run time around one window's 25
unrolled taps). The work is what changed: per element the old kernel executed
625 x loads and their compares, the new one 81 (and 25 dy loads each). The
interpreter variant keeps its 16384 elements per program.

Usage: python bench/max_pool_backward.py [--shape 2,32,20,20] [--repeat 5] [--no-ptx]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

import teeny_ir
from teeny_ir import reference, runtime
from teeny_ir.testing import REDUCTION_TOL, assert_close

DEFAULT_SHAPES = ("1,128,2,2", "1,128,20,20", "2,32,20,20")
SPPF = "kernel [5, 5] strides [1, 1] padding [2, 2, 2, 2]"


def _t(*shape: int) -> str:
    return "tensor<" + "x".join(str(d) for d in shape) + "xf32>"


def module_text(n: int, c: int, h: int, w: int) -> str:
    """One SPPF max-pool backward (its result has x's shape: stride 1, padding 2)."""
    x = _t(n, c, h, w)
    return f"""func.func @forward(%x: {x}, %dy: {x}) -> {x} {{
  %dx = graph.max_pool2d_backward %x, %dy {SPPF} : ({x}, {x}) -> {x}
  func.return %dx : {x}
}}"""


def ptx_lines() -> int:
    """Lines of the PTX of the GPU variant the lowering emits for SPPF."""
    from teeny_ir.backend import aot
    from teeny_ir.kernels.families import FAMILIES
    from teeny_ir.kernels.render import render
    from teeny_ir.testing.kernels import lowered

    _, launch = lowered(module_text(1, 8, 20, 20))
    family = FAMILIES[launch.family]
    name = f"{launch.family}_0"
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / f"{name}.py"
        path.write_text(render(family, name, launch.constexpr_values))
        compiled = aot.compile_variant(
            path, name, family, launch.constexpr_values, 80, launch.num_warps, launch.num_stages
        )
    return compiled.ptx.count("\n")


def torch_dx(x: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """torch autograd's dx of SPPF's max pool, in float64."""
    import torch
    import torch.nn.functional as F

    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    y = F.max_pool2d(xt, 5, 1, 2)
    (dx,) = torch.autograd.grad(y, xt, torch.tensor(dy, dtype=torch.float64))
    return dx.numpy()


def interpreter_time(shape: tuple[int, ...], repeat: int, rng: np.random.Generator) -> float:
    """Best time of the launch in Triton's interpreter; dx checked on the way."""
    text = module_text(*shape)
    x = rng.integers(0, 3, shape).astype(np.float32)  # ties in nearly every window
    dy = rng.standard_normal(shape).astype(np.float32)
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "plan"
        module = teeny_ir.parse_module(text)
        teeny_ir.PassManager.parse(
            f"lower-graph-to-kernel{{profile=interpreter}},emit-triton{{out-dir={out}}}"
        ).run(module)
        executable = runtime.load(out)
        times = []
        got: list[np.ndarray] = []
        for _ in range(repeat):
            timings: dict[str, float] = {}
            got = executable.run([x, dy], {}, timings=timings)
            times.append(timings["worker: launches"])
    want = reference.run(teeny_ir.parse_module(text), {}, [x, dy])
    assert_close(got, want, REDUCTION_TOL)
    assert_close(got, [torch_dx(x, dy)], REDUCTION_TOL)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", action="append", help="N,C,H,W of x")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-ptx", action="store_true", help="skip the AOT compile")
    args = parser.parse_args()
    if not args.no_ptx:
        print(f"PTX lines (sm_80, SPPF 5x5 stride 1 padding 2): {ptx_lines()}")
    rng = np.random.default_rng(0)
    for text in args.shape or DEFAULT_SHAPES:
        shape = tuple(int(d) for d in text.split(","))
        seconds = interpreter_time(shape, args.repeat, rng)
        print(f"interpreter, x {list(shape)}: {seconds:.3f} s (dx = reference = torch)")


if __name__ == "__main__":
    main()
