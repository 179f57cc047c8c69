"""The divergence finder: the first launch whose output leaves the reference.

`first_divergence` runs a plan with every launch's outputs kept (`trace`) and
the graph module it was compiled from in the numpy reference interpreter with
every op's results kept, then walks the launches in order. A launch's
provenance (``sources``: the graph ops it implements, with their locations)
names the graph op whose results its outputs are - found by source position,
since passes may rename an op they rewrite (a plain ``graph.conv2d`` runs as a
``graph.fused_conv2d``) - the last of its sources in the module's order (a fused convolution's outputs are the values of its last
op, the activation or the residual add). Outputs and reference results are
compared with the tolerance rule of `teeny_ir.testing` (1e-4 · max(1,
max|ref|)), NaN and inf where the reference has them. ``teeny-run
--compare-reference GRAPH.mlir`` prints the report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from teeny_ir.backend.plan import CollectiveSpec
from teeny_ir.testing import REDUCTION_TOL

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Operation

    from teeny_ir.runtime import Executable


@dataclass(frozen=True)
class Divergence:
    """One launch output that leaves the reference."""

    launch: int
    kernel: str
    family: str
    output: int
    reason: str
    sources: tuple[tuple[str, str], ...]

    def describe(self) -> str:
        ops = ", ".join(f"{op} at {loc}" if loc else op for op, loc in self.sources)
        return (
            f"launch {self.launch} ('{self.kernel}', family {self.family}) diverges from the "
            f"reference at output {self.output}: {self.reason}; it implements {ops}"
        )


@dataclass
class Report:
    """What the comparison found: the first divergence, or none."""

    compared: int = 0
    """Launches whose outputs were compared."""
    skipped: list[int] = field(default_factory=list[int])
    """Launches with no graph op to compare with (no provenance in the module)."""
    divergence: Divergence | None = None
    outputs: list[np.ndarray] = field(default_factory=list[np.ndarray])
    """The plan's results, as `Executable.run` returns them."""

    def describe(self) -> str:
        if self.divergence is not None:
            return self.divergence.describe()
        skipped = f" ({len(self.skipped)} without provenance skipped)" if self.skipped else ""
        return f"no launch diverges from the reference: {self.compared} compared{skipped}"


def _position(loc: str) -> tuple[int, int] | None:
    """``file:line:col`` -> (line, col); the file may be spelt differently."""
    parts = loc.rsplit(":", 2)
    # isascii: isdigit() holds for any Unicode digit, which int() may not read ("²").
    if len(parts) != 3 or not all(p.isascii() and p.isdigit() for p in parts[1:]):
        return None
    return int(parts[1]), int(parts[2])


def _mismatch(got: np.ndarray, want: np.ndarray, tol: float) -> str | None:
    """Why ``got`` is not ``want`` within the rule, or None."""
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, the reference's {list(want.shape)}"
    got64, want64 = got.astype(np.float64), want.astype(np.float64)
    for name, test in (("NaN", np.isnan), ("+inf", np.isposinf), ("-inf", np.isneginf)):
        if not np.array_equal(test(got64), test(want64)):
            return f"{name} at other elements than the reference's"
    finite = np.isfinite(want64)
    if not finite.any():
        return None
    error = float(np.max(np.abs(got64[finite] - want64[finite])))
    bound = tol * max(1.0, float(np.max(np.abs(want64[finite]))))
    if not error <= bound:
        return f"max|got-ref| = {error:.3g} > {bound:.3g}"
    return None


def first_divergence(
    executable: Executable,
    module: ModuleOp,
    weights: Mapping[str, Any],
    inputs: Sequence[np.ndarray],
    tol: float = REDUCTION_TOL,
) -> Report:
    """Run the plan and the reference; the first launch that diverges (or none)."""
    from teeny_ir import reference
    from teeny_ir.core.diagnostics import loc_of

    trace: dict[int, list[np.ndarray]] = {}
    outputs = executable.run(inputs, weights, trace=trace)
    results: dict[tuple[int, int], tuple[int, list[np.ndarray]]] = {}
    order: list[Operation] = []

    def keep(op: Operation, values: list[np.ndarray]) -> None:
        where = loc_of(op)
        if where is not None:
            results.setdefault((where.line, where.col), (len(order), values))
        order.append(op)

    reference.run(module, weights, inputs, trace=keep)
    report = Report(outputs=outputs)
    kernels = {kernel.name: kernel for kernel in executable.plan.kernels}
    for index, launch in enumerate(executable.plan.launches):
        if isinstance(launch, CollectiveSpec):
            report.skipped.append(index)  # a collective: checked through its readers
            continue
        keys = [
            position
            for source in launch.sources
            if (position := _position(source.loc)) is not None
        ]
        found = [results[key] for key in keys if key in results]
        if not found:
            report.skipped.append(index)
            continue
        _, values = max(found, key=lambda entry: entry[0])
        report.compared += 1
        for k, (got, want) in enumerate(zip(trace.get(index, []), values, strict=False)):
            reason = _mismatch(got, want, tol)
            if reason is not None:
                report.divergence = Divergence(
                    index,
                    launch.kernel,
                    kernels[launch.kernel].family,
                    k,
                    reason,
                    tuple((s.op, s.loc) for s in launch.sources),
                )
                return report
    return report
