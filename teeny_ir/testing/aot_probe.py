"""Compile kernel variants ahead of time in a process of their own and report
what each cubin is, for the kernel tests' AOT checks.

A test process may have Triton's interpreter switched on (it is fixed at
``import triton``), so `probe` compiles in a fresh ``python -m
teeny_ir.testing.aot_probe`` process: each variant ``(constexprs, num_warps,
num_stages, arch)`` of one family is rendered into the test's folder, compiled
with `teeny_ir.backend.aot.compile_all` (one worker) and checked against its
target's shared memory (`teeny_ir.backend.aot.check_shared`). Each result says
the architecture, warps and stages compiled, whether the PTX targets the arch,
whether the cubin is an ELF file, the kernel entry's ``.param`` count, the
shared memory, whether it multiplies on tensor cores and the PTX's lines.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

Variant = tuple[Mapping[str, int | str], int, int, int]
"""``(constexprs, num_warps, num_stages, arch)``."""


def probe(family: str, variants: Sequence[Variant], directory: Path) -> list[dict[str, Any]]:
    """Each variant of ``family`` compiled in a fresh process (`main`), its
    report in order; AssertionError with the process's stderr if it fails."""
    done = subprocess.run(
        [sys.executable, "-m", __name__, family, str(directory), json.dumps(list(variants))],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    found: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def main(argv: Sequence[str]) -> int:
    from teeny_ir.backend import aot
    from teeny_ir.kernels.families import FAMILIES
    from teeny_ir.kernels.render import render

    name, directory, variants = argv[0], Path(argv[1]), json.loads(argv[2])
    family = FAMILIES[name]
    jobs = []
    for index, (constexprs, warps, stages, arch) in enumerate(variants):
        kernel = f"{name}_{index}"
        path = directory / f"{kernel}.py"
        path.write_text(render(family, kernel, constexprs))
        jobs.append(aot.Job(path, kernel, family, constexprs, arch, warps, stages))
    found = []
    for job, compiled in zip(jobs, aot.compile_all(jobs, workers=1), strict=True):
        aot.check_shared(compiled)
        entry = compiled.ptx[compiled.ptx.index(f".entry {job.kernel_name}") :]
        found.append(
            {
                "arch": compiled.arch,
                "warps": compiled.num_warps,
                "stages": compiled.num_stages,
                "target": f".target sm_{job.arch}" in compiled.ptx,
                "elf": compiled.cubin[:4] == b"\x7fELF",
                "params": entry[: entry.index(")")].count(".param"),
                "shared": compiled.shared,
                "mma": bool(re.search(r"\bmma\.sync|wgmma", compiled.ptx)),
                "lines": compiled.ptx.count("\n"),
            }
        )
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
