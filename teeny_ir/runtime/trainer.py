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
names; ``.save(path)`` writes it as safetensors by the output rules of
`teeny_ir.core.files` (a regular file replaced atomically with the umask's
mode, a device or FIFO written in place, never replaced).

Checkpoints. `save` records in the safetensors metadata the steps the state
has taken (``teeny.steps``) and the plan's optimizer (``teeny.optimizer``: its
kind and hyperparameters as the update kernels read them, `plan_optimizer`).
A trainer made from a checkpoint (``Trainer(executable, "ckpt.safetensors")``,
or ``metadata=`` its header's entries) continues its step count, and refuses in
one line a checkpoint whose recorded optimizer differs from the plan's (another
kind, or another lr, momentum, weight decay, betas or eps): its state would be
dropped (SGD's momentum buffers are no AdamW moments) or used with other
hyperparameters. ``reset_optimizer=True`` accepts it and starts every
optimizer state of the plan (its ``zero_default`` weights) at zero, as a fresh
optimizer would; parameters and running statistics are kept. A checkpoint
without ``teeny.optimizer`` (older ones, plain weights, a `state_dict`) is
accepted as it is, its optimizer state taken for the plan's.
`read_checkpoint` reads one (a regular file only, bounded in size).

Divergence. Before a step's results replace the state, the trainer checks
that the loss and every updated tensor are finite. If one is not (NaN or
infinite: a NaN in the inputs, a learning rate that overflows), the step is
not applied - the state stays the last finite one, ``steps`` does not count
it - and `DivergenceError` names the step and the first non-finite result in
plan order with the graph op and location its launch implements, found by
running the step again with every launch's outputs traced (only on failure).
On the cuda backend the state stays on the device: the check takes the loss,
which comes back anyway, before the step's updates replace the state there,
and ``read_updates=True`` reads every updated tensor back for it too (the
state's bytes each step); without it a finite loss with a non-finite update
(an update that overflows) is caught at the next step, whose loss it makes
non-finite, with the non-finite state already applied. ``check_finite=False``
skips the check.
With a process group the check covers the updated parameters and optimizer
state only, which every rank computes from the same all-reduced gradients,
so every rank stops at the same step.

Threads. `step`, `state`, `state_dict`, `save` and `close` hold one lock:
threads that share a trainer run their steps one after the other, each step
applied to the state the previous one left (``steps`` counts every one). The
arrays `state` returns are the trainer's own and are not guarded once returned.

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
for (`state`, `state_dict`, `save`); after `state`
(whose arrays the caller may change in place) the next step uploads the state
again. Close the trainer (or use it as a context manager) to end the session.

Importing this module imports neither numpy, torch nor triton.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import struct
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from teeny_ir.backend.plan import CollectiveSpec, LaunchSpec, Plan
from teeny_ir.core.files import read_regular, write_file
from teeny_ir.core.symbols import BATCH
from teeny_ir.kernels.adamw_update.contract import HYPER as ADAMW_HYPER
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.sgd_update.contract import HYPER as SGD_HYPER
from teeny_ir.runtime.backends import usable_backend
from teeny_ir.runtime.backends.cuda import CudaTrainingSession
from teeny_ir.runtime.distributed import DEFAULT_TIMEOUT, needs_group
from teeny_ir.runtime.errors import DivergenceError, RuntimeInputError

if TYPE_CHECKING:
    import numpy as np

    from teeny_ir.runtime import Executable
    from teeny_ir.runtime.backends import Session
    from teeny_ir.runtime.distributed import ProcessGroup

STEPS_KEY = "teeny.steps"
"""The checkpoint metadata entry that counts the steps the state has taken."""
OPTIMIZER_KEY = "teeny.optimizer"
"""The checkpoint metadata entry naming the optimizer (`Optimizer.to_json`)."""
MAX_STEPS_DIGITS = 18
"""The most digits a step count may have (below 2**63)."""
CHECKPOINT_BYTES = 1 << 40
"""The most of a checkpoint or weights file that is read (and never more than
the machine's memory)."""
UPDATE_FAMILIES = ("sgd_update", "adamw_update")
"""The kernel families of apply-optimizer's updates, whose ``hyper`` slot holds
the optimizer's hyperparameters."""


# --- checkpoints ----------------------------------------------------------------


def read_checkpoint(
    path: str | os.PathLike[str], what: str = "weights"
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """The tensors and the metadata of the ``.safetensors`` file ``path``
    (never pickle): a regular file only (a FIFO, a device or a directory is
    refused without blocking on it) of at most `CHECKPOINT_BYTES` and the
    machine's memory. Raises `RuntimeInputError` (``cannot read <what> ...``)."""
    from safetensors import SafetensorError
    from safetensors.numpy import load

    name = os.fspath(path)
    memory = _machine_memory()
    limit = CHECKPOINT_BYTES if memory is None else min(CHECKPOINT_BYTES, memory)
    try:
        data = read_regular(name, limit)
    except (OSError, ValueError) as err:
        reason = getattr(err, "strerror", None) or err
        raise RuntimeInputError(f"cannot read {what} '{name}': {reason}") from None
    except MemoryError:
        raise RuntimeInputError(f"cannot read {what} '{name}': it does not fit in memory") from None
    prefix = f"cannot read {what} '{name}' as a .safetensors file"
    size = int.from_bytes(data[:8], "little") if len(data) >= 8 else -1
    if not 0 < size <= len(data) - 8:
        raise RuntimeInputError(f"{prefix}: its header is missing or longer than the file")
    try:
        header = json.loads(data[8 : 8 + size].decode("utf-8"))
        tensors = load(data)
    except (SafetensorError, ValueError, TypeError, OverflowError) as err:
        raise RuntimeInputError(f"{prefix}: {_first_line(err)}") from None
    except MemoryError:
        raise RuntimeInputError(f"{prefix}: it does not fit in memory") from None
    metadata = header.get("__metadata__") if isinstance(header, dict) else None
    if not isinstance(metadata, dict):
        metadata = {}
    return tensors, {str(k): str(v) for k, v in metadata.items()}


def _machine_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def parse_steps(text: str, where: str) -> int:
    """A ``teeny.steps`` count: ASCII digits only (``int`` reads any Unicode
    digit, ``"٣"`` among them), at most `MAX_STEPS_DIGITS`; raises
    `RuntimeInputError` naming ``where``."""
    if not (0 < len(text) <= MAX_STEPS_DIGITS and text.isascii() and text.isdigit()):
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise RuntimeInputError(
            f"{where}: its '{STEPS_KEY}' metadata {shown!r} is not a step count (ASCII digits, "
            f"at most {MAX_STEPS_DIGITS})"
        )
    return int(text)


def _f32(value: float) -> float:
    """``value`` rounded to float32 (infinite where float32 overflows)."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def _shortest(value: float) -> float:
    """The shortest decimal that rounds to the float32 ``value``."""
    if not math.isfinite(value):
        return value
    for digits in range(1, 10):
        candidate = float(f"{value:.{digits}g}")
        if _f32(candidate) == value:
            return candidate
    return value


@dataclass(frozen=True)
class Optimizer:
    """A plan's optimizer, as its update launches read it: ``kind`` (``sgd``
    or ``adamw``) and the hyperparameters in the shortest decimals of the
    float32 values the kernels use (``weight_decay`` is the decayed
    parameters' value; biases and BN parameters have none, unless the plan
    was compiled with ``decay-all``)."""

    kind: str
    hyper: tuple[tuple[str, Any], ...]

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **{name: value for name, value in self.hyper}}

    def to_json(self) -> str:
        return json.dumps(self.as_dict())

    def describe(self) -> str:
        return describe_optimizer(self.as_dict())


def describe_optimizer(record: Mapping[str, Any]) -> str:
    """``adamw (lr=0.01, betas=(0.9, 0.999), eps=1e-08, weight_decay=0.01)``."""
    parts = []
    for name, value in record.items():
        if name == "kind":
            continue
        shown = f"({', '.join(repr(v) for v in value)})" if isinstance(value, list) else repr(value)
        parts.append(f"{name}={shown}")
    return f"{record.get('kind', '?')} ({', '.join(parts)})"


def _where(launch: LaunchSpec) -> str:
    return ", ".join(f"{s.op} at {s.loc}" if s.loc else s.op for s in launch.sources) or (
        f"kernel '{launch.kernel}'"
    )


def plan_optimizer(plan: Plan) -> Optimizer | None:
    """The optimizer of a training plan, read from its update launches
    (families `UPDATE_FAMILIES`, each with its ``hyper`` literal); None for a
    plan without them. Raises `RuntimeInputError` for hyperparameters that no
    step can use (a plan written by hand: apply-optimizer refuses them), such
    as an infinite lr or an ``lr * weight_decay`` that overflows float32."""
    kernels = {k.name: k for k in plan.kernels}
    params = {p.name: p for p in plan.params}
    found: list[tuple[str, dict[str, float]]] = []
    for index, launch in enumerate(plan.launches):
        if isinstance(launch, CollectiveSpec):
            continue
        family = FAMILIES[kernels[launch.kernel].family]
        if family.name not in UPDATE_FAMILIES:
            continue
        bindings = dict(zip((a.name for a in family.args), launch.args, strict=True))
        slot = bindings["hyper"].tensor
        derivation = params[slot].derivation if slot in params else None
        if derivation is None or derivation.kind != "literal":
            return None  # hyperparameters bound from weights: nothing to record
        checks: tuple[tuple[str, bool, str], ...]
        if family.name == "sgd_update":
            values = dict(zip(SGD_HYPER, derivation.values, strict=True))
            checks = (
                ("lr", values["lr"] > 0, "finite and > 0"),
                ("momentum", 0 <= values["momentum"] < 1, "in [0, 1)"),
                ("weight_decay", values["weight_decay"] >= 0, "finite and >= 0"),
            )
        else:
            values = dict(zip(ADAMW_HYPER, derivation.values, strict=True))
            checks = (
                ("lr", values["lr"] > 0, "finite and > 0"),
                ("beta1", 0 <= values["beta1"] < 1, "in [0, 1)"),
                ("beta2", 0 <= values["beta2"] < 1, "in [0, 1)"),
                ("eps", values["eps"] > 0, "finite and > 0"),
                ("decay", True, "finite (1 - lr * weight_decay)"),
            )
        for name, fine, expected in checks:
            if not (fine and math.isfinite(values[name])):
                raise RuntimeInputError(
                    f"the plan's optimizer update at launch {index} ({_where(launch)}) has "
                    f"{name} = {values[name]!r} in float32, expected {expected}: no step can use "
                    "it (compile the plan with apply-optimizer's checked options)"
                )
        found.append((family.name, values))
    if not found:
        return None
    kind = "sgd" if found[0][0] == "sgd_update" else "adamw"
    first = found[0][1]
    lr = _shortest(first["lr"])
    if kind == "sgd":
        decay = max(_shortest(values["weight_decay"]) for _, values in found)
        hyper: tuple[tuple[str, Any], ...] = (
            ("lr", lr),
            ("momentum", _shortest(first["momentum"])),
            ("weight_decay", decay),
        )
    else:
        decay = max(_decay_of(lr, values["decay"]) for _, values in found)
        hyper = (
            ("lr", lr),
            ("betas", [_shortest(first["beta1"]), _shortest(first["beta2"])]),
            ("eps", _shortest(first["eps"])),
            ("weight_decay", decay),
        )
    return Optimizer(kind, hyper)


def _decay_of(lr: float, decay: float) -> float:
    """AdamW's weight decay from the kernel's ``1 - lr * weight_decay`` (float32):
    the shortest decimal that gives the same factor."""
    if decay == 1.0:
        return 0.0
    raw = (1.0 - decay) / lr
    for digits in range(1, 18):
        candidate = float(f"{raw:.{digits}g}")
        if _f32(1.0 - lr * candidate) == decay:
            return candidate
    return raw


def recorded_optimizer(metadata: Mapping[str, str], where: str) -> dict[str, Any] | None:
    """A checkpoint's ``teeny.optimizer`` entry (None when it has none);
    raises `RuntimeInputError` for one that is not an optimizer record."""
    text = metadata.get(OPTIMIZER_KEY)
    if text is None:
        return None
    try:
        record = json.loads(text) if len(text) <= 4096 else None
    except ValueError:
        record = None
    if not (
        isinstance(record, dict)
        and record.get("kind") in ("sgd", "adamw")
        and all(isinstance(key, str) for key in record)
    ):
        raise RuntimeInputError(
            f"{where}: its '{OPTIMIZER_KEY}' metadata is not an optimizer record (kind sgd or "
            "adamw and its hyperparameters)"
        )
    return record


# --- the trainer ----------------------------------------------------------------


class Trainer:
    """A training plan with its state (see the module docstring).

    ``weights``: a mapping of arrays by weight name, or the path of a
    ``.safetensors`` file (read by `read_checkpoint`, its metadata taken for
    ``metadata`` when that is None). ``metadata``: the checkpoint's header
    entries: its ``teeny.optimizer`` is checked against the plan's optimizer
    unless ``reset_optimizer`` (which starts the plan's optimizer state at
    zero), and its ``teeny.steps`` starts `steps` unless ``steps`` is given.
    ``check_finite``: refuse a diverging step (`DivergenceError`);
    ``read_updates``: on the cuda backend, check the updates too, not only
    the loss (each step then reads the state back). ``source`` names a
    mapping's file in messages."""

    def __init__(
        self,
        executable: Executable,
        weights: Mapping[str, Any] | str | os.PathLike[str],
        backend: str = "interpreter",
        group: Any = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        metadata: Mapping[str, str] | None = None,
        reset_optimizer: bool = False,
        steps: int | None = None,
        check_finite: bool = True,
        read_updates: bool = False,
        source: str | None = None,
    ) -> None:
        import numpy as np

        self._lock = threading.RLock()
        self._session: Session | None = None
        self.executable = executable
        plan = executable.plan
        if not any(role == "updated" for role, _ in plan.roles):
            raise RuntimeInputError(
                "the plan updates no parameter: it is not a training plan (compile the "
                "model with teeny-training, or apply-optimizer, before emit-triton)"
            )
        chosen = usable_backend(backend)
        where = "the weights" if source is None else f"'{source}'"
        if isinstance(weights, str | os.PathLike):
            where = f"'{os.fspath(weights)}'"
            weights, found = read_checkpoint(weights)
            metadata = found if metadata is None else metadata
        metadata = {} if metadata is None else metadata
        self.optimizer = plan_optimizer(plan)
        """The plan's optimizer (recorded in every checkpoint `save` writes)."""
        recorded = None if reset_optimizer else recorded_optimizer(metadata, where)
        if (
            recorded is not None
            and self.optimizer is not None
            and recorded != self.optimizer.as_dict()
        ):
            raise RuntimeInputError(
                f"{where}: its optimizer state is another optimizer's: it was trained with "
                f"{describe_optimizer(recorded)}, the plan trains with "
                f"{self.optimizer.describe()} (start the plan's optimizer state at zero with "
                "reset_optimizer=True, teeny-train --reset-optimizer)"
            )
        if steps is None:
            text = metadata.get(STEPS_KEY)
            steps = 0 if text is None else parse_steps(text, where)
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
            raise RuntimeInputError(f"steps must be a step count >= 0, got {steps!r}")
        executable.check_weights(weights)
        self._state: dict[str, np.ndarray] = {}
        for spec in plan.weights:
            if spec.name in weights and not (reset_optimizer and spec.zero_default):
                self._state[spec.name] = np.array(weights[spec.name], np.float32, order="C")
            else:  # zero_default optimizer state (check_weights allowed its absence)
                self._state[spec.name] = np.zeros(spec.shape, np.float32)
        self.steps = steps
        """Steps the state has taken (a checkpoint's count, then one per `step` applied)."""
        self.check_finite = check_finite
        """Whether a step whose loss or update is not finite is refused."""
        self.read_updates = read_updates
        """On the cuda backend: whether the divergence check also reads every
        updated tensor back before the step replaces the state (the
        interpreter's come back anyway and are always checked)."""
        self.backend = chosen.name
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
        with self._lock:
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
        Raises `RuntimeInputError` before any launch for bad inputs, and
        `DivergenceError` (the step not applied) when its loss or an update is
        not finite. Threads calling it take turns (one lock)."""
        with self._lock:
            return self._step(inputs)

    def _step(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        if self._session is None:
            raise RuntimeInputError("the trainer is closed")
        executable = self.executable
        plan = executable.plan
        batch = executable.check_inputs(inputs)
        executable.check_batch(batch)
        self.check_indices(inputs)
        tensors = {spec.name: array for spec, array in zip(plan.inputs, inputs, strict=True)}
        session = self._session
        if isinstance(session, CudaTrainingSession):
            if not self._device_current:  # the first step, or the host's state changed
                self._sync()
                session.upload_state(executable.bind_parameters(self._state))
                self._device_current = True
            found: list[tuple[str, dict[str, np.ndarray]]] = []

            def commit(outputs: list[np.ndarray | None]) -> bool:
                """The divergence check, before the device's state is replaced."""
                user = [o for k, o in enumerate(outputs) if o is not None and not plan.role(k)[0]]
                read: dict[str, np.ndarray] = {}
                if self.read_updates:
                    roles = self._checked_roles()
                    for k, (role, weight) in enumerate(plan.roles):
                        if role in roles:
                            read[weight] = session.read(plan.outputs[k], batch)
                why = self._non_finite(user, read)
                if why is not None:
                    found.append((why, read))
                return why is None

            stepped = session.step(tensors, batch, commit if self.check_finite else None)
            self._host_current = False  # the device holds the state (the last finite one)
            if found:
                self._sync()
                known = {k: o for k, o in enumerate(stepped) if o is not None}
                raise self._diverged(inputs, found[0][0], known, found[0][1])
            self.steps += 1
            return [o for k, o in enumerate(stepped) if o is not None and not plan.role(k)[0]]
        params = executable.bind_parameters(self._state)
        outputs = session.run(tensors | params, batch)
        results = []
        updates: dict[str, np.ndarray] = {}
        for index, output in enumerate(outputs):
            role, weight = plan.role(index)
            if role in ("updated", "running"):
                updates[weight] = output
            elif not role:
                results.append(output)
        if self.check_finite:
            problem = self._non_finite(results, updates)
            if problem is not None:
                raise self._diverged(inputs, problem, dict(enumerate(outputs)), updates)
        for weight, output in updates.items():
            self._state[weight][...] = output
        self.steps += 1
        return results

    def _checked_roles(self) -> tuple[str, ...]:
        """The state roles the divergence check covers: with a process group
        the updates of parameters and optimizer state only (the same on every
        rank), else running statistics too."""
        return ("updated",) if self.group is not None else ("updated", "running")

    def _non_finite(
        self, results: Sequence[np.ndarray], updates: Mapping[str, np.ndarray]
    ) -> str | None:
        """What of a step is not finite (one clause), or None: the loss (without
        a process group: another rank's loss is not known here), then each
        updated tensor in output order."""
        import numpy as np

        if self.group is None and results:
            loss = np.asarray(results[0])
            if loss.dtype.kind == "f" and not np.isfinite(loss).all():
                shown = loss.reshape(-1)[np.flatnonzero(~np.isfinite(loss))[0]]
                return f"the loss is {float(shown)}"
        roles = self._checked_roles()
        for role, weight in self.executable.plan.roles:
            if role not in roles or weight not in updates:
                continue
            value = np.asarray(updates[weight])
            bad = np.flatnonzero(~np.isfinite(value))
            if bad.size:
                return (
                    f"the update of '{weight}' is not finite ({bad.size} of {value.size} "
                    f"elements, the first {float(value.reshape(-1)[bad[0]])} at index "
                    f"{int(bad[0])})"
                )
        return None

    def _diverged(
        self,
        inputs: Sequence[np.ndarray],
        problem: str,
        outputs: Mapping[int, np.ndarray],
        updates: Mapping[str, np.ndarray],
    ) -> DivergenceError:
        """The error of a step that is not applied: the step, ``problem``, and
        the first non-finite result in plan order (the step run again with
        every launch's outputs traced; from the plan's outputs where it cannot
        run again, as with a process group)."""
        step = self.steps + 1
        origin = None
        if needs_group(self.executable.plan) is None:
            origin = self._traced_origin(inputs)
        if origin is None:
            origin = self._output_origin(outputs, updates)
        import numpy as np

        before = f"the one after step {step - 1}" if step > 1 else "the initial one"
        if any(not np.isfinite(value).all() for value in self._state.values()):
            before += (
                ", which is not finite itself: an update the cuda backend did not read back "
                "(read_updates=True checks them at their step)"
            )
        return DivergenceError(
            f"step {step} diverged: {problem}; {origin}; the step is not applied (the state "
            f"stays {before})",
            step,
        )

    def _traced_origin(self, inputs: Sequence[np.ndarray]) -> str | None:
        """The first launch whose output is not finite when the step runs again
        from the state (one clause), or None when that run fails or finds none."""
        import numpy as np

        trace: dict[int, list[np.ndarray]] = {}
        try:
            self.executable.run(list(inputs), self._state, backend=self.backend, trace=trace)
        except Exception:  # noqa: BLE001 - only the message is at stake: the outputs say less
            return None
        for index in sorted(trace):
            for k, array in enumerate(trace[index]):
                value = np.asarray(array)
                if value.dtype.kind == "f" and not np.isfinite(value).all():
                    return f"the first non-finite result is {self._launch_output(index, k)}"
        return None

    def _output_origin(
        self, outputs: Mapping[int, np.ndarray], updates: Mapping[str, np.ndarray]
    ) -> str:
        """The plan output that is not finite whose launch comes first (one clause)."""
        import numpy as np

        plan = self.executable.plan
        writers = _writers(plan)
        values = dict(outputs)
        for index, (role, weight) in enumerate(plan.roles):
            if index not in values and weight in updates and role in ("updated", "running"):
                values[index] = updates[weight]
        found: list[tuple[int, int, str]] = []
        for index, value in values.items():
            array = np.asarray(value)
            if array.dtype.kind == "f" and not np.isfinite(array).all():
                launch, k = writers.get(plan.outputs[index], (len(plan.launches), 0))
                found.append((launch, k, plan.outputs[index]))
        if not found:
            return "no launch's output was found not finite"
        launch, k, _ = min(found)
        if launch >= len(plan.launches):
            return "the first non-finite output is not written by any launch"
        return (
            f"the first non-finite output of the plan is {self._launch_output(launch, k)} "
            "(its launches were not traced)"
        )

    def _launch_output(self, index: int, output: int) -> str:
        """``output 0 of launch 3 ('conv_1', family implicit_gemm_conv), graph.conv2d at f:1:2``."""
        launch = self.executable.plan.launches[index]
        if isinstance(launch, CollectiveSpec):
            return f"the output of launch {index} ({launch.collective} of {launch.where()})"
        kernels = {k.name: k for k in self.executable.plan.kernels}
        return (
            f"output {output} of launch {index} ('{launch.kernel}', family "
            f"{kernels[launch.kernel].family}), {_where(launch)}"
        )

    def check_indices(self, inputs: Sequence[np.ndarray]) -> None:
        """`check_indices` of this trainer's plan."""
        check_indices(self.executable, inputs)

    def state_dict(self) -> dict[str, np.ndarray]:
        """Parameters, running statistics and optimizer state by PyTorch's names (copies)."""
        with self._lock:
            self._sync()
            return {name: array.copy() for name, array in self._state.items()}

    def checkpoint_bytes(self, metadata: Mapping[str, str] | None = None) -> bytes:
        """`state_dict` as the bytes of a safetensors file whose metadata holds
        ``teeny.steps`` (`steps`), ``teeny.optimizer`` (`optimizer`, when the
        plan has one) and ``metadata`` (string pairs, which may replace them)."""
        from safetensors.numpy import save

        with self._lock:
            entries = {STEPS_KEY: str(self.steps)}
            if self.optimizer is not None:
                entries[OPTIMIZER_KEY] = self.optimizer.to_json()
            entries |= dict(metadata or {})
            return save(self.state_dict(), metadata=entries)

    def save(self, path: str | os.PathLike[str], metadata: Mapping[str, str] | None = None) -> None:
        """Write `checkpoint_bytes` to ``path`` by the output rules of
        `teeny_ir.core.files`: a regular file (or none) replaced atomically, so
        a reader never sees half a file and a failed or killed save leaves the
        old one (its temporary file swept by a later save); a character device
        or a FIFO written in place, never replaced. Raises
        `teeny_ir.core.files.OutputError` when it cannot be written."""
        write_file(path, self.checkpoint_bytes(metadata))

    def close(self) -> None:
        """End the session (a resident one's state copied back to the host
        first, so `state_dict` and `save` still work)."""
        with self._lock:
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


def _writers(plan: Plan) -> dict[str, tuple[int, int]]:
    """Each tensor a launch writes -> (the last launch writing it, its output
    position there), views under their own names."""
    kernels = {k.name: k for k in plan.kernels}
    found: dict[str, tuple[int, int]] = {}
    for index, launch in enumerate(plan.launches):
        if isinstance(launch, CollectiveSpec):
            found[launch.output] = (index, 0)
            continue
        family = FAMILIES[kernels[launch.kernel].family]
        written = [
            arg.tensor
            for abi, arg in zip(family.args, launch.args, strict=True)
            if abi.kind == "output" and arg.tensor is not None
        ]
        for k, name in enumerate(dict.fromkeys(written)):
            found[name] = (index, k)
    return found


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


def _first_line(err: BaseException) -> str:
    lines = str(err).strip().splitlines()
    return lines[0] if lines else type(err).__name__
