"""LeNet (examples/lenet) compiled with AOT for sm_80/sm_90 and run in Triton's
interpreter against a PyTorch LeNet with fresh PyTorch-initialised weights.

Usage: python bench/lenet_torch.py [--batches 1 3] [--seed N]
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time
from pathlib import Path

import torch
from torch import nn

from teeny_ir import runtime
from teeny_ir.driver import opt
from teeny_ir.testing import REDUCTION_TOL, compare

MODEL = Path(__file__).resolve().parent.parent / "examples" / "lenet" / "lenet.mlir"


class LeNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = nn.functional.avg_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    model = LeNet().eval()
    weights = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "lenet"
        start = time.perf_counter()
        pipeline = f"teeny-inference,emit-triton{{out-dir={out} archs=80,90}}"
        err = io.StringIO()
        if opt.run([str(MODEL), "-p", pipeline], io.BytesIO(), io.StringIO(), err) != 0:
            raise SystemExit(err.getvalue())
        executable = runtime.load(out)
        cubins = sum(len(k.compiled) for k in executable.plan.kernels)
        print(
            f"compiled with AOT in {time.perf_counter() - start:.1f} s: "
            f"{len(executable.plan.launches)} launches, {len(executable.plan.kernels)} "
            f"variants, {cubins} cubins"
        )
        for batch in args.batches:
            x = torch.randn(batch, 1, 28, 28)
            with torch.no_grad():
                want = [model(x).numpy()]
            got = executable.run([x.numpy()], weights)
            result = compare(got, want, REDUCTION_TOL)
            failed |= not result.ok
            print(
                f"batch {batch}: max|got-ref| = {result.max_error:.3g} (bound {result.bound:.3g}) "
                f"against PyTorch {'ok' if result.ok else 'FAIL ' + str(result.reason)}"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
