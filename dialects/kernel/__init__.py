"""The `kernel` dialect: kernel launches and their weight table, as IR.

After lower-graph-to-kernel a function is a weight table, launches (one line
each when printed; see `LaunchOp` for the syntax), the weights that launches
take as operands (``kernel.param``), the views that cost no launch
(``kernel.slice``, ``kernel.reshape``, ``kernel.concat``) and, in a
data-parallel training function, the collectives (``kernel.all_reduce``)::

    kernel.weight "model.0.conv.weight" : tensor<37x37x1x1xf32>
    %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 64, ..., ACTIVATION = "silu"}
        params [w : tensor<37x37xf32> = #derive.param<reshape("model.0.conv.weight") : [37, 37]>, ...]
        args [x = in0, w = param.w, ..., y = out0, B = "B", C_IN = "37", ..., M = "63", ...]
        grid ["B * cdiv(63, 64) * cdiv(37, 64)", "1", "1"] warps 4 stages 2
        : (tensor<?x37x7x9xf32>) -> tensor<?x37x7x9xf32>

The verifier proves what the runtime relies on: bindings match the family's
ABI (`teeny_ir.kernels.families`), constexprs its table, and for every batch
1..64 the grid covers the family's tile model within the hardware's limits;
parameter slots fit the function's ``kernel.weight`` table.

The package's modules, by concern: `dialects.kernel.attributes` (the
attributes, the batch-stride layout and the batch-tensor test),
`dialects.kernel.weights` (``kernel.weight`` and the weight table),
`dialects.kernel.bindings` (a launch's constexpr, slot and binding checks),
`dialects.kernel.collective` (``kernel.all_reduce``, a collective of the plan,
not a launch) and `dialects.kernel.ops` (the other ops). The public names are re-exported here,
and the dialect object is assembled here, last.
"""

from __future__ import annotations

from xdsl.ir import Dialect

from dialects.kernel.attributes import (
    ArgBindingAttr,
    BatchStrideAttr,
    ParamSlot,
    ParamSlotAttr,
    batch_stride,
    is_batch_tensor,
    is_strided,
    symbolic_shape,
    with_batch_stride,
)
from dialects.kernel.collective import AllReduceOp
from dialects.kernel.ops import ConcatOp, LaunchOp, ParamOp, ReshapeOp, SliceOp
from dialects.kernel.weights import WeightOp

__all__ = [
    "AllReduceOp",
    "ArgBindingAttr",
    "BatchStrideAttr",
    "ConcatOp",
    "Kernel",
    "LaunchOp",
    "ParamOp",
    "ParamSlot",
    "ParamSlotAttr",
    "ReshapeOp",
    "SliceOp",
    "WeightOp",
    "batch_stride",
    "is_batch_tensor",
    "is_strided",
    "symbolic_shape",
    "with_batch_stride",
]

Kernel = Dialect(
    "kernel",
    [WeightOp, LaunchOp, ParamOp, SliceOp, ReshapeOp, ConcatOp, AllReduceOp],
    [ParamSlotAttr, ArgBindingAttr, BatchStrideAttr],
)
