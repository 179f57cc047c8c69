"""The compiled YOLOv8n against the real ultralytics model, with its weights.

Builds ultralytics' ``DetectionModel("yolov8n.yaml")`` (offline), gives its
BatchNorms non-trivial statistics, takes its state dict as the weights, and
compiles ``examples/yolov8n/yolov8n.mlir`` with ``teeny-inference`` and
``emit-triton{archs=...}``. It then runs the plan in Triton's interpreter at
each batch and compares the outputs with the raw head outputs of the model in
eval mode (per level ``concat(box branch, class branch)``, before DFL and box
decode): ``max|got - ref| <= 1e-4 * max(1, max|ref|)``.

Needs ultralytics, which the project does not depend on (it pulls opencv, pandas
and matplotlib): run it from an environment that has both, e.g.
``python3 -m venv /tmp/ultra && /tmp/ultra/bin/pip install ultralytics==8.4.190
torch==2.13.0 -e '.[interp]'``, then ``/tmp/ultra/bin/python bench/ultralytics_yolov8n.py``.

Usage: python bench/ultralytics_yolov8n.py [--batches 1 3] [--archs 80,90] [--seed N]
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time
from pathlib import Path

import numpy as np

from teeny_ir import runtime
from teeny_ir.driver import opt
from teeny_ir.testing import REDUCTION_TOL, compare

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "examples" / "yolov8n" / "yolov8n.mlir"


def ultralytics_model(seed: int) -> object:
    import torch
    from ultralytics.nn.tasks import DetectionModel

    torch.manual_seed(seed)
    model = DetectionModel("yolov8n.yaml", verbose=False)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.weight.uniform_(0.5, 1.5)
                module.bias.normal_(0.0, 0.1)
                module.running_mean.normal_(0.0, 0.1)
                module.running_var.uniform_(0.5, 1.5)
    return model.eval()


def raw_outputs(model: object, x: np.ndarray) -> list[np.ndarray]:
    """Per level, ``concat(cv2[i](x_i), cv3[i](x_i))``: the head's raw outputs,
    caught by forward hooks (the model's own return value is decoded)."""
    import torch

    detect = model.model[-1]  # type: ignore[attr-defined]
    caught: dict[tuple[str, int], np.ndarray] = {}
    hooks = [
        branch[i].register_forward_hook(
            lambda _m, _in, out, key=(name, i): caught.__setitem__(key, out.numpy())
        )
        for name, branch in (("box", detect.cv2), ("cls", detect.cv3))
        for i in range(len(branch))
    ]
    try:
        with torch.no_grad():
            model(torch.from_numpy(x))  # type: ignore[operator]
    finally:
        for hook in hooks:
            hook.remove()
    return [
        np.concatenate([caught["box", i], caught["cls", i]], axis=1)
        for i in range(len(detect.cv2))
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--archs", default="80,90")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    model = ultralytics_model(args.seed)
    weights = {
        name: value.detach().numpy().astype(np.float32)
        for name, value in model.state_dict().items()  # type: ignore[attr-defined]
        if not name.endswith("num_batches_tracked")
    }
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "yolov8n"
        archs = f" archs={args.archs}" if args.archs else ""
        start = time.perf_counter()
        code = opt.run(
            [str(MODEL), "-p", f"teeny-inference,emit-triton{{out-dir={out}{archs}}}"],
            io.BytesIO(),
            io.StringIO(),
            err := io.StringIO(),
        )
        if code != 0:
            raise SystemExit(err.getvalue())
        sources = sorted(p.name for p in (out / "kernels").glob("*.py"))
        cubins = {p.name for p in (out / "kernels").glob("*.cubin")}
        missing = [
            f"{s} sm_{a}"
            for s in sources
            for a in args.archs.split(",")
            if args.archs and s.removesuffix(".py") + f".sm{a}.cubin" not in cubins
        ]
        print(
            f"compiled in {time.perf_counter() - start:.1f} s: {len(sources)} kernel sources, "
            f"{len(cubins)} cubins; missing binaries: {missing or 'none'}"
        )
        failed |= bool(missing)
        executable = runtime.load(out)
        rng = np.random.default_rng(args.seed)
        for batch in args.batches:
            x = rng.standard_normal((batch, 3, 64, 64)).astype(np.float32)
            got = executable.run([x], weights)
            result = compare(got, raw_outputs(model, x), REDUCTION_TOL)
            failed |= not result.ok
            verdict = "ok" if result.ok else f"FAIL ({result.reason})"
            print(
                f"batch {batch}: max|got-ref| = {result.max_error:.3g} "
                f"(bound {result.bound:.3g}) against ultralytics {verdict}"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
