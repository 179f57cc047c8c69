"""The ``channel_affine`` family's contract:
``y[n, c, ...] = act(x[n, c, ...] * scale[c] + shift[c])``.

``x`` and ``y`` are ``B`` images of ``C`` channels of ``INNER`` elements each
(``INNER`` is the product of the dimensions from 2 on, 1 for a rank-2 [N, C]
tensor). Each image is contiguous; image ``n`` starts ``n * x_batch_stride``
(``n * y_batch_stride``) elements from the base, so either tensor may be a
batch-strided view. ``scale`` and ``shift`` are parameter slots of [C], bound
from weights through derivations (an inference batch norm's ``bn_scale`` and
``bn_shift``, a bias's ``fill(1.0)`` and ``identity``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily

MAX_I32 = 2**31 - 1


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """From ``x`` and ``y`` [N, C, ...] (the same shape, rank >= 2) and ``scale``
    and ``shift`` [C]: ``B``, ``C`` and ``INNER``; an image must hold at most
    2**31 - 1 elements (32-bit offsets inside an image). The batch strides are
    the validator's."""
    x, y = shapes["x"], shapes["y"]
    if len(x) < 2 or x != y:
        return []
    channels = x[1]
    if any(shapes.get(name, (channels,)) != (channels,) for name in ("scale", "shift")):
        return []
    inner = math.prod(x[2:])
    if channels * inner > MAX_I32:
        return []
    return [{"B": x[0], "C": channels, "INNER": inner}]


_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="channel_affine",
    summary=(
        "y[n, c, ...] = act(x[n, c, ...] * scale[c] + shift[c]) over a rank >= 2 tensor "
        "with its channel at dimension 1, scale and shift as parameter slots, any "
        "epilogue entry of the pointwise table as act; images of x and y at their "
        "batch strides"
    ),
    args=(
        KernelArg("x", "input", _PTR),
        KernelArg("scale", "param", _PTR),
        KernelArg("shift", "param", _PTR),
        KernelArg("y", "output", _PTR),
        KernelArg("B", "dim", _I32),
        KernelArg("C", "dim", _I32),
        KernelArg("INNER", "dim", _I32),
        KernelArg("x_batch_stride", "dim", _I32),
        KernelArg("y_batch_stride", "dim", _I32),
    ),
    constexprs=(
        Constexpr("ACTIVATION", "pointwise", slot="activation", epilogue=True),
        Constexpr("BLOCK", "int", power_of_two=True, minimum=1),
    ),
    grid=(GridAxis((("B * C * INNER", "BLOCK"),)),),
    package=Path(__file__).parent,
    kernel_function="channel_affine",
    footprints={
        "x": "(B - 1) * x_batch_stride + C * INNER",
        "scale": "C",
        "shift": "C",
        "y": "(B - 1) * y_batch_stride + C * INNER",
    },
    batch_strides={"x": "x_batch_stride", "y": "y_batch_stride"},
    implied=implied,
    blocks=(("BLOCK",),),
)
