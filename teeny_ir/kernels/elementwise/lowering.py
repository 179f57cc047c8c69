"""Lowering rules of the ``elementwise`` family: every pointwise-table op, and a
``graph.bias_add`` whose bias is an activation (one whose bias is a
``graph.param`` is `teeny_ir.kernels.channel_affine`'s), as one launch over a
rank-6 view with broadcasting strides."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation

from dialects.graph.elementwise import BiasAddOp
from dialects.graph.param import ParamOp
from dialects.kernel import LaunchOp
from teeny_ir.core import pointwise
from teeny_ir.kernels.elementwise.contract import RANK, padded
from teeny_ir.kernels.lowering import (
    LoweringContext,
    Unlowerable,
    count_expr,
    dim_expr,
    lowers,
    lowers_pointwise,
    tensor_type,
)

BLOCK = 1024
NUM_WARPS, NUM_STAGES = 4, 1
"""An elementwise kernel has no loop to pipeline."""


def broadcast_strides(operand: Sequence[int], output: Sequence[int]) -> list[str]:
    """Strides (expressions) that read a contiguous ``operand`` broadcast to
    ``output``, both left-padded to rank 6: 0 where the operand's size is 1 (or
    missing) and the output's is not - a dynamic output batch against a static 1
    included - else the operand's contiguous stride."""
    padded_operand, padded_output = padded(operand), padded(output)
    strides: list[str] = []
    for k in range(RANK):
        broadcast = padded_operand[k] == 1 and padded_output[k] != 1
        strides.append("0" if broadcast else count_expr(padded_operand[k + 1 :]))
    return strides


def _bias_strides(output: Sequence[int]) -> list[str]:
    """Strides of a bias [C] viewed as [1, C, 1, ...] against ``output`` [N, C, ...]."""
    channel_axis = RANK - len(output) + 1
    return ["1" if k == channel_axis else "0" for k in range(RANK)]


def _check_rank(op: Operation) -> None:
    for value in (*op.operands, *op.results):
        rank = len(tensor_type(value).get_shape())
        if rank > RANK:
            raise Unlowerable(f"rank {rank} exceeds the elementwise family's {RANK}")


def _launch(op: Operation, entry: str, y_binding: str, y_strides: list[str]) -> LaunchOp:
    output = tensor_type(op.results[0]).get_shape()
    x_strides = broadcast_strides(tensor_type(op.operands[0]).get_shape(), output)
    numel, sizes = count_expr(output), [dim_expr(d) for d in padded(output)]
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
        list(op.operands),
        [tensor_type(op.results[0])],
        {"OP": entry, "BLOCK": BLOCK},
        [],
        args,
        [f"cdiv({numel}, {BLOCK})", "1", "1"],
        NUM_WARPS,
        NUM_STAGES,
    )


@lowers_pointwise
def lower_pointwise(ctx: LoweringContext, op: Operation) -> LaunchOp:
    """A pointwise-table op: a unary one reads ``x`` only (``y`` is bound to it)."""
    entry = pointwise.lookup(op.name)
    assert entry is not None  # lowering_for routes only table ops here
    _check_rank(op)
    spelling = pointwise.spell(entry, pointwise.options_of(entry, op))
    output = tensor_type(op.results[0]).get_shape()
    if entry.arity == 1:
        x_strides = broadcast_strides(tensor_type(op.operands[0]).get_shape(), output)
        return _launch(op, spelling, "in0", x_strides)
    y_strides = broadcast_strides(tensor_type(op.operands[1]).get_shape(), output)
    return _launch(op, spelling, "in1", y_strides)


def activation_bias(op: Operation) -> bool:
    """A ``graph.bias_add`` whose bias is an activation, not a ``graph.param``."""
    return isinstance(op, BiasAddOp) and not isinstance(op.bias.owner, ParamOp)


@lowers(BiasAddOp, when=activation_bias)
def lower_bias_add(ctx: LoweringContext, op: BiasAddOp) -> LaunchOp:
    """``x + bias`` with the bias [C] (an activation) broadcast along dimension 1."""
    _check_rank(op)
    return _launch(op, "add", "in1", _bias_strides(tensor_type(op.result).get_shape()))
