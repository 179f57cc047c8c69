"""Time a cold and a warm compile of the 64x64 YOLOv8n through the compile cache.

Runs ``teeny-opt -p 'teeny-inference,emit-triton{out-dir=D archs=80,90}'`` on
``examples/yolov8n/yolov8n.mlir`` in fresh processes, each given an empty
``TEENY_CACHE_DIR`` and an empty ``TRITON_CACHE_DIR`` to start with:

1. cold: every variant compiles (``jobs`` at its default, one per CPU);
2. warm: the same again, into a second out-dir - every variant a cache hit
   (``--warm-runs`` times, 3 by default: the figure is the best, all are listed);
3. cold with ``jobs=1`` (fresh, empty caches), for the parallel speed-up.

Prints the machine's load average before and after (the 2 cores are shared:
measure when it is lowest), the times, the warm/cold ratio, whether every
output file of every warm run is byte-identical to the cold run's, and whether
a warm run imported triton. Bars (issue 26): warm <= 1.0 s on a quiet machine
and <= 0.1 x cold, outputs identical, triton not imported when warm.

The compiles keep their Python bytecode in a folder of their own
(``PYTHONPYCACHEPREFIX``), as an installed teeny_ir has it, even where
``PYTHONDONTWRITEBYTECODE`` is set (it is in the shared checkout: every process
would compile teeny_ir's ~200 modules from source, ~0.3 s of a warm compile);
the first, cold, compile writes it. ``--as-is`` keeps the environment's setting.
Where the time goes: ``bench/compile_profile.py``.

Usage: .venv/bin/python bench/compile_cache.py [--model PATH] [--skip-serial]
       [--warm-runs N] [--emit-options 'memory=naive'] [--as-is]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "examples" / "yolov8n" / "yolov8n.mlir"
WARM_BAR = 1.0
RATIO_BAR = 0.1

# The driver's own entry point, then one line on stderr: was triton imported?
DRIVER = (
    "import sys\n"
    "from teeny_ir.driver.opt import main\n"
    "code = main(sys.argv[1:])\n"
    "print('triton-imported:', 'triton' in sys.modules, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def compile_once(
    model: Path, out: Path, caches: Path, pycache: Path | None, *options: str
) -> tuple[float, bool]:
    """Wall time of one teeny-opt run, and whether it imported triton; its
    bytecode kept under ``pycache`` (None: as the environment says)."""
    env = os.environ | {
        "TEENY_CACHE_DIR": str(caches / "teeny"),
        "TRITON_CACHE_DIR": str(caches / "triton"),
    }
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    pipeline = f"teeny-inference,emit-triton{{out-dir={out} archs=80,90{''.join(options)}}}"
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(model), "-p", pipeline, "-o", os.devnull],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"teeny-opt failed ({done.returncode}):\n{done.stderr}")
    return elapsed, "triton-imported: True" in done.stderr


def files_of(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=MODEL)
    parser.add_argument("--warm-runs", type=int, default=3, help="warm runs (best is taken)")
    parser.add_argument("--skip-serial", action="store_true", help="skip the jobs=1 cold run")
    parser.add_argument(
        "--emit-options", default="", help="more emit-triton options, e.g. 'memory=naive'"
    )
    parser.add_argument(
        "--as-is",
        action="store_true",
        help="keep the environment's PYTHONDONTWRITEBYTECODE (no bytecode kept between runs)",
    )
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="compile-cache-bench.") as temp:
        work = Path(temp)
        pycache = None if args.as_is else work / "pycache"
        extra = f" {args.emit_options}" if args.emit_options else ""
        cold, _ = compile_once(args.model, work / "cold", work / "caches", pycache, extra)
        cold_files = files_of(work / "cold")
        warm_times: list[float] = []
        warm_triton, identical = False, True
        for run in range(args.warm_runs):
            out = work / f"warm{run}"
            seconds, imported = compile_once(args.model, out, work / "caches", pycache, extra)
            warm_times.append(seconds)
            warm_triton |= imported
            identical &= files_of(out) == cold_files
        warm = min(warm_times)
        serial = None
        if not args.skip_serial:
            serial, _ = compile_once(
                args.model, work / "serial", work / "serial-caches", pycache, extra, " jobs=1"
            )
    ratio = warm / cold
    print(
        f"model: {args.model.relative_to(ROOT) if args.model.is_relative_to(ROOT) else args.model}"
    )
    print(f"load average (1 min): {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")
    bytecode = "as the environment says" if args.as_is else "kept (PYTHONPYCACHEPREFIX)"
    print(f"bytecode: {bytecode}")
    print(f"output files: {len(cold_files)}")
    print(f"cold (jobs={os.cpu_count()}): {cold:.2f} s")
    if serial is not None:
        print(f"cold (jobs=1): {serial:.2f} s  (parallel speed-up {serial / cold:.2f}x)")
    print(f"warm: {warm:.2f} s  (best of {', '.join(f'{t:.2f}' for t in warm_times)})")
    print(f"ratio warm/cold: {ratio:.3f}")
    print(f"identical: {'yes' if identical else 'no'}")
    print(f"triton imported when warm: {'yes' if warm_triton else 'no'}")
    ok = warm <= WARM_BAR and ratio <= RATIO_BAR and identical and not warm_triton
    print(
        f"bar (warm <= {WARM_BAR} s, <= {RATIO_BAR} x cold, identical, no triton): "
        + ("PASS" if ok else "FAIL")
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
