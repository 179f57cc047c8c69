"""The ``cross_entropy_backward`` family's contract: ``dlogits[n, c] =
(softmax(logits[n])[c] - (c == targets[n])) * g / N``, with the targets checked.

``logits`` and ``dlogits`` are [N, C] f32 (each row contiguous, rows at their
batch strides, so either may be a batch-strided view), ``targets`` [N] i64,
``g`` a 0-d f32 tensor (the loss's gradient, loaded once per program) and
``status`` a [3] i64 tensor that program 0 always writes, as the
``cross_entropy`` family does: the number of targets outside ``[0, C)``, the
index of the first one and its value (``0, N, 0`` when all are in range). A
target out of range is never an address: its row is NaN, and the runtime turns a
non-zero count into an error naming the launch's graph op.

Each program takes ``BLOCK_ROWS`` rows, walks each in chunks of ``BLOCK_C``
classes for the online max and sum (the softmax family's pass), then writes the
row; program 0 also scans every target for the status (no atomics: the
status is one program's).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily, StatusCheck

MAX_I32 = 2**31 - 1
STATUS_SIZE = 3
"""``status``: [count out of range, first such index, its value]."""


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """From ``logits`` [N, C], ``targets`` [N], ``g`` [], ``dlogits`` [N, C] and
    ``status`` [3]: ``N`` and ``C`` (the batch strides are the validator's)."""
    logits, targets = shapes["logits"], shapes["targets"]
    if (
        len(logits) != 2
        or shapes["dlogits"] != logits
        or targets != logits[:1]
        or shapes["g"] != ()
        or shapes["status"] != (STATUS_SIZE,)
    ):
        return []
    if logits[0] > MAX_I32 or logits[1] > MAX_I32:
        return []
    return [{"N": logits[0], "C": logits[1]}]


_I32 = "i32"

FAMILY = KernelFamily(
    name="cross_entropy_backward",
    summary=(
        "dlogits = (softmax(logits) - onehot(targets)) * g / N for logits [N, C] (rows at "
        "their batch stride, C of any length in BLOCK_C chunks), i64 targets [N] and a 0-d "
        "g, BLOCK_ROWS rows per program, NaN/inf as the reference; status [3] i64 = "
        "(targets out of [0, C), first such index, its value), written by program 0 and "
        "checked by the runtime"
    ),
    args=(
        KernelArg("logits", "input", "*fp32"),
        KernelArg("targets", "input", "*i64"),
        KernelArg("g", "input", "*fp32"),
        KernelArg("dlogits", "output", "*fp32"),
        KernelArg("status", "output", "*i64"),
        KernelArg("N", "dim", _I32),
        KernelArg("C", "dim", _I32),
        KernelArg("logits_batch_stride", "dim", _I32),
        KernelArg("dlogits_batch_stride", "dim", _I32),
    ),
    constexprs=(
        Constexpr("BLOCK_ROWS", "int", power_of_two=True, minimum=1),
        Constexpr("BLOCK_C", "int", power_of_two=True, minimum=1),
    ),
    grid=(GridAxis((("N", "BLOCK_ROWS"),)),),
    package=Path(__file__).parent,
    kernel_function="cross_entropy_backward",
    footprints={
        "logits": "(N - 1) * logits_batch_stride + C",
        "targets": "N",
        "g": "1",
        "dlogits": "(N - 1) * dlogits_batch_stride + C",
        "status": str(STATUS_SIZE),
    },
    implied=implied,
    blocks=(("BLOCK_ROWS", "BLOCK_C"),),
    batch_strides={"logits": "logits_batch_stride", "dlogits": "dlogits_batch_stride"},
    status_checks={"status": StatusCheck("index_range", limit="C", what="target")},
)
