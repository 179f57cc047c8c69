"""The trainer: a training plan run step after step, its state kept between steps.

``teeny_ir.runtime.load(DIR).trainer(weights)`` binds and checks the weights
once: every parameter, BN running statistic and optimizer state the plan's
weight table names (optimizer state marked ``zero_default`` starts at zero when
absent, as on PyTorch's first step). Each ``.step(inputs)`` checks the inputs
(shapes, dtypes, class indices in range) before any launch, binds the
parameters from the current state, runs the plan, and replaces every state
tensor that an output updates (the outputs with the plan roles ``updated`` and
``running``, by weight name). It returns the step's user results: the loss
first, then the function's original results; gradients, updates and
statistics stay in the trainer. ``.state_dict()`` has the state by PyTorch's
names; ``.save(path)`` writes it as safetensors, atomically.

Data parallelism: a plan compiled with ``teeny-training{world=N}`` holds
collectives (its gradients all-reduced, and with ``sync-bn=true`` its batch
statistics), and each of N processes (ranks) makes a trainer with the
process group (``group=``: a ``torch.distributed`` group of N ranks, or None
for the default group, which must then be initialised) and steps it on its
shard of every batch. The trainer checks that the ranks run the same plan
and starts every rank from rank 0's state (a broadcast, as PyTorch's DDP
does for parameters and buffers), so they stay identical; its session runs
the collectives through the group (`teeny_ir.runtime.distributed`). A rank
that stops responding makes the others raise `CollectiveError`, one line
naming it. A plan without collectives imports nothing of torch.distributed.

The steps run in one `teeny_ir.runtime.backends.Session` of the chosen backend
(``backend="interpreter"``, the default, or ``"cuda"``): on the interpreter one
worker process serves every step (Triton's import and the kernel files are
loaded once); on the cuda backend the modules, the arena and the stream stay
on the GPU, and so does the state (`CudaTrainingSession`): each step uploads
the inputs, reads back the user results and copies each updated tensor into
its parameter on the device. The host's copy is refreshed when it is asked
for (`state`, `state_dict`, `save`); after `state` (whose arrays the caller
may change in place) the next step uploads the state again. Close the
trainer (or use it as a context manager) to end the session.

Importing this module imports neither numpy, torch nor triton.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from teeny_ir.backend.plan import CollectiveSpec
from teeny_ir.core.symbols import BATCH
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.runtime.backends import usable_backend
from teeny_ir.runtime.backends.cuda import CudaTrainingSession
from teeny_ir.runtime.distributed import DEFAULT_TIMEOUT, needs_group
from teeny_ir.runtime.errors import RuntimeInputError

if TYPE_CHECKING:
    import numpy as np

    from teeny_ir.runtime import Executable
    from teeny_ir.runtime.backends import Session
    from teeny_ir.runtime.distributed import ProcessGroup


class Trainer:
    """A training plan with its state (see the module docstring)."""

    def __init__(
        self,
        executable: Executable,
        weights: Mapping[str, Any],
        backend: str = "interpreter",
        group: Any = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        import numpy as np

        self.executable = executable
        plan = executable.plan
        if not any(role == "updated" for role, _ in plan.roles):
            raise RuntimeInputError(
                "the plan updates no parameter: it is not a training plan (compile the "
                "model with teeny-training, or apply-optimizer, before emit-triton)"
            )
        chosen = usable_backend(backend)
        executable.check_weights(weights)
        self._state: dict[str, np.ndarray] = {}
        for spec in plan.weights:
            if spec.name in weights:
                self._state[spec.name] = np.array(weights[spec.name], np.float32, order="C")
            else:  # zero_default optimizer state (check_weights allowed its absence)
                self._state[spec.name] = np.zeros(spec.shape, np.float32)
        self.steps = 0
        self.backend = chosen.name
        self._session: Session | None = None
        self.group: ProcessGroup | None = self._join(group, timeout)
        """The process group the collectives run on (None: the plan has none
        over more than one rank)."""
        self._session = chosen.session(executable.directory, plan, collective=self.group)
        self._host_current = True
        """Whether ``_state`` holds the current state (else the device does)."""
        self._device_current = False
        """Whether the device holds the current state (resident sessions only)."""

    def _join(self, group: Any, timeout: float) -> ProcessGroup | None:
        """The plan's process group: every rank runs this plan (checked) and
        starts from rank 0's state (broadcast). None for a plan without
        collectives over more than one rank (``group`` must then be None)."""
        import numpy as np

        plan = self.executable.plan
        if needs_group(plan) is None:
            if group is not None:
                raise RuntimeInputError(
                    "a process group was given, but the plan has no collective over more "
                    "than one rank: its ranks would train apart (compile it with "
                    "teeny-training{world=N})"
                )
            return None
        from teeny_ir.runtime.distributed import ProcessGroup, plan_digest

        joined = ProcessGroup(plan, group, timeout=timeout)
        joined.agree(plan_digest(plan), "the trainer's check that the ranks run one plan")
        names = [spec.name for spec in plan.weights]
        if names:
            flat = np.concatenate([self._state[name].reshape(-1) for name in names])
            flat = joined.broadcast(flat, "the broadcast of rank 0's initial state")
            start = 0
            for name in names:
                size = self._state[name].size
                self._state[name][...] = flat[start : start + size].reshape(
                    self._state[name].shape
                )
                start += size
        return joined

    @property
    def rank(self) -> int:
        """This process's rank in the group (0 without one)."""
        return 0 if self.group is None else self.group.rank

    @property
    def world(self) -> int:
        """The number of ranks (1 without a group)."""
        return 1 if self.group is None else self.group.world

    @property
    def state(self) -> dict[str, np.ndarray]:
        """The state by weight name (parameters, statistics, optimizer state),
        the trainer's own arrays: changing one in place changes what the next
        step trains from. On a session that keeps the state on the device, it
        is copied back first, and the next step uploads it again."""
        self._sync()
        self._device_current = False  # the caller may change it in place
        return self._state

    def _sync(self) -> None:
        """Copy the state back from a resident session if the host's is stale."""
        if self._host_current:
            return
        if not isinstance(self._session, CudaTrainingSession):
            raise RuntimeInputError("the trainer is closed and its state was never copied back")
        for weight, value in self._session.read_state().items():
            self._state[weight][...] = value.reshape(self._state[weight].shape)
        self._host_current = True

    def step(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Run one step on ``inputs``; returns its user results (the loss first).
        Raises `RuntimeInputError` before any launch for bad inputs."""
        if self._session is None:
            raise RuntimeInputError("the trainer is closed")
        executable = self.executable
        batch = executable.check_inputs(inputs)
        executable.check_batch(batch)
        self.check_indices(inputs)
        tensors = {
            spec.name: array for spec, array in zip(executable.plan.inputs, inputs, strict=True)
        }
        session = self._session
        if isinstance(session, CudaTrainingSession):
            if not self._device_current:  # the first step, or the host's state changed
                self._sync()
                session.upload_state(executable.bind_parameters(self._state))
                self._device_current = True
            stepped = session.step(tensors, batch)
            self._host_current = False
            self.steps += 1
            return [
                o for k, o in enumerate(stepped) if o is not None and not executable.plan.role(k)[0]
            ]
        params = executable.bind_parameters(self._state)
        outputs = session.run(tensors | params, batch)
        results = []
        for index, output in enumerate(outputs):
            role, weight = executable.plan.role(index)
            if role in ("updated", "running"):
                self._state[weight][...] = output
            elif not role:
                results.append(output)
        self.steps += 1
        return results

    def check_indices(self, inputs: Sequence[np.ndarray]) -> None:
        """`check_indices` of this trainer's plan."""
        check_indices(self.executable, inputs)

    def state_dict(self) -> dict[str, np.ndarray]:
        """Parameters, running statistics and optimizer state by PyTorch's names (copies)."""
        self._sync()
        return {name: array.copy() for name, array in self._state.items()}

    def save(self, path: str | os.PathLike[str], metadata: Mapping[str, str] | None = None) -> None:
        """Write `state_dict` to ``path`` as safetensors, atomically (a temporary
        file in the same directory, then a rename: a reader never sees half a file),
        with ``metadata`` (string pairs) in its header."""
        from safetensors.numpy import save_file

        target = Path(path)
        handle, temp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
        os.close(handle)
        try:
            save_file(self.state_dict(), temp, metadata=dict(metadata) if metadata else None)
            os.replace(temp, target)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise

    def close(self) -> None:
        """End the session (a resident one's state copied back to the host
        first, so `state_dict` and `save` still work)."""
        if self._session is None:
            return
        try:
            self._sync()
        finally:
            session, self._session = self._session, None
            session.close()

    def __enter__(self) -> Trainer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # nothing to report to at interpreter exit
            self.close()


def check_indices(executable: Executable, inputs: Sequence[np.ndarray]) -> None:
    """Class indices that an input passes straight to a status-checked kernel
    argument (cross-entropy targets) must lie in ``[0, limit)``: checked here,
    before any launch (the kernel's status check stays as the last guard)."""
    import numpy as np

    plan = executable.plan
    by_name = {spec.name: index for index, spec in enumerate(plan.inputs)}
    kernels = {k.name: k for k in plan.kernels}
    for launch in plan.launches:
        if isinstance(launch, CollectiveSpec):
            continue
        family = FAMILIES[kernels[launch.kernel].family]
        bindings = dict(zip((a.name for a in family.args), launch.args, strict=True))
        for arg in family.args:
            if arg.dtype != "*i64" or arg.kind != "input":
                continue
            bound = bindings[arg.name].tensor
            checks = list(family.status_checks.values())
            if bound not in by_name or not checks:
                continue
            limit_expr = bindings[checks[0].limit].expr or "0"
            from teeny_ir.core.expressions import eval_text

            limit = eval_text(limit_expr, {BATCH: 1})
            values = np.asarray(inputs[by_name[bound]])
            bad = np.flatnonzero((values < 0) | (values >= limit))
            if bad.size:
                where = ", ".join(f"{s.op} at {s.loc}" if s.loc else s.op for s in launch.sources)
                raise RuntimeInputError(
                    f"input {by_name[bound]}: {checks[0].what} {int(values[bad[0]])} at "
                    f"index {int(bad[0])} is out of range [0, {limit}) ({bad.size} out of "
                    f"range in all), for {where}"
                )
