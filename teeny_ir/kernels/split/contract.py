"""The ``split`` family's contract: ``y0, ..., y_{N-1} = split(x)`` along one axis.

Every tensor may be batch-strided (see `teeny_ir.kernels.concat.rows`): each
pointer has its ``IMAGE`` dim (the elements of one of its images) and its
``<pointer>_batch_stride`` dim, which the validator holds to the bound tensor's
layout.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.concat.rows import MAX_PARTS, PARTS, part_reach, whole_reach
from teeny_ir.kernels.concat.rows import implied as rows_implied
from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """``numel``, ``INNER_IN`` and ``IMAGE_IN`` from ``x``, ``INNER_k`` and
    ``IMAGE_k`` from ``y_k`` (``INNER_k = 0`` for unused outputs): ``x`` must be
    the concatenation of the used outputs."""
    return rows_implied(shapes, "x", "y", "INNER_IN", "IMAGE_IN")


_I32 = "i32"
_PTR = "*fp32"

STRIDES = {"x": "x_batch_stride", **{f"y{k}": f"y{k}_batch_stride" for k in PARTS}}
"""Each pointer's batch-stride dim."""

FAMILY = KernelFamily(
    name="split",
    summary=(
        "the outputs y_k[OUTER, INNER_k] (up to "
        f"{MAX_PARTS}, N_OUTPUTS used) = consecutive column ranges of x[OUTER, INNER_IN], "
        "a split along any axis as one copy; the grid walks the source; every tensor's "
        "images at its batch stride"
    ),
    args=(
        KernelArg("x", "input", _PTR),
        *(KernelArg(f"y{k}", "output", _PTR) for k in PARTS),
        KernelArg("numel", "dim", _I32),
        KernelArg("INNER_IN", "dim", _I32),
        *(KernelArg(f"INNER{k}", "dim", _I32) for k in PARTS),
        KernelArg("IMAGE_IN", "dim", _I32),
        *(KernelArg(f"IMAGE{k}", "dim", _I32) for k in PARTS),
        KernelArg(STRIDES["x"], "dim", _I32),
        *(KernelArg(STRIDES[f"y{k}"], "dim", _I32) for k in PARTS),
    ),
    constexprs=(
        Constexpr("N_OUTPUTS", "int", choices=tuple(range(1, MAX_PARTS + 1))),
        Constexpr("BLOCK", "int", power_of_two=True, minimum=1),
    ),
    grid=(GridAxis((("numel", "BLOCK"),)),),
    package=Path(__file__).parent,
    kernel_function="split",
    footprints={
        "x": whole_reach("IMAGE_IN", STRIDES["x"]),
        **{f"y{k}": part_reach("INNER_IN", k, STRIDES[f"y{k}"]) for k in PARTS},
    },
    implied=implied,
    blocks=(("BLOCK",),),
    batch_strides=STRIDES,
)
