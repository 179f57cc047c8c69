"""Softmax, loss and reductions: `graph.softmax`, `graph.log_softmax`,
`graph.cross_entropy`, `graph.reduce_sum` and `graph.reduce_mean`.

Axes are stored non-negative; the builders also take PyTorch's negative axes
(``-1`` is the last one) and normalise them with `normalize_axis`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    IntegerAttr,
    NoneAttr,
    TensorType,
    UnitAttr,
    f32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from dialects.graph.shapes import Shape, check_result, check_shape, check_tensor, format_shape
from teeny_ir.ir.format import OptionParser, OptionsFormatOp, parse_i64, value_type

if TYPE_CHECKING:
    from xdsl.parser import Parser


def normalize_axis(axis: int, rank: int) -> int:
    """``axis`` in ``[-rank, rank)`` as a non-negative axis (``-1`` is ``rank - 1``)."""
    if rank == 0:
        raise VerifyException(f"axis {axis} is out of range for rank 0: a scalar has no axes")
    if not -rank <= axis < rank:
        raise VerifyException(f"axis {axis} is out of range [-{rank}, {rank}) for rank {rank}")
    return axis % rank


def check_axis(axis: int, rank: int) -> None:
    """Check a stored axis: non-negative and below ``rank`` (>= 1)."""
    if rank == 0:
        raise VerifyException("expected input of rank >= 1, got rank 0")
    if not 0 <= axis < rank:
        raise VerifyException(f"expected axis in [0, {rank}) for input of rank {rank}, got {axis}")


def infer_reduce_shape(shape: Sequence[int], axes: Sequence[int], keepdims: bool) -> Shape:
    """Result shape of `graph.reduce_sum` / `graph.reduce_mean`.

    ``axes`` (non-empty, unique, each in ``[0, rank)``) are removed from
    ``shape``, or set to 1 with ``keepdims``. Reducing the batch axis is allowed:
    the result then has no dynamic dimension.
    """
    rank = len(shape)
    if not axes:
        raise VerifyException("expected at least one axis to reduce")
    if any(not 0 <= axis < rank for axis in axes):
        raise VerifyException(
            f"expected axes in [0, {rank}) for input of rank {rank}, got {list(axes)}"
        )
    if len(set(axes)) != len(axes):
        raise VerifyException(f"expected unique axes, got {list(axes)}")
    if keepdims:
        return tuple(1 if index in axes else size for index, size in enumerate(shape))
    return tuple(size for index, size in enumerate(shape) if index not in axes)


def infer_cross_entropy_shape(logits_shape: Sequence[int], targets_shape: Sequence[int]) -> Shape:
    """Result shape of `graph.cross_entropy`: ``()`` (a scalar loss).

    ``logits_shape`` is ``[N, C]``, ``targets_shape`` must be ``[N]`` (the same
    ``N``, static or ``?``).
    """
    if len(logits_shape) != 2:
        raise VerifyException(f"expected logits of rank 2 [N, C], got rank {len(logits_shape)}")
    if tuple(targets_shape) != (logits_shape[0],):
        raise VerifyException(
            f"expected targets of shape [N] = {format_shape(logits_shape[:1])}, "
            f"got {format_shape(targets_shape)}"
        )
    return ()


def check_targets(type_: Attribute) -> Shape:
    """Check class-index targets: an i64 tensor obeying the shape policy; return its shape."""
    if not isinstance(type_, TensorType):
        raise VerifyException(f"expected targets to be a tensor, got {type_}")
    element_type: Attribute = type_.element_type
    if element_type != i64:
        raise VerifyException(
            f"unsupported dtype {element_type} for targets: "
            "graph.cross_entropy takes i64 class indices"
        )
    if type_.encoding != NoneAttr():
        raise VerifyException("expected targets to have no tensor encoding")
    shape = type_.get_shape()
    check_shape(shape, "targets", dynamic_batch=True)
    return shape


def _parse_axes(parser: Parser) -> Attribute:
    values = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: parse_i64(parser))
    return DenseArrayBase.from_list(i64, values)


class SoftmaxFamilyOp(OptionsFormatOp):
    """Shared definition of softmax and log-softmax: one f32 tensor in, one of the
    same type out, normalised along the required property ``axis``::

        %y = graph.op %x axis 1 attr-dict : (tensor<?x10xf32>) -> tensor<?x10xf32>
    """

    input = operand_def(TensorType)
    result = result_def(TensorType)
    axis_attr = prop_def(IntegerAttr[I64], prop_name="axis")

    traits = traits_def(Pure())

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        "axis": lambda parser: IntegerAttr(parse_i64(parser), i64),
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("axis",)

    def __init__(
        self,
        input: SSAValue | Operation,
        axis: int,
        *,
        result_type: TensorType | None = None,
    ):
        """Build the op over ``axis`` (negative counts from the end, stored
        non-negative); without ``result_type`` it is ``input``'s type."""
        shape = check_tensor(value_type(input), "input")
        axis = normalize_axis(axis, len(shape))
        if result_type is None:
            result_type = TensorType(f32, shape)
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"axis": IntegerAttr(axis, i64)},
        )

    @property
    def axis(self) -> int:
        """The normalised axis (in ``[0, rank)``)."""
        return self.axis_attr.value.data

    def verify_(self) -> None:
        shape = check_tensor(self.input.type, "input")
        check_axis(self.axis, len(shape))
        check_result(self.result, self.input.type)


@irdl_op_definition
class SoftmaxOp(SoftmaxFamilyOp):
    """Softmax along ``axis``, as ``torch.nn.functional.softmax(x, dim=axis)``::

        y[..., i, ...] = exp(x[..., i, ...] - m) / sum_j exp(x[..., j, ...] - m)

    with ``m`` the maximum along ``axis`` (numerically stable for any finite
    input). Slices along ``axis`` sum to 1.

        %p = graph.softmax %x axis 1 : (tensor<?x10xf32>) -> tensor<?x10xf32>
    """

    name = "graph.softmax"


@irdl_op_definition
class LogSoftmaxOp(SoftmaxFamilyOp):
    """Log-softmax along ``axis``, as ``torch.nn.functional.log_softmax(x, dim=axis)``::

        y[..., i, ...] = x[..., i, ...] - m - log(sum_j exp(x[..., j, ...] - m))

    with ``m`` the maximum along ``axis`` (numerically stable for any finite input).

        %l = graph.log_softmax %x axis 1 : (tensor<?x10xf32>) -> tensor<?x10xf32>
    """

    name = "graph.log_softmax"


@irdl_op_definition
class CrossEntropyOp(OptionsFormatOp):
    """Mean softmax cross-entropy of ``logits`` [N, C] (f32) against class indices
    ``targets`` [N] (i64, each in ``[0, C)``), as
    ``torch.nn.functional.cross_entropy(logits, targets)`` (reduction "mean")::

        loss = -1/N * sum_n log_softmax(logits, axis=1)[n, targets[n]]

    The result is a scalar, ``tensor<f32>``. ``targets`` is the one operand of
    the dialect with an integer dtype; a target outside ``[0, C)`` is a run-time
    error naming this op, in the reference interpreter and in a compiled plan
    (the ``cross_entropy`` kernel reports it through a status output that the
    runtime checks; it never reads out of bounds).

        %loss = graph.cross_entropy %logits, %targets
            : (tensor<?x10xf32>, tensor<?xi64>) -> tensor<f32>
    """

    name = "graph.cross_entropy"

    logits = operand_def(TensorType)
    targets = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(
        self,
        logits: SSAValue | Operation,
        targets: SSAValue | Operation,
        *,
        result_type: TensorType | None = None,
    ):
        """Build the loss; without ``result_type`` it is ``tensor<f32>``, raising
        `VerifyException` if the operands do not fit together."""
        if result_type is None:
            shape = infer_cross_entropy_shape(
                check_tensor(value_type(logits), "logits"), check_targets(value_type(targets))
            )
            result_type = TensorType(f32, shape)
        super().__init__(operands=[logits, targets], result_types=[result_type])

    def verify_(self) -> None:
        shape = infer_cross_entropy_shape(
            check_tensor(self.logits.type, "logits"), check_targets(self.targets.type)
        )
        check_tensor(self.result.type, "result")
        check_result(self.result, TensorType(f32, shape))


class ReductionOp(OptionsFormatOp):
    """Shared definition of the reductions: one f32 tensor in, reduced over the
    required property ``axes`` (non-empty, unique, each in ``[0, rank)``); the
    unit property ``keepdims`` keeps each reduced axis as size 1. The result
    shape is `infer_reduce_shape`::

        %y = graph.op %x axes [2, 3] keepdims attr-dict
            : (tensor<?x16x8x8xf32>) -> tensor<?x16x1x1xf32>
    """

    input = operand_def(TensorType)
    result = result_def(TensorType)
    axes_attr = prop_def(DenseArrayBase[I64], prop_name="axes")
    keepdims_attr = opt_prop_def(UnitAttr, prop_name="keepdims")

    traits = traits_def(Pure())

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        "axes": _parse_axes,
        "keepdims": lambda parser: UnitAttr(),
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("axes",)

    def __init__(
        self,
        input: SSAValue | Operation,
        axes: Sequence[int],
        *,
        keepdims: bool = False,
        result_type: TensorType | None = None,
    ):
        """Build the reduction over ``axes`` (negative ones count from the end and
        are stored non-negative, in the given order). Without ``result_type`` the
        result type is inferred, raising `VerifyException` on bad axes."""
        shape = check_tensor(value_type(input), "input")
        axes = [normalize_axis(axis, len(shape)) for axis in axes]
        if result_type is None:
            result_type = TensorType(f32, infer_reduce_shape(shape, axes, keepdims))
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={
                "axes": DenseArrayBase.from_list(i64, axes),
                "keepdims": UnitAttr() if keepdims else None,
            },
        )

    @property
    def axes(self) -> Shape:
        """The reduced axes, non-negative."""
        return self.axes_attr.get_values()

    @property
    def keepdims(self) -> bool:
        """Whether reduced axes stay in the result as size 1."""
        return self.keepdims_attr is not None

    def verify_(self) -> None:
        shape = infer_reduce_shape(check_tensor(self.input.type, "input"), self.axes, self.keepdims)
        check_tensor(self.result.type, "result")
        check_result(self.result, TensorType(f32, shape))


@irdl_op_definition
class ReduceSumOp(ReductionOp):
    """Sum over ``axes``, as ``torch.sum(x, dim=axes, keepdim=keepdims)``.

    %s = graph.reduce_sum %x axes [2, 3] : (tensor<?x16x8x8xf32>) -> tensor<?x16xf32>
    """

    name = "graph.reduce_sum"


@irdl_op_definition
class ReduceMeanOp(ReductionOp):
    """Mean over ``axes``, as ``torch.mean(x, dim=axes, keepdim=keepdims)``: the
    sum divided by the product of the reduced sizes.

        %m = graph.reduce_mean %x axes [0] keepdims
            : (tensor<?x16xf32>) -> tensor<1x16xf32>
    """

    name = "graph.reduce_mean"


@irdl_op_definition
class ReduceMaxOp(ReductionOp):
    """Maximum over ``axes``, as ``torch.amax(x, dim=axes, keepdim=keepdims)``: NaN
    if any reduced element is NaN.

    %m = graph.reduce_max %x axes [1] : (tensor<?x16x8xf32>) -> tensor<?x8xf32>
    """

    name = "graph.reduce_max"


@irdl_op_definition
class ReduceMinOp(ReductionOp):
    """Minimum over ``axes``, as ``torch.amin(x, dim=axes, keepdim=keepdims)``: NaN
    if any reduced element is NaN.

    %m = graph.reduce_min %x axes [1] : (tensor<?x16x8xf32>) -> tensor<?x8xf32>
    """

    name = "graph.reduce_min"


# --- backward ops (the training stage) ------------------------------------------


class SoftmaxBackwardFamilyOp(OptionsFormatOp):
    """Shared definition of the softmax-family backward ops: the forward OUTPUT
    ``y`` and its gradient ``dy`` (both of one f32 type) in, the gradient of the
    forward input (the same type) out, along the required property ``axis``::

        %dx = graph.op %y, %dy axis 1 attr-dict
            : (tensor<?x10xf32>, tensor<?x10xf32>) -> tensor<?x10xf32>
    """

    output = operand_def(TensorType)
    output_grad = operand_def(TensorType)
    result = result_def(TensorType)
    axis_attr = prop_def(IntegerAttr[I64], prop_name="axis")

    traits = traits_def(Pure())

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        "axis": lambda parser: IntegerAttr(parse_i64(parser), i64),
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("axis",)

    def __init__(
        self,
        output: SSAValue | Operation,
        output_grad: SSAValue | Operation,
        axis: int,
        *,
        result_type: TensorType | None = None,
    ):
        """Build the op over ``axis`` (negative counts from the end, stored
        non-negative); without ``result_type`` it is ``output``'s type."""
        shape = check_tensor(value_type(output), "y")
        axis = normalize_axis(axis, len(shape))
        if result_type is None:
            result_type = TensorType(f32, shape)
        super().__init__(
            operands=[output, output_grad],
            result_types=[result_type],
            properties={"axis": IntegerAttr(axis, i64)},
        )

    @property
    def axis(self) -> int:
        """The normalised axis (in ``[0, rank)``)."""
        return self.axis_attr.value.data

    def verify_(self) -> None:
        shape = check_tensor(self.output.type, "y")
        check_tensor(self.output_grad.type, "dy")
        if self.output_grad.type != self.output.type:
            raise VerifyException(
                f"expected dy to have the type of y, {self.output.type}, "
                f"got {self.output_grad.type}"
            )
        check_axis(self.axis, len(shape))
        check_result(self.result, self.output.type)


@irdl_op_definition
class SoftmaxBackwardOp(SoftmaxBackwardFamilyOp):
    """The gradient of `graph.softmax` along ``axis`` with respect to its input,
    from its output ``y = softmax(x)`` and the gradient ``dy`` of the loss with
    respect to ``y`` (PyTorch's ``_softmax_backward_data``)::

        dx = y * (dy - sum(dy * y, axis, keepdims))

        %dx = graph.softmax_backward %y, %dy axis 1
            : (tensor<?x10xf32>, tensor<?x10xf32>) -> tensor<?x10xf32>
    """

    name = "graph.softmax_backward"


@irdl_op_definition
class LogSoftmaxBackwardOp(SoftmaxBackwardFamilyOp):
    """The gradient of `graph.log_softmax` along ``axis`` with respect to its
    input, from its output ``y = log_softmax(x)`` and the gradient ``dy`` of the
    loss with respect to ``y`` (PyTorch's ``_log_softmax_backward_data``)::

        dx = dy - exp(y) * sum(dy, axis, keepdims)

        %dx = graph.log_softmax_backward %y, %dy axis 1
            : (tensor<?x10xf32>, tensor<?x10xf32>) -> tensor<?x10xf32>
    """

    name = "graph.log_softmax_backward"


@irdl_op_definition
class CrossEntropyBackwardOp(OptionsFormatOp):
    """The gradient of `graph.cross_entropy` (mean over the batch) with respect to
    its ``logits`` [N, C], from the ``targets`` [N] (i64, each in ``[0, C)``) and
    the scalar gradient ``g`` (``tensor<f32>``) of the loss with respect to the
    cross-entropy, as PyTorch's::

        dlogits[n, c] = (softmax(logits, axis=1)[n, c] - (c == targets[n])) * g / N

    The result has the type of ``logits``. ``N`` is the run-time batch. A target
    outside ``[0, C)`` is a run-time error naming this op, as for the forward.

        %dl = graph.cross_entropy_backward %logits, %targets, %g
            : (tensor<?x10xf32>, tensor<?xi64>, tensor<f32>) -> tensor<?x10xf32>
    """

    name = "graph.cross_entropy_backward"

    logits = operand_def(TensorType)
    targets = operand_def(TensorType)
    grad = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(
        self,
        logits: SSAValue | Operation,
        targets: SSAValue | Operation,
        grad: SSAValue | Operation,
        *,
        result_type: TensorType | None = None,
    ):
        """Build the gradient; without ``result_type`` it is ``logits``' type."""
        if result_type is None:
            result_type = TensorType(f32, check_tensor(value_type(logits), "logits"))
        super().__init__(operands=[logits, targets, grad], result_types=[result_type])

    def verify_(self) -> None:
        logits = check_tensor(self.logits.type, "logits")
        infer_cross_entropy_shape(logits, check_targets(self.targets.type))
        grad = check_tensor(self.grad.type, "g")
        if grad != ():
            raise VerifyException(
                f"expected g to be a scalar tensor<f32>, got shape {format_shape(grad)}"
            )
        check_result(self.result, self.logits.type)
