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


class ArenaAllocationError(RuntimeInputError):
    """The arena of a run at some batch size cannot be allocated (more than the
    machine's memory, or an allocation the interpreter worker or the GPU
    refused): one line naming its bytes and the batch size (`arena_message`).
    Nothing ran; a session stays usable at a smaller batch."""


def arena_message(nbytes: int, batch: int, reason: str, what: str = "the arena") -> str:
    """The one line of an `ArenaAllocationError`: ``reason`` says why (``more
    than this machine's memory (N bytes)``, the allocator's refusal); ``what``
    is the memory (the arena, or an input's buffer on the GPU)."""
    return (
        f"cannot allocate {what} of a run at batch size {batch}: {nbytes} bytes "
        f"({nbytes / 2**30:.3g} GiB), {reason}; run a smaller batch"
    )


class DivergenceError(RuntimeError):
    """A training step whose loss or update is not finite (NaN or infinite):
    the trainer did not apply it, so its state stays that of the step before.
    One line naming the step (counted from 1, resumed steps included), the
    first non-finite value it found and the first launch in plan order whose
    output is not finite, with the graph op and source location it implements:
    ``step 3 diverged: the loss is nan; the first non-finite result is output 0
    of launch 0 ('implicit_gemm_conv_0', family implicit_gemm_conv), graph.conv2d
    at lenet.mlir:5:10, ...; the step is not applied (the state stays the one
    after step 2)``."""

    def __init__(self, message: str, step: int) -> None:
        super().__init__(message)
        self.step = step
        """The step that diverged (the state is that of ``step - 1``)."""
