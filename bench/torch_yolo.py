"""Import ultralytics' YOLOv8n and YOLO11n through torch.export and compare with PyTorch.

Builds each model offline (``DetectionModel("yolov8n.yaml")``, random weights, the
Detect head in its export form, 64x64, batch 1), imports it with
`teeny_ir.frontend.torch.import_module` (static batch), runs the module in the
reference interpreter and prints the max error against PyTorch's first (decoded)
output, or the one-line refusal. Run with a Python that has ultralytics:
``/path/to/venv/bin/python bench/torch_yolo.py [yolov8n yolo11n]``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main() -> None:
    """Import each named model and print how far it gets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=["yolov8n", "yolo11n"])
    args = parser.parse_args()
    os.environ.setdefault("YOLO_OFFLINE", "1")
    import torch
    from ultralytics.nn.tasks import DetectionModel

    from teeny_ir import reference
    from teeny_ir.core.diagnostics import DiagnosticError
    from teeny_ir.frontend.torch import import_module

    for name in args.models:
        torch.manual_seed(0)
        model = DetectionModel(f"{name}.yaml", verbose=False).eval()
        for module in model.modules():  # the Detect head's export form, as `yolo export` sets it
            if hasattr(module, "export"):
                module.export = True
            if hasattr(module, "format"):
                module.format = "onnx"
        x = torch.rand(1, 3, 64, 64)
        with torch.no_grad():
            want = model(x)
        want = want[0] if isinstance(want, list | tuple) else want
        start = time.perf_counter()
        try:
            imported = import_module(model, [x], dynamic_batch=False)
        except DiagnosticError as err:
            print(f"{name}: refused: {err.diagnostics[0].header()}")
            continue
        seconds = time.perf_counter() - start
        got = reference.run(imported.module, imported.weights, [x.numpy()])[0]
        error = float(np.max(np.abs(got - want.numpy())))
        print(
            f"{name}: imported in {seconds:.1f} s, {len(imported.weights)} weights, max error {error:.2e}"
        )


if __name__ == "__main__":
    main()
