"""VJP rules of the data-movement ops (`dialects.graph.structure`).

Each gradient is data movement too, built from the forward ops: reshape and
flatten reshape the gradient back, transpose applies the inverse permutation,
concat's gradient is a split along its axis, split's a concat (with zeros for
results the loss does not reach), broadcast's a sum over the stretched axes.
A slice's gradient is a `graph.pad` with zeros (interior zeros for steps other
than 1); a constant pad's is a slice of its interior (padded with zeros where
it cropped), a reflect or edge pad's adds each border run's gradient onto the
elements it copies.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType
from xdsl.ir import SSAValue

from dialects.graph.reduce import ReduceSumOp
from dialects.graph.structure import (
    BroadcastOp,
    ConcatOp,
    FlattenOp,
    PadOp,
    ReshapeOp,
    SliceOp,
    SplitOp,
    TransposeOp,
)
from teeny_ir.autodiff.context import VjpContext
from teeny_ir.autodiff.registry import vjp


@vjp(ReshapeOp, FlattenOp)
def _view(
    ctx: VjpContext, op: ReshapeOp | FlattenOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    (grad,) = grads
    if grad is None:
        return [None]
    assert isinstance(op.input.type, TensorType)
    return [ctx.reshape(grad, op.input.type)]


@vjp(TransposeOp)
def _transpose(
    ctx: VjpContext, op: TransposeOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    (grad,) = grads
    if grad is None:
        return [None]
    inverse = [0] * len(op.perm)
    for index, dim in enumerate(op.perm):
        inverse[dim] = index
    if inverse == list(range(len(inverse))):
        return [grad]
    return [ctx.emit(TransposeOp(grad, inverse, result_type=op.input.type)).result]  # type: ignore[arg-type]


@vjp(ConcatOp)
def _concat(
    ctx: VjpContext, op: ConcatOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    (grad,) = grads
    if grad is None:
        return [None] * len(op.inputs)
    if len(op.inputs) == 1:
        return [grad]
    types: list[TensorType] = []
    for value in op.inputs:
        assert isinstance(value.type, TensorType)
        types.append(value.type)
    sizes = [type_.get_shape()[op.axis] for type_ in types]
    split = ctx.emit(SplitOp(grad, sizes, op.axis, result_types=types))
    return list(split.outputs)


def _zeros_like(ctx: VjpContext, type_: TensorType, like: SSAValue) -> SSAValue:
    """A zero gradient of ``type_``: a constant when static, else a scalar zero
    broadcast over the batch of ``like`` (a gradient alive anyway)."""
    shape = type_.get_shape()
    if DYNAMIC_INDEX not in shape:
        return ctx.zeros(type_)
    return ctx.emit(BroadcastOp(ctx.constant(0.0), type_, like)).result


@vjp(SplitOp)
def _split(ctx: VjpContext, op: SplitOp, grads: Sequence[SSAValue | None]) -> list[SSAValue | None]:
    present = [grad for grad in grads if grad is not None]
    if not present:
        return [None]
    if len(grads) == 1:
        return [present[0]]
    parts: list[SSAValue] = []
    for output, grad in zip(op.outputs, grads, strict=True):
        assert isinstance(output.type, TensorType)
        parts.append(grad if grad is not None else _zeros_like(ctx, output.type, present[0]))
    concat = ConcatOp(parts, op.axis, result_type=op.input.type)  # type: ignore[arg-type]
    return [ctx.emit(concat).result]


@vjp(BroadcastOp)
def _broadcast(
    ctx: VjpContext, op: BroadcastOp, grads: Sequence[SSAValue | None]
) -> list[SSAValue | None]:
    (grad,) = grads
    if grad is None:
        return [None] * len(op.operands)
    assert isinstance(op.input.type, TensorType)
    dx = ctx.unbroadcast(grad, op.input.type)
    return [dx] if op.batch_source is None else [dx, None]  # the source's values are unread


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return value.type.get_shape()


@vjp(SliceOp)
def _slice(ctx: VjpContext, op: SliceOp, grads: Sequence[SSAValue | None]) -> list[SSAValue | None]:
    """The gradient put back where the slice read it, zeros elsewhere: reversed
    dimensions (negative steps) reversed back by a `graph.slice`, then one
    `graph.pad` with the elements around the read range and ``|step| - 1``
    interior zeros between the elements read (XLA's rule)."""
    (grad,) = grads
    if grad is None:
        return [None]
    shape, sizes, steps = _shape(op.input), _shape(op.result), op.steps
    if any(step < 0 and count > 1 for step, count in zip(steps, sizes, strict=True)):
        back = [-1 if step < 0 else 1 for step in steps]
        starts = [count - 1 if step < 0 else 0 for step, count in zip(back, sizes, strict=True)]
        grad = ctx.emit(SliceOp(grad, starts, sizes, back)).result
    rank = len(shape)
    begins, ends, interior = [0] * rank, [0] * rank, [0] * rank
    for dim, (size, start, step, count) in enumerate(
        zip(shape, op.starts, steps, sizes, strict=True)
    ):
        if size == DYNAMIC_INDEX:  # the batch is never sliced
            continue
        low = start if step > 0 else start + (count - 1) * step
        begins[dim] = low
        ends[dim] = size - 1 - (low + (count - 1) * abs(step))
        interior[dim] = abs(step) - 1 if count > 1 else 0
    if not any(begins) and not any(ends) and not any(interior):
        return [grad]
    return [ctx.emit(PadOp(grad, begins + ends, interior=interior)).result]


def _constant_pad_vjp(ctx: VjpContext, op: PadOp, grad: SSAValue) -> SSAValue:
    """A constant pad's gradient: the output elements that hold input elements
    (sliced out of ``grad`` with the interior's step), padded with zeros for the
    input elements a negative pad cropped."""
    shape, sizes = _shape(op.input), _shape(op.result)
    rank = len(shape)
    starts, counts, steps = [0] * rank, list(sizes), [1] * rank
    begins, ends = [0] * rank, [0] * rank
    for dim, (size, begin, out, inner) in enumerate(
        zip(shape, op.begins, sizes, op.interior, strict=True)
    ):
        if size == DYNAMIC_INDEX:  # the batch is never padded
            continue
        # Input element s lands at output position s * step + begin: keep those inside.
        step = inner + 1
        low, high = max(0, -(begin // step)), min(size - 1, (out - 1 - begin) // step)
        if low > high:  # every element cropped: nothing reaches the loss
            assert isinstance(op.input.type, TensorType)
            return _zeros_like(ctx, op.input.type, grad)
        starts[dim], counts[dim], steps[dim] = low * step + begin, high - low + 1, step
        begins[dim], ends[dim] = low, size - 1 - high
    if tuple(counts) != sizes or any(starts) or any(step != 1 for step in steps):
        grad = ctx.emit(SliceOp(grad, starts, counts, steps)).result
    if any(begins) or any(ends):
        grad = ctx.emit(PadOp(grad, begins + ends)).result
    return grad


def pad_source(position: int, size: int, begin: int, mode: str) -> int:
    """The input index that output ``position`` of a reflect or edge pad reads on
    a dimension of ``size`` (`teeny_ir.reference.structure.pad_indices`)."""
    raw = position - begin
    if mode == "edge":
        return min(max(raw, 0), size - 1)
    period = max(2 * (size - 1), 1)
    folded = abs(raw) % period
    return min(folded, period - folded)


def _runs(sources: Sequence[int]) -> list[tuple[int, int, int]]:
    """``sources`` (the input index of each output position) cut into maximal
    runs of slope -1, 0 or +1: ``(first position, length, slope)``."""
    runs: list[tuple[int, int, int]] = []
    first = 0
    while first < len(sources):
        length, slope = 1, 1
        if first + 1 < len(sources):
            slope = sources[first + 1] - sources[first]
            assert slope in (-1, 0, 1), sources
            while first + length < len(sources) and (
                sources[first + length] - sources[first + length - 1] == slope
            ):
                length += 1
        runs.append((first, length, slope))
        first += length
    return runs


def _border_pad_vjp(ctx: VjpContext, op: PadOp, grad: SSAValue) -> SSAValue:
    """A reflect or edge pad's gradient, one padded dimension at a time (the
    pad is separable): the output positions are cut into runs that read the
    input ascending, descending (a reflection) or repeatedly (an edge); each
    run's gradient is sliced out, reversed or summed, padded with zeros into
    place along that dimension, and the runs are added."""
    shape = _shape(op.input)
    rank = len(shape)
    for dim, (size, begin, end) in enumerate(zip(shape, op.begins, op.ends, strict=True)):
        if not begin and not end:
            continue
        current = _shape(grad)
        sources = [pad_source(o, size, begin, op.mode) for o in range(current[dim])]
        total: SSAValue | None = None
        for first, length, slope in _runs(sources):
            starts = [0] * rank
            starts[dim] = first
            counts = list(current)
            counts[dim] = length
            piece = grad
            if length != current[dim]:
                piece = ctx.emit(SliceOp(grad, starts, counts)).result
            low = sources[first]
            if slope == 0 and length > 1:
                piece = ctx.emit(ReduceSumOp(piece, [dim], keepdims=True)).result
                length = 1
            elif slope == -1:
                back = [1] * rank
                back[dim] = -1
                starts[dim] = length - 1
                piece = ctx.emit(SliceOp(piece, starts, counts, back)).result
                low -= length - 1
            pads = [0] * (2 * rank)
            pads[dim], pads[rank + dim] = low, size - low - length
            if any(pads):
                piece = ctx.emit(PadOp(piece, pads)).result
            total = piece if total is None else ctx.add(total, piece)
        assert total is not None
        grad = total
    return grad


@vjp(PadOp)
def _pad(ctx: VjpContext, op: PadOp, grads: Sequence[SSAValue | None]) -> list[SSAValue | None]:
    """Constant mode: the gradient of the interior (`_constant_pad_vjp`);
    reflect and edge: the border's gradient accumulated onto the elements it
    copies (`_border_pad_vjp`)."""
    (grad,) = grads
    if grad is None:
        return [None]
    if op.mode == "constant":
        return [_constant_pad_vjp(ctx, op, grad)]
    return [_border_pad_vjp(ctx, op, grad)]
