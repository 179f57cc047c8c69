"""The runtime: load a launch plan and run it on arrays.

``load(DIR).run(inputs, weights)`` checks everything before any launch - the
backend (`teeny_ir.runtime.backends.usable_backend`), the plan
(`teeny_ir.backend.plan.load_plan`), the inputs (count, float32, rank, static
dims, one batch ``B >= 1``) and the weights (every missing or mis-shaped one
named in one error) - binds the parameters through
`teeny_ir.core.derivations.evaluate`, and then hands the work to the backend
(`teeny_ir.runtime.backends`: ``interpreter``, the default, runs Triton's
interpreter in a worker process; ``cuda`` probes for a GPU but has no cubin
launcher).

Importing this module imports neither numpy, torch nor triton.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from teeny_ir.backend.plan import BATCH, Plan, PlanError, is_batch_dim, load_plan
from teeny_ir.core.derivations import evaluate
from teeny_ir.core.expressions import eval_text
from teeny_ir.kernels.contract import MAX_GRID
from teeny_ir.runtime.backends import BACKENDS, Backend, usable_backend
from teeny_ir.runtime.errors import BackendUnavailableError, RuntimeInputError, WorkerError

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "BACKENDS",
    "Backend",
    "BackendUnavailableError",
    "Executable",
    "PlanError",
    "RuntimeInputError",
    "WorkerError",
    "load",
    "read_weights",
    "usable_backend",
]


def load(directory: str | os.PathLike[str]) -> Executable:
    """Load and validate the plan in ``directory`` (raises `PlanError`)."""
    root = Path(directory).resolve()
    return Executable(root, load_plan(root))


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
    ) -> list[np.ndarray]:
        """Run the plan; outputs in return order. ``weights`` maps state-dict names
        to arrays, or is the path of a ``.safetensors`` file; ``backend`` names an
        entry of `BACKENDS`. Stage times in seconds are added to ``timings`` when
        given. Raises `RuntimeInputError` (`BackendUnavailableError` for a backend
        that cannot run here) before any launch, `WorkerError` when one fails."""
        times: dict[str, float] = {} if timings is None else timings
        start = time.perf_counter()
        chosen = usable_backend(backend)
        batch = self.check_inputs(inputs)
        self.check_batch(batch)
        if isinstance(weights, str | os.PathLike):
            weights = read_weights(weights)
        self.check_weights(weights)
        times["validate"] = time.perf_counter() - start
        start = time.perf_counter()
        params = {p.name: evaluate(p.derivation, weights) for p in self.plan.params}
        times["bind parameters"] = time.perf_counter() - start
        tensors = {spec.name: array for spec, array in zip(self.plan.inputs, inputs, strict=True)}
        return chosen.run(self.directory, self.plan, tensors | params, batch, times)

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
            if array.dtype != np.float32:
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
            expected = tuple(_dim(d, batch) for d in spec.shape)
            if tuple(array.shape) != expected:
                raise RuntimeInputError(
                    f"input {index} has shape {list(array.shape)}, expected "
                    f"{_shape_text(spec.shape)} = {list(expected)} at {BATCH}={batch}"
                )
        return batch

    def check_batch(self, batch: int) -> None:
        """Check that every buffer and grid is within limits at this batch size."""
        for buffer in self.plan.buffers:
            shape = [_dim(d, batch) for d in buffer.shape]
            if any(size < 1 for size in shape):
                raise RuntimeInputError(
                    f"at {BATCH}={batch} buffer '{buffer.name}' would have shape {shape}"
                )
        for index, launch in enumerate(self.plan.launches):
            grid = [eval_text(axis, {BATCH: batch}) for axis in launch.grid]
            if any(not 1 <= size <= limit for size, limit in zip(grid, MAX_GRID, strict=True)):
                raise RuntimeInputError(
                    f"at {BATCH}={batch} launch {index} ('{launch.kernel}') needs grid {grid}, "
                    f"outside 1..{list(MAX_GRID)}"
                )

    def check_weights(self, weights: Mapping[str, Any]) -> None:
        """Raise one error naming every missing or mis-shaped weight (extra ones are ignored)."""
        import numpy as np

        missing: list[str] = []
        wrong: list[str] = []
        for spec in self.plan.weights:
            if spec.name not in weights:
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


def read_weights(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Read a ``.safetensors`` file into name -> array (never pickle)."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    try:
        return load_file(os.fspath(path))
    except (OSError, SafetensorError, TypeError, ValueError) as err:
        raise RuntimeInputError(f"cannot read weights '{os.fspath(path)}': {err}") from None


def _dim(dim: int | str, batch: int) -> int:
    return dim if isinstance(dim, int) else eval_text(dim, {BATCH: batch})


def _shape_text(shape: Sequence[int | str]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"
