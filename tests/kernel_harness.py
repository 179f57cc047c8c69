"""Run kernel files in Triton's interpreter, with canary-padded buffers.

Usage: ``python kernel_harness.py CASES.json RESULTS.npz``. Run it as a
separate process: ``TRITON_INTERPRET`` is read when triton is imported, so the
test process (which may compile kernels for real) never imports triton in
interpreter mode. Data crosses as ``.npy``/``.npz`` files, never pickle.

CASES.json holds ``{"cases": [case, ...]}``; a case is::

    {"kernel_file": "...py", "kernel_name": "k", "constexprs": {"BLOCK": 128},
     "grid": [g0, g1, g2], "num_warps": 4, "pad": P,
     "args": [{"array": "x.npy"}, {"output": numel}, {"int": 63}, ...]}

``args`` are the kernel's non-constexpr arguments in ABI order (an int64
``.npy`` array is passed as int64, padded with `I64_PAD`; an output with
``"dtype": "i64"`` is int64, `I64_UNWRITTEN` in the view and `I64_CANARY` in
the padding). Every array
and output is passed as a view into a larger buffer with ``P`` elements of
padding on each side: inputs are padded with NaN (an unmasked tail read then
poisons the result), outputs start as NaN in the view (an element the kernel
never writes stays NaN) and ``CANARY`` in the padding (the interpreter does
not bounds-check, so a write past the view lands there). RESULTS.npz gets the
whole padded buffer of output ``j`` of case ``i`` as ``case{i}_arg{j}``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from teeny_ir.backend import triton_settings
from teeny_ir.backend.kernel_files import import_kernel

CANARY = 1234.5
"""The value in an output's padding; any other value there means corruption."""
I64_CANARY = -777_777_777
"""The padding of an i64 output (a status)."""
I64_UNWRITTEN = -555_555_555
"""What an i64 output holds before the kernel writes it."""
I64_PAD = 1 << 40
"""The padding of an i64 input (class indices): read unmasked, it is out of range."""


Kernels = dict[tuple[str, str], Callable[..., Any]]
"""Imported kernels by (file, name): each file is executed once per process."""


def _kernel(path: str, name: str, cache: Kernels) -> Callable[..., Any]:
    if (path, name) not in cache:
        cache[path, name] = import_kernel(path, name)
    return cache[path, name]


def _run_case(case: dict[str, Any], kernels: Kernels) -> dict[int, Any]:
    import numpy as np
    import torch

    pad = int(case["pad"])
    args: list[Any] = []
    outputs: dict[int, Any] = {}
    for index, spec in enumerate(case["args"]):
        if "int" in spec:
            args.append(int(spec["int"]))
        elif "array" in spec:
            data = np.load(spec["array"], allow_pickle=False).ravel()
            if data.dtype == np.int64:  # class indices: padded with an index far out of range
                buffer = torch.full((data.size + 2 * pad,), I64_PAD, dtype=torch.int64)
            else:
                data = data.astype(np.float32)
                buffer = torch.full((data.size + 2 * pad,), float("nan"), dtype=torch.float32)
            buffer[pad : pad + data.size] = torch.from_numpy(data)
            args.append(buffer[pad : pad + data.size])
        else:
            numel = int(spec["output"])
            if spec.get("dtype") == "i64":
                buffer = torch.full((numel + 2 * pad,), I64_CANARY, dtype=torch.int64)
                buffer[pad : pad + numel] = I64_UNWRITTEN
            else:
                buffer = torch.full((numel + 2 * pad,), CANARY, dtype=torch.float32)
                buffer[pad : pad + numel] = float("nan")
            args.append(buffer[pad : pad + numel])
            outputs[index] = buffer
    kernel = _kernel(case["kernel_file"], case["kernel_name"], kernels)
    grid = tuple(int(g) for g in case["grid"])
    kernel[grid](*args, **case["constexprs"], num_warps=int(case.get("num_warps", 4)))
    return {index: buffer.numpy().copy() for index, buffer in outputs.items()}


def main(argv: list[str]) -> int:
    cases_file, results_file = argv
    triton_settings.use_interpreter_in_this_process()  # before anything imports triton
    import numpy as np

    cases = json.loads(Path(cases_file).read_text())["cases"]
    kernels: Kernels = {}
    results: dict[str, Any] = {}
    for case_index, case in enumerate(cases):
        for arg_index, buffer in _run_case(case, kernels).items():
            results[f"case{case_index}_arg{arg_index}"] = buffer
    np.savez(results_file, **results)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
