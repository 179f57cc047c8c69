"""The ``upsample_nearest2d`` family's contract: ``y[n, c, i, j] = x[n, c, i // SH, j // SW]``.

Both tensors are NCHW, seen as ``N`` images of ``C`` planes (``H x W`` in,
``OH x OW`` out). Each image is contiguous; image ``n`` starts
``n * x_batch_stride`` (``n * y_batch_stride``) elements from the base, so
either tensor may be a batch-strided view. Every load is masked to its plane,
so memory safety does not depend on the constexpr scales matching the shapes.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily

MAX_I32 = 2**31 - 1


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """From NCHW ``x`` [N, C, H, W] and ``y`` [N, C, OH, OW]: ``N``, ``C``, ``H``,
    ``W``, ``OH``, ``OW``; an image must hold fewer than 2**31 elements (32-bit
    offsets inside an image). The batch strides are the validator's."""
    x, y = shapes["x"], shapes["y"]
    if len(x) != 4 or len(y) != 4 or x[:2] != y[:2]:
        return []
    if x[1] * x[2] * x[3] > MAX_I32 or y[1] * y[2] * y[3] > MAX_I32:
        return []
    return [{"N": x[0], "C": x[1], "H": x[2], "W": x[3], "OH": y[2], "OW": y[3]}]


_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="upsample_nearest2d",
    summary=(
        "NCHW nearest-neighbour upsampling by integer constexpr factors SH, SW: "
        "y[n, c, i, j] = x[n, c, i // SH, j // SW], one output per lane; images of x "
        "and y at their batch strides"
    ),
    args=(
        KernelArg("x", "input", _PTR),
        KernelArg("y", "output", _PTR),
        KernelArg("N", "dim", _I32),
        KernelArg("C", "dim", _I32),
        KernelArg("H", "dim", _I32),
        KernelArg("W", "dim", _I32),
        KernelArg("OH", "dim", _I32),
        KernelArg("OW", "dim", _I32),
        KernelArg("x_batch_stride", "dim", _I32),
        KernelArg("y_batch_stride", "dim", _I32),
    ),
    constexprs=(
        Constexpr("SH", "int", minimum=1),
        Constexpr("SW", "int", minimum=1),
        Constexpr("BLOCK", "int", power_of_two=True, minimum=1),
    ),
    grid=(GridAxis((("N * C * OH * OW", "BLOCK"),)),),
    package=Path(__file__).parent,
    kernel_function="upsample_nearest2d",
    footprints={
        "x": "(N - 1) * x_batch_stride + C * H * W",
        "y": "(N - 1) * y_batch_stride + C * OH * OW",
    },
    implied=implied,
    blocks=(("BLOCK",),),
    batch_strides={"x": "x_batch_stride", "y": "y_batch_stride"},
)
