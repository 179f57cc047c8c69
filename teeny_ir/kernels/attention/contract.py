"""The ``attention`` family's contract: ``o, lse = attention(q, k, v)`` for every
matrix ``g`` of the collapsed batch (``graph.attention``).

The batch dimensions of q, k, v, o and lse are collapsed into ``G`` matrices.
Each tensor is contiguous in its stored layout, so matrix ``g`` of ``q`` (``N``
rows of ``DK`` features) starts at ``g * N * DK`` and its element (row ``r``,
feature ``d``) lies at ``r * q_sr + d * q_sd`` from there: ``(q_sr, q_sd)`` is
``(DK, 1)`` for the logical layout ``[N, DK]`` and ``(1, N)`` for the transposed
one ``[DK, N]`` (`layout_strides`); likewise ``k`` (``M`` x ``DK``), ``v`` (``M``
x ``DV``) and ``o`` (``N`` x ``DV``). ``lse`` is ``[G, N]``, contiguous, and
``scale`` a one-float parameter slot. No pointer takes a batch-strided view.

The footprints are the strided reach of the last matrix's last element, so a
stride that does not fit its tensor is refused whatever the layout; `implied`
holds the dims to one layout reading of the bound shapes (any of the up to 16,
the flags not being part of a shape). The head blocks ``BLOCK_DK`` and
``BLOCK_DV`` are one of `HEAD_BLOCKS`, the powers of two 16..256 (the lowering
picks them >= ``DK`` and ``DV``; the kernel reads features below both bounds
only).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.attention.tiles import HEAD_BLOCKS
from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily

MAX_I32 = 2**31 - 1

POINTERS = ("q", "k", "v", "o")
"""The tensors with a layout flag (the op's ``transposed`` order) and strides."""


def layout_strides(rows: int, features: int, flag: int) -> tuple[int, int]:
    """``(row stride, feature stride)`` of a contiguous ``rows`` x ``features``
    matrix, stored transposed (``[features, rows]``) when ``flag``."""
    return (1, rows) if flag else (features, 1)


def _matrix(shape: tuple[int, ...], flag: int) -> tuple[int, int]:
    """``(rows, features)`` of a stored shape under its layout flag."""
    return (shape[-1], shape[-2]) if flag else (shape[-2], shape[-1])


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """From ``q``, ``k``, ``v``, ``o`` (each in one of its two layouts) and ``lse``
    [*b, N] of one batch: ``G``, ``N``, ``M``, ``DK``, ``DV`` and the strides, one
    alternative per consistent assignment of the four layout flags."""
    lse = shapes["lse"]
    tensors = [shapes[name] for name in POINTERS]
    if not lse or any(len(shape) != len(lse) + 1 for shape in tensors):
        return []
    batch = lse[:-1]
    if any(shape[:-2] != batch for shape in tensors) or shapes["scale"] != (1,):
        return []
    alternatives: list[dict[str, int | None]] = []
    for flags in itertools.product((0, 1), repeat=4):
        (n, dk), (m, dk2), (m2, dv), (n2, dv2) = (
            _matrix(shape, flag) for shape, flag in zip(tensors, flags, strict=True)
        )
        if (n, n2, m, dk, dv) != (lse[-1], n, m2, dk2, dv2):
            continue
        dims: dict[str, int | None] = {"G": math.prod(batch), "N": n, "M": m, "DK": dk, "DV": dv}
        for name, rows, features, flag in zip(
            POINTERS, (n, m, m, n), (dk, dk, dv, dv), flags, strict=True
        ):
            dims[f"{name}_sr"], dims[f"{name}_sd"] = layout_strides(rows, features, flag)
        if dims not in alternatives:
            alternatives.append(dims)
    return alternatives


def _reach(name: str, rows: str, features: str) -> str:
    """Elements from a strided operand's base to its last matrix's last element, plus one."""
    return f"(G - 1) * {rows} * {features} + ({rows} - 1) * {name}_sr + ({features} - 1) * {name}_sd + 1"


_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="attention",
    summary=(
        "fused scaled dot-product attention forward o = softmax(scale * q k^T) v and the row "
        "log-sum-exp lse over G matrices: each program holds BLOCK_M queries and walks the "
        "keys in blocks of BLOCK_N with tl.dot and an online softmax in fp32 (the scores "
        "never reach memory); q, k, v and o in either layout through element strides; "
        "contiguous operands only"
    ),
    args=(
        KernelArg("q", "input", _PTR),
        KernelArg("k", "input", _PTR),
        KernelArg("v", "input", _PTR),
        KernelArg("scale", "param", _PTR),
        KernelArg("o", "output", _PTR),
        KernelArg("lse", "output", _PTR),
        KernelArg("G", "dim", _I32),
        KernelArg("N", "dim", _I32),
        KernelArg("M", "dim", _I32),
        KernelArg("DK", "dim", _I32),
        KernelArg("DV", "dim", _I32),
        *(KernelArg(f"{name}_{axis}", "dim", _I32) for name in POINTERS for axis in ("sr", "sd")),
    ),
    constexprs=(
        Constexpr("BLOCK_M", "int", power_of_two=True, minimum=16),
        Constexpr("BLOCK_N", "int", power_of_two=True, minimum=16),
        Constexpr("BLOCK_DK", "int", choices=HEAD_BLOCKS),
        Constexpr("BLOCK_DV", "int", choices=HEAD_BLOCKS),
    ),
    grid=(GridAxis((("G", "1"), ("N", "BLOCK_M"))),),
    package=Path(__file__).parent,
    kernel_function="attention",
    footprints={
        "q": _reach("q", "N", "DK"),
        "k": _reach("k", "M", "DK"),
        "v": _reach("v", "M", "DV"),
        "scale": "1",
        "o": _reach("o", "N", "DV"),
        "lse": "G * N",
    },
    implied=implied,
    blocks=(
        ("BLOCK_M", "BLOCK_DK"),
        ("BLOCK_N", "BLOCK_DK"),
        ("BLOCK_N", "BLOCK_DV"),
        ("BLOCK_M", "BLOCK_N"),
        ("BLOCK_M", "BLOCK_DV"),
    ),
)
