"""Train the bundled LeNet on scikit-learn's digits, compiled, in Triton's interpreter.

The data: scikit-learn's 8x8 digits scaled by ``x / 16``, upsampled nearest x3 to
24x24 and zero-padded by 2 to 28x28 (LeNet's MNIST input); the train part of
``train_test_split(images, target, test_size=0.2, random_state=0,
stratify=target)`` trains, the test part is scored.

The model: ``examples/lenet/lenet.mlir`` with a cross-entropy loss against a
``targets`` input (`teeny_ir.frontend.losses.add_cross_entropy_loss`), compiled
with ``teeny-training{optimizer=adamw lr=... weight-decay=0.01
profile=interpreter}`` and ``emit-triton``, started from the bundled
``lenet.safetensors`` (PyTorch's default initialisation) and trained by
``teeny_ir.runtime.load(DIR).trainer(weights)`` on the interpreter backend:
one worker process for every step, mini-batches of 32 in a fixed-seed
shuffle: by default AdamW at 6e-3 for 6 epochs, then 6e-4 for 1 (308 steps;
PyTorch's float32 run of the same recipe reaches 0.972 to 0.983 over five
shuffle seeds). The learning rate steps down by 10x for the last ``--decay-epochs``
epochs: a second plan compiled with the lower rate continues from the first
trainer's state dict (parameters and AdamW state). A progress bar shows the loss; the loss curve goes to
``DIR/loss.png``, the checkpoint (the state dict, PyTorch names) to
``DIR/lenet_digits.safetensors``. The test split is then scored by the
inference plan (``teeny-inference{profile=interpreter}``) run with the trained
weights, and the last line printed is ``test accuracy: X``.

``--nproc N`` trains data-parallel on N processes (ranks) on this machine:
the plans are compiled with ``world=N`` (every gradient averaged over the
ranks), N processes are spawned (``torch.multiprocessing``, a gloo process
group on 127.0.0.1 at a free port), and each trains on its N-th of every
mini-batch of 32 (the same fixed-seed shuffle on every rank), so the steps
are the same as one process's up to rounding: the same accuracy bar. Rank 0
shows the progress, writes the checkpoint and the loss curve; the scoring
runs in the parent.

Needs the ``examples`` extra (scikit-learn, matplotlib):
``.venv/bin/pip install -e '.[examples]'``.

Usage: python examples/lenet/train_digits.py --out DIR [--epochs N] [--decay-epochs N]
    [--lr LR] [--seed S] [--nproc N]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import teeny_ir
from teeny_ir import runtime
from teeny_ir.driver import opt
from teeny_ir.frontend.losses import add_cross_entropy_loss

HERE = Path(__file__).resolve().parent
MODEL = HERE / "lenet.mlir"
WEIGHTS = HERE / "lenet.safetensors"
BATCH = 32
CHECKPOINT = "lenet_digits.safetensors"


def digits() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The contract's data: (train images, train targets, test images, test targets),
    images [N, 1, 28, 28] float32, targets int64."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    data = load_digits()
    images = data.images.astype(np.float32) / 16.0
    images = images.repeat(3, axis=1).repeat(3, axis=2)  # nearest x3: 24x24
    images = np.pad(images, ((0, 0), (2, 2), (2, 2)))[:, None]  # zero padding 2: 28x28
    x_train, x_test, y_train, y_test = train_test_split(
        images, data.target, test_size=0.2, random_state=0, stratify=data.target
    )
    return (
        np.ascontiguousarray(x_train, np.float32),
        y_train.astype(np.int64),
        np.ascontiguousarray(x_test, np.float32),
        y_test.astype(np.int64),
    )


def compile_plan(text: str, pipeline: str, out: Path) -> None:
    """``teeny-opt`` on ``text`` with ``pipeline`` and ``emit-triton{out-dir=out}``."""
    stderr = io.StringIO()
    code = opt.run(
        ["-", "-p", f"{pipeline},emit-triton{{out-dir={out}}}", "-o", "/dev/null"],
        io.BytesIO(text.encode()),
        io.StringIO(),
        stderr,
    )
    if code != 0:
        raise SystemExit(f"compiling failed:\n{stderr.getvalue()}")


def training_text(lr: float, world: int = 1) -> tuple[str, str]:
    module = teeny_ir.parse_module(MODEL.read_text(), filename=str(MODEL))
    add_cross_entropy_loss(module)
    pipeline = (
        f"teeny-training{{optimizer=adamw lr={lr!r} weight-decay=0.01 world={world} "
        "profile=interpreter}"
    )
    return teeny_ir.print_module(module), pipeline


def train(rank: int, world: int, args: argparse.Namespace, plans: Path) -> list[float]:
    """The training loop of one rank (of ``world``): the fixed-seed shuffle,
    this rank's part of every mini-batch; rank 0 shows the progress and writes
    the checkpoint. Returns the losses of this rank's parts."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    x_train, y_train, _, _ = digits()
    epochs = args.epochs + args.decay_epochs
    rng = np.random.default_rng(args.seed)
    steps_per_epoch = len(x_train) // BATCH
    part = BATCH // world
    losses: list[float] = []
    state: dict[str, np.ndarray] = runtime.read_weights(WEIGHTS)
    columns = (
        TextColumn("epoch {task.fields[epoch]}/" + str(epochs)),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} steps  loss {task.fields[loss]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, disable=rank != 0) as progress:
        task = progress.add_task("train", total=epochs * steps_per_epoch, epoch=1, loss="-")
        for plan, count in (("train", args.epochs), ("decay", args.decay_epochs)):
            if not count:
                continue
            with runtime.load(plans / plan).trainer(state) as trainer:
                for _ in range(count):
                    order = rng.permutation(len(x_train))
                    for step in range(steps_per_epoch):
                        chosen = order[step * BATCH : (step + 1) * BATCH]
                        mine = chosen[rank * part : (rank + 1) * part]
                        loss = float(trainer.step([x_train[mine], y_train[mine]])[0])
                        losses.append(loss)
                        epoch = len(losses) // steps_per_epoch + 1
                        progress.update(
                            task, advance=1, epoch=min(epoch, epochs), loss=f"{loss:.4f}"
                        )
                if rank == 0:
                    trainer.save(args.out / CHECKPOINT)
                state = trainer.state_dict()
    return losses


def _rank(rank: int, world: int, port: int, args: argparse.Namespace, plans: str) -> None:
    """One spawned rank: join the gloo group, train, and (rank 0) leave the
    losses for the parent in ``plans/losses.json``."""
    import datetime

    import torch.distributed as dist

    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=datetime.timedelta(seconds=600),
    )
    try:
        losses = train(rank, world, args, Path(plans))
        if rank == 0:
            (Path(plans) / "losses.json").write_text(json.dumps(losses))
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--epochs", type=int, default=6, help="epochs at the full rate")
    parser.add_argument("--decay-epochs", type=int, default=1, help="then at a tenth of it")
    parser.add_argument("--lr", type=float, default=6e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--nproc", type=int, default=1, help="data-parallel processes (a divisor of 32)"
    )
    args = parser.parse_args(argv)
    if args.nproc < 1 or BATCH % args.nproc:
        parser.error(f"--nproc must divide the batch of {BATCH}, got {args.nproc}")
    args.out = args.out.absolute()
    args.out.mkdir(parents=True, exist_ok=True)
    x_train, _, x_test, y_test = digits()
    with tempfile.TemporaryDirectory() as tmp:
        plans = Path(tmp)
        start = time.perf_counter()
        for name, lr in (("train", args.lr), ("decay", args.lr / 10)):
            text, pipeline = training_text(lr, args.nproc)
            compile_plan(text, pipeline, plans / name)
        compile_plan(MODEL.read_text(), "teeny-inference{profile=interpreter}", plans / "infer")
        print(f"compiled in {time.perf_counter() - start:.1f} s", file=sys.stderr)
        if args.nproc == 1:
            losses = train(0, 1, args, plans)
        else:
            import torch.multiprocessing

            os.environ.setdefault("OMP_NUM_THREADS", "1")  # as torchrun: the ranks share the cores
            spawned: tuple[Any, ...] = (args.nproc, _free_port(), args, str(plans))
            torch.multiprocessing.spawn(_rank, spawned, nprocs=args.nproc, join=True)
            losses = json.loads((plans / "losses.json").read_text())
        state = runtime.read_weights(args.out / CHECKPOINT)
        _plot(losses, len(x_train) // BATCH, args.out / "loss.png")
        inference = runtime.load(plans / "infer")
        model = {spec.name: state[spec.name] for spec in inference.plan.weights}
        logits = inference.run([x_test], model)[0]
    accuracy = float((logits.argmax(axis=1) == y_test).mean())
    ranks = f" on {args.nproc} processes" if args.nproc > 1 else ""
    print(f"trained {len(losses)} steps{ranks} in {time.perf_counter() - start:.0f} s; final "
          f"loss {losses[-1]:.4f}; checkpoint {args.out / CHECKPOINT}")
    print(f"test accuracy: {accuracy:.4f}")
    return 0


def _plot(losses: list[float], steps_per_epoch: int, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 3.5))
    axes.plot(np.arange(1, len(losses) + 1) / steps_per_epoch, losses, linewidth=1)
    axes.set_xlabel("epoch")
    axes.set_ylabel("cross-entropy loss")
    axes.set_yscale("log")
    axes.set_title("LeNet on scikit-learn digits, teeny_ir in Triton's interpreter")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


if __name__ == "__main__":
    raise SystemExit(main())
