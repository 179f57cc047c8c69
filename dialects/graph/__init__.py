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
(silu, relu, sigmoid, tanh, gelu, leaky_relu, add, sub, mul, div, bias_add),
`linear` (linear, matmul), `constant` (small dense literals), `structure` (concat, split, reshape,
flatten, transpose), `pool` (max_pool2d, avg_pool2d, global_avg_pool2d,
upsample_nearest2d),
`reduce` (softmax, log_softmax, cross_entropy, reduce_sum, reduce_mean).
Every public name is re-exported here.
"""

from xdsl.ir import Dialect

from dialects.graph.constant import MAX_CONSTANT_ELEMENTS, ConstantOp
from dialects.graph.conv import ACTIVATIONS, CONV_ALGORITHMS, Conv2dOp, FusedConv2dOp
from dialects.graph.elementwise import (
    DEFAULT_NEGATIVE_SLOPE,
    GELU_APPROXIMATIONS,
    AddOp,
    BiasAddOp,
    DivOp,
    GeluOp,
    LeakyReluOp,
    MulOp,
    ReluOp,
    SigmoidOp,
    SiluOp,
    SubOp,
    TanhOp,
)
from dialects.graph.linear import LinearOp, MatmulOp, infer_linear_shape, infer_matmul_shape
from dialects.graph.norm import BatchNormOp
from dialects.graph.param import ParamOp
from dialects.graph.pool import (
    AvgPool2dOp,
    GlobalAvgPool2dOp,
    MaxPool2dOp,
    UpsampleNearest2dOp,
    infer_global_avg_pool2d_shape,
    infer_pool2d_shape,
    infer_upsample_nearest2d_shape,
)
from dialects.graph.reduce import (
    CrossEntropyOp,
    LogSoftmaxOp,
    ReduceMeanOp,
    ReduceSumOp,
    SoftmaxOp,
    infer_cross_entropy_shape,
    infer_reduce_shape,
    normalize_axis,
)
from dialects.graph.shapes import (
    DEFAULT_DILATION,
    DEFAULT_EPS,
    DEFAULT_GROUPS,
    DEFAULT_MOMENTUM,
    DEFAULT_PADDING,
    DEFAULT_STRIDES,
    Shape,
    broadcast_shapes,
    infer_concat_shape,
    infer_conv2d_shape,
    infer_flatten_shape,
    infer_reshape_shape,
    infer_split_shapes,
    infer_transpose_shape,
    is_gemm_conv,
)
from dialects.graph.structure import (
    ConcatOp,
    FlattenOp,
    ReshapeOp,
    SplitOp,
    TransposeOp,
)

__all__ = [
    "ACTIVATIONS",
    "CONV_ALGORITHMS",
    "DEFAULT_DILATION",
    "DEFAULT_EPS",
    "DEFAULT_GROUPS",
    "DEFAULT_MOMENTUM",
    "DEFAULT_NEGATIVE_SLOPE",
    "DEFAULT_PADDING",
    "DEFAULT_STRIDES",
    "GELU_APPROXIMATIONS",
    "MAX_CONSTANT_ELEMENTS",
    "AddOp",
    "AvgPool2dOp",
    "BatchNormOp",
    "BiasAddOp",
    "ConcatOp",
    "ConstantOp",
    "Conv2dOp",
    "CrossEntropyOp",
    "DivOp",
    "FlattenOp",
    "FusedConv2dOp",
    "GeluOp",
    "GlobalAvgPool2dOp",
    "Graph",
    "LeakyReluOp",
    "LinearOp",
    "LogSoftmaxOp",
    "MatmulOp",
    "MaxPool2dOp",
    "MulOp",
    "ParamOp",
    "ReduceMeanOp",
    "ReduceSumOp",
    "ReluOp",
    "ReshapeOp",
    "Shape",
    "SigmoidOp",
    "SiluOp",
    "SoftmaxOp",
    "SplitOp",
    "SubOp",
    "TanhOp",
    "TransposeOp",
    "UpsampleNearest2dOp",
    "broadcast_shapes",
    "infer_concat_shape",
    "infer_conv2d_shape",
    "infer_cross_entropy_shape",
    "infer_flatten_shape",
    "infer_global_avg_pool2d_shape",
    "infer_linear_shape",
    "infer_matmul_shape",
    "infer_pool2d_shape",
    "infer_reduce_shape",
    "infer_reshape_shape",
    "infer_split_shapes",
    "infer_transpose_shape",
    "infer_upsample_nearest2d_shape",
    "is_gemm_conv",
    "normalize_axis",
]

Graph = Dialect(
    "graph",
    [
        SoftmaxOp,
        LogSoftmaxOp,
        CrossEntropyOp,
        ReduceSumOp,
        ReduceMeanOp,
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
        TanhOp,
        GeluOp,
        LeakyReluOp,
        SubOp,
        DivOp,
        LinearOp,
        MatmulOp,
        ConstantOp,
        ConcatOp,
        SplitOp,
        ReshapeOp,
        FlattenOp,
        TransposeOp,
        MaxPool2dOp,
        AvgPool2dOp,
        GlobalAvgPool2dOp,
        UpsampleNearest2dOp,
    ],
    [],
)
