"""The activation bytes a training step keeps for its backward, per image, next
to PyTorch's.

For YOLOv8n at each ``--size`` (written by ``examples/yolov8n/make_yolov8n.py``
into a temporary folder) and LeNet: insert-backward's ``saved-bytes-per-sample``
statistic after ``train-mode,split-bias,fuse-epilogues{mode=training},
select-conv-algorithm`` (what the backward reads of the forward: saved inputs
and outputs of the differentiated ops, each value once). With ultralytics
importable, also PyTorch's figure for the real YOLOv8n in train mode at batch
1: the bytes of the distinct tensor storages autograd saves for backward
(``torch.autograd.graph.saved_tensors_hooks``), parameters excluded.

Usage: python bench/training_memory.py [--size 64 --size 640]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import teeny_ir
from passes.insert_backward import differentiate
from teeny_ir.frontend.losses import add_cross_entropy_loss, add_weighted_sum_loss

ROOT = Path(__file__).resolve().parent.parent
BEFORE_BACKWARD = "train-mode,split-bias,fuse-epilogues{mode=training},select-conv-algorithm"


def saved_per_image(text: str, add_loss: object) -> int:
    module = teeny_ir.parse_module(text)
    add_loss(module)  # type: ignore[operator]
    teeny_ir.PassManager.parse(BEFORE_BACKWARD).run(module)
    errors, saved = differentiate(next(iter(module.ops)))  # type: ignore[arg-type]
    assert not errors, errors
    return saved


def torch_saved_per_image(size: int) -> int | None:
    """PyTorch's saved-for-backward bytes of ultralytics' YOLOv8n at batch 1."""
    try:
        import torch
        from ultralytics.nn.tasks import DetectionModel
    except ImportError:
        return None
    model = DetectionModel("yolov8n.yaml", verbose=False)
    model.train()
    parameters = {p.untyped_storage().data_ptr() for p in model.parameters()}
    storages: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in parameters:
            storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        outputs = model(torch.zeros(1, 3, size, size))
    del outputs
    return sum(storages.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, action="append", help="YOLOv8n input sizes")
    args = parser.parse_args()
    sizes = args.size or [64, 640]
    mib = 2**20
    lenet = saved_per_image(
        (ROOT / "examples/lenet/lenet.mlir").read_text(), add_cross_entropy_loss
    )
    print(f"LeNet 28x28: {lenet / 1024:.1f} KiB per image")
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            out = Path(tmp) / str(size)
            subprocess.run(
                [
                    sys.executable,
                    str(ROOT / "examples/yolov8n/make_yolov8n.py"),
                    "--size",
                    str(size),
                    "--out",
                    str(out),
                ],
                check=True,
            )
            ours = saved_per_image((out / "yolov8n.mlir").read_text(), add_weighted_sum_loss)
            theirs = torch_saved_per_image(size)
            line = f"YOLOv8n {size}x{size}: {ours / mib:.2f} MiB per image"
            if theirs is not None:
                line += f"; PyTorch (ultralytics, train mode) {theirs / mib:.2f} MiB"
                line += f" ({ours / theirs:.2f}x)"
            print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
