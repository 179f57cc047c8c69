"""Where a YOLOv8n compile spends its time: the warm path (every variant a
compile-cache hit) and, with ``--cold``, the cold one.

Runs ``teeny-opt -p 'teeny-inference,emit-triton{out-dir=D archs=80,90}'`` on
``examples/yolov8n/yolov8n.mlir`` (64x64) in fresh processes with their own
``TEENY_CACHE_DIR`` and ``TRITON_CACHE_DIR``:

1. one cold compile (default ``jobs``: one worker per CPU) fills the caches;
   its wall time, and the CPU time of it and its workers, are printed;
2. ``--runs`` warm compiles (3 by default): the best wall and CPU time;
3. one warm compile under cProfile: the time of each stage below (cumulative,
   as the profiler sees it: Python-heavy stages look slower than they run);
4. with ``--cold``: a cold compile with ``jobs=1`` under cProfile (all of AOT
   in this one process, about a minute), by Triton stage.

Stages overlap where one calls another (the kernel dialect's verifier calls
the contract validator; ``load_plan`` runs jsonschema and the validator), so
the shares do not add up to 100%.

Measured on the shared 2-core machine (other sessions' tests running; the
load average from ``uptime``), YOLOv8n 64x64, Triton 3.9.0, bytecode kept.

Cold compile, ``--runs 2``: "before" has 17 variants x 2 archs = 34 cubins;
"after" makes the convolution families' ``HAS_RESIDUAL`` a runtime i32
argument instead of a constexpr (a tile with and without the fused residual
add is one variant: 4 implicit_gemm_conv variants go) and gives the 3-channel
stem (K = 27) one K step of BLOCK_K = 32 instead of two of 16 (it then shares
its variant with a K >= 128 layer: one more goes), 12 variants x 2 = 24
cubins. Four interleaved before/after pairs at load 0.8-1.4 (a quieter
before, at load 0.4: 18.44 s, 34.5 CPU-s, warm 0.80 s):

    ===============================  ======================  ======================
    cold compile, jobs=2             before (34 cubins)      after (24 cubins)
    ===============================  ======================  ======================
    wall                             16.5-20.7 s (med 18.4)  13.1-14.6 s (med 14.3)
    CPU, with workers                30.6-38.8 s (med 34.3)  23.8-26.8 s (med 26.0)
    warm wall (best of 2)            0.84-0.90 s             0.81-0.93 s
    triton.compile, one process      33.3-37.8 s (3 runs)    23.8-27.7 s (3 runs)
    ===============================  ======================  ======================

(the last row: `aot.compile_variant` of every cubin of the emitted plan, one
after the other in one process). The 8 residual cubins and the stem's BLOCK_K
= 16 pair are ~14 s of the sequential before; a remaining convolution cubin
grows by 0-0.5 s with the runtime branch (an implicit_gemm_conv one costs
about what its constexpr residual twin did), ~3 s in all, well under what the
10 cubins fewer save.

What is left (24 cubins, ~24 CPU-s one after another): the implicit_gemm_conv
tiles 128x16, 128x32, 64x32, 64x64 and 64x128 (x 32, 2 stages) ~13 s,
conv1x1_gemm's five (including the one without an activation) ~9 s, the SPPF
max-pool and the upsample ~1.6 s. Halving the cold compile from here needs
fewer or cheaper GEMM variants: a smaller tile menu, or 1 stage instead of 2
(measured: ~30% less compile time per variant). Both change the kernels' speed
on a GPU, which this machine cannot measure, so neither is made.

Warm compile, cProfile: "before" is the tree before issue 26's compile-time
work, "after" with it, run back to back (load ~3; 17 variants):

    ===================================  ========  ========
    warm compile, cProfile, cumulative   before    after
    ===================================  ========  ========
    whole run (profiled)                 6.08 s    3.64 s
    pass pipeline                        4.68 s    2.40 s
    contract validator                   2.20 s    0.46 s
      6656 batch-by-batch proofs         2.15 s    -
      104 symbolic proofs                -         0.43 s
      (of which implied dims per batch)  0.36 s    0.29 s
    xDSL verification (verify-each)      1.46 s    0.76 s
    lower-graph-to-kernel                1.67 s    0.66 s
    emit-triton                          1.60 s    0.98 s
      draft plan schema check            0.64 s    0.11 s
      load_plan (jsonschema: plan.py's)  0.61 s    0.66 s
    jsonschema, both checks              0.94 s    0.48 s
    imports (all, nested)                0.83 s    0.71 s
    parse                                0.40 s    0.32 s
    ===================================  ========  ========

Unprofiled, interleaved before/after runs (same machine state): the warm
compile's CPU time falls by about a third (best wall 1.92 s -> 1.20 s at load
0.5, 2.29 s -> 1.58 s at load 3); the largest items left are imports (xdsl,
the dialects), xDSL's verification after every pass, ``load_plan``'s jsonschema
pass (``teeny_ir/backend/plan.py``, ~0.15 s CPU and ~40 ms of import; the
compiled check ``collect.fits_schema`` would serve it too), parsing and
printing the output module.

Cold compile, jobs=1, cProfile (before; the work of AOT did not change):

    ==================================  =====================================
    stage                               share of triton.compile (72.7 s)
    ==================================  =====================================
    ptxas (make_cubin, a subprocess)    40%  (0.86 s per cubin)
    make_llir (TTGIR -> LLVM IR)        29%  (0.62 s)
    make_ttgir                          12%  (0.25 s)
    make_ptx (LLVM NVPTX)               10%  (0.21 s)
    make_ir: ast_to_ttir + make_ttir     5%  (0.11 s)
    Triton cache writes, kernel import   3%
    ==================================  =====================================

Everything in that table is Triton's and ptxas's own work on distinct
variants (no two of YOLOv8n's 17, now 12, share constexprs), and the emitted
bytes must stay identical, so the cold compile is bounded below by that CPU
time over the cores: ~39 CPU-s in all, ~20 s on 2 quiet cores, before the
residual flag became a runtime argument (~26 CPU-s and ~14 s after). What teeny_ir adds -
the front end (the warm compile, above), worker start-up (~0.5 s a worker,
in parallel) and the pool's order (now largest tiles first; YOLOv8n's own
order already left almost no tail) - is a few percent of it.

Usage: .venv/bin/python bench/compile_profile.py [--runs N] [--cold] [--top N]
"""

from __future__ import annotations

import argparse
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "examples" / "yolov8n" / "yolov8n.mlir"

STAGES: list[tuple[str, str, str]] = [
    ("whole run", "teeny_ir/driver/opt.py", "run"),
    ("imports (all, nested)", "<frozen importlib._bootstrap>", "_find_and_load"),
    ("parse", "teeny_ir/ir/parsing.py", "parse_source"),
    ("pass pipeline", "teeny_ir/driver/pass_manager.py", "run"),
    ("xDSL verification (verify-each)", "teeny_ir/ir/verifier.py", "verify_ops"),
    ("kernel.launch verifier", "dialects/kernel/ops.py", "check_plan"),
    ("contract validator", "teeny_ir/kernels/validator.py", "_validate"),
    ("  symbolic proofs", "teeny_ir/kernels/validator.py", "_proven_over_range"),
    ("    implied dims, every batch", "teeny_ir/kernels/validator.py", "_implied_over"),
    ("  batch-by-batch proofs", "teeny_ir/kernels/validator.py", "_prove_at"),
    ("    implied dims", "teeny_ir/kernels/validator.py", "_check_implied"),
    ("lower-graph-to-kernel", "passes/lower_graph_to_kernel.py", "apply"),
    ("emit-triton", "passes/emit_triton.py", "apply"),
    ("  collect", "teeny_ir/backend/collect.py", "collect"),
    ("  draft plan schema check", "teeny_ir/backend/collect.py", "check_schema"),
    ("  render + cache lookups", "teeny_ir/backend/emit.py", "_write_kernels"),
    ("  cache lookups", "teeny_ir/backend/emit.py", "_compile_variants"),
    ("  write_plan", "teeny_ir/backend/plan.py", "write_plan"),
    ("  load_plan", "teeny_ir/backend/plan.py", "load_plan"),
    ("jsonschema (all)", "jsonschema/validators.py", "iter_errors"),
    ("triton.compile", "triton/compiler/compiler.py", "compile"),
    ("  ast_to_ttir", "triton/compiler/code_generator.py", "ast_to_ttir"),
    ("  make_ttir", "triton/backends/nvidia/compiler.py", "make_ttir"),
    ("  make_ttgir", "triton/backends/nvidia/compiler.py", "make_ttgir"),
    ("  make_llir", "triton/backends/nvidia/compiler.py", "make_llir"),
    ("  make_ptx", "triton/backends/nvidia/compiler.py", "make_ptx"),
    ("  make_cubin (ptxas)", "triton/backends/nvidia/compiler.py", "make_cubin"),
    ("  Triton cache writes", "triton/runtime/cache.py", "put"),
]
"""(label, file suffix, function) of each stage reported."""


def _pipeline(out: Path, jobs: str = "") -> str:
    return f"teeny-inference,emit-triton{{out-dir={out} archs=80,90{jobs}}}"


def _env(caches: Path, pycache: Path | None) -> dict[str, str]:
    """The compile's environment: its caches, and (``pycache``) bytecode kept
    under that folder, as an installed package has it, even where
    ``PYTHONDONTWRITEBYTECODE`` is set (it is in the shared checkout, where
    every process would otherwise compile teeny_ir's ~200 modules afresh,
    ~0.3 s of CPU)."""
    env = os.environ | {
        "TEENY_CACHE_DIR": str(caches / "teeny"),
        "TRITON_CACHE_DIR": str(caches / "triton"),
    }
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def _opt(
    model: Path, out: Path, caches: Path, pycache: Path | None, *prefix: str, jobs: str = ""
) -> tuple[float, float]:
    """Wall and CPU seconds (this child and its workers) of one teeny-opt run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    command = [sys.executable, *prefix, "-m", "teeny_ir.driver.opt", str(model)]
    done = subprocess.run(
        [*command, "-p", _pipeline(out, jobs), "-o", os.devnull],
        env=_env(caches, pycache),
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"teeny-opt failed ({done.returncode}):\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _rows(profile: Path) -> list[tuple[str, str, int, int, float, float]]:
    """(file, function, line, calls, own s, cumulative s) of every profiled function."""
    # pstats keeps its table in an attribute its stubs do not declare (and
    # get_stats_profile() keys it by bare function name, so "apply"s collide)
    table: dict[tuple[str, int, str], tuple[int, int, float, float, object]]
    table = vars(pstats.Stats(str(profile)))["stats"]
    return [
        (filename, name, line, calls, own, cumulative)
        for (filename, line, name), (_, calls, own, cumulative, _) in table.items()
    ]


def _stages(rows: list[tuple[str, str, int, int, float, float]]) -> list[tuple[str, float, int]]:
    """(label, cumulative seconds, calls) of each stage found in ``rows``."""
    found: list[tuple[str, float, int]] = []
    for label, suffix, function in STAGES:
        matches = [r for r in rows if r[1] == function and r[0].endswith(suffix)]
        if matches:
            found.append((label, sum(r[5] for r in matches), sum(r[3] for r in matches)))
    return found


def _print_profile(title: str, profile: Path, top: int) -> None:
    print(f"\n{title}")
    rows = _rows(profile)
    stages = _stages(rows)
    whole = next((seconds for label, seconds, _ in stages if label == "whole run"), 0.0)
    for label, seconds, calls in stages:
        share = f"{100 * seconds / whole:5.1f}%" if whole else ""
        print(f"  {label:36s} {seconds:8.3f} s {share}  ({calls} calls)")
    if top:
        print(f"\n  top {top} by own time:")
        for filename, name, line, calls, own, cumulative in sorted(rows, key=lambda r: -r[4])[:top]:
            where = filename.replace(str(ROOT) + "/", "").split("site-packages/")[-1]
            print(
                f"    {own:7.3f} s own {cumulative:7.3f} s cum {calls:7d}x  {where}:{line}({name})"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=MODEL)
    parser.add_argument("--runs", type=int, default=3, help="warm runs (the best is taken)")
    parser.add_argument("--cold", action="store_true", help="also profile a jobs=1 cold compile")
    parser.add_argument("--top", type=int, default=15, help="functions listed by own time")
    parser.add_argument(
        "--as-is",
        action="store_true",
        help="keep the environment's PYTHONDONTWRITEBYTECODE (no bytecode kept between runs)",
    )
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="compile-profile.") as temp:
        work = Path(temp)
        pycache = None if args.as_is else work / "pycache"
        wall, cpu = _opt(args.model, work / "cold", work / "caches", pycache)
        print(f"cold (jobs={os.cpu_count()}): {wall:.2f} s wall, {cpu:.2f} s CPU with workers")
        warm = [
            _opt(args.model, work / f"warm{i}", work / "caches", pycache) for i in range(args.runs)
        ]
        print(
            f"warm: best {min(w for w, _ in warm):.2f} s wall, {min(c for _, c in warm):.2f} s CPU "
            f"(walls {', '.join(f'{w:.2f}' for w, _ in warm)})"
        )
        profile = work / "warm.prof"
        _opt(
            args.model,
            work / "warm-profiled",
            work / "caches",
            pycache,
            "-m",
            "cProfile",
            "-o",
            str(profile),
        )
        _print_profile("warm compile under cProfile:", profile, args.top)
        if args.cold:
            profile = work / "cold.prof"
            wall, cpu = _opt(
                args.model,
                work / "cold-profiled",
                work / "cold-caches",
                pycache,
                "-m",
                "cProfile",
                "-o",
                str(profile),
                jobs=" jobs=1",
            )
            _print_profile(
                f"cold compile, jobs=1, under cProfile ({wall:.1f} s):", profile, args.top
            )
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
