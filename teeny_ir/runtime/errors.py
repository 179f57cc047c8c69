"""The runtime's exceptions, in a module of their own so that the runtime and
its backends can both raise them without importing each other."""

from __future__ import annotations


class RuntimeInputError(ValueError):
    """Inputs, weights or a backend choice that the plan cannot run with."""


class BackendUnavailableError(RuntimeInputError):
    """A backend that cannot run here; the message is one sentence saying why."""


class WorkerError(RuntimeError):
    """The interpreter process failed; the message ends with its last stderr lines."""


class UnusedWeightsWarning(UserWarning):
    """Weights given to a run that the plan never reads (one line naming them).

    PyTorch's batch-norm counters (``*.num_batches_tracked``), in every state
    dict with batch norm and never read for inference, are not reported."""


class StatusCheckError(RuntimeInputError):
    """A kernel reported bad input data through a status output (a class index
    out of range): one line naming the graph op and its source location."""


class CollectiveError(RuntimeError):
    """A collective that did not complete: a rank of the process group stopped
    responding (died, or was killed) or the group failed. One line naming the
    rank and the graph op of the collective: ``rank 1 (of 2) stopped
    responding during the collective of graph.all_reduce at lenet.mlir:14:19``."""
