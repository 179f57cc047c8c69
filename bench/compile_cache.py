"""Time a cold and a warm compile of the 64x64 YOLOv8n through the compile cache.

Runs ``teeny-opt -p 'teeny-inference,emit-triton{out-dir=D archs=80,90}'`` on
``examples/yolov8n/yolov8n.mlir`` in fresh processes, each given an empty
``TEENY_CACHE_DIR`` and an empty ``TRITON_CACHE_DIR`` to start with:

1. cold: every variant compiles (``jobs`` at its default, one per CPU);
2. warm: the same again, into a second out-dir - every variant a cache hit
   (``--warm-runs`` times, 3 by default: the figure is the best, all are listed);
3. cold with ``jobs=1`` (fresh, empty caches), for the parallel speed-up.

Prints the times, the warm/cold ratio, whether every output file of every
warm run is byte-identical to the cold run's, and whether a warm run imported
triton. Bars: warm <= 2 s and <= 0.25 x cold, outputs identical,
triton not imported when warm.

Usage: .venv/bin/python bench/compile_cache.py [--model PATH] [--skip-serial]
       [--warm-runs N] [--emit-options 'memory=naive']
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
WARM_BAR = 2.0
RATIO_BAR = 0.25

# The driver's own entry point, then one line on stderr: was triton imported?
DRIVER = (
    "import sys\n"
    "from teeny_ir.driver.opt import main\n"
    "code = main(sys.argv[1:])\n"
    "print('triton-imported:', 'triton' in sys.modules, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def compile_once(model: Path, out: Path, caches: Path, *options: str) -> tuple[float, bool]:
    """Wall time of one teeny-opt run, and whether it imported triton."""
    env = os.environ | {
        "TEENY_CACHE_DIR": str(caches / "teeny"),
        "TRITON_CACHE_DIR": str(caches / "triton"),
    }
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
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="compile-cache-bench.") as temp:
        work = Path(temp)
        extra = f" {args.emit_options}" if args.emit_options else ""
        cold, _ = compile_once(args.model, work / "cold", work / "caches", extra)
        cold_files = files_of(work / "cold")
        warm_times: list[float] = []
        warm_triton, identical = False, True
        for run in range(args.warm_runs):
            out = work / f"warm{run}"
            seconds, imported = compile_once(args.model, out, work / "caches", extra)
            warm_times.append(seconds)
            warm_triton |= imported
            identical &= files_of(out) == cold_files
        warm = min(warm_times)
        serial = None
        if not args.skip_serial:
            serial, _ = compile_once(
                args.model, work / "serial", work / "serial-caches", extra, " jobs=1"
            )
    ratio = warm / cold
    print(
        f"model: {args.model.relative_to(ROOT) if args.model.is_relative_to(ROOT) else args.model}"
    )
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
