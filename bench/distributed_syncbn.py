"""Sync-BN on YOLOv8n: one compiled SGD step on 2 gloo ranks x batch 2 at
64x64 with ``sync-bn=true`` against one process on the concatenated batch 4.

``torch.nn.SyncBatchNorm`` runs on CUDA only, so the bar is what it computes:
batch statistics over the whole batch of 4, which is what an ordinary training
batch norm computes in one process on the 4 images. The model is
``examples/yolov8n/yolov8n.mlir`` made a training graph as
``bench/training_step.py`` does (extra inputs ``r3, r4, r5``, loss
``sum_i reduce_sum(P_i * r_i)``), SGD with momentum 0.9 and weight decay 0.1:

- 2 ranks: ``teeny-training{... world=2 sync-bn=true profile=interpreter}``,
  each rank (a process of this script, ``--rank``) stepping on its 2 images;
  the ranks' gradients are averaged (DDP), so the step is that of the loss
  ``sum(P * r) / 2`` over the 4 images;
- 1 process: ``teeny-training{... profile=interpreter}`` on the 4 images with
  ``r / 2``, the same loss.

It prints the largest difference over the state (parameters, momentum buffers,
running statistics), each tensor's ``max|a - b| / max(1, max|b|)``, against
1e-3, and the wall times. With ultralytics importable it also steps PyTorch's
``DetectionModel("yolov8n.yaml")`` in train mode on the 4 images (its
``BatchNorm2d`` over the batch: SyncBatchNorm's statistics) from the same
weights and compares with the 2 ranks; without it, it says so.

Usage: python bench/distributed_syncbn.py [--seed 7]
"""

from __future__ import annotations

import argparse
import datetime
import io
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import load_file, save_file

import teeny_ir
from teeny_ir import runtime
from teeny_ir.driver import opt
from teeny_ir.frontend.losses import add_weighted_sum_loss

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "examples" / "yolov8n" / "yolov8n.mlir"
SGD = "optimizer=sgd lr=0.01 momentum=0.9 weight-decay=0.1 profile=interpreter"
SHAPES = [(3, 64, 64), (144, 8, 8), (144, 4, 4), (144, 2, 2)]
WORLD = 2
PER_RANK = 2
TOL = 1e-3


def compile_plan(options: str, out: Path) -> float:
    module = teeny_ir.parse_module(MODEL.read_text(), filename=str(MODEL))
    add_weighted_sum_loss(module)
    stderr = io.StringIO()
    start = time.perf_counter()
    code = opt.run(
        ["-", "-p", f"teeny-training{{{options}}},emit-triton{{out-dir={out}}}", "-o", "/dev/null"],
        io.BytesIO(teeny_ir.print_module(module).encode()),
        io.StringIO(),
        stderr,
    )
    if code:
        raise SystemExit(f"compiling failed:\n{stderr.getvalue()[-3000:]}")
    return time.perf_counter() - start


def rank_main(rank: int, port: int, work: Path) -> int:
    """One rank: join the gloo group, one step on images [2 rank, 2 rank + 2)."""
    import torch.distributed as dist

    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=WORLD,
        timeout=datetime.timedelta(seconds=1800),
    )
    try:
        data = np.load(work / "inputs.npz")
        mine = slice(rank * PER_RANK, (rank + 1) * PER_RANK)
        inputs = [data[f"in{i}"][mine] for i in range(len(SHAPES))]
        weights = load_file(work / "weights.safetensors")
        with runtime.load(work / "two").trainer(weights, timeout=1800) as trainer:
            trainer.step(inputs)
            if rank == 0:
                save_file(trainer.state_dict(), work / "two.safetensors")
    finally:
        dist.destroy_process_group()
    return 0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def worst(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> tuple[float, str]:
    return max(
        (
            float(np.abs(np.asarray(got[k], np.float64) - want[k]).max())
            / max(1.0, float(np.abs(want[k]).max())),
            k,
        )
        for k in want
    )


def torch_step(seed: int, inputs: list[np.ndarray]) -> dict[str, np.ndarray] | None:
    """PyTorch's YOLOv8n (ultralytics, float64) in train mode, one SGD step on
    the 4 images with the loss ``sum(P * r) / 2``; None without ultralytics."""
    try:
        import torch
        from ultralytics.nn.tasks import DetectionModel
    except ImportError:
        return None
    model = _torch_model(seed)
    detect = model.model[-1]
    caught: dict[tuple[str, int], Any] = {}
    hooks = [
        branch[i].register_forward_hook(
            lambda _m, _in, out, key=(name, i): caught.__setitem__(key, out)
        )
        for name, branch in (("box", detect.cv2), ("cls", detect.cv3))
        for i in range(len(branch))
    ]
    model.train()
    model(torch.tensor(inputs[0], dtype=torch.float64))
    for hook in hooks:
        hook.remove()
    heads = [torch.cat([caught["box", i], caught["cls", i]], 1) for i in range(3)]
    terms = [
        (h * torch.tensor(r, dtype=torch.float64)).sum()
        for h, r in zip(heads, inputs[1:], strict=True)
    ]
    loss = torch.stack(terms).sum() / WORLD
    assert isinstance(model, DetectionModel)
    loss.backward()
    params = dict(model.named_parameters())
    decay = [p for p in params.values() if p.ndim == 4]
    no_decay = [p for p in params.values() if p.ndim != 4]
    sgd = torch.optim.SGD(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
        lr=0.01,
        momentum=0.9,
    )
    sgd.step()
    state = {k: v.numpy() for k, v in model.state_dict().items() if k.endswith(("mean", "var"))}
    for name, p in params.items():
        if p.grad is not None:
            state[name] = p.detach().numpy()
            state[f"{name}.momentum_buffer"] = sgd.state[p]["momentum_buffer"].numpy()
    return state


def _torch_model(seed: int) -> Any:
    import torch
    from ultralytics.nn.tasks import DetectionModel

    os.environ.setdefault("YOLO_OFFLINE", "1")
    torch.manual_seed(seed)
    model = DetectionModel("yolov8n.yaml", verbose=False).double()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.weight.uniform_(0.5, 1.5)
                module.bias.normal_(0.0, 0.1)
                module.running_mean.normal_(0.0, 0.1)
                module.running_var.uniform_(0.5, 1.5)
        for tensor in model.state_dict().values():
            if tensor.is_floating_point():
                tensor.copy_(tensor.float().double())
    return model


def weights_for(seed: int) -> tuple[dict[str, np.ndarray], str]:
    """ultralytics' randomly initialised weights (as `torch_step` uses them),
    or without it the bundled ones."""
    try:
        model = _torch_model(seed)
    except ImportError:
        return runtime.read_weights(ROOT / "examples" / "yolov8n" / "yolov8n.safetensors"), (
            "the bundled examples/yolov8n/yolov8n.safetensors"
        )
    state = {
        k: v.numpy().astype(np.float32)
        for k, v in model.state_dict().items()
        if not k.endswith("num_batches_tracked")
    }
    return state, f"ultralytics' DetectionModel, seed {seed}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rank is not None:
        return rank_main(args.rank, args.port, args.work)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        two = compile_plan(f"{SGD} world={WORLD} sync-bn=true", work / "two")
        one = compile_plan(SGD, work / "one")
        plan = runtime.load(work / "two").plan
        print(
            f"compiled: 2 ranks {two:.1f} s ({len(plan.launches)} launches, "
            f"{len(plan.collectives())} collectives), 1 process {one:.1f} s",
            flush=True,
        )
        rng = np.random.default_rng(args.seed)
        batch = WORLD * PER_RANK
        inputs = [rng.standard_normal((batch, *s)).astype(np.float32) for s in SHAPES]
        np.savez(work / "inputs.npz", **{f"in{i}": a for i, a in enumerate(inputs)})
        weights, origin = weights_for(args.seed)
        save_file(weights, work / "weights.safetensors")
        print(f"weights: {origin}", flush=True)

        start = time.perf_counter()
        port = free_port()
        command = [sys.executable, __file__, "--port", str(port), "--work", str(work)]
        ranks = [
            subprocess.Popen([*command, "--rank", str(r)], env=dict(os.environ, OMP_NUM_THREADS="1"))
            for r in range(WORLD)
        ]
        if any(rank.wait() for rank in ranks):
            raise SystemExit("a rank failed")
        ranks_time = time.perf_counter() - start

        start = time.perf_counter()
        halved = [inputs[0], *(r / WORLD for r in inputs[1:])]
        with runtime.load(work / "one").trainer(weights) as trainer:
            trainer.step(halved)
            reference = trainer.state_dict()
        one_time = time.perf_counter() - start
        got = load_file(work / "two.safetensors")
    error, name = worst(got, reference)
    verdict = "ok" if error <= TOL else "FAILED"
    print(
        f"sync-BN over 2 ranks x {PER_RANK} vs one process on {batch}: max error {error:.3g} "
        f"({name}) against {TOL:g}: {verdict}; wall {ranks_time:.0f} s (2 ranks) and "
        f"{one_time:.0f} s (1 process)"
    )
    torch_state = torch_step(args.seed, inputs)
    if torch_state is None:
        print(
            "ultralytics is not importable: the comparison with PyTorch's DetectionModel "
            "(BatchNorm2d over the 4 images, what SyncBatchNorm computes) is skipped "
            "(pip install ultralytics==8.4.190)"
        )
    else:
        torch_error, torch_name = worst(got, {k: v for k, v in torch_state.items() if k in got})
        torch_verdict = "ok" if torch_error <= TOL else "FAILED"
        error = max(error, torch_error)
        print(
            f"sync-BN over 2 ranks vs PyTorch on {batch}: max error {torch_error:.3g} "
            f"({torch_name}) against {TOL:g}: {torch_verdict}"
        )
    print(json.dumps({"max_error": error, "tol": TOL}))
    return 0 if error <= TOL else 1


if __name__ == "__main__":
    raise SystemExit(main())
