"""Graph ops that no kernel family runs, each with the reason the user is told.

One `no_kernel` line per reason. The conventions test asserts that every graph
op has a lowering rule (``@lowers`` in a family, or the pointwise table) or a
line here, so a new op without either is a named test failure.
"""

from __future__ import annotations

from dialects.graph.conv import Conv2dOp
from dialects.graph.norm import BatchNormBackwardOp
from dialects.graph.param import ParamOp
from teeny_ir.kernels.lowering import no_kernel

no_kernel("weights become kernel.weight declarations read through parameter slots", ParamOp)
no_kernel(
    "convolutions lower as graph.fused_conv2d "
    "(run fuse-conv-bn-act and select-conv-algorithm first)",
    Conv2dOp,
)
# Training ops without a kernel family yet: one line each, so the family that
# takes one over deletes exactly its line. Training graphs run in the reference
# interpreter (teeny_ir.reference.run) until every op on this list has a kernel.
_NOT_YET = "no kernel family implements this training op yet (the reference interpreter runs it)"
no_kernel(_NOT_YET, BatchNormBackwardOp)
