"""Data-parallel LeNet: the wall time of ``teeny-train`` on N=2 gloo ranks
(``torchrun --nproc-per-node 2``, each rank on half of every batch) against
N=1 (one process on the whole batch), on the same batches, and how far the
two checkpoints are apart.

LeNet with cross-entropy, SGD with momentum and weight decay, compiled with
``teeny-training{... world=N profile=interpreter}``; ``--steps`` (20) steps on
random batches of ``--batch`` (32). Each run is the whole command: its
processes' start (Python, torch, the interpreter worker and Triton's import)
and the steps; the per-step figure is the difference of two runs of the same
command (``--steps`` and ``--steps / 4`` steps), which takes the start out.
Triton's interpreter runs a worker's launches on one core, so on a 2-core
machine the two ranks' workers use both cores where one process uses one: the
speed-up is the second core's, less the collectives and the second process.
(Measured on 2 shared cores: N=2 took 0.86 x N=1's wall time for 20 steps,
0.66 x per step, the checkpoints within 3e-8.)

Usage: python bench/distributed_lenet.py [--steps 20] [--batch 32]
"""

from __future__ import annotations

import argparse
import io
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

import teeny_ir
from teeny_ir.driver import opt
from teeny_ir.frontend.losses import add_cross_entropy_loss

ROOT = Path(__file__).resolve().parent.parent
LENET = ROOT / "examples" / "lenet"
OPTIONS = "optimizer=sgd lr=0.05 momentum=0.9 weight-decay=5e-4 profile=interpreter"


def compile_plan(world: int, out: Path) -> None:
    module = teeny_ir.parse_module((LENET / "lenet.mlir").read_text(), filename="lenet.mlir")
    add_cross_entropy_loss(module)
    stderr = io.StringIO()
    pipeline = f"teeny-training{{{OPTIONS} world={world}}},emit-triton{{out-dir={out}}}"
    code = opt.run(
        ["-", "-p", pipeline, "-o", "/dev/null"],
        io.BytesIO(teeny_ir.print_module(module).encode()),
        io.StringIO(),
        stderr,
    )
    if code:
        raise SystemExit(stderr.getvalue())


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def train(world: int, plan: Path, batches: Path, steps: int, out: Path) -> float:
    """The wall time of one teeny-train command (under torchrun for world > 1)."""
    bin_dir = Path(sys.executable).parent
    command = [str(bin_dir / "teeny-train"), str(plan), "--weights", str(LENET / "lenet.safetensors")]
    command += ["--batches", str(batches), "--steps", str(steps), "-o", str(out), "--quiet"]
    if world > 1:
        launcher = [str(bin_dir / "torchrun"), f"--nproc-per-node={world}"]
        command = [*launcher, "--master-addr=127.0.0.1", f"--master-port={free_port()}", *command]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"N={world} failed:\n{done.stderr[-2000:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    short = max(args.steps // 4, 1)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rng = np.random.default_rng(0)
        x = rng.standard_normal((args.steps, args.batch, 1, 28, 28)).astype(np.float32)
        y = rng.integers(0, 10, (args.steps, args.batch)).astype(np.int64)
        np.savez(root / "batches.npz", in0=x, in1=y)
        walls: dict[int, tuple[float, float]] = {}
        for world in (1, 2):
            compile_plan(world, root / f"plan{world}")
            whole = train(world, root / f"plan{world}", root / "batches.npz", args.steps,
                          root / f"ckpt{world}.safetensors")  # fmt: skip
            brief = train(world, root / f"plan{world}", root / "batches.npz", short,
                          root / f"short{world}.safetensors")  # fmt: skip
            walls[world] = (whole, (whole - brief) / (args.steps - short))
            print(
                f"N={world}: {args.steps} steps of batch {args.batch} in {whole:.1f} s wall "
                f"({walls[world][1]:.2f} s per step, the start taken out)",
                flush=True,
            )
        one, two = (load_file(root / f"ckpt{w}.safetensors") for w in (1, 2))
        worst = max(
            float(np.abs(two[k].astype(np.float64) - one[k]).max()) / max(1.0, float(np.abs(one[k]).max()))
            for k in one
        )  # fmt: skip
    print(
        f"N=2 against N=1: {walls[2][0] / walls[1][0]:.2f} x the wall time, "
        f"{walls[2][1] / walls[1][1]:.2f} x the time per step; checkpoints within {worst:.2g} "
        f"(relative, max over the state, momentum buffers included; bar 1e-5: "
        f"{'ok' if worst <= 1e-5 else 'FAILED'}) on {os.cpu_count()} cores"
    )
    return 0 if worst <= 1e-5 else 1


if __name__ == "__main__":
    raise SystemExit(main())
