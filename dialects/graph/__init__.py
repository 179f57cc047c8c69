"""The `graph` dialect: whole-tensor neural-network ops, teeny_ir's input language.

Values are builtin ``tensor<...xf32>`` types. Only dimension 0 (the batch) of an
activation may be dynamic (``?``, xDSL's ``DYNAMIC_INDEX``); parameters are fully
static, and every dimension size is at least 1. Each op verifies its operands and
checks its result type against the inferred one. The shape rules are the pure
functions `infer_conv2d_shape` and `broadcast_shapes`, which the builders use too.

Every op is pure (no memory effects), so `cse` and `dce` apply to graph programs.
Optional properties are absent when they hold their default; the custom assembly
formats print only the properties that are present, so text round-trips exactly.

Modules: `shapes` (shape rules), `format` (shared assembly formats), and the ops:
`param`, `conv` (conv2d, fused_conv2d), `norm` (batch_norm), `elementwise`
(silu, relu, sigmoid, add, mul, bias_add). Every public name is re-exported here.
"""

from xdsl.ir import Dialect

from dialects.graph.conv import ACTIVATIONS, CONV_ALGORITHMS, Conv2dOp, FusedConv2dOp
from dialects.graph.elementwise import AddOp, BiasAddOp, MulOp, ReluOp, SigmoidOp, SiluOp
from dialects.graph.norm import BatchNormOp
from dialects.graph.param import ParamOp
from dialects.graph.shapes import (
    DEFAULT_DILATION,
    DEFAULT_EPS,
    DEFAULT_GROUPS,
    DEFAULT_MOMENTUM,
    DEFAULT_PADDING,
    DEFAULT_STRIDES,
    Shape,
    broadcast_shapes,
    infer_conv2d_shape,
    is_gemm_conv,
)

__all__ = [
    "ACTIVATIONS",
    "CONV_ALGORITHMS",
    "DEFAULT_DILATION",
    "DEFAULT_EPS",
    "DEFAULT_GROUPS",
    "DEFAULT_MOMENTUM",
    "DEFAULT_PADDING",
    "DEFAULT_STRIDES",
    "AddOp",
    "BatchNormOp",
    "BiasAddOp",
    "Conv2dOp",
    "FusedConv2dOp",
    "Graph",
    "MulOp",
    "ParamOp",
    "ReluOp",
    "Shape",
    "SigmoidOp",
    "SiluOp",
    "broadcast_shapes",
    "infer_conv2d_shape",
    "is_gemm_conv",
]

Graph = Dialect(
    "graph",
    [
        ParamOp,
        Conv2dOp,
        FusedConv2dOp,
        BatchNormOp,
        SiluOp,
        ReluOp,
        SigmoidOp,
        AddOp,
        MulOp,
        BiasAddOp,
    ],
    [],
)
