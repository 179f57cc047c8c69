"""One training step of YOLOv8n at the graph level against the real ultralytics model.

Builds ultralytics' ``DetectionModel("yolov8n.yaml")`` (offline) in float64 with
float32-representable weights (random BN statistics), turns
``examples/yolov8n/yolov8n.mlir`` into a training graph (extra inputs ``r3, r4,
r5`` and the loss ``sum_i reduce_sum(P_i * r_i)``), runs
``train-mode,split-bias,fuse-epilogues{mode=training},insert-backward`` and
``apply-optimizer{kind=sgd lr=0.01 momentum=0.9 weight-decay=0.1}`` and executes
the result with ``teeny_ir.reference.run`` at batch 2, 64x64. It compares with
PyTorch (the model in train mode, ``torch.optim.SGD`` with weight decay on the
conv weights only): the loss, every gradient (tol 1e-3), the BN running
statistics, the updated parameters and momentum buffers (tol 1e-4), per tensor
``max|got - ref| <= tol * max(max|ref|, 1e-3 * max over all gradients)``. It
also prints the time of the training passes and the bytes the backward keeps
per image.

With ``--compiled`` it runs the step compiled instead: ``teeny-training{optimizer=sgd
lr=0.01 momentum=0.9 weight-decay=0.1 profile=PROFILE},emit-triton`` and one
``runtime.load(D).trainer(weights).step([x, r3, r4, r5])`` in Triton's
interpreter, then compares the trainer's state dict (parameters, momentum
buffers, running statistics) with PyTorch's after ``sgd.step()``, within 1e-3
of each tensor's scale, and prints the compile and step times and the launches
per phase.

Needs ultralytics (see bench/ultralytics_yolov8n.py for the environment).

Usage: python bench/ultralytics_train_yolov8n.py [--seed N] [--batch 2]
    [--compiled [--profile interpreter|gpu]]
"""

from __future__ import annotations

import argparse
import collections
import io
import tempfile
import time
from pathlib import Path

import numpy as np

import teeny_ir
from teeny_ir import reference, runtime
from teeny_ir.driver import opt
from teeny_ir.frontend.losses import add_weighted_sum_loss

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "examples" / "yolov8n" / "yolov8n.mlir"
PASSES = "train-mode,split-bias,fuse-epilogues{mode=training},insert-backward"
OPTIMIZER = "apply-optimizer{kind=sgd lr=0.01 momentum=0.9 weight-decay=0.1}"


def by_attr(module: object, outputs: list[np.ndarray], key: str) -> dict[str, np.ndarray]:
    function = next(iter(module.ops))  # type: ignore[attr-defined]
    found = {}
    for value, attr in zip(outputs, function.res_attrs.data, strict=False):
        if key in attr.data:
            found[attr.data[key].data] = value
    return found


def compare(
    what: str, got: dict[str, np.ndarray], want: dict[str, np.ndarray], tol: float, scale: float
) -> bool:
    ok = sorted(got) == sorted(want)
    if not ok:
        print(f"{what}: names differ: {sorted(set(got) ^ set(want))[:6]}")
    worst, worst_name = 0.0, ""
    for name, ref in want.items():
        if name not in got:
            continue
        bound = tol * max(float(np.abs(ref).max()), 1e-3 * scale)
        error = float(np.abs(got[name].astype(np.float64) - ref).max())
        if error / bound > worst:
            worst, worst_name = error / bound, name
        ok &= error <= bound
    print(f"{what}: {len(want)} tensors, worst error/bound {worst:.3f} ({worst_name})")
    return ok


def saved_bytes_per_sample(module: object) -> int:
    """What insert-backward's statistic reports: run the graph passes before it
    again, on a copy, and differentiate that."""
    from passes.insert_backward import differentiate

    copy = teeny_ir.parse_module(MODEL.read_text())
    add_weighted_sum_loss(copy)
    teeny_ir.PassManager.parse(PASSES.removesuffix(",insert-backward")).run(copy)
    errors, saved = differentiate(next(iter(copy.ops)))  # type: ignore[arg-type]
    assert not errors, errors
    return saved


def main() -> int:
    import torch
    from ultralytics.nn.tasks import DetectionModel

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--compiled", action="store_true", help="run the compiled trainer")
    parser.add_argument("--profile", default="interpreter", choices=("interpreter", "gpu"))
    args = parser.parse_args()
    torch.manual_seed(args.seed)
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
    weights = {
        k: v.numpy().astype(np.float32)
        for k, v in model.state_dict().items()
        if not k.endswith("num_batches_tracked")
    }
    module = teeny_ir.parse_module(MODEL.read_text(), filename=str(MODEL))
    add_weighted_sum_loss(module)
    rng = np.random.default_rng(args.seed)
    x = rng.standard_normal((args.batch, 3, 64, 64)).astype(np.float32)
    shapes = [(args.batch, 144, 8, 8), (args.batch, 144, 4, 4), (args.batch, 144, 2, 2)]
    rs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    if args.compiled:
        state = compiled_step(module, weights, [x, *rs], args.profile)
        outputs: list[np.ndarray] = []
    else:
        start = time.perf_counter()
        teeny_ir.PassManager.parse(PASSES).run(module)
        passes_time = time.perf_counter() - start
        print(f"the backward keeps {saved_bytes_per_sample(module) / 2**20:.2f} MiB per image")
        start = time.perf_counter()
        teeny_ir.PassManager.parse(OPTIMIZER).run(module)
        optimizer_time = time.perf_counter() - start
        print(f"training passes: {passes_time:.2f} s, apply-optimizer {optimizer_time:.2f} s")
        start = time.perf_counter()
        outputs = reference.run(module, weights, [x, *rs])
        print(f"reference run: {time.perf_counter() - start:.1f} s")

    detect = model.model[-1]
    caught: dict[tuple[str, int], torch.Tensor] = {}
    hooks = [
        branch[i].register_forward_hook(
            lambda _m, _in, out, key=(name, i): caught.__setitem__(key, out)
        )
        for name, branch in (("box", detect.cv2), ("cls", detect.cv3))
        for i in range(len(branch))
    ]
    model.train()
    model(torch.tensor(x, dtype=torch.float64))
    for hook in hooks:
        hook.remove()
    heads = [torch.cat([caught["box", i], caught["cls", i]], 1) for i in range(3)]
    loss = sum(
        (h * torch.tensor(r, dtype=torch.float64)).sum() for h, r in zip(heads, rs, strict=True)
    )
    loss.backward()
    params = dict(model.named_parameters())
    grads = {k: p.grad.numpy() for k, p in params.items() if p.grad is not None}
    unused = sorted(k for k, p in params.items() if p.grad is None)
    print(f"parameters without a gradient in PyTorch (not in the graph): {unused}")
    scale = max(float(np.abs(g).max()) for g in grads.values())
    torch_state = model.state_dict()
    running = {
        k: torch_state[k].numpy()
        for k in torch_state
        if k.endswith(("running_mean", "running_var"))
    }
    decay = [p for k, p in params.items() if p.ndim == 4]
    no_decay = [p for k, p in params.items() if p.ndim != 4]
    sgd = torch.optim.SGD(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
        lr=0.01,
        momentum=0.9,
    )
    sgd.step()
    trained = [k for k, p in params.items() if p.grad is not None]
    updated = {k: params[k].detach().numpy() for k in trained}
    updated |= {
        f"{k}.momentum_buffer": sgd.state[params[k]]["momentum_buffer"].numpy() for k in trained
    }
    if args.compiled:
        ok = compare(
            "parameters and momentum", {k: state[k] for k in updated}, updated, 1e-3, scale
        )
        ok &= compare("running statistics", {k: state[k] for k in running}, running, 1e-3, 1)
        print("ok" if ok else "FAILED")
        return 0 if ok else 1
    used = set(by_attr(module, outputs, "teeny.grad"))
    ok = abs(float(outputs[0]) - loss.item()) <= 1e-4 * max(1.0, abs(loss.item()))
    print(f"loss: got {float(outputs[0]):.6f}, PyTorch {loss.item():.6f}")
    ok &= compare("gradients", by_attr(module, outputs, "teeny.grad"), grads, 1e-3, scale)
    ok &= compare("running statistics", by_attr(module, outputs, "teeny.running"), running, 1e-4, 1)
    updated = {k: v for k, v in updated.items() if k.removesuffix(".momentum_buffer") in used}
    ok &= compare("updated", by_attr(module, outputs, "teeny.updated"), updated, 1e-4, scale)
    print("ok" if ok else "FAILED")
    return 0 if ok else 1


def compiled_step(
    module: object, weights: dict[str, np.ndarray], inputs: list[np.ndarray], profile: str
) -> dict[str, np.ndarray]:
    """One compiled SGD step (see the module docstring); the trainer's state dict."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "plan"
        pipeline = (
            f"teeny-training{{optimizer=sgd lr=0.01 momentum=0.9 weight-decay=0.1 "
            f"profile={profile}}},emit-triton{{out-dir={out}}}"
        )
        stderr = io.StringIO()
        start = time.perf_counter()
        code = opt.run(
            ["-", "-p", pipeline, "-o", "/dev/null"],
            io.BytesIO(teeny_ir.print_module(module).encode()),  # type: ignore[arg-type]
            io.StringIO(),
            stderr,
        )
        if code != 0:
            raise SystemExit(f"compiling failed:\n{stderr.getvalue()[-3000:]}")
        print(f"compiled ({profile} profile) in {time.perf_counter() - start:.1f} s")
        executable = runtime.load(out)
        phases = collections.Counter(launch.phase for launch in executable.plan.launches)
        print(f"launches: {dict(phases)}")
        with executable.trainer(weights) as trainer:
            start = time.perf_counter()
            loss = float(trainer.step(inputs)[0])
            print(
                f"first step (worker start included) {time.perf_counter() - start:.1f} s; loss {loss:.6f}"
            )
            return trainer.state_dict()


if __name__ == "__main__":
    raise SystemExit(main())
