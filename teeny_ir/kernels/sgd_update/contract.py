"""The ``sgd_update`` family's contract: one step of ``torch.optim.SGD``
(dampening 0, no nesterov) over a parameter's ``N`` elements, flat::

    g'     = grad + weight_decay * param        (when weight_decay != 0)
    buf'   = momentum * buf + g'                (HAS_MOMENTUM = 1)
    param' = param - lr * buf'                  (HAS_MOMENTUM = 0: param - lr * g')

``p``, ``g``, ``buf``, ``p_out`` and ``buf_out`` are contiguous f32 tensors of
``N`` elements (parameters have no batch dim); ``hyper`` is a [3] f32 parameter
slot ``(lr, momentum, weight_decay)``, loaded once per program. Without
momentum (``HAS_MOMENTUM = 0``) the lowering binds ``buf`` to ``p`` and
``buf_out`` to ``p_out``, which the kernel then never touches (their footprint
is 0).

IN PLACE: an output may be the very buffer of its input (``p_out`` = ``p``,
``buf_out`` = ``buf``), as the compiled trainer binds them. The kernel is
correct then because each element is loaded from every input before any output
of that element is stored, and programs own disjoint elements (no element is
read by one program and written by another).

A 1-D grid of ``cdiv(N, BLOCK)`` programs, each a masked ``BLOCK`` of the flat
index (64-bit offsets); programs beyond the tile model touch nothing."""

from __future__ import annotations

from collections.abc import Mapping
from math import prod
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily

MAX_I32 = 2**31 - 1
HYPER = ("lr", "momentum", "weight_decay")
"""The elements of the ``hyper`` slot, in order."""
ELEMENTS = ("p", "g", "buf", "p_out", "buf_out")
"""The pointers of ``N`` elements each."""


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """Every element pointer's tensor has the parameter's shape (``N`` elements),
    ``hyper`` is [3]."""
    shape = shapes["p"]
    if any(shapes[name] != shape for name in ELEMENTS) or shapes["hyper"] != (len(HYPER),):
        return []
    numel = prod(shape)
    if numel > MAX_I32:
        return []
    return [{"N": numel}]


FAMILY = KernelFamily(
    name="sgd_update",
    summary=(
        "one torch.optim.SGD step of a parameter's N elements, flat: g' = grad + "
        "weight_decay * p (when nonzero), buf' = momentum * buf + g' (HAS_MOMENTUM), "
        "p' = p - lr * buf' (or g'); hyperparameters from a [3] slot; safe in place "
        "(p_out = p, buf_out = buf)"
    ),
    args=(
        KernelArg("p", "input", "*fp32"),
        KernelArg("g", "input", "*fp32"),
        KernelArg("buf", "input", "*fp32"),
        KernelArg("hyper", "param", "*fp32"),
        KernelArg("p_out", "output", "*fp32"),
        KernelArg("buf_out", "output", "*fp32"),
        KernelArg("N", "dim", "i32"),
    ),
    constexprs=(
        Constexpr("HAS_MOMENTUM", "bool"),
        Constexpr("BLOCK", "int", power_of_two=True, minimum=4),
    ),
    grid=(GridAxis((("N", "BLOCK"),)),),
    package=Path(__file__).parent,
    kernel_function="sgd_update",
    footprints={
        "p": "N",
        "g": "N",
        "buf": "HAS_MOMENTUM * N",
        "hyper": str(len(HYPER)),
        "p_out": "N",
        "buf_out": "HAS_MOMENTUM * N",
    },
    implied=implied,
    blocks=(("BLOCK",),),
)
