"""The ``matmul`` family's contract: ``y[g] = act(scale * (a[g] @ b[g]) + shift)``
for every matrix ``g`` of the broadcast batch (``graph.matmul``).

The result's batch dimensions are collapsed (`collapse_batch`) into at most two,
``G0`` (outer) and ``G1`` (inner): matrix ``g = g0 * G1 + g1`` of ``a`` starts
``g0 * a_stride0 + g1 * a_stride1`` elements from ``a`` (a stride of 0 where
``a`` broadcasts), and likewise ``b``; ``y`` is contiguous, matrix ``g`` at
``g * M * N``. Every operand is contiguous (no pointer takes a batch-strided
view: a split part or concat operand feeding a matmul stays a copy)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from teeny_ir.core.symbols import batch_times
from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily


def _dynamic(size: int) -> bool:
    """Whether a dimension is dynamic (xDSL's ``DYNAMIC_INDEX``, negative): ``B``."""
    return size < 0


MAX_BATCH_GROUPS = 2
"""Batch dimensions the kernel addresses after `collapse_batch` (``G0``, ``G1``)."""


@dataclass(frozen=True)
class BatchGroup:
    """Collapsed batch dimensions: ``size`` matrices (``static``, times ``B`` when
    ``dynamic``), each ``a_stride`` / ``b_stride`` elements after the previous
    one in ``a`` / ``b`` (0 where that operand broadcasts)."""

    static: int
    dynamic: bool
    a_stride: int
    b_stride: int

    @property
    def size(self) -> str:
        """The group's size as an expression over ``B``."""
        return batch_times(self.static) if self.dynamic else str(self.static)


def collapse_batch(
    a_shape: Sequence[int], b_shape: Sequence[int], y_shape: Sequence[int]
) -> list[BatchGroup]:
    """The batch of ``y = a @ b`` (contiguous operands, numpy broadcasting) as the
    fewest groups: result dimensions of size 1 dropped, and neighbours merged
    where both operands step through them as through one dimension. Raises
    ValueError if more than `MAX_BATCH_GROUPS` remain (the kernel addresses
    two)."""
    batch = list(y_shape[:-2])
    groups: list[BatchGroup] = []
    operands = []
    for shape in (a_shape, b_shape):
        matrix = math.prod(shape[-2:])
        padded = [1] * (len(batch) - len(shape[:-2])) + list(shape[:-2])
        strides = []
        for i, size in enumerate(padded):
            later = padded[i + 1 :]
            if size == 1 or any(_dynamic(d) for d in later):
                strides.append(0)  # broadcast (a dim before the batch is size 1)
            else:
                strides.append(math.prod(later) * matrix)
        operands.append(strides)
    for i, size in enumerate(batch):
        if size == 1:
            continue
        group = BatchGroup(
            1 if _dynamic(size) else size, _dynamic(size), operands[0][i], operands[1][i]
        )
        if groups:
            last = groups[-1]
            if (
                not group.dynamic
                and last.a_stride == group.a_stride * group.static
                and last.b_stride == group.b_stride * group.static
            ):
                groups[-1] = BatchGroup(
                    last.static * group.static, last.dynamic, group.a_stride, group.b_stride
                )
                continue
        groups.append(group)
    if len(groups) > MAX_BATCH_GROUPS:
        raise ValueError(
            f"its batch dimensions broadcast in {len(groups)} separate groups "
            f"(the matmul kernel addresses at most {MAX_BATCH_GROUPS})"
        )
    return groups


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """From ``a`` [..., M, K], ``b`` [..., K, N] and ``y`` [..., M, N]: ``M``, ``N``
    and ``K``. (The batch groups are held by the footprints.)"""
    a, b, y = shapes["a"], shapes["b"], shapes["y"]
    if min(len(a), len(b), len(y)) < 2 or a[-1] != b[-2] or (a[-2], b[-1]) != y[-2:]:
        return []
    return [{"M": a[-2], "K": a[-1], "N": b[-1]}]


_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="matmul",
    summary=(
        "batched y[g] = act(scale * (a[g] @ b[g]) + shift) with tl.dot over up to two "
        "collapsed broadcast batch dimensions (stride 0 where an operand broadcasts), "
        "GROUP_M swizzle per matrix, epilogue with any epilogue entry of the pointwise "
        "table; contiguous operands only"
    ),
    args=(
        KernelArg("a", "input", _PTR),
        KernelArg("b", "input", _PTR),
        KernelArg("scale", "param", _PTR),
        KernelArg("shift", "param", _PTR),
        KernelArg("y", "output", _PTR),
        KernelArg("M", "dim", _I32),
        KernelArg("N", "dim", _I32),
        KernelArg("K", "dim", _I32),
        KernelArg("G0", "dim", _I32),
        KernelArg("G1", "dim", _I32),
        KernelArg("a_stride0", "dim", _I32),
        KernelArg("a_stride1", "dim", _I32),
        KernelArg("b_stride0", "dim", _I32),
        KernelArg("b_stride1", "dim", _I32),
    ),
    constexprs=(
        Constexpr("BLOCK_M", "int", power_of_two=True, minimum=16),
        Constexpr("BLOCK_N", "int", power_of_two=True, minimum=16),
        Constexpr("BLOCK_K", "int", power_of_two=True, minimum=16),
        Constexpr("GROUP_M", "int", minimum=1),
        Constexpr("ACTIVATION", "pointwise", slot="activation", epilogue=True),
    ),
    grid=(GridAxis((("G0", "1"), ("G1", "1"), ("M", "BLOCK_M"), ("N", "BLOCK_N"))),),
    package=Path(__file__).parent,
    kernel_function="matmul",
    footprints={
        "a": "(G0 - 1) * a_stride0 + (G1 - 1) * a_stride1 + M * K",
        "b": "(G0 - 1) * b_stride0 + (G1 - 1) * b_stride1 + K * N",
        "scale": "N",
        "shift": "N",
        "y": "G0 * G1 * M * N",
    },
    implied=implied,
    blocks=(("BLOCK_M", "BLOCK_N"), ("BLOCK_M", "BLOCK_K"), ("BLOCK_K", "BLOCK_N")),
)
