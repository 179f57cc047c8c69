"""The ``attention_backward`` family's contract: the gradients of scaled
dot-product attention (``graph.attention_backward``) for every matrix ``g`` of
the collapsed batch::

    p = exp(scale * q k^T - lse)      delta = rowsum(do * o)
    dv = p^T do      ds = p * (do v^T - delta)
    dq = scale * ds k      dk = scale * ds^T q

The batch dimensions of every operand collapse into ``G`` matrices; each tensor
is contiguous in its stored layout, so matrix ``g`` of ``q`` starts at ``g * N *
DK`` elements (64-bit offsets) and its element (query ``r``, feature ``d``) lies
at ``r * q_sr + d * q_sd``: ``(q_sr, q_sd) = (DK, 1)`` in the logical layout,
``(1, N)`` when ``q`` is stored transposed (``[*b, DK, N]``). ``k`` / ``dk``
(``M x DK``), ``v`` / ``dv`` (``M x DV``) and ``o`` / ``do`` (``N x DV``) are
addressed likewise with their own strides; each gradient shares its operand's
layout, and ``do`` shares ``o``'s. ``lse`` is ``[G, N]``, contiguous. The scale is
the one-float parameter slot ``scale``.

Grid: axis 1 holds the two roles, axis 0 ``G`` times the larger of the key
blocks and the query blocks of one matrix (``max(cdiv(N, BLOCK_M), cdiv(M,
BLOCK_N))``). Role 0 owns ``BLOCK_N`` keys and writes their ``dk`` and ``dv``;
role 1 owns ``BLOCK_M`` queries and writes their ``dq``. Each output element
has one writer, so there are no atomics and the sums run in a fixed order.

`implied` holds ``N``, ``M``, ``DK``, ``DV`` and the eight strides to the bound
shapes (one alternative per layout the shapes admit); ``G`` is held by the
footprints, as the matmul family's batch is. The head tiles must cover the head
dimensions (``BLOCK_DK >= DK``, ``BLOCK_DV >= DV``), which the lowering
guarantees; a launch with smaller head tiles stays memory-safe (every access is
masked to ``DK`` and ``DV``) but ignores the features past its tiles.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import product
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily

LAYOUT_OPERANDS = ("q", "k", "v", "o")
"""The tensors with a layout flag, in ``graph.attention_backward``'s ``transposed`` order."""


def layout_strides(rows: int, features: int, transposed: int) -> tuple[int, int]:
    """``(row stride, feature stride)`` of a contiguous ``rows x features``
    matrix, stored with its two dimensions swapped when ``transposed``."""
    return (1, rows) if transposed else (features, 1)


def _logical(shape: tuple[int, ...], transposed: int) -> tuple[int, ...]:
    return (*shape[:-2], shape[-1], shape[-2]) if transposed else shape


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """From the stored shapes of ``q``, ``k``, ``v``, ``o``, ``lse``, ``do`` and
    the gradients: ``N``, ``M``, ``DK``, ``DV`` and the strides, one
    alternative per combination of layouts the shapes fit (an ``N x DK``
    matrix with ``N == DK`` fits both)."""
    q, k, v, o, lse = (shapes[name] for name in ("q", "k", "v", "o", "lse"))
    rank = len(q)
    if rank < 2 or any(len(shapes[name]) != rank for name in ("k", "v", "o", "do")):
        return []
    if (shapes["do"], shapes["dq"], shapes["dk"], shapes["dv"]) != (o, q, k, v):
        return []
    batch = q[:-2]
    if any(shape[:-2] != batch for shape in (k, v, o)) or lse[:-1] != batch:
        return []
    alternatives: list[dict[str, int | None]] = []
    for flags in product((0, 1), repeat=4):
        (n, dk), (m, dk2), (m2, dv), (n2, dv2) = (
            _logical(shape, flag)[-2:] for shape, flag in zip((q, k, v, o), flags, strict=True)
        )
        if dk != dk2 or m != m2 or dv != dv2 or not n == n2 == lse[-1]:
            continue
        dims: dict[str, int | None] = {"N": n, "M": m, "DK": dk, "DV": dv}
        for name, (rows, features), flag in zip(
            LAYOUT_OPERANDS, ((n, dk), (m, dk), (m, dv), (n, dv)), flags, strict=True
        ):
            dims[f"{name}_sr"], dims[f"{name}_sd"] = layout_strides(rows, features, flag)
        if dims not in alternatives:
            alternatives.append(dims)
    return alternatives


def matrix_reach(rows: str, features: str, operand: str) -> str:
    """The footprint of a ``G``-matrix tensor addressed through ``operand``'s
    strides: the last matrix's start plus the largest offset within it, plus one."""
    return (
        f"(G - 1) * {rows} * {features} + ({rows} - 1) * {operand}_sr"
        f" + ({features} - 1) * {operand}_sd + 1"
    )


_I32 = "i32"
_PTR = "*fp32"
_MATRICES = {
    "q": ("N", "DK", "q"),
    "k": ("M", "DK", "k"),
    "v": ("M", "DV", "v"),
    "o": ("N", "DV", "o"),
    "do": ("N", "DV", "o"),
    "dq": ("N", "DK", "q"),
    "dk": ("M", "DK", "k"),
    "dv": ("M", "DV", "v"),
}
"""Pointer -> its matrix's rows, features and the operand whose strides address it."""

FAMILY = KernelFamily(
    name="attention_backward",
    summary=(
        "the gradients dq, dk, dv of softmax(scale * q k^T) v, FlashAttention-2 style in "
        "one launch: p recomputed from q, k and the row log-sum-exp lse, blocks of keys "
        "(role 0: dk, dv) and of queries (role 1: dq) on grid axis 1, fp32 tl.dot, no "
        "atomics; every operand in either layout through its strides"
    ),
    args=(
        KernelArg("q", "input", _PTR),
        KernelArg("k", "input", _PTR),
        KernelArg("v", "input", _PTR),
        KernelArg("o", "input", _PTR),
        KernelArg("lse", "input", _PTR),
        KernelArg("do", "input", _PTR),
        KernelArg("scale", "param", _PTR),
        KernelArg("dq", "output", _PTR),
        KernelArg("dk", "output", _PTR),
        KernelArg("dv", "output", _PTR),
        KernelArg("G", "dim", _I32),
        KernelArg("N", "dim", _I32),
        KernelArg("M", "dim", _I32),
        KernelArg("DK", "dim", _I32),
        KernelArg("DV", "dim", _I32),
        *(
            KernelArg(f"{name}_{axis}", "dim", _I32)
            for name in LAYOUT_OPERANDS
            for axis in ("sr", "sd")
        ),
    ),
    constexprs=(
        Constexpr("BLOCK_M", "int", power_of_two=True, minimum=16),
        Constexpr("BLOCK_N", "int", power_of_two=True, minimum=16),
        Constexpr("BLOCK_DK", "int", power_of_two=True, minimum=16),
        Constexpr("BLOCK_DV", "int", power_of_two=True, minimum=16),
    ),
    grid=(
        GridAxis((("G", "1"), ("max(cdiv(N, BLOCK_M), cdiv(M, BLOCK_N))", "1"))),
        GridAxis((("2", "1"),)),
    ),
    package=Path(__file__).parent,
    kernel_function="attention_backward",
    footprints={
        **{name: matrix_reach(*matrix) for name, matrix in _MATRICES.items()},
        "lse": "G * N",
        "scale": "1",
    },
    implied=implied,
    blocks=(
        ("BLOCK_M", "BLOCK_N"),
        ("BLOCK_M", "BLOCK_DK"),
        ("BLOCK_M", "BLOCK_DV"),
        ("BLOCK_N", "BLOCK_DK"),
        ("BLOCK_N", "BLOCK_DV"),
    ),
)
