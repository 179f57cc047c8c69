"""The ``concat`` family's contract: ``out = concat(x0, ..., x_{N-1})`` along one axis.

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
    """``numel``, ``INNER_OUT`` and ``IMAGE_OUT`` from ``out``, ``INNER_k`` and
    ``IMAGE_k`` from ``x_k`` (``INNER_k = 0`` for unused inputs): ``out`` must be
    the concatenation of the used inputs."""
    return rows_implied(shapes, "out", "x", "INNER_OUT", "IMAGE_OUT")


_I32 = "i32"
_PTR = "*fp32"

STRIDES = {**{f"x{k}": f"x{k}_batch_stride" for k in PARTS}, "out": "out_batch_stride"}
"""Each pointer's batch-stride dim."""

FAMILY = KernelFamily(
    name="concat",
    summary=(
        "out[OUTER, INNER_OUT] = the inputs x_k[OUTER, INNER_k] side by side (up to "
        f"{MAX_PARTS}, N_INPUTS used), a concatenation along any axis as one copy; the "
        "grid walks the destination; every tensor's images at its batch stride"
    ),
    args=(
        *(KernelArg(f"x{k}", "input", _PTR) for k in PARTS),
        KernelArg("out", "output", _PTR),
        KernelArg("numel", "dim", _I32),
        KernelArg("INNER_OUT", "dim", _I32),
        *(KernelArg(f"INNER{k}", "dim", _I32) for k in PARTS),
        KernelArg("IMAGE_OUT", "dim", _I32),
        *(KernelArg(f"IMAGE{k}", "dim", _I32) for k in PARTS),
        *(KernelArg(STRIDES[f"x{k}"], "dim", _I32) for k in PARTS),
        KernelArg(STRIDES["out"], "dim", _I32),
    ),
    constexprs=(
        Constexpr("N_INPUTS", "int", choices=tuple(range(1, MAX_PARTS + 1))),
        Constexpr("BLOCK", "int", power_of_two=True, minimum=1),
    ),
    grid=(GridAxis((("numel", "BLOCK"),)),),
    package=Path(__file__).parent,
    kernel_function="concat",
    footprints={
        "out": whole_reach("IMAGE_OUT", STRIDES["out"]),
        **{f"x{k}": part_reach("INNER_OUT", k, STRIDES[f"x{k}"]) for k in PARTS},
    },
    implied=implied,
    blocks=(("BLOCK",),),
    batch_strides=STRIDES,
)
