"""ONNX's backend node tests through the importer: a table by op type and totals.

Every case is imported and run in the reference interpreter
(`teeny_ir.frontend.onnx.conformance`) and classified pass / refused / wrong /
crash under the rule ``|got - ref| <= 1e-4 * max(1, max |ref|)``. With
``--compiled``, each passing case is also compiled with
``teeny-inference{profile=interpreter},emit-triton`` and run through
``teeny_ir.runtime.load(DIR).run`` (Triton's interpreter: slow), and classified
the same way against the expected outputs (a case refused because a weight is a
graph argument is compiled again with its weights fed as constants).

Usage: .venv/bin/python bench/onnx_conformance.py [--compiled] [--only NAME ...] [--verbose]
"""

from __future__ import annotations

import argparse
import collections
import os
import tempfile
import time
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from teeny_ir.frontend.onnx.conformance import Result

STATUSES = ("pass", "refused", "wrong", "crash")


def _close(got: list[np.ndarray], want: list[np.ndarray]) -> str | None:
    from teeny_ir.frontend.onnx.conformance import TOLERANCE, without_specials
    from teeny_ir.testing import compare

    why, got, want = without_specials(got, want)
    if why is not None:
        return why
    comparison = compare(got, want, TOLERANCE)
    return None if comparison.ok else str(comparison.reason)


def _compiled(result: Result, out: str) -> tuple[str, str]:
    """Compile a passing case and run it; its status and why. A case the compiler
    refuses because a weight is a graph argument (a convolution's, a batch
    norm's: kernels read weights through parameter slots) is imported again with
    the inputs after the first fed as constants, and compiled."""
    status, why = _compile_and_run(result, out)
    if status == "refused" and "is not a graph.param" in why:
        from teeny_ir.frontend.onnx.conformance import run_case

        again = run_case(result.case, _close, weights=True)
        if again.status == "pass":
            return _compile_and_run(again, out + "-weights")
    return status, why


def _compile_and_run(result: Result, out: str) -> tuple[str, str]:
    import teeny_ir
    from teeny_ir import runtime

    imported = result.imported
    assert imported is not None  # a passing case
    try:
        module = teeny_ir.parse_module(teeny_ir.print_module(imported.module), filename="m.mlir")
        pipeline = f"teeny-inference{{profile=interpreter}},emit-triton{{out-dir={out}}}"
        teeny_ir.PassManager.parse(pipeline).run(module)
        got = runtime.load(out).run(list(result.feeds), imported.weights)
    except teeny_ir.DiagnosticError as err:
        return "refused", " ".join(str(err).split())
    except Exception as err:  # noqa: BLE001 - a crash is what is being counted
        return "crash", f"{type(err).__name__}: {' '.join(str(err).split())[:300]}"
    why = _close(list(got), result.case.outputs)
    return ("wrong", why) if why is not None else ("pass", "")


def main() -> None:
    """Run the node tests and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compiled", action="store_true", help="also compile passing cases")
    parser.add_argument("--only", nargs="*", help="case names (test_...)")
    parser.add_argument("--verbose", action="store_true", help="print every non-passing case")
    args = parser.parse_args()
    from teeny_ir.frontend.onnx import conformance

    by_op: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    compiled: collections.Counter[str] = collections.Counter()
    started = time.perf_counter()
    compile_seconds = 0.0
    results = []
    for case in conformance.cases(args.only):
        result = conformance.run_case(case, _close)
        results.append(result)
        by_op[case.op_type][result.status] += 1
        if args.verbose and result.status != "pass":
            print(f"{result.status:8} {case.name}: {result.detail}")
        if args.compiled and result.status == "pass":
            t0 = time.perf_counter()
            with tempfile.TemporaryDirectory() as out:
                status, why = _compiled(result, os.path.join(out, "k"))
            compile_seconds += time.perf_counter() - t0
            compiled[status] += 1
            if args.verbose and status != "pass":
                print(f"compiled {status:8} {case.name}: {why}")
    elapsed = time.perf_counter() - started
    print(f"{'op':28}" + "".join(f"{s:>9}" for s in STATUSES))
    for op in sorted(by_op):
        print(f"{op:28}" + "".join(f"{by_op[op][s]:>9}" for s in STATUSES))
    totals: collections.Counter[str] = collections.Counter()
    for counts in by_op.values():
        totals.update(counts)
    print(f"{'total':28}" + "".join(f"{totals[s]:>9}" for s in STATUSES))
    print(f"reference: {len(results)} cases in {elapsed - compile_seconds:.1f} s")
    if args.compiled:
        print(
            "compiled: "
            + ", ".join(f"{s} {compiled[s]}" for s in STATUSES)
            + f" of {totals['pass']} in {compile_seconds:.1f} s"
        )


if __name__ == "__main__":
    main()
