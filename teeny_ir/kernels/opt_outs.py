"""Graph ops that no kernel family runs, each with the reason the user is told.

One `no_kernel` line per reason. The conventions test asserts that every graph
op has a lowering rule (``@lowers`` in a family, or the pointwise table) or a
line here, so a new op without either is a named test failure.
"""

from __future__ import annotations

from dialects.graph.conv import Conv2dOp
from dialects.graph.param import ParamOp
from teeny_ir.kernels.lowering import no_kernel

no_kernel("weights become kernel.weight declarations read through parameter slots", ParamOp)
no_kernel(
    "convolutions lower as graph.fused_conv2d (run fuse-epilogues and select-conv-algorithm first)",
    Conv2dOp,
)
