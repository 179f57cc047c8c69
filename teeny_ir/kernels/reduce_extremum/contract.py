"""The ``reduce_extremum`` family's contract: the maximum or minimum of ``x``
over a run of axes, in the ``reduce`` family's row view and with its shapes
(`teeny_ir.kernels.reduce.contract`): only the combining step differs."""

from __future__ import annotations

from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, KernelFamily
from teeny_ir.kernels.reduce.contract import ARGS, FOOTPRINTS, GRID, implied

FAMILY = KernelFamily(
    name="reduce_extremum",
    summary=(
        "the maximum (MAX) or minimum of each row of x [N, RB, OUTER, R, INNER] over RB x R "
        "(a run of axes of any extent; the batch too when RB > 1), in BLOCK_R chunks, NaN if "
        "the row holds one; y's row q at image q // Y_IMAGE; images of x and y at their "
        "batch strides"
    ),
    args=ARGS,
    constexprs=(
        Constexpr("MAX", "bool"),
        Constexpr("BLOCK_ROWS", "int", power_of_two=True, minimum=1),
        Constexpr("BLOCK_R", "int", power_of_two=True, minimum=1),
    ),
    grid=GRID,
    package=Path(__file__).parent,
    kernel_function="reduce_extremum",
    footprints=FOOTPRINTS,
    implied=implied,
    blocks=(("BLOCK_ROWS", "BLOCK_R"),),
    batch_strides={"x": "x_batch_stride", "y": "y_batch_stride"},
)
