"""Run kernel files in Triton's interpreter, with canary-padded buffers.

Usage: ``python -m teeny_ir.testing.kernel_harness CASES.json RESULTS.npz``
(what `teeny_ir.testing.kernels.run_cases` starts). Run it as a separate
process: ``TRITON_INTERPRET`` is read when triton is imported, so the test
process (which may compile kernels for real) never imports triton in
interpreter mode. With `teeny_ir.testing.cuda_fake_harness`, it is the only
module of `teeny_ir.testing` that runs triton (in a process of its own, never
when imported). Data crosses as ``.npy``/``.npz``
files, never pickle.

CASES.json holds ``{"cases": [case, ...]}``; a case is::

    {"kernel_file": "...py", "kernel_name": "k", "constexprs": {"BLOCK": 128},
     "grid": [g0, g1, g2], "num_warps": 4, "pad": P,
     "args": [{"array": "x.npy"}, {"output": numel}, {"int": 63}, ...]}

``args`` are the kernel's non-constexpr arguments in ABI order (an int64
``.npy`` array is passed as int64, padded with `I64_PAD`; an output with
``"dtype": "i64"`` is int64, `I64_UNWRITTEN` in the view and `I64_CANARY` in
the padding; ``{"alias": k}`` is an output written in place, into argument
``k``'s buffer, which is then padded as an output is). Every array and output is passed as a view into a larger buffer
with ``P`` elements of padding on each side: inputs are padded with NaN (an
unmasked tail read then poisons the result), outputs start as NaN in the view
(an element the kernel never writes stays NaN) and ``CANARY`` in the padding
(the interpreter does not bounds-check, so a write past the view lands there).
RESULTS.npz gets the whole padded buffer of output ``j`` of case ``i`` (for an
in-place one, of the argument it aliases) as ``case{i}_arg{j}``. The constants
are `teeny_ir.testing.kernels`'s.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from teeny_ir.backend import triton_settings
from teeny_ir.backend.kernel_files import import_kernel
from teeny_ir.testing.kernels import CANARY, I64_CANARY, I64_PAD, I64_UNWRITTEN

Kernels = dict[tuple[str, str], Any]
"""Imported kernels (``@triton.jit`` functions, untyped) by (file, name): each
file is executed once per process."""


def _kernel(path: str, name: str, cache: Kernels) -> Any:
    if (path, name) not in cache:
        cache[path, name] = import_kernel(path, name)
    return cache[path, name]


def _run_case(case: dict[str, Any], kernels: Kernels) -> dict[int, Any]:
    import numpy as np
    import torch

    pad = int(case["pad"])
    specs = case["args"]
    in_place = {int(spec["alias"]) for spec in specs if "alias" in spec}
    args: list[Any] = []
    buffers: dict[int, Any] = {}
    for index, spec in enumerate(specs):
        if "int" in spec:
            args.append(int(spec["int"]))
        elif "array" in spec:
            data = np.load(spec["array"], allow_pickle=False).ravel()
            # An input an output writes in place is padded like an output.
            if data.dtype == np.int64:  # class indices: padded with an index far out of range
                fill: Any = I64_CANARY if index in in_place else I64_PAD
                buffer = torch.full((data.size + 2 * pad,), fill, dtype=torch.int64)
            else:
                data = data.astype(np.float32)
                fill = CANARY if index in in_place else float("nan")
                buffer = torch.full((data.size + 2 * pad,), fill, dtype=torch.float32)
            buffer[pad : pad + data.size] = torch.from_numpy(data)
            args.append(buffer[pad : pad + data.size])
            buffers[index] = buffer
        elif "alias" in spec:
            args.append(None)  # bound below, once every input is
        else:
            numel = int(spec["output"])
            if spec.get("dtype") == "i64":
                buffer = torch.full((numel + 2 * pad,), I64_CANARY, dtype=torch.int64)
                buffer[pad : pad + numel] = I64_UNWRITTEN
            else:
                buffer = torch.full((numel + 2 * pad,), CANARY, dtype=torch.float32)
                buffer[pad : pad + numel] = float("nan")
            args.append(buffer[pad : pad + numel])
            buffers[index] = buffer
    outputs: dict[int, Any] = {}
    for index, spec in enumerate(specs):
        if "alias" in spec:
            source = int(spec["alias"])
            args[index], outputs[index] = args[source], buffers[source]
        elif "output" in spec:
            outputs[index] = buffers[index]
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
