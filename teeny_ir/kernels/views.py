"""Zero-copy splits and concats: which parts of a lowered function are views.

lower-graph-to-kernel lowers every ``graph.split`` and ``graph.concat`` to a
copy launch first (the ``split`` and ``concat`` families); `form_views` then
rewrites those copies into views where that is safe, in program order:

- A **split** along dimension 1 becomes one ``kernel.slice`` per part (a view
  of channels of its source) when every user of every part binds it to a
  pointer that takes batch-strided tensors (a family's ``batch_strides``).
  A part returned by the function, or read by a contiguous-only pointer (the
  ``elementwise`` family's), keeps the copy.
- A **concat** along dimension 1 becomes a ``kernel.concat`` when every operand
  can be written in place: it is the result of a launch whose output pointer
  takes a batch stride, it is not returned by the function nor already placed
  in another concat, appears once, and every other user of it takes
  batch-strided operands (once placed, the value *is* a view of the concat's
  buffer for all of them). A run of operands that are consecutive slices
  covering a whole source (a C2f block's ``concat(split(x)..., m(x)...)``)
  places the source itself, its slices becoming views of the concat's buffer.
  If one operand cannot be placed, the one copy launch stays (all or nothing:
  one launch copying every input is cheaper than a copy per operand).

A ``graph.constant`` needs no launch either: it becomes a ``kernel.param``
(a parameter with no weights, its values a ``literal`` derivation).

A ``graph.reshape`` or ``graph.flatten`` that keeps the batch as dimension 0
is always a view (``kernel.reshape``: each image is the same elements in the
same order). One of static shapes that changes dimension 0 is a copy launch
(the ``reshape_copy`` family); one that folds a dynamic batch into another
dimension is refused.

Placing a value changes its type to a ``#kernel.batch_stride`` one and rebinds
the ``<pointer>_batch_stride`` dims of its producer and of every consumer, so
the launches' contracts (proven by `teeny_ir.kernels.validator`) keep matching
their tensors. Views along other dimensions, of the batch, or nested (a concat
placed in another concat) are not formed: each copies.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

from xdsl.dialects.builtin import ArrayAttr, TensorType
from xdsl.dialects.func import ReturnOp
from xdsl.ir import Block, Operation, OpResult, SSAValue, Use
from xdsl.rewriter import Rewriter

from dialects.graph.constant import ConstantOp
from dialects.graph.structure import ConcatOp as GraphConcatOp
from dialects.graph.structure import FlattenOp
from dialects.graph.structure import ReshapeOp as GraphReshapeOp
from dialects.graph.structure import SplitOp as GraphSplitOp
from dialects.kernel import (
    ArgBindingAttr,
    ConcatOp,
    LaunchOp,
    ReshapeOp,
    SliceOp,
    batch_stride,
    is_strided,
    with_batch_stride,
)
from dialects.kernel import ParamOp as KernelParamOp
from teeny_ir.core.derivations import Derivation
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.lowering import LoweringContext, Unlowerable, lowers, tensor_type
from teeny_ir.kernels.reshape_copy.lowering import moves_static_batch


@lowers(ConstantOp)
def lower_constant(ctx: LoweringContext, op: Operation) -> KernelParamOp:
    """A constant is a parameter with no weights: its values as a ``literal``
    derivation (``fill`` when every element is the same finite value), bound
    at run time like a weight; no launch computes it."""
    assert isinstance(op, ConstantOp)
    shape = tuple(tensor_type(op.result).get_shape())
    values = [float(v) for v in op.value.get_values()]
    count = math.prod(shape)
    if len(values) == 1 and count > 1:
        values *= count
    first = values[0] if values else 0.0
    same = all(v == first and math.copysign(1.0, v) == math.copysign(1.0, first) for v in values)
    if values and same and math.isfinite(first):
        return KernelParamOp(Derivation("fill", (), shape, value=first))
    return KernelParamOp(Derivation("literal", (), shape, values=tuple(values)))


def _not_a_copy(op: Operation) -> bool:
    """Every reshape the ``reshape_copy`` family does not copy."""
    return not moves_static_batch(op)


@lowers(GraphReshapeOp, FlattenOp, when=_not_a_copy)
def lower_reshape(ctx: LoweringContext, op: Operation) -> ReshapeOp:
    """A reshape that keeps the batch as dimension 0: a view of its input."""
    source, result = tensor_type(op.operands[0]), tensor_type(op.results[0])
    if not source.get_shape() or source.get_shape()[0] != result.get_shape()[0]:
        raise Unlowerable(
            "a reshape that moves the batch out of dimension 0 has no kernel "
            f"({source} -> {result}); only reshapes of each image are views"
        )
    return ReshapeOp(op.operands[0], result)


@dataclass(frozen=True)
class ViewCounts:
    """What `form_views` did, for remarks and benchmarks."""

    splits: int
    concats: int
    split_copies: int
    concat_copies: int


def form_views(block: Block, origins: Mapping[LaunchOp, Operation]) -> ViewCounts:
    """Rewrite the copy launches of channel splits and concats in ``block`` into
    views where safe (see the module docstring). ``origins`` maps each launch
    to the graph op it was lowered from."""
    splits = concats = split_copies = concat_copies = 0
    for launch in [op for op in block.ops if isinstance(op, LaunchOp)]:
        origin = origins.get(launch)
        if isinstance(origin, GraphSplitOp):
            if origin.axis == 1 and _split_to_slices(launch):
                splits += 1
            else:
                split_copies += 1
        elif isinstance(origin, GraphConcatOp):
            if origin.axis == 1 and _concat_in_place(launch):
                concats += 1
            else:
                concat_copies += 1
    return ViewCounts(splits, concats, split_copies, concat_copies)


def _pointers(launch: LaunchOp, reference: str) -> list[str]:
    """The ABI pointer arguments of ``launch`` bound to ``in<N>``/``out<N>``."""
    return [name for name, binding in launch.arg_bindings if binding == reference]


def _strided_pointers(launch: LaunchOp, reference: str) -> bool:
    """Every pointer bound to ``reference`` takes a batch stride (and one is)."""
    names = _pointers(launch, reference)
    strides = FAMILIES[launch.family].batch_strides
    return bool(names) and all(name in strides for name in names)


def _takes_strided(use: Use) -> bool:
    """Whether the user can read the value as a batch-strided view."""
    user = use.operation
    if isinstance(user, LaunchOp):
        return _strided_pointers(user, f"in{use.index}")
    if isinstance(user, SliceOp | ReshapeOp):
        return all(_takes_strided(u) for u in user.result.uses)
    return False


def _writes_strided(value: SSAValue) -> bool:
    """A launch result whose output pointer takes a batch stride."""
    return (
        isinstance(value, OpResult)
        and isinstance(value.op, LaunchOp)
        and _strided_pointers(value.op, f"out{value.index}")
    )


def _rebind_strides(launch: LaunchOp, reference: str, stride: int) -> None:
    """Set the batch-stride dims of the pointers bound to ``reference``."""
    strides = FAMILIES[launch.family].batch_strides
    dims = {strides[name] for name in _pointers(launch, reference) if name in strides}
    if not dims:
        return
    launch.properties["args"] = ArrayAttr(
        [
            ArgBindingAttr(attr.arg_name, type(attr.binding)(str(stride)))
            if attr.arg_name.data in dims
            else attr
            for attr in launch.args_attr
        ]
    )


def _rebind_users(value: SSAValue, stride: int) -> None:
    """Rebind the stride dims of the launches reading ``value`` and restride the
    views of it (whose images move with it)."""
    for use in list(value.uses):
        if isinstance(use.operation, LaunchOp):
            _rebind_strides(use.operation, f"in{use.index}", stride)
        elif isinstance(use.operation, SliceOp | ReshapeOp):
            _restride(use.operation.result, stride)


def _restride(value: SSAValue, stride: int) -> SSAValue:
    """Give ``value`` the batch stride ``stride``, rebinding its producer's and
    consumers' stride dims (and restriding the slices of it)."""
    assert isinstance(value.type, TensorType)
    new = Rewriter.replace_value_with_new_type(value, with_batch_stride(value.type, stride))
    if isinstance(new, OpResult) and isinstance(new.op, LaunchOp):
        _rebind_strides(new.op, f"out{new.index}", stride)
    _rebind_users(new, stride)
    return new


def _returned(value: SSAValue) -> bool:
    return any(isinstance(use.operation, ReturnOp) for use in value.uses)


def _split_to_slices(launch: LaunchOp) -> bool:
    if any(
        _returned(part) or not all(_takes_strided(u) for u in part.uses) for part in launch.results
    ):
        return False
    (source,) = launch.inputs
    assert isinstance(source.type, TensorType)
    stride = batch_stride(source.type)
    start = 0
    block = launch.parent_block()
    assert block is not None
    for part in list(launch.results):
        assert isinstance(part.type, TensorType)
        view = SliceOp(source, start, with_batch_stride(part.type, stride))
        view.location = launch.location
        block.insert_op_before(view, launch)
        part.replace_all_uses_with(view.result)
        _rebind_users(view.result, stride)
        start += part.type.get_shape()[1]
    block.erase_op(launch)
    return True


def _slice_run(operands: list[SSAValue], first: int) -> tuple[SSAValue, int] | None:
    """(source, count) when operands[first:first + count] are consecutive slices
    covering their whole source, in order."""
    value = operands[first]
    if not isinstance(value, OpResult) or not isinstance(value.op, SliceOp):
        return None
    source = value.op.source
    assert isinstance(source.type, TensorType)
    channels, covered, count = source.type.get_shape()[1], 0, 0
    while first + count < len(operands) and covered < channels:
        part = operands[first + count]
        if not (
            isinstance(part, OpResult)
            and isinstance(part.op, SliceOp)
            and part.op.source is source
            and part.op.start == covered
        ):
            return None
        assert isinstance(part.type, TensorType)
        covered += part.type.get_shape()[1]
        count += 1
    return (source, count) if covered == channels else None


def _placeable(root: SSAValue, launch: LaunchOp) -> bool:
    """``root`` can be written in place into ``launch``'s destination: its
    other users (and those of its slices not consumed here) read views."""
    if not _writes_strided(root) or is_strided(root.type) or _returned(root):
        return False
    for use in root.uses:
        user = use.operation
        if user is launch:
            continue
        if isinstance(user, SliceOp):
            others = [u for u in user.result.uses if u.operation is not launch]
            if not all(_takes_strided(u) for u in others):
                return False
            continue
        if not _takes_strided(use):
            return False
    return True


def _concat_in_place(launch: LaunchOp) -> bool:
    operands = list(launch.inputs)
    (result,) = launch.results
    assert isinstance(result.type, TensorType)
    if is_strided(result.type):
        return False
    roots: list[SSAValue] = []
    covered: set[Operation] = set()
    index = 0
    while index < len(operands):
        run = _slice_run(operands, index)
        if run is not None:
            root, count = run
            covered |= {cast(OpResult, operands[index + k]).op for k in range(count)}
        else:
            root, count = operands[index], 1
            if sum(1 for u in root.uses if u.operation is launch) != 1:
                return False
        if root in roots:
            return False
        roots.append(root)
        index += count
    if not all(_placeable(root, launch) for root in roots):
        return False
    block = launch.parent_block()
    assert block is not None
    place = ConcatOp(roots, result.type)
    place.location = launch.location
    block.insert_op_before(place, launch)
    result.replace_all_uses_with(place.result)
    block.erase_op(launch)
    for op in covered:
        if isinstance(op, SliceOp) and not op.result.uses:
            block.erase_op(op)
    stride = batch_stride(result.type)
    for root in list(place.inputs):
        _restride(root, stride)
    return True
