"""The runtime: load a launch plan and run it on arrays.

``load(DIR).run(inputs, weights)`` checks everything before any launch - the
backend (`teeny_ir.runtime.backends.usable_backend`), the plan
(`teeny_ir.backend.plan.load_plan`), the inputs (count, float32 or int64, rank, static
dims, one batch ``B >= 1``, every shape, grid and argument expression
evaluable and in range at that ``B``) and the weights (every missing or
mis-shaped one named in one error) - binds the parameters through
`teeny_ir.core.derivations.evaluate` (weights that give a non-finite
parameter, such as a negative running variance, are a `RuntimeInputError`
naming them), and then hands the work to the backend
(`teeny_ir.runtime.backends`: ``interpreter``, the default, runs Triton's
interpreter in a worker process; ``cuda`` runs the plan's cubins on a GPU
through cuda-python).

``load(DIR).session(weights, backend=...)`` is a `RunSession`: the weights
checked and bound once, then ``.run(inputs)`` as often as needed (each checks
its inputs as above), in one session of the backend: the interpreter's worker
process, or on the cuda backend the modules, the parameters, the arena and the
stream loaded once. ``graphs=True`` (cuda only) replays one CUDA graph per
batch size instead of launching each kernel
(`teeny_ir.runtime.backends.cuda.CudaSession.graph`); it is off by default.

A run can be profiled: ``run(inputs, weights, profile=Profile())`` (and
``RunSession.run(inputs, profile=...)``) fills the `Profile` given with one
`LaunchRecord` per launch in plan order (kernel, family, graph ops, grid,
start, duration, bytes read and written; `teeny_ir.runtime.profile`,
docs/profiling.md); the outputs are the same as without it.

A data-parallel training plan (``teeny-training{world=N}``: collectives
over N ranks) runs only through ``load(DIR).trainer(weights, group=...)`` on
each rank (`teeny_ir.runtime.trainer`, docs/distributed.md); ``run`` and
``session`` refuse it in one line naming its first collective's graph op.

Weights that the plan never reads are reported in one `UnusedWeightsWarning`
(``teeny-run`` prints it as one ``warning:`` line); PyTorch's
``num_batches_tracked`` counters are not reported.

Importing this module imports neither numpy, torch nor triton.
"""

from __future__ import annotations

import os
import re
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from teeny_ir.backend.plan import BATCH, Plan, PlanError, check_at_batch, is_batch_dim, load_plan
from teeny_ir.core.derivations import DerivationError, evaluate
from teeny_ir.core.expressions import ExpressionError, eval_text
from teeny_ir.runtime.backends import BACKENDS, Backend, usable_backend
from teeny_ir.runtime.backends.cuda import CudaBackend
from teeny_ir.runtime.distributed import check_no_group_needed
from teeny_ir.runtime.errors import (
    ArenaAllocationError,
    BackendUnavailableError,
    CollectiveError,
    DivergenceError,
    RuntimeInputError,
    StatusCheckError,
    UnusedWeightsWarning,
    WorkerError,
)
from teeny_ir.runtime.profile import LaunchRecord, Profile

if TYPE_CHECKING:
    import numpy as np

    from teeny_ir.runtime.backends import Session
    from teeny_ir.runtime.trainer import Trainer

__all__ = [
    "BACKENDS",
    "ArenaAllocationError",
    "Backend",
    "BackendUnavailableError",
    "CollectiveError",
    "DivergenceError",
    "Executable",
    "LaunchRecord",
    "PlanError",
    "Profile",
    "RunSession",
    "RuntimeInputError",
    "StatusCheckError",
    "UnusedWeightsWarning",
    "WorkerError",
    "load",
    "read_weights",
    "usable_backend",
]


def load(directory: str | os.PathLike[str]) -> Executable:
    """Load and validate the plan in ``directory`` (raises `PlanError`)."""
    given = os.fspath(directory)
    try:
        root = Path(given).resolve()
        is_file = root.exists() and not root.is_dir()
    except (OSError, ValueError) as err:
        raise PlanError(f"cannot read plan directory '{given}': {_reason(err)}") from None
    if is_file and root.name == "plan.json":
        raise PlanError(
            f"'{given}' is the plan file; give its directory '{os.path.dirname(given) or '.'}'"
        )
    if is_file:
        raise PlanError(f"'{given}' is a file, not a plan directory (the out-dir of emit-triton)")
    if not root.exists():
        raise PlanError(f"plan directory '{given}' does not exist")
    return Executable(root, load_plan(root))


_UNUSED_SHOWN = 8
"""How many unused weight names the warning lists before '... and N more'."""
_NOT_WEIGHTS = re.compile(r"(.*\.)?num_batches_tracked")
"""PyTorch's batch-norm step counters: in every state dict, never inference weights."""


@dataclass(frozen=True)
class Executable:
    """A validated plan, ready to run on inputs and weights."""

    directory: Path
    plan: Plan

    def run(
        self,
        inputs: Sequence[np.ndarray],
        weights: Mapping[str, Any] | str | os.PathLike[str],
        backend: str = "interpreter",
        timings: dict[str, float] | None = None,
        progress: Callable[[int, int], None] | None = None,
        trace: dict[int, list[np.ndarray]] | None = None,
        graphs: bool = False,
        profile: Profile | None = None,
    ) -> list[np.ndarray]:
        """Run the plan; outputs in return order. ``weights`` maps state-dict names
        to arrays, or is the path of a ``.safetensors`` file; ``backend`` names an
        entry of `BACKENDS`. Stage times in seconds are added to ``timings`` when
        given; ``progress`` is called with (launches done, launches in all) as
        the run advances; ``trace`` gets each launch's outputs (by launch
        index). ``graphs`` (cuda only): the launches captured as one CUDA graph
        and replayed once, a check of the graph path (`session` replays it
        many times; with a ``trace`` or a ``profile`` the launches go one by
        one). ``profile``: a `Profile` that the run fills with one
        `LaunchRecord` per launch (what it held before is replaced).
        Raises `RuntimeInputError` (`BackendUnavailableError` for a backend
        that cannot run here) before any launch, `StatusCheckError` (a
        `RuntimeInputError`) when a kernel reports bad input data through a
        status output (`teeny_ir.runtime.checks`), `WorkerError` when one fails."""
        times: dict[str, float] = {} if timings is None else timings
        start = time.perf_counter()
        chosen = usable_backend(backend)
        _check_graphs(chosen, graphs)
        check_no_group_needed(self.plan)
        batch = self.check_inputs(inputs)
        self.check_batch(batch)
        if isinstance(weights, str | os.PathLike):
            weights = read_weights(weights)
        self.check_weights(weights)
        unused = self.unused_weights(weights)
        if unused:
            warnings.warn(UnusedWeightsWarning(_unused_message(unused)), stacklevel=2)
        times["validate"] = time.perf_counter() - start
        start = time.perf_counter()
        params = self.bind_parameters(weights)
        times["bind parameters"] = time.perf_counter() - start
        tensors = {spec.name: array for spec, array in zip(self.plan.inputs, inputs, strict=True)}
        spans: list[tuple[int, int]] | None = None if profile is None else []
        plan = self.plan
        args = (self.directory, plan, tensors | params, batch, times, progress, trace)
        if graphs and isinstance(chosen, CudaBackend):
            outputs = chosen.run(*args, spans=spans, graphs=True)
        elif spans is None:  # a backend that cannot profile runs as it always did
            outputs = chosen.run(*args)
        else:
            outputs = chosen.run(*args, spans=spans)
        if profile is not None and spans is not None:
            profile.fill(plan, batch, chosen.name, spans)
        return outputs

    def session(
        self,
        weights: Mapping[str, Any] | str | os.PathLike[str],
        backend: str = "interpreter",
        graphs: bool = False,
    ) -> RunSession:
        """A `RunSession` of this plan: ``weights`` (a mapping, or a
        ``.safetensors`` path) checked and bound once, then ``.run(inputs)``
        again and again on ``backend``; ``graphs`` (cuda only): each run
        replays its batch size's CUDA graph. Close it (or use it as a context
        manager) to end the backend's session."""
        return RunSession(self, weights, backend, graphs)

    def memory(self, batch: int) -> dict[str, int]:
        """The memory plan's figures at ``batch``, in bytes: ``arena_bytes`` (what a
        run at ``batch`` allocates for its buffers: the arena of
        `teeny_ir.backend.memory.layout`, which places the per-image and the
        static buffers together for this batch), ``plan_arena_bytes`` (the
        plan's own ``arena`` at ``batch``: its B-affine placement, valid for
        every batch; ``arena_bytes`` never exceeds it), ``lower_bound_bytes``
        (the most bytes of buffers live across one launch: no placement needs
        less) and ``naive_bytes`` (every buffer on its own)."""
        from teeny_ir.backend import memory

        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise RuntimeInputError(f"the batch size must be an integer >= 1, got {batch!r}")
        return {
            "arena_bytes": memory.layout(self.plan, batch).arena,
            "plan_arena_bytes": memory.arena_bytes(self.plan, batch),
            "lower_bound_bytes": memory.lower_bound_bytes(self.plan, batch),
            "naive_bytes": memory.naive_bytes(self.plan, batch),
        }

    def trainer(
        self,
        weights: Mapping[str, Any] | str | os.PathLike[str],
        backend: str = "interpreter",
        group: Any = None,
        *,
        timeout: float | None = None,
        reset_optimizer: bool = False,
        check_finite: bool = True,
        read_updates: bool = False,
    ) -> Trainer:
        """A `teeny_ir.runtime.trainer.Trainer` of this training plan, its state
        bound from ``weights`` (a mapping, or a ``.safetensors`` path), its steps
        run on ``backend`` (a name in `teeny_ir.runtime.backends.BACKENDS`).
        A data-parallel plan (``teeny-training{world=N}``) runs its collectives
        on ``group``, a torch.distributed process group of N ranks (None: the
        default group, which must be initialised), each waiting ``timeout``
        seconds at most (`teeny_ir.runtime.distributed.DEFAULT_TIMEOUT` when
        None); every rank starts from rank 0's state. A path is read as a
        checkpoint (regular files only, bounded): its recorded optimizer must be
        the plan's unless ``reset_optimizer`` (then the optimizer state starts at
        zero). ``check_finite`` refuses a step whose loss or updates are not
        finite (`DivergenceError`, the state kept); ``read_updates`` also checks
        every update on the cuda backend, reading the state back each step
        (see `teeny_ir.runtime.trainer.Trainer`)."""
        from teeny_ir.runtime.distributed import DEFAULT_TIMEOUT
        from teeny_ir.runtime.trainer import Trainer

        wait = DEFAULT_TIMEOUT if timeout is None else timeout
        return Trainer(
            self,
            weights,
            backend,
            group,
            timeout=wait,
            reset_optimizer=reset_optimizer,
            check_finite=check_finite,
            read_updates=read_updates,
        )

    def check_inputs(self, inputs: Sequence[Any]) -> int:
        """Check the inputs against the plan; returns the batch size ``B``."""
        import numpy as np

        specs = self.plan.inputs
        if isinstance(inputs, np.ndarray) or not isinstance(inputs, Sequence):
            raise RuntimeInputError("inputs must be a sequence of numpy arrays, one per input")
        if len(inputs) != len(specs):
            raise RuntimeInputError(f"the plan takes {len(specs)} inputs, got {len(inputs)}")
        batches: dict[int, int] = {}
        for index, (spec, array) in enumerate(zip(specs, inputs, strict=True)):
            if not isinstance(array, np.ndarray):
                raise RuntimeInputError(f"input {index} is a {type(array).__name__}, not an array")
            if spec.dtype == "i64":
                if array.dtype != np.int64:
                    raise RuntimeInputError(
                        f"input {index} has dtype {array.dtype}, expected int64 (class indices)"
                    )
            elif array.dtype != np.float32:
                raise RuntimeInputError(f"input {index} has dtype {array.dtype}, expected float32")
            if array.ndim != len(spec.shape):
                raise RuntimeInputError(
                    f"input {index} has rank {array.ndim}, expected {len(spec.shape)} "
                    f"(shape {_shape_text(spec.shape)})"
                )
            for dim, size in zip(spec.shape, array.shape, strict=True):
                if is_batch_dim(dim):
                    batches.setdefault(index, size)
                    if batches[index] != size:
                        raise RuntimeInputError(f"input {index} has two different batch sizes")
        if len(set(batches.values())) > 1:
            found = ", ".join(f"input {i}: {b}" for i, b in batches.items())
            raise RuntimeInputError(f"the inputs disagree on the batch size ({found})")
        batch = next(iter(batches.values()), 1)
        if batch < 1:
            raise RuntimeInputError(f"the batch size must be at least 1, got {batch}")
        for index, (spec, array) in enumerate(zip(specs, inputs, strict=True)):
            expected = tuple(_dim(d, batch, f"the shape of input {index}") for d in spec.shape)
            if tuple(array.shape) != expected:
                raise RuntimeInputError(
                    f"input {index} has shape {list(array.shape)}, expected "
                    f"{_shape_text(spec.shape)} = {list(expected)} at {BATCH}={batch}"
                )
        return batch

    def check_batch(self, batch: int) -> None:
        """Check that every buffer shape can be evaluated at this batch size, and
        prove every launch again at it with the one contract validator (the plan
        loader proved batches 1..64; this batch may be larger)."""
        for buffer in self.plan.buffers:
            shape = [_dim(d, batch, f"the shape of buffer '{buffer.name}'") for d in buffer.shape]
            if any(size < 1 for size in shape):
                raise RuntimeInputError(
                    f"at {BATCH}={batch} buffer '{buffer.name}' would have shape {shape}"
                )
        try:
            check_at_batch(self.plan, batch)
        except PlanError as err:
            raise RuntimeInputError(str(err)) from None

    def check_weights(self, weights: Mapping[str, Any]) -> None:
        """Raise one error naming every missing or mis-shaped weight (extra ones are ignored)."""
        import numpy as np

        missing: list[str] = []
        wrong: list[str] = []
        for spec in self.plan.weights:
            if spec.name not in weights:
                if not spec.zero_default:  # optimizer state starts at zero
                    missing.append(f"{spec.name!r} {list(spec.shape)}")
                continue
            array = np.asarray(weights[spec.name])
            if tuple(array.shape) != spec.shape:
                wrong.append(
                    f"{spec.name!r} has shape {list(array.shape)}, expected {list(spec.shape)}"
                )
            elif array.dtype.kind != "f":
                wrong.append(f"{spec.name!r} has dtype {array.dtype}, expected float32")
        problems = ([f"missing {', '.join(missing)}"] if missing else []) + wrong
        if problems:
            raise RuntimeInputError(f"weights do not fit the plan: {'; '.join(problems)}")

    def unused_weights(self, weights: Mapping[str, Any]) -> list[str]:
        """The names in ``weights`` that the plan never reads, in their order
        (without PyTorch's ``num_batches_tracked`` counters)."""
        used = {spec.name for spec in self.plan.weights}
        return [name for name in weights if name not in used and not _NOT_WEIGHTS.fullmatch(name)]

    def bind_parameters(self, weights: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Every parameter, evaluated from checked weights; one `RuntimeInputError`
        names every derivation that fails (a non-finite result names its weights)."""
        import numpy as np

        absent = {
            spec.name: np.zeros(spec.shape, np.float32)
            for spec in self.plan.weights
            if spec.zero_default and spec.name not in weights
        }
        if absent:
            weights = {**weights, **absent}
        params: dict[str, np.ndarray] = {}
        problems: list[str] = []
        for param in self.plan.params:
            try:
                params[param.name] = evaluate(param.derivation, weights)
            except DerivationError as err:
                if str(err) not in problems:
                    problems.append(str(err))
        if problems:
            raise RuntimeInputError(f"the weights give unusable parameters: {'; '.join(problems)}")
        return params


class RunSession:
    """One plan run again and again with the same weights (`Executable.session`).

    The weights are checked and bound at the start (an `UnusedWeightsWarning`
    names those the plan never reads); each `run` checks its inputs as
    `Executable.run` does and runs in the one session of the backend: the
    interpreter's worker process (Triton and the kernel files imported once),
    or the cuda backend's `teeny_ir.runtime.backends.cuda.CudaSession` (modules
    loaded and parameters uploaded once, an arena and input buffers per batch
    size). With ``graphs`` each batch size's launches are captured into a CUDA
    graph at its first run and every run replays it with ``cuGraphLaunch``:
    one driver call instead of one per launch, the new inputs copied into the
    buffers the graph reads. A `StatusCheckError` leaves the session usable."""

    def __init__(
        self,
        executable: Executable,
        weights: Mapping[str, Any] | str | os.PathLike[str],
        backend: str = "interpreter",
        graphs: bool = False,
    ) -> None:
        chosen = usable_backend(backend)
        _check_graphs(chosen, graphs)
        check_no_group_needed(executable.plan)
        if isinstance(weights, str | os.PathLike):
            weights = read_weights(weights)
        executable.check_weights(weights)
        unused = executable.unused_weights(weights)
        if unused:
            warnings.warn(UnusedWeightsWarning(_unused_message(unused)), stacklevel=3)
        self.executable = executable
        self.backend = chosen.name
        self.graphs = graphs
        self._params = executable.bind_parameters(weights)
        directory, plan = executable.directory, executable.plan
        self._session: Session | None = (
            chosen.run_session(directory, plan, graphs=graphs)
            if isinstance(chosen, CudaBackend)
            else chosen.session(directory, plan)
        )

    def run(
        self, inputs: Sequence[np.ndarray], profile: Profile | None = None
    ) -> list[np.ndarray]:
        """One run on ``inputs`` (in ``@forward`` argument order); the outputs
        in return order. ``profile``: a `Profile` the run fills, as
        `Executable.run` does (with graphs on, this run launches one by one).
        Raises as `Executable.run`."""
        if self._session is None:
            raise RuntimeInputError("this session is closed")
        executable = self.executable
        batch = executable.check_inputs(inputs)
        executable.check_batch(batch)
        specs = executable.plan.inputs
        tensors = {spec.name: array for spec, array in zip(specs, inputs, strict=True)}
        if profile is None:
            return self._session.run(tensors | self._params, batch)
        spans: list[tuple[int, int]] = []
        outputs = self._session.run(tensors | self._params, batch, spans=spans)
        profile.fill(executable.plan, batch, self.backend, spans)
        return outputs

    def close(self) -> None:
        """End the backend's session (idempotent)."""
        session, self._session = self._session, None
        if session is not None:
            session.close()

    def __enter__(self) -> RunSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _check_graphs(backend: Backend, graphs: bool) -> None:
    """CUDA graphs are the cuda backend's: refuse them elsewhere in one sentence."""
    if graphs and not isinstance(backend, CudaBackend):
        raise RuntimeInputError(
            f"CUDA graphs need the cuda backend; the {backend.name} backend launches "
            "each kernel itself"
        )


def read_weights(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Read a ``.safetensors`` file into name -> array (never pickle)."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    name = os.fspath(path)
    if os.path.isdir(name):
        raise RuntimeInputError(f"weights '{name}' is a directory; give one .safetensors file")
    if not os.path.exists(name):
        raise RuntimeInputError(f"cannot read weights '{name}': No such file or directory")
    try:
        return load_file(name)
    except (OSError, SafetensorError, TypeError, ValueError) as err:
        raise RuntimeInputError(
            f"cannot read weights '{name}' as a .safetensors file: {_reason(err)}"
        ) from None


def _unused_message(names: Sequence[str]) -> str:
    shown = ", ".join(repr(n) for n in names[:_UNUSED_SHOWN])
    more = f" and {len(names) - _UNUSED_SHOWN} more" if len(names) > _UNUSED_SHOWN else ""
    count = "1 weight is" if len(names) == 1 else f"{len(names)} weights are"
    return f"{count} not used by the plan: {shown}{more}"


def _reason(err: BaseException) -> str:
    text = getattr(err, "strerror", None) or str(err)
    lines = text.strip().splitlines()
    return lines[0] if lines else type(err).__name__


def _dim(dim: int | str, batch: int, what: str) -> int:
    """A shape or launch expression at batch ``batch`` (`RuntimeInputError` when
    it cannot be evaluated there, e.g. a division by zero)."""
    if isinstance(dim, int):
        return dim
    try:
        return eval_text(dim, {BATCH: batch})
    except ExpressionError as err:
        raise RuntimeInputError(
            f"at {BATCH}={batch} {what} = '{dim}' cannot be evaluated: {err}"
        ) from None


def _shape_text(shape: Sequence[int | str]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"
