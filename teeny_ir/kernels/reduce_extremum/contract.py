"""The ``reduce_extremum`` family's contract: the maximum or minimum of ``x``
over a run of axes, in the ``reduce`` family's row view and with its shapes
(`teeny_ir.kernels.reduce.contract`): only the combining step differs."""

from __future__ import annotations

from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily
from teeny_ir.kernels.reduce.contract import implied
from teeny_ir.kernels.softmax.rows import X_REACH

_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="reduce_extremum",
    summary=(
        "the maximum (MAX) or minimum of each row of x [N, RB, OUTER, R, INNER] over RB x R "
        "(a run of axes of any extent; the batch too when RB > 1), in BLOCK_R chunks, NaN if "
        "the row holds one; y's row q at image q // Y_IMAGE; images of x and y at their "
        "batch strides"
    ),
    args=(
        KernelArg("x", "input", _PTR),
        KernelArg("y", "output", _PTR),
        KernelArg("N", "dim", _I32),
        KernelArg("RB", "dim", _I32),
        KernelArg("OUTER", "dim", _I32),
        KernelArg("R", "dim", _I32),
        KernelArg("INNER", "dim", _I32),
        KernelArg("Y_IMAGE", "dim", _I32),
        KernelArg("x_batch_stride", "dim", _I32),
        KernelArg("y_batch_stride", "dim", _I32),
    ),
    constexprs=(
        Constexpr("MAX", "bool"),
        Constexpr("BLOCK_ROWS", "int", power_of_two=True, minimum=1),
        Constexpr("BLOCK_R", "int", power_of_two=True, minimum=1),
    ),
    grid=(GridAxis((("N * OUTER * INNER", "BLOCK_ROWS"),)),),
    package=Path(__file__).parent,
    kernel_function="reduce_extremum",
    footprints={
        "x": X_REACH,
        "y": "floordiv(N * OUTER * INNER - 1, Y_IMAGE) * y_batch_stride + Y_IMAGE",
    },
    implied=implied,
    blocks=(("BLOCK_ROWS", "BLOCK_R"),),
    batch_strides={"x": "x_batch_stride", "y": "y_batch_stride"},
)
