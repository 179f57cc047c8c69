"""The ``concat`` family's contract: ``out = concat(x0, ..., x_{N-1})`` along one axis."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.concat.rows import MAX_PARTS, PARTS, part_reach
from teeny_ir.kernels.concat.rows import implied as rows_implied
from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """``numel`` and ``INNER_OUT`` from ``out``, ``INNER_k`` from ``x_k`` (0 for
    unused inputs): ``out`` must be the concatenation of the used inputs."""
    return rows_implied(shapes, "out", "x", "INNER_OUT")


_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="concat",
    summary=(
        "out[OUTER, INNER_OUT] = the inputs x_k[OUTER, INNER_k] side by side (up to "
        f"{MAX_PARTS}, N_INPUTS used), a contiguous concatenation along any axis as one "
        "copy; the grid walks the destination"
    ),
    args=(
        *(KernelArg(f"x{k}", "input", _PTR) for k in PARTS),
        KernelArg("out", "output", _PTR),
        KernelArg("numel", "dim", _I32),
        KernelArg("INNER_OUT", "dim", _I32),
        *(KernelArg(f"INNER{k}", "dim", _I32) for k in PARTS),
    ),
    constexprs=(
        Constexpr("N_INPUTS", "int", choices=tuple(range(1, MAX_PARTS + 1))),
        Constexpr("BLOCK", "int", power_of_two=True, minimum=1),
    ),
    grid=(GridAxis((("numel", "BLOCK"),)),),
    package=Path(__file__).parent,
    kernel_function="concat",
    footprints={"out": "numel", **{f"x{k}": part_reach("INNER_OUT", k) for k in PARTS}},
    implied=implied,
    blocks=(("BLOCK",),),
)
