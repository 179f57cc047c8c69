"""The ``cross_entropy`` family's contract: ``loss = -1/N * sum_n
log_softmax(logits[n])[targets[n]]``, with the targets checked.

``logits`` is [N, C] f32 (each row contiguous, rows ``logits_batch_stride``
elements apart, so it may be a batch-strided view), ``targets`` [N] i64,
``loss`` a 0-d f32 tensor and ``status`` a [3] i64 tensor that the kernel
always writes: the number of targets outside ``[0, C)``, the index of the first
one and its value (``0, N, 0`` when every target is in range). A target out of
range is never used as an address: its row's loss is NaN, and the runtime
turns a non-zero count into an error naming the launch's graph op
(`STATUS_CHECKS`).

One program walks all rows, ``BLOCK_ROWS`` at a time, each row in chunks of
``BLOCK_C`` classes (an online max and sum, as the softmax family), and adds
the row losses in a fixed order: the loss is deterministic, and no atomics or
second launch are needed. The mean is one number per batch, so a launch has
no parallelism to spread across the rows beyond the block."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily, StatusCheck

MAX_I32 = 2**31 - 1
STATUS_SIZE = 3
"""``status``: [count out of range, first such index, its value]."""


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """From ``logits`` [N, C], ``targets`` [N], ``loss`` [] and ``status`` [3]:
    ``N`` and ``C`` (the batch stride is the validator's)."""
    logits, targets = shapes["logits"], shapes["targets"]
    if (
        len(logits) != 2
        or targets != logits[:1]
        or shapes["loss"] != ()
        or shapes["status"] != (STATUS_SIZE,)
    ):
        return []
    if logits[0] > MAX_I32 or logits[1] > MAX_I32:
        return []
    return [{"N": logits[0], "C": logits[1]}]


_I32 = "i32"

FAMILY = KernelFamily(
    name="cross_entropy",
    summary=(
        "the mean over N rows of logsumexp(logits[n]) - logits[n, targets[n]] for logits "
        "[N, C] (rows at their batch stride, C of any length in BLOCK_C chunks) and i64 "
        "targets [N], in one program with an fp32 accumulator, NaN/inf as the reference; "
        "status [3] i64 = (targets out of [0, C), first such index, its value), checked by "
        "the runtime"
    ),
    args=(
        KernelArg("logits", "input", "*fp32"),
        KernelArg("targets", "input", "*i64"),
        KernelArg("loss", "output", "*fp32"),
        KernelArg("status", "output", "*i64"),
        KernelArg("N", "dim", _I32),
        KernelArg("C", "dim", _I32),
        KernelArg("logits_batch_stride", "dim", _I32),
    ),
    constexprs=(
        Constexpr("BLOCK_ROWS", "int", power_of_two=True, minimum=1),
        Constexpr("BLOCK_C", "int", power_of_two=True, minimum=1),
    ),
    grid=(GridAxis(()),),
    package=Path(__file__).parent,
    kernel_function="cross_entropy",
    footprints={
        "logits": "(N - 1) * logits_batch_stride + C",
        "targets": "N",
        "loss": "1",
        "status": str(STATUS_SIZE),
    },
    implied=implied,
    blocks=(("BLOCK_ROWS", "BLOCK_C"),),
    batch_strides={"logits": "logits_batch_stride"},
    status_checks={"status": StatusCheck("index_range", limit="C", what="target")},
)
