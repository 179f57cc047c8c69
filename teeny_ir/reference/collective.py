"""Reference semantics of `graph.all_reduce`, through a collective the caller gives.

The interpreter runs one rank. The cross-rank reduction is a function the
caller passes to `teeny_ir.reference.run` as ``collective``, a `Collective`:
``collective(reduction, array) -> array`` reduces the rank's ``array`` with
the other ranks' (``reduction`` is "mean" or "sum") and returns the result,
of the same shape, that every rank receives. Each rank calls it once per
`graph.all_reduce`, in program order, so the calls of the ranks pair up.

Without a collective, an all-reduce built for one rank (``world`` 1) is the
identity, and one built for more is a located error: it needs a process group.
A collective that declares its group size as an int attribute ``world`` (as
`ThreadGroup`'s do) is checked against the op's.

`ThreadGroup` is an in-process group, a barrier-based collective for ranks
that are threads of one interpreter (the tests simulate data-parallel training
with it); `run_ranks` runs one job per rank on such a group. The ranks'
arrays are summed in float64 in rank order, so every rank receives the same
bits, and `run` rounds the result to float32 once, as every op.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import numpy as np

from dialects.graph.collective import REDUCTIONS, AllReduceOp
from teeny_ir.reference.common import Array, Weights, error
from teeny_ir.reference.semantics import semantics

Collective = Callable[[str, Array], Array]
"""``collective(reduction, array) -> array``: the cross-rank reduction of one
`graph.all_reduce` ("mean" or "sum"), as the process group performs it."""

_COLLECTIVE: ContextVar[Collective | None] = ContextVar("teeny_collective", default=None)
"""The collective of the run in progress on this thread (`process_group`)."""

T = TypeVar("T")


@contextmanager
def process_group(collective: Collective | None) -> Iterator[None]:
    """Run the `graph.all_reduce` ops executed inside through ``collective``
    (None: none, only single-rank all-reduces run). `teeny_ir.reference.run`
    enters it with its ``collective`` argument; a caller of the semantics
    functions directly enters it itself."""
    token = _COLLECTIVE.set(collective)
    try:
        yield
    finally:
        _COLLECTIVE.reset(token)


@semantics(AllReduceOp)
def _all_reduce_op(op: AllReduceOp, args: list[Array], weights: Weights) -> list[Array]:
    (x,) = args
    collective = _COLLECTIVE.get()
    if collective is None:
        if op.world == 1:
            return [np.asarray(x, np.float64)]
        raise error(
            f"graph.all_reduce over {op.world} ranks needs a process group: run it with a "
            "collective (teeny_ir.reference.run(..., collective=fn))",
            op,
        )
    world = getattr(collective, "world", None)
    if isinstance(world, int) and world != op.world:
        raise error(
            f"graph.all_reduce was built for {op.world} ranks, but the process group has {world}",
            op,
        )
    result = np.asarray(collective(op.reduction, np.asarray(x)))
    if result.shape != np.shape(x):
        raise error(
            f"the collective returned shape {list(result.shape)} for an all-reduce of shape "
            f"{list(np.shape(x))}",
            op,
        )
    return [result.astype(np.float64)]


class CollectiveMismatch(RuntimeError):
    """The ranks of a `ThreadGroup` called one all-reduce with different
    reductions or shapes (their programs differ): every rank raises it."""


class ThreadGroup:
    """A process group of ``world`` threads of this interpreter: `member` is
    the `Collective` of one rank.

    Each call waits (``timeout`` seconds at most, then `threading.BrokenBarrierError`)
    until every rank has called, sums the ranks' arrays in float64 in rank
    order (divided by ``world`` for "mean") and hands every rank the same result.
    Ranks that disagree on the reduction or the shape all raise `CollectiveMismatch`.
    """

    def __init__(self, world: int, *, timeout: float = 60.0) -> None:
        if world < 1:
            raise ValueError(f"a process group needs at least one rank, got world={world}")
        self.world = world
        self._barrier = threading.Barrier(world, timeout=timeout)
        self._slots: list[tuple[str, Array] | None] = [None] * world
        self._result: Array | CollectiveMismatch | None = None

    def member(self, rank: int) -> Collective:
        """The collective of rank ``rank`` (in ``[0, world)``)."""
        if not 0 <= rank < self.world:
            raise ValueError(f"rank {rank} is outside [0, {self.world})")
        return _Member(self, rank)

    def _all_reduce(self, rank: int, reduction: str, array: Array) -> Array:
        self._slots[rank] = (reduction, np.asarray(array, np.float64))
        if self._barrier.wait() == 0:  # one rank reduces, once every rank has arrived
            self._result = self._reduce()
        self._barrier.wait()  # every rank reads the result before anyone writes again
        result = self._result
        if isinstance(result, CollectiveMismatch):
            raise result
        assert result is not None
        return result.copy()

    def abort(self) -> None:
        """Release the ranks waiting in a call (they raise
        `threading.BrokenBarrierError`): a rank failed and will never call."""
        self._barrier.abort()

    def _reduce(self) -> Array | CollectiveMismatch:
        slots = [slot for slot in self._slots if slot is not None]
        assert len(slots) == self.world
        calls = {(reduction, array.shape) for reduction, array in slots}
        if len(calls) != 1:
            described = ", ".join(
                f"rank {r}: {red} of {list(a.shape)}" for r, (red, a) in enumerate(slots)
            )
            return CollectiveMismatch(f"the ranks called different all-reduces ({described})")
        ((reduction, _),) = calls
        if reduction not in REDUCTIONS:
            return CollectiveMismatch(f"unknown reduction '{reduction}'")
        total = slots[0][1].copy()
        for _, array in slots[1:]:
            total = total + array
        return total / self.world if reduction == "mean" else total


class _Member:
    """One rank's `Collective` of a `ThreadGroup`; ``world`` is the group's size."""

    def __init__(self, group: ThreadGroup, rank: int) -> None:
        self.group = group
        self.rank = rank
        self.world = group.world

    def __call__(self, reduction: str, array: Array) -> Array:
        return self.group._all_reduce(self.rank, reduction, array)


def run_ranks(world: int, job: Callable[[int, Collective], T], *, timeout: float = 60.0) -> list[T]:
    """``job(rank, collective)`` for every rank of a fresh `ThreadGroup` of
    ``world``, each on its own thread; the results in rank order. The first
    exception a rank raised (by rank) is raised again here."""
    group = ThreadGroup(world, timeout=timeout)
    results: list[Any] = [None] * world
    failures: list[BaseException | None] = [None] * world

    def run(rank: int) -> None:
        try:
            results[rank] = job(rank, group.member(rank))
        except BaseException as err:  # noqa: BLE001 - re-raised by the caller's thread
            failures[rank] = err
            group.abort()  # the other ranks stop waiting for this one

    threads = [threading.Thread(target=run, args=(rank,)) for rank in range(world)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # A rank's own error first; the ones it broke the barrier of come after.
    own = [f for f in failures if f is not None and not isinstance(f, threading.BrokenBarrierError)]
    found = own or [f for f in failures if f is not None]
    if found:
        raise found[0]
    return results
