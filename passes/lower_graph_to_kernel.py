"""lower-graph-to-kernel: graph ops become `kernel.launch` ops with a weight table.

Each function is planned completely before anything changes: every op that
cannot be lowered is reported (one located diagnostic each) and the module is
left untouched; otherwise the launches replace their graph ops in place.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, TensorType, f32
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from dialects.graph import (
    AddOp,
    BiasAddOp,
    FusedConv2dOp,
    MulOp,
    ParamOp,
    ReluOp,
    SigmoidOp,
    SiluOp,
)
from dialects.kernel import LaunchOp, ParamSlot, WeightOp
from teeny_ir.derivations import reshape
from teeny_ir.diagnostics import Diagnostic, DiagnosticError, Severity, loc_of
from teeny_ir.kernel_families import ACTIVATIONS, ELEMENTWISE_OPS

GROUP_M = 8
"""Row-tile group of the GEMM's L2 swizzle (Triton's matmul tutorial value)."""
ELEMENTWISE_BLOCK = 1024
ELEMENTWISE_WARPS, ELEMENTWISE_STAGES = 4, 1
"""An elementwise kernel has no loop to pipeline."""
RANK = 4
"""The elementwise family views every tensor as rank 4, left-padded with 1s."""

_ELEMENTWISE: dict[type[Operation], str] = {
    SiluOp: "silu",
    ReluOp: "relu",
    SigmoidOp: "sigmoid",
    AddOp: "add",
    MulOp: "mul",
    BiasAddOp: "add",
}
_REASONS = {
    "graph.conv2d": "convolutions lower as graph.fused_conv2d "
    "(run fuse-conv-bn-act and select-conv-algorithm first)",
    "graph.batch_norm": "no kernel computes a standalone batch norm "
    "(fuse-conv-bn-act folds an inference batch norm into the convolution before it)",
}


class Unlowerable(Exception):
    """Why one op cannot become a kernel launch."""


def gemm_launch_config(block_m: int, block_n: int) -> tuple[int, int]:
    """(num_warps, num_stages) for a conv1x1_gemm tile: 8 warps once the
    accumulator reaches 128x128 (64 fp32 registers per thread at 8 warps), else 4;
    2 stages double-buffer the K loop."""
    return (8 if block_m * block_n >= 128 * 128 else 4), 2


def _dim(size: int) -> str:
    return "B" if size == DYNAMIC_INDEX else str(size)


def _product(sizes: Sequence[int]) -> str:
    """The element count of ``sizes`` as an expression: ``"B * 2331"`` or ``"42"``."""
    static = math.prod(d for d in sizes if d != DYNAMIC_INDEX)
    if DYNAMIC_INDEX not in sizes:
        return str(static)
    return "B" if static == 1 else f"B * {static}"


def _padded(shape: Sequence[int]) -> tuple[int, ...]:
    return (1,) * (RANK - len(shape)) + tuple(shape)


def broadcast_strides(operand: Sequence[int], output: Sequence[int]) -> list[str]:
    """Strides (expressions) that read a contiguous ``operand`` broadcast to
    ``output``, both left-padded to rank 4: 0 where the operand's size is 1 (or
    missing) and the output's is not - a dynamic output batch against a static 1
    included - else the operand's contiguous stride."""
    padded_operand, padded_output = _padded(operand), _padded(output)
    strides: list[str] = []
    for k in range(RANK):
        broadcast = padded_operand[k] == 1 and padded_output[k] != 1
        strides.append("0" if broadcast else _product(padded_operand[k + 1 :]))
    return strides


def _bias_strides(output: Sequence[int]) -> list[str]:
    """Strides of a bias [C] viewed as [1, C, 1, ...] against ``output`` [N, C, ...]."""
    channel_axis = RANK - len(output) + 1
    return ["1" if k == channel_axis else "0" for k in range(RANK)]


def _tensor(value: SSAValue) -> TensorType:
    assert isinstance(value.type, TensorType)  # the graph verifiers guarantee it
    return value.type


def lower_fused_conv(op: FusedConv2dOp) -> LaunchOp:
    """A ``gemm`` fused convolution as one conv1x1_gemm launch."""
    if op.algorithm is None or op.tiles is None:
        raise Unlowerable("no algorithm selected (run select-conv-algorithm first)")
    if op.algorithm != "gemm":
        raise Unlowerable(
            f"algorithm '{op.algorithm}' has no kernel family yet (only 'gemm' lowers)"
        )
    weight = op.weight.owner
    if not isinstance(weight, ParamOp):
        raise Unlowerable("its weight is not a graph.param")
    batch, c_in, height, width = _tensor(op.input).get_shape()
    c_out = _tensor(op.result).get_shape()[1]
    spatial = height * width
    block_m, block_n, block_k = op.tiles
    num_warps, num_stages = gemm_launch_config(block_m, block_n)
    params = [
        ParamSlot("w", (c_out, c_in), reshape(weight.param_name.data, (c_out, c_in))),
        ParamSlot("scale", (c_out,), op.scale.data),
        ParamSlot("shift", (c_out,), op.shift.data),
    ]
    constexprs = {
        "BLOCK_M": block_m,
        "BLOCK_N": block_n,
        "BLOCK_K": block_k,
        "GROUP_M": GROUP_M,
        "ACTIVATION": ACTIVATIONS[op.activation],
    }
    args = [
        ("x", "in0"),
        ("w", "param.w"),
        ("scale", "param.scale"),
        ("shift", "param.shift"),
        ("y", "out0"),
        ("B", _dim(batch)),
        ("C_IN", str(c_in)),
        ("C_OUT", str(c_out)),
        ("M", str(spatial)),
        ("y_row_stride", str(spatial)),
    ]
    grid = [f"{_dim(batch)} * cdiv({spatial}, {block_m}) * cdiv({c_out}, {block_n})", "1", "1"]
    return LaunchOp(
        "conv1x1_gemm",
        [op.input],
        [_tensor(op.result)],
        constexprs,
        params,
        args,
        grid,
        num_warps,
        num_stages,
    )


def lower_elementwise(op: Operation, kind: str) -> LaunchOp:
    """silu/relu/sigmoid/add/mul/bias_add as one elementwise launch."""
    output = _tensor(op.results[0]).get_shape()
    if len(output) > RANK:
        raise Unlowerable(f"rank {len(output)} exceeds the elementwise family's {RANK}")
    x = op.operands[0]
    x_strides = broadcast_strides(_tensor(x).get_shape(), output)
    if len(op.operands) == 1:  # unary: y is never read; bind it to x
        inputs, y_binding, y_strides = [x], "in0", x_strides
    elif isinstance(op, BiasAddOp):
        inputs, y_binding, y_strides = [x, op.bias], "in1", _bias_strides(output)
    else:
        y = op.operands[1]
        y_strides = broadcast_strides(_tensor(y).get_shape(), output)
        inputs, y_binding = [x, y], "in1"
    numel, sizes = _product(output), [_dim(d) for d in _padded(output)]
    args = [
        ("x", "in0"),
        ("y", y_binding),
        ("out", "out0"),
        ("numel", numel),
        *((f"size{k}", sizes[k]) for k in range(1, RANK)),
        *((f"x_stride{k}", s) for k, s in enumerate(x_strides)),
        *((f"y_stride{k}", s) for k, s in enumerate(y_strides)),
    ]
    return LaunchOp(
        "elementwise",
        inputs,
        [_tensor(op.results[0])],
        {"OP": ELEMENTWISE_OPS[kind], "BLOCK": ELEMENTWISE_BLOCK},
        [],
        args,
        [f"cdiv({numel}, {ELEMENTWISE_BLOCK})", "1", "1"],
        ELEMENTWISE_WARPS,
        ELEMENTWISE_STAGES,
    )


def _lower_op(op: Operation) -> LaunchOp:
    if isinstance(op, FusedConv2dOp):
        return lower_fused_conv(op)
    kind = _ELEMENTWISE.get(type(op))
    if kind is not None:
        return lower_elementwise(op, kind)
    raise Unlowerable(_REASONS.get(op.name, "no kernel family implements it yet"))


_KEPT = (ReturnOp, WeightOp, LaunchOp, ParamOp)


@dataclass
class _Plan:
    """The lowering of one function, built before anything in it changes."""

    launches: list[tuple[Operation, LaunchOp]]
    weights: list[WeightOp]
    params: list[ParamOp]
    errors: list[Diagnostic]

    def discard(self) -> None:
        for _, launch in self.launches:
            launch.erase(safe_erase=False)  # drops its uses of the graph values

    def apply(self, entry: Block) -> None:
        first = entry.first_op
        for weight in self.weights:
            if first is None:
                entry.add_op(weight)
            else:
                entry.insert_op_before(weight, first)
        for old, launch in self.launches:
            assert old.parent is not None
            old.parent.insert_op_before(launch, old)
            old.results[0].replace_all_uses_with(launch.results[0])
            old.parent.erase_op(old)
        for param in self.params:
            assert param.parent is not None
            param.parent.erase_op(param)


def _error(op: Operation, reason: str) -> Diagnostic:
    return Diagnostic(Severity.ERROR, f"cannot lower '{op.name}' to a kernel: {reason}", loc_of(op))


def _weight_declarations(
    function: FuncOp, errors: list[Diagnostic]
) -> dict[str, tuple[TensorType, Operation]]:
    """Weight name -> (type, first declaring op), from graph.param and existing
    kernel.weight ops."""
    declarations: dict[str, tuple[TensorType, Operation]] = {}
    for op in function.walk():
        if isinstance(op, WeightOp | ParamOp):
            name = op.weight_name if isinstance(op, WeightOp) else op.param_name.data
            type_ = op.weight_type if isinstance(op, WeightOp) else _tensor(op.result)
            first, _ = declarations.setdefault(name, (type_, op))
            if first != type_:
                errors.append(_error(op, f"weight '{name}' is also declared with type {first}"))
    return declarations


def plan_function(function: FuncOp) -> _Plan:
    """Lower each op of ``function`` off to the side, collecting every failure."""
    plan = _Plan([], [], [], [])
    types = _weight_declarations(function, plan.errors)
    declared = {op.weight_name for op in function.walk() if isinstance(op, WeightOp)}
    ops = [op for block in function.body.blocks for op in block.ops]
    refused: set[Operation] = set()
    for op in ops:
        if isinstance(op, ParamOp):
            plan.params.append(op)
        if isinstance(op, _KEPT):
            continue
        try:
            launch = _lower_op(op)
        except Unlowerable as why:
            plan.errors.append(_error(op, str(why)))
            refused.add(op)
            continue
        launch.location = op.location
        plan.launches.append((op, launch))
        try:
            launch.check_plan()
            _declare_weights(launch, {**_epilogue_weights(op), **types}, declared, plan.weights)
        except (VerifyException, Unlowerable) as err:
            plan.errors.append(_error(op, str(err)))
    own = refused | {launch for _, launch in plan.launches}
    for param in plan.params:
        plan.errors.extend(_misuses(param, own))
    return plan


def _epilogue_weights(op: Operation) -> dict[str, tuple[TensorType, Operation]]:
    """The per-channel weights a fused convolution's scale and shift read, at
    their shape [C_OUT]: fuse-conv-bn-act removes the graph.param ops it folds."""
    if not isinstance(op, FusedConv2dOp):
        return {}
    channels = TensorType(f32, [_tensor(op.result).get_shape()[1]])
    sources = (*op.scale.data.sources, *op.shift.data.sources)
    return {source: (channels, op) for source in sources}


def _misuses(param: ParamOp, skipped: set[Operation]) -> list[Diagnostic]:
    """An error if the weight flows into an op as a tensor, other than as a fused
    convolution's weight (``skipped``: ops already refused, and the pass's own
    launches, which replace their graph ops)."""
    for use in param.result.uses:
        user = use.operation
        if user in skipped or (isinstance(user, FusedConv2dOp) and use.index == 1):
            continue
        return [
            _error(
                param,
                f"weight '{param.param_name.data}' is used as a tensor by '{user.name}'; "
                "kernels read weights only through parameter slots "
                "(fuse-conv-bn-act folds a conv's bias into its shift)",
            )
        ]
    return []


def _declare_weights(
    launch: LaunchOp,
    types: Mapping[str, tuple[TensorType, Operation]],
    declared: set[str],
    weights: list[WeightOp],
) -> None:
    """Append a kernel.weight for each new source of the launch's derivations
    (first-use order), checking that the sources fit."""
    for slot in launch.param_slots:
        shapes = {s: types[s][0].get_shape() for s in slot.derivation.sources if s in types}
        for problem in slot.derivation.check_sources(shapes):
            raise Unlowerable(f"its {slot.name} derivation does not fit: {problem}")
        for source in slot.derivation.sources:
            if source not in declared:
                declared.add(source)
                type_, declaration = types[source]
                weight = WeightOp(source, type_)
                weight.location = declaration.location
                weights.append(weight)


@dataclass(frozen=True)
class LowerGraphToKernelPass(ModulePass):
    """Lower graph ops to kernel.launch ops and a kernel.weight table.

    Expects the graph after select-conv-algorithm: ``graph.fused_conv2d`` with
    algorithm ``gemm`` becomes a ``conv1x1_gemm`` launch (its weight reshaped to
    [C_OUT, C_IN], its scale and shift derivations as parameter slots);
    silu, relu, sigmoid, add, mul and bias_add become ``elementwise`` launches
    over a rank-4 view with broadcasting strides. The ``graph.param`` ops become
    ``kernel.weight`` declarations at the top of the function, one per weight a
    derivation reads. Launches keep the locations and result types of the ops
    they replace; ``func.return`` stays. Refuses, naming each op with its
    location: unfused convolutions and batch norms, fused convolutions without
    the ``gemm`` algorithm, weights used as tensors (e.g. a bias_add's bias
    that fuse-conv-bn-act did not fold), and ops no family implements.
    """

    name = "lower-graph-to-kernel"
    anchors: ClassVar[tuple[str, ...]] = ("builtin.module",)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        plans = [(f, plan_function(f)) for f in op.walk() if isinstance(f, FuncOp)]
        errors = [e for _, plan in plans for e in plan.errors]
        if errors:
            for _, plan in plans:
                plan.discard()
            raise DiagnosticError(errors)
        for function, plan in plans:
            plan.apply(function.body.blocks[0])
