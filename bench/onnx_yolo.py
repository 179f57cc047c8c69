"""Import ultralytics' YOLOv8n and YOLO11n from ONNX, compile them, and compare.

Builds each model offline (``DetectionModel("yolov8n.yaml")``, random weights,
eval mode, 64x64, batch 1), exports it with ``torch.onnx.export(...,
opset_version=17, dynamo=False)`` with the Detect head in export form (the
decoded ``(1, 84, anchors)`` output first), imports it with
`teeny_ir.frontend.onnx.import_onnx`, and prints: the import time, the max error
of the reference interpreter against PyTorch, the launches per family after
``teeny-inference{profile=interpreter}``, and the max error of the compiled plan
run in Triton's interpreter against the reference.

Needs ultralytics (kept out of the test suite: it pulls opencv, pandas and
matplotlib): ``pip install ultralytics==8.4.190`` beside ``.[dev]``.

Usage: .venv/bin/python bench/onnx_yolo.py [--models yolov8n yolo11n]
"""

from __future__ import annotations

import argparse
import collections
import os
import tempfile
import time
from pathlib import Path

import numpy as np


def _export(name: str, out: Path) -> tuple[np.ndarray, np.ndarray]:
    """Export ``name`` to ``out``; return the input and PyTorch's first output."""
    os.environ.setdefault("YOLO_OFFLINE", "1")
    import torch
    from ultralytics.nn.tasks import DetectionModel

    torch.manual_seed(0)
    model = DetectionModel(f"{name}.yaml", verbose=False).eval()
    for module in model.modules():  # the Detect head's export form, as `yolo export` sets it
        if hasattr(module, "export"):
            module.export = True
        if hasattr(module, "format"):
            module.format = "onnx"
    x = torch.rand(1, 3, 64, 64)
    with torch.no_grad():
        ref = model(x)
        ref = ref[0] if isinstance(ref, list | tuple) else ref
        torch.onnx.export(
            model, x, str(out), opset_version=17, dynamo=False, input_names=["images"]
        )
    return x.numpy(), ref.numpy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["yolov8n", "yolo11n"])
    args = parser.parse_args()

    import teeny_ir
    from teeny_ir import reference, runtime
    from teeny_ir.frontend.onnx import import_onnx

    for name in args.models:
        with tempfile.TemporaryDirectory() as scratch:
            path = Path(scratch) / f"{name}.onnx"
            x, expected = _export(name, path)
            start = time.perf_counter()
            imported = import_onnx(path)
            seconds = time.perf_counter() - start
            (ref, *_) = reference.run(imported.module, imported.weights, [x])
            scale = max(1.0, float(np.abs(expected).max()))
            print(
                f"{name}: imported in {seconds:.2f} s; reference vs PyTorch max error "
                f"{np.abs(ref - expected).max():.3e} (bound {1e-4 * scale:.3e})"
            )
            compiled = import_onnx(path)
            teeny_ir.PassManager.parse("teeny-inference{profile=interpreter}").run(compiled.module)
            families = collections.Counter(
                op.properties["family"].data
                for op in compiled.module.walk()
                if op.name == "kernel.launch"
            )
            print(f"{name}: {sum(families.values())} launches: {dict(families)}")
            out_dir = Path(scratch) / "plan"
            teeny_ir.PassManager.parse(f"emit-triton{{out-dir={out_dir}}}").run(compiled.module)
            (got, *_) = runtime.load(out_dir).run([x], compiled.weights)
            print(
                f"{name}: compiled (interpreter) vs reference max error "
                f"{np.abs(got - ref).max():.3e} (bound {1e-4 * max(1.0, float(np.abs(ref).max())):.3e})"
            )


if __name__ == "__main__":
    main()
