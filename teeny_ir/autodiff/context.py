"""`VjpContext`: what a VJP rule builds its gradient ops with.

The context inserts every op it is given before the function's return, at the
location of the forward op being differentiated (``insert-backward`` sets it
before each rule runs), and applies the one save/recompute policy
(`teeny_ir.autodiff.policy`) when a rule asks for a forward value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType, UnitAttr, f32
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from dialects.graph.constant import ConstantOp
from dialects.graph.elementwise import (
    AbsOp,
    ActivationGradOp,
    AddOp,
    DivOp,
    LogOp,
    MulOp,
    PowOp,
    ReluOp,
    SubOp,
)
from dialects.graph.reduce import ReduceSumOp
from dialects.graph.structure import ReshapeOp
from teeny_ir.autodiff import policy
from teeny_ir.core import pointwise

if TYPE_CHECKING:
    from xdsl.dialects.builtin import LocationAttr

OpT = TypeVar("OpT", bound=Operation)
BACKWARD_ATTR = "teeny.backward"
"""The discardable attribute on every op the backward adds."""


def per_sample_bytes(type_: TensorType) -> int:
    """Bytes of one sample of an f32 tensor: its image for a batched (``?``) one,
    all of it for a static one."""
    shape = type_.get_shape()
    if shape and shape[0] == DYNAMIC_INDEX:
        return 4 * math.prod(shape[1:])
    return 4 * math.prod(shape)


class VjpContext:
    """Builds the backward of one function: ops go before ``anchor`` (its return)."""

    def __init__(self, block: Block, anchor: Operation) -> None:
        self.block = block
        self.anchor = anchor
        self.location: LocationAttr | None = None
        """The location new ops take: the forward op being differentiated."""
        self.saved: dict[SSAValue, int] = {}
        """Forward intermediates the backward reads (kept alive), with their
        bytes per sample."""
        self._recomputed: dict[SSAValue, SSAValue] = {}
        self.param_grads: dict[str, list[SSAValue]] = {}
        """Gradients of weights that are not operands (a fused convolution's
        ``shift = identity(bias)`` reads the weight named ``bias``), by name."""

    # ------------------------------------------------------------- building

    def emit(self, op: OpT) -> OpT:
        """Insert ``op`` into the backward, located at the current forward op and
        marked ``teeny.backward`` (the plan's backward phase)."""
        if self.location is not None:
            op.location = self.location
        op.attributes[BACKWARD_ATTR] = UnitAttr()
        self.block.insert_op_before(op, self.anchor)
        return op

    def value(self, value: SSAValue) -> SSAValue:
        """The forward ``value`` for use in the backward: the value itself when the
        policy keeps it (counted in `saved` if it is an intermediate), or a
        recomputation of its op from kept values (once per value)."""
        if isinstance(value, BlockArgument) or value.owner is None:
            return value
        owner = value.owner
        assert isinstance(owner, Operation)
        if policy.is_free(owner):
            return value
        if not policy.recompute(owner):
            if isinstance(value.type, TensorType):
                self.saved.setdefault(value, per_sample_bytes(value.type))
            return value
        if value not in self._recomputed:
            clone = owner.clone_without_regions()
            for index, operand in enumerate(owner.operands):
                clone.operands[index] = self.value(operand)
            self.emit(clone)
            for old, new in zip(owner.results, clone.results, strict=True):
                self._recomputed[old] = new
        return self._recomputed[value]

    def param_grad(self, name: str, grad: SSAValue) -> None:
        """Report the gradient of the weight ``name`` that the op reads through a
        derivation, not an operand; insert-backward adds it to that parameter's."""
        self.param_grads.setdefault(name, []).append(grad)

    # ------------------------------------------------------------- helpers

    def add(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self.emit(AddOp(lhs, rhs)).result

    def sub(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self.emit(SubOp(lhs, rhs)).result

    def mul(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self.emit(MulOp(lhs, rhs)).result

    def div(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self.emit(DivOp(lhs, rhs)).result

    def pow(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self.emit(PowOp(lhs, rhs)).result

    def abs(self, value: SSAValue) -> SSAValue:
        return self.emit(AbsOp(value)).result

    def relu(self, value: SSAValue) -> SSAValue:
        return self.emit(ReluOp(value)).result

    def log(self, value: SSAValue) -> SSAValue:
        return self.emit(LogOp(value)).result

    def activation_grad(
        self,
        x: SSAValue,
        grad: SSAValue,
        activation: str,
        options: Mapping[str, Any] | None = None,
    ) -> SSAValue:
        """``activation'(x) * grad`` for the unary pointwise entry ``activation``
        (with its option values), as one `graph.activation_grad`; raises
        `VjpError` when the entry has no derivative, so insert-backward names
        the entry at the op being differentiated."""
        from teeny_ir.autodiff.registry import VjpError

        entry = pointwise.BY_NAME.get(activation)
        if entry is None or entry.derivative is None or entry.derivative_triton is None:
            raise VjpError(
                f"the pointwise table has no derivative for '{activation}' "
                "(its entry needs derivative and derivative_triton)"
            )
        return self.emit(ActivationGradOp(x, grad, activation, options)).result

    def constant(self, value: float, shape: Sequence[int] = ()) -> SSAValue:
        """A static f32 constant filled with ``value``."""
        return self.emit(ConstantOp.from_values([value], shape)).result

    def scale(self, value: SSAValue, factor: float) -> SSAValue:
        """``value * factor`` (a broadcast rank-0 constant)."""
        return self.mul(value, self.constant(factor))

    def neg(self, value: SSAValue) -> SSAValue:
        return self.scale(value, -1.0)

    def reshape(self, value: SSAValue, type_: TensorType) -> SSAValue:
        """``value`` viewed as ``type_`` (same element count per sample)."""
        if value.type == type_:
            return value
        shape = type_.get_shape()
        target = [0 if d == DYNAMIC_INDEX else d for d in shape]
        if not target:  # a scalar: graph.reshape takes no empty shape
            raise ValueError("cannot reshape to a scalar")
        return self.emit(ReshapeOp(value, target, result_type=type_)).result

    def unbroadcast(self, grad: SSAValue, type_: TensorType) -> SSAValue:
        """The gradient of an operand of ``type_`` that numpy broadcasting stretched
        to ``grad``'s type: ``grad`` summed over the dimensions broadcasting added
        (leading ones) or stretched (size 1 in ``type_``), in ``type_``."""
        assert isinstance(grad.type, TensorType)
        if grad.type == type_:
            return grad
        big, small = grad.type.get_shape(), type_.get_shape()
        lead = len(big) - len(small)
        axes = list(range(lead)) + [
            lead + i for i, size in enumerate(small) if size == 1 and big[lead + i] != 1
        ]
        if not axes:
            return self.reshape(grad, type_)
        if not small:  # a scalar operand: the sum of everything
            return self.emit(ReduceSumOp(grad, list(range(len(big))))).result
        summed = self.emit(ReduceSumOp(grad, axes, keepdims=True)).result
        return self.reshape(summed, type_)

    def zeros(self, type_: TensorType) -> SSAValue:
        """A zero gradient of a static ``type_`` (a parameter the loss does not reach)."""
        return self.constant(0.0, type_.get_shape())


def scalar_type() -> TensorType:
    return TensorType(f32, [])
