"""Graph ops that no kernel family runs, each with the reason the user is told.

One `no_kernel` line per reason. The conventions test asserts that every graph
op has a lowering rule (``@lowers`` in a family, or the pointwise table) or a
line here, so a new op without either is a named test failure.
"""

from __future__ import annotations

from dialects.graph.conv import Conv2dBackwardDataOp, Conv2dBackwardWeightOp, Conv2dOp
from dialects.graph.elementwise import ActivationGradOp
from dialects.graph.norm import BatchNormBackwardOp
from dialects.graph.optim import AdamwUpdateOp, SgdUpdateOp
from dialects.graph.param import ParamOp
from dialects.graph.pool import AvgPool2dBackwardOp, MaxPool2dBackwardOp
from dialects.graph.reduce import CrossEntropyBackwardOp, LogSoftmaxBackwardOp, SoftmaxBackwardOp
from dialects.graph.structure import BroadcastOp
from teeny_ir.kernels.lowering import no_kernel

no_kernel("weights become kernel.weight declarations read through parameter slots", ParamOp)
no_kernel(
    "convolutions lower as graph.fused_conv2d "
    "(run fuse-conv-bn-act and select-conv-algorithm first)",
    Conv2dOp,
)
no_kernel(
    "optimizer updates get kernels with compiled training (not yet)", SgdUpdateOp, AdamwUpdateOp
)
no_kernel(
    "backward ops have no kernels yet: training graphs run in the reference interpreter "
    "(teeny_ir.reference.run) until compiled training lands",
    ActivationGradOp,
    Conv2dBackwardDataOp,
    Conv2dBackwardWeightOp,
    BatchNormBackwardOp,
    MaxPool2dBackwardOp,
    AvgPool2dBackwardOp,
    SoftmaxBackwardOp,
    LogSoftmaxBackwardOp,
    CrossEntropyBackwardOp,
    BroadcastOp,
)
