"""The ``avg_pool2d_backward`` family's contract: the input gradient of an
average pool over NCHW.

The kernel sees ``dy`` as ``N`` contiguous images of ``C`` planes of
``OH x OW`` and ``dx`` as ``N`` contiguous images of ``C`` planes of ``H x W``.
The window geometry (kernel, strides, padding) and the divisor rule
(``COUNT_PAD``) are constexpr. Every ``dy`` load is masked to its plane
(``0 <= oh < OH``, ``0 <= ow < OW``) and every store to the ``N * C * H * W``
elements of ``dx``, so memory safety does not depend on the geometry matching
the shapes. No pointer takes a batch-strided view.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily

MAX_I32 = 2**31 - 1


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """From NCHW ``dy`` [N, C, OH, OW] and ``dx`` [N, C, H, W]: ``N``, ``C``,
    ``H``, ``W``, ``OH``, ``OW``. Offsets inside an image are 32-bit, so an
    image must hold fewer than 2**31 elements."""
    dy, dx = shapes["dy"], shapes["dx"]
    if len(dy) != 4 or len(dx) != 4 or dy[:2] != dx[:2]:
        return []
    if dx[1] * dx[2] * dx[3] > MAX_I32 or dy[1] * dy[2] * dy[3] > MAX_I32:
        return []
    return [{"N": dx[0], "C": dx[1], "H": dx[2], "W": dx[3], "OH": dy[2], "OW": dy[3]}]


_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="avg_pool2d_backward",
    summary=(
        "NCHW average pool input gradient, gathered per dx element: for each kernel tap, "
        "the window that reads the element there adds dy / its divisor (count_include_pad "
        "or exclude_pad, clipped in ceil mode as PyTorch does); constexpr kernel, strides, "
        "padding; no atomics"
    ),
    args=(
        KernelArg("dy", "input", _PTR),
        KernelArg("dx", "output", _PTR),
        KernelArg("N", "dim", _I32),
        KernelArg("C", "dim", _I32),
        KernelArg("H", "dim", _I32),
        KernelArg("W", "dim", _I32),
        KernelArg("OH", "dim", _I32),
        KernelArg("OW", "dim", _I32),
    ),
    constexprs=(
        Constexpr("COUNT_PAD", "bool"),
        Constexpr("KH", "int", minimum=1),
        Constexpr("KW", "int", minimum=1),
        Constexpr("SH", "int", minimum=1),
        Constexpr("SW", "int", minimum=1),
        Constexpr("PT", "int", minimum=0),
        Constexpr("PL", "int", minimum=0),
        Constexpr("PB", "int", minimum=0),
        Constexpr("PR", "int", minimum=0),
        Constexpr("BLOCK", "int", power_of_two=True, minimum=1),
    ),
    grid=(GridAxis((("N * C * H * W", "BLOCK"),)),),
    package=Path(__file__).parent,
    kernel_function="avg_pool2d_backward",
    footprints={
        "dy": "N * C * OH * OW",
        "dx": "N * C * H * W",
    },
    implied=implied,
    blocks=(("BLOCK",),),
)
