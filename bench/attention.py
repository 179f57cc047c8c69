"""The fused attention kernels against PyTorch's eager attention on this CPU.

For each shape (batch x heads, N queries = M keys, Dk, Dv; the defaults are
YOLO11n's C2PSA at 640x640, N = 20 * 20, and at 64x64, N = 4), compiles one
``graph.attention`` (C2PSA's features-first layout, as fuse-attention makes it)
and one ``graph.attention_backward`` with ``teeny-inference{profile=interpreter}``
and ``emit-triton``, and times their launches in Triton's interpreter (best of
``--repeat``), checking both against the reference interpreter. Next to them:
PyTorch eager on the same CPU, float32, the attention as ultralytics writes it
(``softmax((q * scale)^T k) v^T``), forward and backward.

Saved for backward: teeny_ir's backward reads q, k, v, o and the row
statistic lse (N floats per head), never an N x M matrix; PyTorch's eager
attention saves what autograd keeps (``torch.autograd.graph.saved_tensors_hooks``,
distinct storages, the inputs excluded as for teeny_ir's q, k, v). Both in bytes.

Usage: python bench/attention.py [--shape 2,2,400,32,64] [--repeat 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import teeny_ir
from teeny_ir import reference, runtime
from teeny_ir.testing import REDUCTION_TOL, assert_close

DEFAULT_SHAPES = ("2,2,400,32,64", "2,2,4,32,64")


def _t(*shape: int) -> str:
    return "tensor<" + "x".join(str(d) for d in shape) + "xf32>"


def modules(b: int, h: int, n: int, dk: int, dv: int, scale: float) -> tuple[str, str]:
    """The forward and backward modules, features first (transposed [1, 1, 1, 1])."""
    q, v, lse = _t(b, h, dk, n), _t(b, h, dv, n), _t(b, h, n)
    flags = "transposed [1, 1, 1, 1]"
    forward = f"""func.func @forward(%q: {q}, %k: {q}, %v: {v}) -> ({v}, {lse}) {{
  %o, %lse = graph.attention %q, %k, %v scale {scale!r} {flags} : ({q}, {q}, {v}) -> ({v}, {lse})
  func.return %o, %lse : {v}, {lse}
}}"""
    backward = f"""func.func @forward(%q: {q}, %k: {q}, %v: {v}, %o: {v}, %lse: {lse}, %do: {v}) -> ({q}, {q}, {v}) {{
  %dq, %dk, %dv = graph.attention_backward %q, %k, %v, %o, %lse, %do scale {scale!r} {flags} : ({q}, {q}, {v}, {v}, {lse}, {v}) -> ({q}, {q}, {v})
  func.return %dq, %dk, %dv : {q}, {q}, {v}
}}"""
    return forward, backward


def compiled(text: str, out: Path) -> runtime.Executable:
    module = teeny_ir.parse_module(text)
    teeny_ir.PassManager.parse(
        f"teeny-inference{{profile=interpreter}},emit-triton{{out-dir={out}}}"
    ).run(module)
    return runtime.load(out)


def best(repeat: int, run: Callable[[], object]) -> float:
    """The best wall time of ``repeat`` calls of ``run``."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def launches(
    repeat: int, executable: runtime.Executable, inputs: list[np.ndarray]
) -> tuple[float, list[np.ndarray]]:
    """The best time of the plan's launches alone (the worker's start, importing
    triton and the kernels, excluded), and the outputs."""
    times, outputs = [], []
    for _ in range(repeat):
        timings: dict[str, float] = {}
        outputs = executable.run(inputs, {}, timings=timings)
        times.append(timings["worker: launches"])
    return min(times), outputs


def torch_attention(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, do: np.ndarray, scale: float, repeat: int
) -> tuple[float, float, int]:
    """PyTorch eager (float32, this CPU): forward time, backward time, saved bytes."""
    import torch

    leaves = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    grad = torch.tensor(do)
    inputs = {t.untyped_storage().data_ptr() for t in leaves}

    def forward() -> torch.Tensor:
        tq, tk, tv = leaves
        attn = ((tq * scale).transpose(-2, -1) @ tk).softmax(dim=-1)
        return tv @ attn.transpose(-2, -1)

    saved: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in inputs:
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        forward()
    forward().backward(grad)  # warm up
    forward_time = best(repeat, lambda: forward().detach())
    backward_times = []
    for _ in range(repeat):
        out = forward()
        start = time.perf_counter()
        out.backward(grad)
        backward_times.append(time.perf_counter() - start)
    return forward_time, min(backward_times), sum(saved.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", action="append", help="B,heads,N,Dk,Dv")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(
        f"{'shape B,h,N,Dk,Dv':>20} | {'teeny fwd':>10} {'torch fwd':>10} | "
        f"{'teeny bwd':>10} {'torch bwd':>10} | {'teeny saved':>12} {'torch saved':>12}"
    )
    for text in args.shape or DEFAULT_SHAPES:
        b, h, n, dk, dv = (int(x) for x in text.split(","))
        scale = dk**-0.5
        q = rng.standard_normal((b, h, dk, n)).astype(np.float32)
        k = rng.standard_normal((b, h, dk, n)).astype(np.float32)
        v = rng.standard_normal((b, h, dv, n)).astype(np.float32)
        do = rng.standard_normal((b, h, dv, n)).astype(np.float32)
        forward_text, backward_text = modules(b, h, n, dk, dv, scale)
        with tempfile.TemporaryDirectory() as scratch:
            fwd = compiled(forward_text, Path(scratch) / "forward")
            bwd = compiled(backward_text, Path(scratch) / "backward")
            forward_time, (o, lse) = launches(args.repeat, fwd, [q, k, v])
            assert_close(
                [o, lse],
                reference.run(teeny_ir.parse_module(forward_text), {}, [q, k, v]),
                REDUCTION_TOL,
            )
            grads_in = [q, k, v, o, lse, do]
            backward_time, grads = launches(args.repeat, bwd, grads_in)
            want = reference.run(teeny_ir.parse_module(backward_text), {}, grads_in)
            assert_close(grads, want, REDUCTION_TOL)
        ours_saved = 4 * (o.size + lse.size)  # q, k, v are the inputs: excluded on both sides
        torch_fwd, torch_bwd, torch_saved = torch_attention(q, k, v, do, scale, args.repeat)
        print(
            f"{text:>20} | {forward_time * 1e3:8.1f}ms {torch_fwd * 1e3:8.2f}ms | "
            f"{backward_time * 1e3:8.1f}ms {torch_bwd * 1e3:8.2f}ms | "
            f"{ours_saved:12,d} {torch_saved:12,d}"
        )
    print(
        "teeny: the launch in Triton's CPU interpreter (its worker's start excluded); torch: eager "
        "CPU float32. "
        "Saved bytes exclude q, k, v on both sides."
    )


if __name__ == "__main__":
    main()
