"""ONNX's backend node tests through the importer and the reference interpreter.

Every node test onnx ships (`teeny_ir.frontend.onnx.conformance`; about 1900
cases, about 15 s on one core) is imported with the inputs the importer needs
fed as constants, run in the reference interpreter and compared with onnx's
expected outputs (``1e-4 * max(1, max |ref|)``). No case may crash or give a
wrong answer, every other case is refused in one located line, and the number
passing may not drop. ``bench/onnx_conformance.py`` prints the table by op.
"""

from __future__ import annotations

import collections

import numpy as np

from teeny_ir.frontend.onnx import conformance
from teeny_ir.testing import compare

PASSING = 549
"""Cases equal to onnx's expected outputs, measured with onnx 1.23.2 (549 of
1884; most of the rest use integer or low-precision tensors as data, which the
f32 graph dialect does not hold, or ops it lacks: attention, losses, RNNs,
quantisation, strings)."""


def _close(got: list[np.ndarray], want: list[np.ndarray]) -> str | None:
    why, got, want = conformance.without_specials(got, want)
    if why is not None:
        return why
    comparison = compare(got, want, conformance.TOLERANCE)
    return None if comparison.ok else str(comparison.reason)


def test_node_conformance() -> None:
    results = [conformance.run_case(case, _close) for case in conformance.cases()]
    by_status = collections.defaultdict(list)
    for result in results:
        by_status[result.status].append(f"{result.case.name}: {result.detail}")
    assert not by_status["crash"], by_status["crash"]
    assert not by_status["wrong"], by_status["wrong"]
    for line in by_status["refused"]:
        assert "\n" not in line and ": error: " in line, line
    assert len(by_status["pass"]) >= PASSING, len(by_status["pass"])


def test_a_needed_input_is_fed_as_a_constant() -> None:
    # Slice's starts, ends, axes and steps are int64 inputs; Clip's bounds are float
    # scalar inputs, which the importer asks for as constants.
    names = ["test_clip", "test_gemm_all_attributes", "test_slice"]
    results = {case.name: conformance.run_case(case, _close) for case in conformance.cases(names)}
    assert {name: r.status for name, r in results.items()} == dict.fromkeys(names, "pass")
    assert [len(results[name].feeds) for name in names] == [1, 3, 1]
