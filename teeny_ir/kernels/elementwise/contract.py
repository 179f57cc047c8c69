"""The ``elementwise`` family's contract: ``out = op(x)`` or ``op(x, y)``."""

from __future__ import annotations

from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily

_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="elementwise",
    summary=(
        "out = op(x) or op(x, y) for any entry of the pointwise table, over a rank-4 "
        "(left-padded) output, with numpy broadcasting through per-operand strides "
        "(0 on broadcast dims)"
    ),
    args=(
        KernelArg("x", "input", _PTR),
        KernelArg("y", "input", _PTR),
        KernelArg("out", "output", _PTR),
        KernelArg("numel", "dim", _I32),
        KernelArg("size1", "dim", _I32),
        KernelArg("size2", "dim", _I32),
        KernelArg("size3", "dim", _I32),
        KernelArg("x_stride0", "dim", _I32),
        KernelArg("x_stride1", "dim", _I32),
        KernelArg("x_stride2", "dim", _I32),
        KernelArg("x_stride3", "dim", _I32),
        KernelArg("y_stride0", "dim", _I32),
        KernelArg("y_stride1", "dim", _I32),
        KernelArg("y_stride2", "dim", _I32),
        KernelArg("y_stride3", "dim", _I32),
    ),
    constexprs=(
        Constexpr("OP", "pointwise", slot="pointwise"),
        Constexpr("BLOCK", "int", power_of_two=True, minimum=1),
    ),
    grid=(GridAxis((("numel", "BLOCK"),)),),
    package=Path(__file__).parent,
    kernel_function="elementwise",
)
