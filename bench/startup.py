"""Start-up time of teeny-opt against stock xdsl-opt on the same tiny file.

Stock xdsl-opt runs from an environment holding only ``xdsl==0.75.0``
(``bench/.venv-xdsl``, created on first use), so neither tool benefits from
the other's imports. Both run interleaved, 10 times each after one warm-up;
the figures are medians of wall time. Bars: teeny-opt <= 1.1x xdsl-opt and
<= 0.27 s.

Usage: .venv/bin/python bench/startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STOCK_ENV = ROOT / "bench" / ".venv-xdsl"
TINY = """func.func @tiny(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  func.return %0 : i32
}
"""


def _stock_xdsl_opt() -> Path:
    exe = STOCK_ENV / "bin" / "xdsl-opt"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(STOCK_ENV)], check=True)
        subprocess.run(
            [str(STOCK_ENV / "bin" / "pip"), "install", "-q", "xdsl==0.75.0"], check=True
        )
        subprocess.run(
            [
                str(STOCK_ENV / "bin" / "python"),
                "-m",
                "compileall",
                "-q",
                str(next((STOCK_ENV / "lib").glob("python*/site-packages"))),
            ],
            check=True,
        )
    return exe


def _time(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()

    tiny = ROOT / "bench" / "tiny.mlir"
    tiny.write_text(TINY)
    teeny = [str(Path(sys.executable).parent / "teeny-opt"), str(tiny)]
    stock = [str(_stock_xdsl_opt()), str(tiny)]
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")

    for cmd in (teeny, stock):  # warm the page cache
        _time(cmd)
    teeny_times: list[float] = []
    stock_times: list[float] = []
    for _ in range(args.runs):
        teeny_times.append(_time(teeny))
        stock_times.append(_time(stock))
    tiny.unlink()

    teeny_median = statistics.median(teeny_times)
    stock_median = statistics.median(stock_times)
    ratio = teeny_median / stock_median
    print(f"teeny-opt median of {args.runs}: {teeny_median:.3f} s")
    print(f"xdsl-opt  median of {args.runs}: {stock_median:.3f} s (stock, xdsl==0.75.0 only)")
    print(f"ratio: {ratio:.3f} (bar <= 1.1); teeny-opt bar <= 0.27 s")
    ok = ratio <= 1.1 and teeny_median <= 0.27
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
