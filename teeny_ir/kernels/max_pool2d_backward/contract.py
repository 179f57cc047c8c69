"""The ``max_pool2d_backward`` family's contract: the input gradient of a max
pool over NCHW.

The kernel sees ``x`` (the forward input) and ``dx`` as ``N`` contiguous images
of ``C`` planes of ``H x W``, and ``dy`` as ``N`` contiguous images of ``C``
planes of ``OH x OW``. The window geometry (kernel, strides, padding,
dilation) is constexpr, with ``RH, GH, IH`` and ``RW, GW, IW``, the per-axis
residue step, gcd and inverse that select the taps of the windows reading an
element (`residues`; they decide which windows count, never what is read). Every load is masked to its plane (``0 <= ih < H``,
``0 <= iw < W`` for ``x``; ``0 <= oh < OH``, ``0 <= ow < OW`` for ``dy``) and
every store to the ``N * C * H * W`` elements of ``dx``, so memory safety does
not depend on the geometry matching the shapes. No pointer takes a
batch-strided view.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily

MAX_I32 = 2**31 - 1
MAX_WINDOW_COLUMNS = 63
"""The widest window (``KW``) the kernel takes: it marks the windows beaten in a
word of 63 bits, a row of ``KW`` windows at least."""


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """From NCHW ``x`` and ``dx`` [N, C, H, W] (the same shape) and ``dy``
    [N, C, OH, OW]: ``N``, ``C``, ``H``, ``W``, ``OH``, ``OW``. Offsets inside an
    image are 32-bit, so an image must hold fewer than 2**31 elements."""
    x, dy, dx = shapes["x"], shapes["dy"], shapes["dx"]
    if len(x) != 4 or len(dy) != 4 or x != dx or x[:2] != dy[:2]:
        return []
    if x[1] * x[2] * x[3] > MAX_I32 or dy[1] * dy[2] * dy[3] > MAX_I32:
        return []
    return [{"N": x[0], "C": x[1], "H": x[2], "W": x[3], "OH": dy[2], "OW": dy[3]}]


_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="max_pool2d_backward",
    summary=(
        "NCHW max pool input gradient, gathered per dx element in O(KH * KW): each of the "
        "element's (2 KH - 1) x (2 KW - 1) neighbours inside the input is compared with it "
        "once and marks the windows in which it beats the element (a tap before it unless "
        "smaller, one after it if greater or NaN: the first maximum wins ties, the last NaN "
        "wins); each window reading the element that nothing beats passes its dy; "
        "constexpr kernel, strides, padding, dilation; no atomics"
    ),
    args=(
        KernelArg("x", "input", _PTR),
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
        Constexpr("KH", "int", minimum=1),
        Constexpr("KW", "int", minimum=1),
        Constexpr("SH", "int", minimum=1),
        Constexpr("SW", "int", minimum=1),
        Constexpr("DH", "int", minimum=1),
        Constexpr("DW", "int", minimum=1),
        Constexpr("PT", "int", minimum=0),
        Constexpr("PL", "int", minimum=0),
        Constexpr("RH", "int", minimum=1),
        Constexpr("GH", "int", minimum=1),
        Constexpr("IH", "int", minimum=0),
        Constexpr("RW", "int", minimum=1),
        Constexpr("GW", "int", minimum=1),
        Constexpr("IW", "int", minimum=0),
        Constexpr("BLOCK", "int", power_of_two=True, minimum=1),
    ),
    grid=(GridAxis((("N * C * H * W", "BLOCK"),)),),
    package=Path(__file__).parent,
    kernel_function="max_pool2d_backward",
    footprints={
        "x": "N * C * H * W",
        "dy": "N * C * OH * OW",
        "dx": "N * C * H * W",
    },
    implied=implied,
    blocks=(("BLOCK",),),
)
