"""The bundled YOLO11n (examples/yolo11n) against ultralytics' own YOLO11n.

Builds ultralytics' ``DetectionModel("yolo11n.yaml")`` offline (``YOLO_OFFLINE=1``)
and loads ``examples/yolo11n/yolo11n.safetensors`` into it strictly: every
state-dict key must be in the file with its shape and every float tensor of the
file must be a state-dict entry. The one exception is the DFL's fixed 1x1 conv
(``model.23.dfl.conv.weight``), which is not trained (an arange, checked here),
not on the path of the raw outputs, and so not in the file. The model runs in
eval mode in float64, layer by layer as ``DetectionModel._predict_once`` does,
and its Detect head gives its raw per-level outputs
``torch.cat((cv2[i](x[i]), cv3[i](x[i])), 1)`` (no DFL, no decode), which are what
``yolo11n.mlir`` returns.

The outputs are compared, on a random 2x3x64x64 input, with
``teeny_ir.reference.run`` on ``yolo11n.mlir`` and with the plan compiled by
``teeny-inference{profile=interpreter}`` + ``emit-triton`` and run by
``teeny_ir.runtime`` (Triton's interpreter), and with the plan of that pipeline
without fuse-attention (the decomposed attention's own kernels), under the rule
``max|got - ref| <= 1e-4 * max(1, max|ref|)``. It runs twice: with the bundled
weights, and with every conv weight redrawn from N(0, GAIN^2 / fan_in), because
with PyTorch's default initialisation the outputs are nearly the head biases and
the attention's logits nearly 0 (a softmax of uniform weights: a wrong scale or
a missing transpose goes unseen). GAIN is 1.35, not tests/test_models.py's 1.6
for YOLOv8n: YOLO11n's residual blocks grow faster, and at 1.6 the logits are
~1e4 and the softmax a one-hot (the scale unseen again); at 1.35 they have a
std of ~2. ``spread`` prints how far from per-channel constants the outputs
are, ``logits`` the std of the attention's logits.

Needs ultralytics (kept out of the test suite):
``/tmp/ulvenv/bin/python bench/yolo11n_parity.py`` (ultralytics 8.4.190 and torch
beside ``-e '.[interp]'``).

Usage: python bench/yolo11n_parity.py [--batch 2] [--seed 0] [--no-compiled]
"""

from __future__ import annotations

import argparse
import collections
import importlib
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import load_file

import teeny_ir
from teeny_ir import reference, runtime
from teeny_ir.backend.plan import load_plan
from teeny_ir.core.diagnostics import Severity
from teeny_ir.testing import REDUCTION_TOL, Comparison, compare

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "examples" / "yolo11n" / "yolo11n.mlir"
WEIGHTS = ROOT / "examples" / "yolo11n" / "yolo11n.safetensors"
DFL = "model.23.dfl.conv.weight"
"""The one state-dict entry the file leaves out: the DFL's fixed arange conv."""
PIPELINES = (
    ("teeny-inference{profile=interpreter}", "teeny-inference{profile=interpreter}"),
    (
        "teeny-inference{profile=interpreter} without fuse-attention",
        "split-bias,fuse-epilogues{mode=inference},select-conv-algorithm{profile=interpreter},"
        "lower-graph-to-kernel",
    ),
)
"""(label, pipeline) of the compiled plans: the inference pipeline, and its expansion
without fuse-attention (the attention as its matmul, softmax and transpose kernels)."""
GAIN = 1.35
"""The redrawn conv weights' std times sqrt(fan_in) (see the module docstring)."""


def ultralytics_model() -> Any:
    """ultralytics' YOLO11n, built offline from its yaml (scale n)."""
    os.environ.setdefault("YOLO_OFFLINE", "1")
    tasks = importlib.import_module("ultralytics.nn.tasks")  # untyped: Any
    return tasks.DetectionModel("yolo11n.yaml", verbose=False)


def check_and_load(model: Any, weights: dict[str, np.ndarray]) -> int:
    """Load ``weights`` into ``model`` strictly (see the module docstring); the
    number of trainable parameters of the model, all of them from the file."""
    import torch

    state = model.state_dict()
    problems = [
        f"{key}: {tuple(value.shape)} in the model, "
        + (f"{weights[key].shape} in the file" if key in weights else "not in the file")
        for key, value in state.items()
        if key != DFL and (key not in weights or tuple(weights[key].shape) != tuple(value.shape))
    ]
    problems += [
        f"{key}: in the file, not in the model's state dict"
        for key, value in weights.items()
        if value.dtype.kind == "f" and key not in state
    ]
    if DFL in weights:
        problems.append(f"{DFL}: in the file (expected only the trained weights)")
    arange = torch.arange(16, dtype=state[DFL].dtype).view(1, 16, 1, 1)
    if not torch.equal(state[DFL], arange):
        problems.append(f"{DFL}: not the fixed arange the DFL is built with")
    if problems:
        raise SystemExit("weights do not match the model:\n  " + "\n  ".join(problems))
    loaded = {key: torch.from_numpy(np.array(value)) for key, value in weights.items()}
    model.load_state_dict({**loaded, DFL: state[DFL]}, strict=True)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def raw_outputs(model: Any, x: np.ndarray) -> tuple[list[np.ndarray], float]:
    """The model in float64 and eval mode, its layers called as
    ``DetectionModel._predict_once`` calls them, with the Detect head's raw
    per-level ``cat(cv2[i](x_i), cv3[i](x_i))`` in place of its decoded output;
    and the std of the logits ``(q * scale)^T @ k`` of the C2PSA's attention."""
    import torch

    modules = importlib.import_module("ultralytics.nn.modules")
    Attention, Detect = modules.Attention, modules.Detect

    model = model.double().eval()
    logits: list[float] = []

    def catch(attn: Any, args: tuple[Any, ...], qkv: Any) -> None:
        b, _, h, w = args[0].shape
        q, k, _ = qkv.view(b, attn.num_heads, 2 * attn.key_dim + attn.head_dim, h * w).split(
            [attn.key_dim, attn.key_dim, attn.head_dim], 2
        )
        logits.append(float(((q * attn.scale).transpose(-2, -1) @ k).std()))

    hooks = [
        m.qkv.register_forward_hook(lambda _m, a, out, m=m: catch(m, a, out))
        for m in model.modules()
        if isinstance(m, Attention)
    ]
    h: Any = torch.from_numpy(x).double()
    saved: list[Any] = []
    try:
        with torch.no_grad():
            for m in model.model:
                if m.f != -1:
                    h = (
                        saved[m.f]
                        if isinstance(m.f, int)
                        else [h if j == -1 else saved[j] for j in m.f]
                    )
                if isinstance(m, Detect):
                    outputs = [torch.cat((m.cv2[i](h[i]), m.cv3[i](h[i])), 1) for i in range(m.nl)]
                    return [y.numpy() for y in outputs], min(logits)
                h = m(h)
                saved.append(h if m.i in model.save else None)
    finally:
        for hook in hooks:
            hook.remove()
    raise SystemExit("the model has no Detect head")


def scaled(weights: dict[str, np.ndarray], seed: int) -> dict[str, np.ndarray]:
    """``weights`` with every conv weight drawn from N(0, GAIN^2 / fan_in)."""
    rng = np.random.default_rng(seed)
    out = dict(weights)
    for key, value in sorted(weights.items()):
        if key.endswith("weight") and value.ndim == 4:
            std = GAIN / math.sqrt(math.prod(value.shape[1:]))
            out[key] = (std * rng.standard_normal(value.shape)).astype(np.float32)
    return out


def spread(outputs: list[np.ndarray]) -> float:
    """The smallest, over outputs, of the mean per-channel std over batch and positions."""
    return min(
        float(np.mean(np.std(y.swapaxes(0, 1).reshape(y.shape[1], -1), axis=1))) for y in outputs
    )


def report(what: str, result: Comparison) -> None:
    for index, output in enumerate(result.outputs):
        verdict = "ok" if output.ok else f"FAIL ({output.reason})"
        print(
            f"  {what} output {index}: max|got-ref| = {output.max_error:.3e} "
            f"(bound {output.bound:.3e}) {verdict}"
        )
    if not result.outputs and not result.ok:
        print(f"  {what}: FAIL ({result.reason})")


def compile_plan(module: Any, pipeline: str, out_dir: Path) -> runtime.Executable | None:
    """``module`` through ``pipeline`` and ``emit-triton`` into ``out_dir``, loaded;
    ``None`` (after printing the located line) if the compiler refuses it."""
    start = time.perf_counter()
    try:
        teeny_ir.PassManager.parse(pipeline).run(module)
        teeny_ir.PassManager.parse(f"emit-triton{{out-dir={out_dir}}}").run(module)
    except teeny_ir.DiagnosticError as err:
        errors = [d for d in err.diagnostics if d.severity is Severity.ERROR] or err.diagnostics
        print(f"  refused: {errors[0].header()}")
        return None
    plan = load_plan(out_dir)
    family_of = {kernel.name: kernel.family for kernel in plan.kernels}
    launches = collections.Counter(family_of[launch.kernel] for launch in plan.launches)
    print(
        f"  compiled in {time.perf_counter() - start:.1f} s: {len(plan.launches)} launches "
        f"{dict(sorted(launches.items()))}, {len(plan.kernels)} kernel variants, "
        f"{len(plan.views)} views"
    )
    return runtime.load(out_dir)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-compiled", action="store_true", help="skip the compiled plans")
    args = parser.parse_args()

    bundled = load_file(str(WEIGHTS))
    model = ultralytics_model()
    trainable = check_and_load(model, bundled)
    in_file = sum(
        value.size
        for key, value in bundled.items()
        if value.dtype.kind == "f" and not key.endswith(("running_mean", "running_var"))
    )
    total = sum(p.numel() for p in model.parameters())
    print(
        f"ultralytics YOLO11n: {total} parameters ({trainable} trainable + {total - trainable} "
        f"in the DFL); the file: {in_file} learned values, "
        f"{'equal' if in_file == trainable else 'NOT EQUAL'} to the trainable count; "
        f"{len(bundled)} tensors, all matched"
    )
    failed = in_file != trainable

    module = teeny_ir.parse_module(MODEL.read_text(encoding="utf-8"), filename=MODEL.name)
    x = np.random.default_rng(args.seed).standard_normal((args.batch, 3, 64, 64)).astype(np.float32)
    with tempfile.TemporaryDirectory() as scratch:
        executables: dict[str, runtime.Executable] = {}
        for index, (label, pipeline) in enumerate([] if args.no_compiled else PIPELINES):
            print(f"{label}:")
            executable = compile_plan(module.clone(), pipeline, Path(scratch) / f"plan{index}")
            failed |= executable is None
            if executable is not None:
                executables[label] = executable
        for kind, weights in (("bundled", bundled), ("scaled", scaled(bundled, args.seed + 1))):
            check_and_load(model, weights)
            want, logits = raw_outputs(model, x)
            print(
                f"{kind} weights: ultralytics outputs {[list(w.shape) for w in want]}, "
                f"max|ref| {max(float(np.abs(w).max()) for w in want):.3g}, "
                f"spread {spread(want):.3g}, logits {logits:.3g}"
            )
            start = time.perf_counter()
            result = compare(reference.run(module, weights, [x]), want, REDUCTION_TOL)
            print(f"  reference interpreter ({time.perf_counter() - start:.1f} s):")
            report("reference", result)
            failed |= not result.ok
            for label, executable in executables.items():
                start = time.perf_counter()
                result = compare(executable.run([x], weights), want, REDUCTION_TOL)
                print(f"  {label}, Triton interpreter ({time.perf_counter() - start:.1f} s):")
                report("compiled", result)
                failed |= not result.ok
    print("FAIL" if failed else "all outputs within the bound")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
