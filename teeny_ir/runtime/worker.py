"""The interpreter backend's process: ``python -m teeny_ir.runtime.worker WORKDIR``.

Started by `teeny_ir.runtime` with ``TRITON_INTERPRET=1`` in its environment
(Triton reads it at import). ``WORKDIR`` holds ``request.json`` (the plan
directory and the batch size) and ``tensors.safetensors`` (inputs and bound
parameters by plan name). The worker validates the plan again, imports each
kernel file by path, allocates torch CPU float32 buffers (filled with NaN, so a
region no kernel wrote shows), launches in plan order and writes
``outputs.safetensors`` (``output_0 ...``) and ``timings.json``.

A failure ends with a one-line ``error: ...`` on stderr and exit status 1; the
parent reports the last lines of stderr.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from teeny_ir.expressions import eval_text
from teeny_ir.kernel_families import FAMILIES
from teeny_ir.plan import BATCH, Plan, load_plan
from teeny_ir.runtime import OUTPUTS_FILE, REQUEST_FILE, TENSORS_FILE, TIMINGS_FILE


def run(workdir: Path) -> None:
    """Execute the request in ``workdir`` (see the module docstring)."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError("the worker needs TRITON_INTERPRET=1 in its environment")
    times: dict[str, float] = {}
    start = time.perf_counter()
    request = json.loads((workdir / REQUEST_FILE).read_text(encoding="utf-8"))
    directory, batch = Path(request["plan"]), int(request["batch"])
    plan = load_plan(directory)
    times["load plan"] = time.perf_counter() - start

    start = time.perf_counter()
    sys.dont_write_bytecode = True  # no __pycache__ inside the plan directory
    import torch
    from safetensors.numpy import load_file, save_file

    kernels = {k.name: _import_kernel(directory / k.file, k.name) for k in plan.kernels}
    times["import triton and kernels"] = time.perf_counter() - start

    start = time.perf_counter()
    tensors: dict[str, Any] = {
        name: torch.tensor(array) for name, array in load_file(workdir / TENSORS_FILE).items()
    }
    env = {BATCH: batch}
    for buffer in plan.buffers:
        shape = [d if isinstance(d, int) else eval_text(d, env) for d in buffer.shape]
        tensors[buffer.name] = torch.full(shape, float("nan"), dtype=torch.float32)
    times["allocate"] = time.perf_counter() - start

    start = time.perf_counter()
    _launch_all(plan, kernels, tensors, env)
    times["launches"] = time.perf_counter() - start

    outputs = {
        f"output_{i}": tensors[name].contiguous().numpy().copy()
        for i, name in enumerate(plan.outputs)
    }
    save_file(outputs, workdir / OUTPUTS_FILE)
    (workdir / TIMINGS_FILE).write_text(json.dumps(times), encoding="utf-8")


def _launch_all(
    plan: Plan, kernels: dict[str, Callable[..., Any]], tensors: dict[str, Any], env: dict[str, int]
) -> None:
    specs = {k.name: k for k in plan.kernels}
    for launch in plan.launches:
        spec = specs[launch.kernel]
        family = FAMILIES[spec.family]
        args: list[Any] = []
        for abi, arg in zip(family.args, launch.args, strict=True):
            if arg.tensor is not None:
                args.append(tensors[arg.tensor])
            else:
                value = eval_text(arg.expr or "", env)
                args.append(float(value) if abi.dtype.startswith("fp") else value)
        grid = tuple(eval_text(axis, env) for axis in launch.grid)
        kernel: Any = kernels[launch.kernel]
        kernel[grid](
            *args, **spec.constexprs, num_warps=launch.num_warps, num_stages=launch.num_stages
        )


def _import_kernel(path: Path, name: str) -> Callable[..., Any]:
    """Import a kernel file by path (``@triton.jit`` needs a real source file)."""
    module_name = f"teeny_ir_kernels.{name}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot import kernel file '{path}'")
    module: ModuleType = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    kernel = getattr(module, name, None)
    if kernel is None:
        raise RuntimeError(f"kernel file '{path}' defines no kernel '{name}'")
    return kernel  # type: ignore[no-any-return]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m teeny_ir.runtime.worker WORKDIR", file=sys.stderr)
        return 2
    try:
        run(Path(args[0]))
    except Exception as err:  # noqa: BLE001 - reported to the parent as the last stderr line
        traceback.print_exc()
        print(f"error: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
