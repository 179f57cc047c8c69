"""Data-parallel runs: a plan's collectives through torch.distributed.

A plan compiled with ``teeny-training{world=N}`` all-reduces its gradients
(and, with ``sync-bn=true``, its batch statistics): its launches hold
collectives (`teeny_ir.backend.plan.CollectiveSpec`). Every rank runs the same
plan on its shard of the batch, and the collectives pair up by their order.
`ProcessGroup` is the runtime's side of the process group the trainer is
given (`teeny_ir.runtime.trainer.Trainer`, ``group=``; torch.distributed's
default group when none is): the backends hand it each collective's tensors
and it runs them through ``torch.distributed.all_reduce``:

- the interpreter backend (`teeny_ir.runtime.backends.interpreter`): on one
  flat float32 CPU tensor per bucket (a run of consecutive collectives of one
  reduction, `buckets`), so a gloo group, ``ReduceOp.SUM`` and then a division
  by the group size for a mean (the reference's ``sum / world``, the same bits
  on every rank);
- the cuda backend (`teeny_ir.runtime.backends.cuda`): on the arena's device
  memory itself, wrapped as a torch CUDA tensor through
  ``__cuda_array_interface__`` and reduced on the backend's stream
  (``torch.cuda.ExternalStream``), so an NCCL group, ordered with the
  launches without a host synchronisation (untested on hardware here).

A rank that dies must not leave the others waiting: every collective on the
host waits at most ``timeout`` seconds (gloo reports a peer whose connection
closed at once), and a failed one runs a roll call in the group's store: each
survivor sets a key for that collective and waits up to ``roll_call`` seconds
for the others' - but not for a rank whose process is gone (each rank
registers its host name and process id in the store when it joins, and
`ProcessGroup.agree` reads them all, so a survivor on the same host sees at
once that the process no longer runs, and does not ask a store that ended
with it). The
error names the ranks that did not answer, in one line: ``rank 1 (of 2)
stopped responding during the collective of graph.all_reduce at
lenet.mlir:14:19`` (`CollectiveError`). A store that is gone with its process
(rank 0 serves it, unless torchrun's agent does) names rank 0.

Importing this module imports neither numpy nor torch: `ProcessGroup` imports
torch.distributed when it is made, which a plan without collectives never does.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import os
import socket
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from teeny_ir.backend.plan import CollectiveSpec, Plan, plan_text
from teeny_ir.runtime.errors import CollectiveError, RuntimeInputError

if TYPE_CHECKING:
    import numpy as np

DEFAULT_TIMEOUT = 600.0
"""Seconds a collective waits for the other ranks (the slowest rank's step,
not a dead one's: gloo reports a closed connection at once)."""
ROLL_CALL = 10.0
"""Seconds the survivors of a failed collective wait for each other's answer."""
_ROLL_CALL_KEY = "teeny/roll-call"
_PROCESS_KEY = "teeny/process"


def buckets(plan: Plan) -> dict[int, tuple[int, ...]]:
    """The plan's collectives in buckets: each maximal run of consecutive
    collectives (no kernel launch between them) of one reduction and group
    size, none reading what another of the run writes (a bucket reads all its
    inputs first), keyed by its first launch index; one exchange, one flat
    ``all_reduce`` each (the gradients of a training plan are one bucket)."""
    bases = {view.name: view.base for view in plan.views}
    found: dict[int, tuple[int, ...]] = {}
    current: list[int] = []
    written: set[str] = set()
    for index, entry in enumerate(plan.launches):
        if not isinstance(entry, CollectiveSpec):
            continue
        previous = plan.launches[current[-1]] if current else None
        if not (
            isinstance(previous, CollectiveSpec)
            and current[-1] == index - 1
            and (previous.reduction, previous.world) == (entry.reduction, entry.world)
            and bases.get(entry.input, entry.input) not in written
        ):
            if current:
                found[current[0]] = tuple(current)
            current, written = [], set()
        current.append(index)
        written.add(entry.output)
    if current:
        found[current[0]] = tuple(current)
    return found


def needs_group(plan: Plan) -> str | None:
    """Why ``plan`` cannot run without a process group (one line), or None:
    no collective over more than one rank (one over one rank is a copy)."""
    found = [(i, c) for i, c in plan.collectives() if c.world > 1]
    if not found:
        return None
    index, first = found[0]
    return (
        f"the plan's launch {index} is a collective over {first.world} ranks "
        f"({first.collective} of {first.where()}), which needs a process group: train "
        f"with runtime.load(DIR).trainer(weights, group=...) on every rank, or teeny-train "
        f"under torchrun --nproc-per-node {first.world}"
    )


def check_no_group_needed(plan: Plan) -> None:
    """Raise `RuntimeInputError` (`needs_group`'s line) for a plan whose
    collectives need a process group: a plain run has none."""
    reason = needs_group(plan)
    if reason is not None:
        raise RuntimeInputError(reason)


def plan_digest(plan: Plan) -> bytes:
    """The sha256 of the plan's canonical text: the ranks check that they run one plan."""
    return hashlib.sha256(plan_text(plan).encode("utf-8")).digest()


class ProcessGroup:
    """A plan's collectives on a torch.distributed process group (see the
    module docstring): ``group`` (None: the default group, which must be
    initialised), whose size must be the plan's ``world``. ``timeout``:
    seconds a collective on the host waits; ``roll_call``: seconds the
    survivors of a failed one wait for each other before naming the rest."""

    def __init__(
        self,
        plan: Plan,
        group: Any = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        roll_call: float = ROLL_CALL,
    ) -> None:
        try:
            import torch.distributed as dist
        except ImportError as err:
            raise RuntimeInputError(
                f"{needs_group(plan)}; torch.distributed cannot be imported ({err})"
            ) from None
        if not dist.is_available():
            raise RuntimeInputError(f"{needs_group(plan)}; this torch has no torch.distributed")
        if group is None:
            if not dist.is_initialized():
                raise RuntimeInputError(
                    f"{needs_group(plan)}; torch.distributed's default process group is not "
                    "initialised (call torch.distributed.init_process_group first, or pass "
                    "group=)"
                )
            group = dist.group.WORLD
        self.dist = dist
        self.group = group
        self.world = int(dist.get_world_size(group))
        self.rank = int(dist.get_rank(group))
        self.backend = str(dist.get_backend(group))
        if self.world != plan.world:
            raise RuntimeInputError(
                f"the plan is built for {plan.world} ranks, but the process group has "
                f"{self.world} (compile it with teeny-training{{world={self.world}}}, or run "
                f"{plan.world} ranks)"
            )
        self.timeout = timeout
        self.roll_call = roll_call
        self.calls = 0
        """Collectives this rank has called (the ranks call them in one order)."""
        self.processes: dict[int, tuple[str, int]] = {}
        """Rank -> (host name, process id), as the ranks registered them (`agree`)."""
        where = f"{socket.gethostname()} {os.getpid()}"
        with contextlib.suppress(Exception):  # best effort: without it the roll call waits
            self._store().set(f"{_PROCESS_KEY}/{self.rank}", where)

    @property
    def device(self) -> int:
        """The CUDA device this rank's collectives run on (torch's current
        device: ``teeny-train`` sets it to ``LOCAL_RANK``); the cuda backend
        runs the plan there."""
        import torch

        return int(torch.cuda.current_device())

    # --- the collectives ------------------------------------------------------------

    def all_reduce(
        self, reduction: str, arrays: Sequence[np.ndarray], what: str
    ) -> list[np.ndarray]:
        """``arrays`` (float32, on the host) all-reduced as one flat tensor:
        ``sum`` over the ranks, or ``mean`` (the sum divided by the group
        size); returns them in their shapes. ``what`` names the collective's
        graph op for an error. Raises `CollectiveError`."""
        import numpy as np
        import torch

        if self.backend == "nccl":
            raise RuntimeInputError(
                "the interpreter backend's collectives run on CPU tensors: give it a gloo "
                "process group (NCCL is the cuda backend's)"
            )
        flat = np.concatenate([np.asarray(a, np.float32).reshape(-1) for a in arrays])
        tensor = torch.from_numpy(flat)
        self._wait(
            self.dist.all_reduce(
                tensor, op=self.dist.ReduceOp.SUM, group=self.group, async_op=True
            ),
            what,
        )
        if reduction == "mean":
            tensor /= self.world
        results: list[np.ndarray] = []
        start = 0
        for array in arrays:
            size = int(np.asarray(array).size)
            results.append(flat[start : start + size].reshape(np.shape(array)).copy())
            start += size
        return results

    def all_reduce_device(
        self, reduction: str, address: int, count: int, stream: Any, what: str
    ) -> None:
        """``count`` float32 at device ``address`` all-reduced in place on the
        CUDA ``stream`` (a driver stream handle): the memory wrapped as a torch
        CUDA tensor through ``__cuda_array_interface__``, the collective (and
        the division of a mean) issued with ``torch.cuda.ExternalStream`` as
        the current stream, so it runs after the launches enqueued before it
        and before those after, without a host synchronisation. Untested on
        hardware. Raises `CollectiveError`."""
        import torch

        tensor = torch.as_tensor(_DeviceArray(address, count), device="cuda")
        self.calls += 1
        try:
            external = torch.cuda.ExternalStream(_stream_handle(stream))  # type: ignore[no-untyped-call]
            with torch.cuda.stream(external):
                self.dist.all_reduce(tensor, op=self.dist.ReduceOp.SUM, group=self.group)
                if reduction == "mean":
                    tensor.div_(self.world)
        except Exception as err:  # noqa: BLE001 - every failure of the group is named
            raise CollectiveError(self._stopped(what, err)) from None

    def broadcast(self, array: np.ndarray, what: str) -> np.ndarray:
        """Rank 0's ``array`` (float32, this rank's of the same size), on every
        rank (raises `CollectiveError`)."""
        import numpy as np
        import torch

        flat = np.array(array, np.float32).reshape(-1)
        work = self.dist.broadcast(
            torch.from_numpy(flat), src=self._global(0), group=self.group, async_op=True
        )
        self._wait(work, what)
        return flat.reshape(np.shape(array))

    def agree(self, digest: bytes, what: str) -> None:
        """Every rank holds the same ``digest`` (of its plan): one gather, and
        on every rank the same `RuntimeInputError` naming a rank that differs.
        Then every rank has registered its process: they are read once
        (`processes`), for the roll call of a failed collective."""
        import numpy as np
        import torch

        mine = torch.from_numpy(np.frombuffer(digest, np.uint8).copy())
        gathered = [torch.zeros_like(mine) for _ in range(self.world)]
        self._wait(
            self.dist.all_gather(gathered, mine, group=self.group, async_op=True), what
        )
        with contextlib.suppress(Exception):  # every rank has registered: read them once
            store = self._store()
            for rank in range(self.world):
                host, _, pid = bytes(store.get(f"{_PROCESS_KEY}/{rank}")).decode().rpartition(" ")
                if pid.isdigit():
                    self.processes[rank] = (host, int(pid))
        different = [r for r, d in enumerate(gathered) if not torch.equal(d, gathered[0])]
        if different:
            raise RuntimeInputError(
                f"rank {different[0]} (of {self.world}) runs another plan than rank 0 (its "
                "plan.json differs): every rank must run the same plan"
            )

    # --- failures -------------------------------------------------------------------

    def _wait(self, work: Any, what: str) -> None:
        """Wait for an asynchronous collective at most ``timeout`` seconds."""
        self.calls += 1
        try:
            work.wait(timeout=datetime.timedelta(seconds=self.timeout))
        except Exception as err:  # noqa: BLE001 - every failure of the group is named
            raise CollectiveError(self._stopped(what, err)) from None

    def _global(self, rank: int) -> int:
        """The global rank of ``rank`` of this group."""
        if self.group is self.dist.group.WORLD:
            return rank
        return int(self.dist.get_global_rank(self.group, rank))

    def _stopped(self, what: str, err: BaseException) -> str:
        """The one line for a failed collective: a roll call in the group's store
        names the ranks that did not answer in ``roll_call`` seconds (sooner
        when each of them is a process of this host that has ended)."""
        key = f"{_ROLL_CALL_KEY}/{self.calls}"
        others = [r for r in range(self.world) if r != self.rank]
        gone = [r for r in others if _gone(self.processes.get(r))]
        host = self._store_host()
        if host in gone:  # the store ended with its process: do not ask it
            return _stopped_line(gone, self.world, what)
        try:
            store = self._store()
            store.set(f"{key}/{self.rank}", "here")
            deadline = time.monotonic() + self.roll_call
            while others and time.monotonic() < deadline:
                others = [r for r in others if not store.check([f"{key}/{r}"])]
                if all(_gone(self.processes.get(r)) for r in others):
                    break  # every rank that did not answer is a process that ended
                time.sleep(0.2)
        except Exception:  # noqa: BLE001 - the store itself is gone
            host = self._store_host()
            if host is None or host == self.rank:
                return (
                    f"the process group's store stopped responding during the collective of "
                    f"{what} ({_first_line(err)})"
                )
            others = [host]
        if not others:
            return (
                f"the collective of {what} failed on all {self.world} ranks: {_first_line(err)}"
            )
        return _stopped_line(others, self.world, what)

    def _store(self) -> Any:
        c10d = self.dist.distributed_c10d
        if self.group is self.dist.group.WORLD:
            return c10d._get_default_store()
        return c10d._get_process_group_store(self.group)

    def _store_host(self) -> int | None:
        """The rank whose process serves the store: rank 0 of the default group
        (``env://`` and ``tcp://`` initialisation), None under torchrun, whose
        agent serves it, or for another group."""
        if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
            return None
        return 0 if self.group is self.dist.group.WORLD else None


class _DeviceArray:
    """``count`` float32 at a device address, as ``__cuda_array_interface__``
    (version 3) describes them to ``torch.as_tensor``: no copy, no stream to
    wait for (the backend orders the work on its stream)."""

    def __init__(self, address: int, count: int) -> None:
        self.__cuda_array_interface__ = {
            "shape": (count,),
            "typestr": "<f4",
            "data": (address, False),
            "version": 3,
            "strides": None,
            "stream": None,
        }


def _stream_handle(stream: Any) -> int:
    """A driver stream as the integer handle ``torch.cuda.ExternalStream`` takes
    (cuda-python's ``CUstream`` converts with ``int``)."""
    return int(stream)


def _stopped_line(ranks: Sequence[int], world: int, what: str) -> str:
    named = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))}"
    return f"{named} (of {world}) stopped responding during the collective of {what}"


def _gone(process: tuple[str, int] | None) -> bool:
    """Whether ``process`` (host name, process id) ran on this host and no
    longer runs (or is a zombie); False when it cannot tell (another host,
    no record)."""
    if process is None or process[0] != socket.gethostname():
        return False
    pid = process[1]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # another user's process: it runs
        return False
    try:  # a process that ended but is not reaped yet still has a pid
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rpartition(")")[2].split()[:1] == ["Z"]
    except OSError:
        return False


def _first_line(err: BaseException) -> str:
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[0]}" if lines else type(err).__name__
