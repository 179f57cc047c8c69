"""Import ultralytics' YOLOv8n and YOLO11n through torch.export, compile them, and compare.

Builds each model offline (``DetectionModel("yolov8n.yaml")``, random weights, eval
mode, the Detect head in its export form, 64x64, batch 2), exports it with
``torch.export.export`` (static batch), writes the program with
``torch.export.save`` and reads it back through ``teeny-import`` (the ``.mlir``
module and its ``.safetensors`` weights), and prints: the import time, the max
error of the reference interpreter against PyTorch's first (decoded) output,
whether the weights kept their state-dict names, the launches per family after
``teeny-inference{profile=interpreter}``, and the max error of the compiled plan
run in Triton's interpreter against PyTorch. Errors are held to the 1e-4 rule
(``|got-ref| <= 1e-4*max(1,max|ref|)``). A refusal prints its one located line.

Needs ultralytics (kept out of the test suite: it pulls opencv, pandas and
matplotlib): ``pip install ultralytics==8.4.190`` beside ``.[dev]``.

Usage: /path/to/venv/bin/python bench/torch_yolo.py [--models yolov8n yolo11n]
"""

from __future__ import annotations

import argparse
import collections
import io
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


def _model(name: str) -> tuple[Any, Any]:
    """``name`` in eval mode with its Detect head in export form, and a 64x64 input."""
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
    return model, torch.rand(2, 3, 64, 64)


def _bound(expected: np.ndarray) -> float:
    return 1e-4 * max(1.0, float(np.abs(expected).max()))


def _verdict(error: float, bound: float) -> str:
    return "ok" if error <= bound else "OVER THE BOUND"


def main() -> None:
    """Export, import, compile and run each named model; print how far it gets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["yolov8n", "yolo11n"])
    args = parser.parse_args()

    import torch
    from safetensors.numpy import load_file

    import teeny_ir
    from teeny_ir import reference, runtime
    from teeny_ir.driver import import_model

    for name in args.models:
        model, x = _model(name)
        with torch.no_grad():
            want = model(x)
        expected = (want[0] if isinstance(want, list | tuple) else want).numpy()
        bound = _bound(expected)
        with tempfile.TemporaryDirectory() as scratch:
            pt2 = Path(scratch) / f"{name}.pt2"
            start = time.perf_counter()
            with torch.no_grad():
                torch.export.save(torch.export.export(model, (x,), strict=False), str(pt2))
            exported = time.perf_counter() - start
            mlir = Path(scratch) / f"{name}.mlir"
            errors = io.StringIO()
            start = time.perf_counter()
            code = import_model.run([str(pt2), "-o", str(mlir)], io.StringIO(), errors)
            seconds = time.perf_counter() - start
            if code != 0:
                print(f"{name}: teeny-import refused ({code}): {errors.getvalue().strip()}")
                continue
            module = teeny_ir.parse_module(mlir.read_text())
            weights = load_file(str(mlir.with_suffix(".safetensors")))
            state = set(model.state_dict())
            named = sum(key in state for key in weights)
            print(
                f"{name}: exported in {exported:.1f} s, teeny-import in {seconds:.1f} s; "
                f"{named}/{len(weights)} weights named by state-dict key "
                f"(e.g. {'model.0.conv.weight' in weights and 'model.0.conv.weight'})"
            )
            (ref, *_) = reference.run(module, weights, [x.numpy()])
            error = float(np.abs(ref - expected).max())
            print(
                f"{name}: reference vs PyTorch max error {error:.3e} "
                f"(bound {bound:.3e}, {_verdict(error, bound)})"
            )
            try:
                teeny_ir.PassManager.parse("teeny-inference{profile=interpreter}").run(module)
            except teeny_ir.DiagnosticError as err:
                print(f"{name}: compile refused: {err.diagnostics[0].header()}")
                continue
            families = collections.Counter(
                op.properties["family"].data for op in module.walk() if op.name == "kernel.launch"
            )
            print(f"{name}: {sum(families.values())} launches: {dict(families)}")
            out_dir = Path(scratch) / "plan"
            teeny_ir.PassManager.parse(f"emit-triton{{out-dir={out_dir}}}").run(module)
            start = time.perf_counter()
            (got, *_) = runtime.load(out_dir).run([x.numpy()], weights)
            ran = time.perf_counter() - start
            error = float(np.abs(got - expected).max())
            print(
                f"{name}: compiled (Triton interpreter, {ran:.1f} s) vs PyTorch max error "
                f"{error:.3e} (bound {bound:.3e}, {_verdict(error, bound)})"
            )


if __name__ == "__main__":
    main()
