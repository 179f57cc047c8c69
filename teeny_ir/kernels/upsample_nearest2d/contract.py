"""The ``upsample_nearest2d`` family's contract: ``y[n, c, i, j] = x[n, c, i // SH, j // SW]``.

Both tensors are contiguous NCHW, seen as ``N_C`` planes (``H x W`` in,
``OH x OW`` out). Every load is masked to its plane, so memory safety does not
depend on the constexpr scales matching the shapes.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily

MAX_I32 = 2**31 - 1


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """From NCHW ``x`` [N, C, H, W] and ``y`` [N, C, OH, OW]: ``N_C = N * C``,
    ``H``, ``W``, ``OH``, ``OW``; an input plane must hold fewer than 2**31
    elements (32-bit offsets inside a plane)."""
    x, y = shapes["x"], shapes["y"]
    if len(x) != 4 or len(y) != 4 or x[:2] != y[:2] or x[2] * x[3] > MAX_I32:
        return []
    return [{"N_C": x[0] * x[1], "H": x[2], "W": x[3], "OH": y[2], "OW": y[3]}]


_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="upsample_nearest2d",
    summary=(
        "NCHW nearest-neighbour upsampling by integer constexpr factors SH, SW: "
        "y[n, c, i, j] = x[n, c, i // SH, j // SW], one output per lane"
    ),
    args=(
        KernelArg("x", "input", _PTR),
        KernelArg("y", "output", _PTR),
        KernelArg("N_C", "dim", _I32),
        KernelArg("H", "dim", _I32),
        KernelArg("W", "dim", _I32),
        KernelArg("OH", "dim", _I32),
        KernelArg("OW", "dim", _I32),
    ),
    constexprs=(
        Constexpr("SH", "int", minimum=1),
        Constexpr("SW", "int", minimum=1),
        Constexpr("BLOCK", "int", power_of_two=True, minimum=1),
    ),
    grid=(GridAxis((("N_C * OH * OW", "BLOCK"),)),),
    package=Path(__file__).parent,
    kernel_function="upsample_nearest2d",
    footprints={"x": "N_C * H * W", "y": "N_C * OH * OW"},
    implied=implied,
    blocks=(("BLOCK",),),
)
