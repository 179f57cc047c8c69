"""The ``pool2d`` family's contract: a max or average pool over NCHW images.

The kernel sees ``x`` as ``N`` images of ``C`` planes of ``H x W`` and ``y`` as
``N`` images of ``C`` planes of ``OH x OW``. Each image is contiguous; image
``n`` starts ``n * x_batch_stride`` (``n * y_batch_stride``) elements from the
base, so either tensor may be a batch-strided view (a channel slice of a larger
buffer). The window geometry is constexpr; every load is masked to its plane
(``0 <= ih < H``, ``0 <= iw < W``), so memory safety does not depend on the
geometry matching the shapes.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily

MAX_I32 = 2**31 - 1


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """From NCHW ``x`` [N, C, H, W] and ``y`` [N, C, OH, OW]: ``N``, ``C``, ``H``,
    ``W``, ``OH``, ``OW``. The kernel addresses within an image in 32-bit
    arithmetic, so an image must hold fewer than 2**31 elements. The batch
    strides are the validator's (it holds them to the bound tensors' layouts)."""
    x, y = shapes["x"], shapes["y"]
    if len(x) != 4 or len(y) != 4 or x[:2] != y[:2]:
        return []
    if x[1] * x[2] * x[3] > MAX_I32 or y[1] * y[2] * y[3] > MAX_I32:
        return []
    return [{"N": x[0], "C": x[1], "H": x[2], "W": x[3], "OH": y[2], "OW": y[3]}]


_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="pool2d",
    summary=(
        "NCHW max pool (NaN-propagating, -inf padding) or average pool (count_include_pad "
        "or exclude_pad divisor) with constexpr kernel, strides, padding, dilation, one "
        "output per lane; or (GLOBAL) the mean of each plane, reduced in BLOCK_HW blocks; "
        "images of x and y at their batch strides"
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
        Constexpr("GLOBAL", "bool"),
        Constexpr("IS_MAX", "bool"),
        Constexpr("COUNT_PAD", "bool"),
        Constexpr("KH", "int", minimum=1),
        Constexpr("KW", "int", minimum=1),
        Constexpr("SH", "int", minimum=1),
        Constexpr("SW", "int", minimum=1),
        Constexpr("DH", "int", minimum=1),
        Constexpr("DW", "int", minimum=1),
        Constexpr("PT", "int", minimum=0),
        Constexpr("PL", "int", minimum=0),
        Constexpr("PB", "int", minimum=0),
        Constexpr("PR", "int", minimum=0),
        Constexpr("BLOCK", "int", power_of_two=True, minimum=1),
        Constexpr("BLOCK_HW", "int", power_of_two=True, minimum=1),
    ),
    grid=(GridAxis((("N * C * OH * OW", "BLOCK"),)),),
    package=Path(__file__).parent,
    kernel_function="pool2d",
    footprints={
        "x": "(N - 1) * x_batch_stride + C * H * W",
        "y": "(N - 1) * y_batch_stride + C * OH * OW",
    },
    implied=implied,
    blocks=(("BLOCK", "BLOCK_HW"),),
    batch_strides={"x": "x_batch_stride", "y": "y_batch_stride"},
)
