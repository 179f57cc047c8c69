"""Status checks: the run-time errors a kernel reports through a status output.

A family lists its status outputs in `KernelFamily.status_checks`; the kernel
always writes them (the ``cross_entropy`` family writes, for its targets,
``[count out of range, first such index, its value]``). After the launches a
backend reads each status and calls `check_statuses`, which raises
`StatusCheckError` for the first launch (in plan order) whose status reports a
problem, naming the graph op and source location behind it (the launch's
provenance) in the words of the numpy reference interpreter::

    graph.cross_entropy at model.mlir:7:11: target 12 at index 3 is out of
    range [0, 10) (2 out of range in all)

Only the standard library is imported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from teeny_ir.backend.plan import BATCH, CollectiveSpec, LaunchSpec, Plan
from teeny_ir.core.expressions import eval_text
from teeny_ir.kernels.contract import StatusCheck
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.runtime.errors import StatusCheckError


def status_tensors(plan: Plan) -> list[tuple[int, str, StatusCheck]]:
    """(launch index, status tensor name, its check) for every status output
    of the plan's launches, in plan order."""
    kernels = {k.name: k for k in plan.kernels}
    found: list[tuple[int, str, StatusCheck]] = []
    for index, launch in enumerate(plan.launches):
        if isinstance(launch, CollectiveSpec):
            continue  # no status output
        family = FAMILIES[kernels[launch.kernel].family]
        for abi, arg in zip(family.args, launch.args, strict=True):
            check = family.status_checks.get(abi.name)
            if check is not None and arg.tensor is not None:
                found.append((index, arg.tensor, check))
    return found


def check_statuses(plan: Plan, statuses: Mapping[str, Sequence[int]], batch: int) -> None:
    """Raise `StatusCheckError` for the first status in ``statuses`` (tensor
    name -> the values the kernel wrote) that reports a problem."""
    kernels = {k.name: k for k in plan.kernels}
    for index, tensor, check in status_tensors(plan):
        launch = plan.launches[index]
        assert isinstance(launch, LaunchSpec)  # status_tensors lists kernel launches
        family = FAMILIES[kernels[launch.kernel].family]
        values = [int(v) for v in statuses[tensor]]
        bindings = {abi.name: arg for abi, arg in zip(family.args, launch.args, strict=True)}
        limit = eval_text(bindings[check.limit].expr or "0", {BATCH: batch})
        problem = _problem(check, values, limit)
        if problem is not None:
            raise StatusCheckError(f"{_where(launch, index, family.name)}: {problem}")


def _problem(check: StatusCheck, values: list[int], limit: int) -> str | None:
    """What an ``index_range`` status says, or None when all is well."""
    if len(values) != 3 or values[0] < 0:
        return f"the kernel did not write its {check.what} status (got {values})"
    count, first, value = values
    if count == 0:
        return None
    return (
        f"{check.what} {value} at index {first} is out of range [0, {limit}) "
        f"({count} out of range in all)"
    )


def _where(launch: LaunchSpec, index: int, family: str) -> str:
    """The graph op(s) behind a launch, with locations; else the launch itself."""
    if not launch.sources:
        return f"launch {index} ('{launch.kernel}', family {family})"
    return ", ".join(f"{s.op} at {s.loc}" if s.loc else s.op for s in launch.sources)
