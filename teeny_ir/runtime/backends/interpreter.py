"""The ``interpreter`` backend: Triton's interpreter on torch CPU tensors.

It runs in a separate process (`teeny_ir.runtime.backends.interpreter_worker`)
because Triton fixes interpreter mode when ``triton`` is imported, and
``import teeny_ir`` never imports triton: the parent starts the worker with
`teeny_ir.backend.triton_settings.interpreter_environment`. Arrays cross in
safetensors files in a temporary directory (never pickle).

Importing this module imports neither numpy, torch nor triton.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from teeny_ir.backend.triton_settings import interpreter_environment
from teeny_ir.runtime.errors import WorkerError

if TYPE_CHECKING:
    import numpy as np

    from teeny_ir.backend.plan import Plan

TENSORS_FILE = "tensors.safetensors"
"""Inputs and bound parameters, keyed by their plan names (``in0``, ``p0``)."""
OUTPUTS_FILE = "outputs.safetensors"
"""The worker's results, keyed ``output_0 ... output_{N-1}``."""
REQUEST_FILE = "request.json"
"""The plan directory and the batch size."""
TIMINGS_FILE = "timings.json"
"""The worker's stage times in seconds."""
WORKER_MODULE = "teeny_ir.runtime.backends.interpreter_worker"
_STDERR_LINES = 8
_ROOT = Path(__file__).resolve().parents[3]
"""The directory holding this ``teeny_ir``, put first on the worker's path so
that it runs this copy and not another one installed elsewhere."""


class InterpreterBackend:
    """Runs each launch with ``TRITON_INTERPRET=1`` in a worker process."""

    name = "interpreter"
    description = "Triton's interpreter on the CPU, in a worker process"

    def available(self) -> str | None:
        """None when torch and triton are installed (found without importing them)."""
        for module, extra in (("torch", "interp"), ("triton", "")):
            if importlib.util.find_spec(module) is None:
                install = f"teeny-ir[{extra}]" if extra else "teeny-ir"
                return f"the interpreter backend needs {module} (pip install '{install}')"
        return None

    def run(
        self,
        directory: Path,
        plan: Plan,
        tensors: Mapping[str, np.ndarray],
        batch: int,
        times: dict[str, float],
    ) -> list[np.ndarray]:
        """Run the plan in a worker process (see `Backend.run`); raises
        `WorkerError` with the worker's last stderr lines when it fails."""
        import numpy as np
        from safetensors.numpy import load_file, save_file

        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="teeny-run-") as temp:
            workdir = Path(temp)
            arrays = {name: np.ascontiguousarray(array) for name, array in tensors.items()}
            save_file(arrays, workdir / TENSORS_FILE)
            request = {"plan": str(directory), "batch": batch}
            (workdir / REQUEST_FILE).write_text(json.dumps(request), encoding="utf-8")
            times["write tensors"] = time.perf_counter() - start
            start = time.perf_counter()
            completed = _start_worker(workdir)
            times["worker"] = time.perf_counter() - start
            if completed.returncode != 0:
                tail = completed.stderr.strip().splitlines()[-_STDERR_LINES:]
                raise WorkerError(
                    f"the interpreter worker failed (exit status {completed.returncode}):\n"
                    + "\n".join(tail)
                )
            with (workdir / TIMINGS_FILE).open(encoding="utf-8") as handle:
                times |= {f"worker: {k}": v for k, v in json.load(handle).items()}
            results = load_file(workdir / OUTPUTS_FILE)
        return [results[f"output_{i}"] for i in range(len(plan.outputs))]


def _start_worker(workdir: Path) -> subprocess.CompletedProcess[str]:
    """Run the worker on ``workdir`` with the interpreter switched on."""
    env = interpreter_environment(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_ROOT), env.get("PYTHONPATH")) if p)
    command = [sys.executable, "-m", WORKER_MODULE, str(workdir)]
    return subprocess.run(command, env=env, capture_output=True, text=True, check=False)
