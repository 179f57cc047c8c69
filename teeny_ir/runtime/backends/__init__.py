"""Where a validated plan runs: the `Backend` protocol and the registry `BACKENDS`.

`teeny_ir.runtime.Executable.run` validates the plan, the inputs and the
weights and binds the parameters; a backend then only executes the launches.
``teeny-run --backend`` takes its choices from `BACKENDS`, so a backend added
here is selectable without touching the command line.

- ``interpreter`` (`teeny_ir.runtime.backends.interpreter`): Triton's
  interpreter on torch CPU tensors, in a worker process.
- ``cuda`` (`teeny_ir.runtime.backends.cuda`): the plan's AOT cubins on a
  GPU through cuda-python's driver API (imported lazily, by that backend only).

Importing this package imports neither numpy, torch, triton nor cuda-python.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from teeny_ir.runtime.backends.cuda import CudaBackend
from teeny_ir.runtime.backends.interpreter import InterpreterBackend
from teeny_ir.runtime.errors import BackendUnavailableError, RuntimeInputError

if TYPE_CHECKING:
    import numpy as np

    from teeny_ir.backend.plan import Plan

__all__ = ["BACKENDS", "Backend", "Progress", "Session", "usable_backend"]

Progress = Callable[[int, int], None]
"""A progress callback: (launches done, launches in all)."""


class Session(Protocol):
    """A plan kept loaded between runs (a trainer's steps): the interpreter's
    worker process, or the cuda backend's modules, arena and stream."""

    def run(
        self,
        tensors: Mapping[str, np.ndarray],
        batch: int,
        *,
        spans: list[tuple[int, int]] | None = None,
    ) -> list[np.ndarray]:
        """One run of the plan, as `Backend.run` (``tensors`` by plan name, every
        parameter included: a session uploads them again on each run, since a
        trainer's parameters change between steps; ``spans`` as there). A
        `StatusCheckError` leaves the session usable."""
        ...

    def close(self) -> None:
        """Free what the session holds (idempotent)."""
        ...


class Backend(Protocol):
    """One way of executing a validated plan."""

    @property
    def name(self) -> str:
        """The name ``--backend`` and ``Executable.run(backend=...)`` take."""
        ...

    @property
    def description(self) -> str:
        """A short phrase for ``teeny-run --help``."""
        ...

    def available(self) -> str | None:
        """None when the backend can run on this machine, else one sentence
        saying why not. Never raises; may be slow (it may probe a driver)."""
        ...

    def run(
        self,
        directory: Path,
        plan: Plan,
        tensors: Mapping[str, np.ndarray],
        batch: int,
        times: dict[str, float],
        progress: Progress | None = None,
        trace: dict[int, list[np.ndarray]] | None = None,
        spans: list[tuple[int, int]] | None = None,
    ) -> list[np.ndarray]:
        """Execute ``plan`` (loaded from ``directory``) at batch size ``batch``.

        ``tensors`` holds the inputs and the bound parameters, keyed by their
        plan names (``in0``, ``p0``); they have been checked against the plan.
        Returns the outputs in the plan's return order and adds stage times in
        seconds to ``times``. ``progress``, when given, is called with (launches
        done, launches in all) as the run advances (at least once, at the end).
        ``trace``, when given, gets launch index -> that launch's distinct
        output tensors after it ran (the divergence finder reads them).
        ``spans``, when given, gets each launch's (start, duration) in
        nanoseconds, in plan order (`teeny_ir.runtime.profile.Profile.fill`
        makes the records): the interpreter's ``perf_counter_ns`` around each
        kernel call, the cuda backend's CUDA events around each launch.
        Raises `BackendUnavailableError` when it cannot
        run at all, `WorkerError` when a launch fails.
        """
        ...

    def session(self, directory: Path, plan: Plan, *, collective: Any = None) -> Session:
        """A `Session` of ``plan`` (loaded from ``directory``) for repeated runs;
        ``collective`` (a `teeny_ir.runtime.distributed.ProcessGroup`) runs its
        collectives over more than one rank (a plan that has some needs it)."""
        ...


BACKENDS: Mapping[str, Backend] = {
    backend.name: backend for backend in (InterpreterBackend(), CudaBackend())
}
"""Every backend by name; the interpreter, the default, first."""


def usable_backend(name: str) -> Backend:
    """The backend called ``name``; raises `RuntimeInputError` for an unknown
    name and `BackendUnavailableError` (with `Backend.available`'s sentence)
    for one that cannot run here."""
    backend = BACKENDS.get(name)
    if backend is None:
        raise RuntimeInputError(f"unknown backend '{name}' (valid: {', '.join(BACKENDS)})")
    problem = backend.available()
    if problem is not None:
        raise BackendUnavailableError(problem)
    return backend
