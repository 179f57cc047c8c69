"""One SGD step of ultralytics' YOLO11n through teeny_ir against PyTorch in float64.

Builds ``DetectionModel("yolo11n.yaml")`` offline (random weights, seed
``--seed``, BN statistics and affine parameters randomised so that no layer is
at its default), exports it in eval mode with ``torch.export`` (the Detect head
in its export form, 64x64, batch 2), saves the ``.pt2`` and reads it back with
``teeny-import``; then appends ``add_weighted_sum_loss`` (``sum(y * r)`` for a
random ``r``), compiles ``teeny-training{optimizer=sgd lr=0.01 momentum=0.9
weight-decay=0.1 profile=interpreter}`` with ``emit-triton`` and runs one step
in Triton's interpreter (``--reference``: in the reference interpreter
instead, no kernels). PyTorch does the same step in float64 with every BN layer
in training mode and the Detect head as exported, SGD decaying the conv
weights only (teeny_ir's default) and skipping parameters without
``requires_grad`` (the DFL's fixed projection), as teeny_ir does.

Prints the plan's attention and softmax launch counts, the step time, and the
largest difference over every parameter, momentum buffer and running
statistic (the bar: 1e-3), naming the worst.

Needs ultralytics beside teeny_ir (``pip install ultralytics==8.4.190``; kept
out of the test suite). Usage: python bench/yolo11n_training.py [--reference]
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

LR, MOMENTUM, WEIGHT_DECAY = 0.01, 0.9, 0.1


def build(seed: int) -> Any:
    """YOLO11n with randomised BN layers, the Detect head in its export form."""
    os.environ.setdefault("YOLO_OFFLINE", "1")
    import torch
    from ultralytics.nn.tasks import DetectionModel

    torch.manual_seed(seed)
    model = DetectionModel("yolo11n.yaml", verbose=False)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.weight.uniform_(0.5, 1.5)
                module.bias.normal_(0.0, 0.1)
                module.running_mean.normal_(0.0, 0.1)
                module.running_var.uniform_(0.5, 1.5)
            if hasattr(module, "export"):
                module.export = True
            if hasattr(module, "format"):
                module.format = "onnx"
    return model.eval()


def _array(tensor: Any) -> np.ndarray:
    """A float64 array of ``tensor``."""
    return tensor.detach().numpy().astype(np.float64)


def torch_step(
    model: Any, x: np.ndarray, r: np.ndarray, double: bool = True
) -> dict[str, np.ndarray]:
    """One SGD step (float64, or float32 for the yardstick): BN layers in
    train(), the Detect head as exported."""
    import torch

    dtype = torch.float64 if double else torch.float32
    model = model.to(dtype).train()
    detect = model.model[-1]
    detect.training = False  # its decode as exported; its own BN layers stay in train()
    decayed = [p for p in model.parameters() if p.requires_grad and p.ndim == 4]
    rest = [p for p in model.parameters() if p.requires_grad and p.ndim != 4]
    sgd = torch.optim.SGD(
        [{"params": decayed, "weight_decay": WEIGHT_DECAY}, {"params": rest, "weight_decay": 0.0}],
        lr=LR,
        momentum=MOMENTUM,
    )
    y = model(torch.tensor(x, dtype=dtype))
    y = y[0] if isinstance(y, tuple | list) else y
    (y * torch.tensor(r, dtype=dtype)).sum().backward()
    sgd.step()
    state = {k: _array(v) for k, v in model.state_dict().items() if "num_batches" not in k}
    for name, p in model.named_parameters():
        if p in sgd.state:
            state[f"{name}.momentum_buffer"] = _array(sgd.state[p]["momentum_buffer"])
    return state


def teeny_step(
    mlir: Path, weights_path: Path, x: np.ndarray, r: np.ndarray, reference_only: bool, out: Path
) -> tuple[dict[str, np.ndarray], dict[str, int], float]:
    from safetensors.numpy import load_file

    import teeny_ir
    from teeny_ir import reference, runtime
    from teeny_ir.frontend.losses import add_weighted_sum_loss

    module = teeny_ir.parse_module(mlir.read_text(), str(mlir))
    add_weighted_sum_loss(module)
    weights = load_file(str(weights_path))
    options = (
        f"optimizer=sgd lr={LR} momentum={MOMENTUM} weight-decay={WEIGHT_DECAY} profile=interpreter"
    )
    if reference_only:
        teeny_ir.PassManager.parse(
            "train-mode,split-bias,fuse-attention,fuse-epilogues{mode=training},"
            f"insert-backward,apply-optimizer{{kind=sgd lr={LR} momentum={MOMENTUM} "
            f"weight-decay={WEIGHT_DECAY}}}"
        ).run(module)
        start = time.perf_counter()
        outputs = reference.run(module, weights, [x, r])
        seconds = time.perf_counter() - start
        function = next(op for op in module.ops if getattr(op, "sym_name", None) is not None)
        attrs = function.res_attrs.data if function.res_attrs is not None else []
        state = dict(weights)
        for value, attr in zip(outputs, attrs, strict=False):
            for key in ("teeny.updated", "teeny.running"):
                if key in attr.data:
                    state[attr.data[key].data] = np.asarray(value)
        return state, {}, seconds
    teeny_ir.PassManager.parse(f"teeny-training{{{options}}},emit-triton{{out-dir={out}}}").run(
        module
    )
    families = collections.Counter(
        op.properties["family"].data for op in module.walk() if op.name == "kernel.launch"
    )
    with runtime.load(out).trainer(weights) as trainer:
        start = time.perf_counter()
        trainer.step([x, r])
        seconds = time.perf_counter() - start
        state = trainer.state_dict()
    return state, dict(families), seconds


def _worst(
    got: dict[str, Any], want: dict[str, np.ndarray], relative: bool = False
) -> tuple[float, str]:
    """The largest difference over the tensors both hold (with ``relative``,
    over each tensor's largest magnitude), and its name."""
    worst, worst_key = 0.0, ""
    for key, value in want.items():
        if key in got:
            error = float(np.abs(np.asarray(got[key], np.float64) - value).max())
            if relative:
                error /= max(float(np.abs(value).max()), 1e-6)
            if error > worst:
                worst, worst_key = error, key
    return worst, worst_key


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", action="store_true", help="the reference interpreter")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    import torch

    model = build(args.seed)
    twin = build(args.seed)  # PyTorch's step runs on a copy the export never touched
    rng = np.random.default_rng(args.seed)
    x = rng.random((2, 3, 64, 64)).astype(np.float32)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        exported = torch.export.export(model, (torch.tensor(x),))
        torch.export.save(exported, root / "yolo11n.pt2")
        teeny_import = Path(sys.executable).with_name("teeny-import")
        subprocess.run(
            [str(teeny_import), str(root / "yolo11n.pt2"), "-o", str(root / "yolo11n.mlir")],
            check=True,
        )
        with torch.no_grad():
            y = model(torch.tensor(x))
        y = y[0] if isinstance(y, tuple | list) else y
        r = rng.standard_normal(tuple(y.shape)).astype(np.float32)
        got, families, seconds = teeny_step(
            root / "yolo11n.mlir", root / "yolo11n.safetensors", x, r, args.reference, root / "plan"
        )
    want = torch_step(twin, x, r)
    single = torch_step(build(args.seed), x, r, double=False)
    missing = sorted(set(want) - set(got))
    if missing:
        print(f"missing from teeny_ir's state: {missing[:5]} ({len(missing)})")
    worst, worst_key = _worst(got, want)
    yardstick, yard_key = _worst(single, want)
    if families:
        print(
            f"plan: {sum(families.values())} launches, attention {families.get('attention', 0)}, "
            f"attention_backward {families.get('attention_backward', 0)}, softmax "
            f"{families.get('softmax', 0)}"
        )
    print(f"step: {seconds:.1f} s ({'reference' if args.reference else 'interpreter'})")
    print(
        f"max |teeny - torch| over {len(want)} tensors: {worst:.3g} at {worst_key} "
        f"({'ok' if worst <= 1e-3 and not missing else 'OVER THE BAR'})"
    )
    print(
        f"yardstick, PyTorch float32's own step: max |torch32 - torch64| {yardstick:.3g} "
        f"at {yard_key}"
    )
    for name, state in (("teeny", got), ("torch32", single)):
        error, key = _worst(state, want, relative=True)
        print(f"relative: max |{name} - torch64| / max |torch64| per tensor {error:.3g} at {key}")
    return 0 if worst <= 1e-3 and not missing else 1


if __name__ == "__main__":
    sys.exit(main())
