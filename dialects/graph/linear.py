"""Matrix products: `graph.linear` (a fully connected layer) and `graph.matmul`,
each with an optional bias and epilogue activation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import DYNAMIC_INDEX, StringAttr, TensorType, f32
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from dialects.graph.shapes import (
    Shape,
    broadcast_shapes,
    check_channel_vector,
    check_result,
    check_shape,
    check_tensor,
    format_shape,
)
from teeny_ir.core import pointwise
from teeny_ir.ir.format import OptionParser, OptionsFormatOp, keyword_option, value_type

LINEAR_ACTIVATIONS = pointwise.epilogue_names()
"""Epilogue activations of `LinearOp` (absent: none): the pointwise table's
epilogue entries, as for `graph.fused_conv2d`."""


def check_activation(activation: StringAttr | None) -> None:
    """Check an optional ``activation`` property: absent, or an entry of
    `LINEAR_ACTIVATIONS`."""
    if activation is not None and activation.data not in LINEAR_ACTIVATIONS:
        raise VerifyException(
            "expected activation to be an epilogue entry of the pointwise table, "
            f"got '{activation.data}' (entries: {', '.join(LINEAR_ACTIVATIONS)})"
        )


def infer_linear_shape(input_shape: Sequence[int], weight_shape: Sequence[int]) -> Shape:
    """Result shape ``[N, ..., out]`` of `graph.linear`.

    ``input_shape`` is ``[N, ..., in]`` (rank >= 2, N may be ``DYNAMIC_INDEX``),
    ``weight_shape`` is ``[out, in]`` (static). Raises `VerifyException` naming
    the first violated rule.
    """
    if len(input_shape) < 2:
        raise VerifyException(
            f"expected input of rank >= 2 [N, ..., in], got rank {len(input_shape)}"
        )
    if len(weight_shape) != 2:
        raise VerifyException(f"expected weight of rank 2 [out, in], got rank {len(weight_shape)}")
    check_shape(input_shape, "input", dynamic_batch=True)
    check_shape(weight_shape, "weight", dynamic_batch=False)
    out_features, in_features = weight_shape
    if input_shape[-1] != in_features:
        raise VerifyException(
            f"expected input features (last dimension) {input_shape[-1]} to equal "
            f"weight dim 1 (in) {in_features}"
        )
    return (*input_shape[:-1], out_features)


def infer_matmul_shape(lhs_shape: Sequence[int], rhs_shape: Sequence[int]) -> Shape:
    """Result shape ``[*batch, M, N]`` of `graph.matmul`.

    ``lhs_shape`` is ``[*lhs_batch, M, K]`` and ``rhs_shape`` ``[*rhs_batch, K, N]``,
    each of rank >= 2 (1-D operands, which ``torch.matmul`` also takes, are not
    supported: reshape them first). The batch dimensions broadcast as in
    `broadcast_shapes`; the contracted sizes K must be equal. Only result
    dimension 0 may be dynamic: a dynamic M of a rank-2 ``lhs`` against a
    batched ``rhs`` is an error. Raises `VerifyException` naming the first
    violated rule.
    """
    for what, shape in (("lhs", lhs_shape), ("rhs", rhs_shape)):
        if len(shape) < 2:
            raise VerifyException(
                f"expected {what} of rank >= 2 [..., rows, columns], got rank {len(shape)}"
            )
        check_shape(shape, what, dynamic_batch=True)
    *lhs_batch, rows, lhs_inner = lhs_shape
    *rhs_batch, rhs_inner, columns = rhs_shape
    if lhs_inner != rhs_inner:
        lhs_k, rhs_k = ("?" if k == DYNAMIC_INDEX else str(k) for k in (lhs_inner, rhs_inner))
        raise VerifyException(
            f"cannot multiply {format_shape(lhs_shape)} by {format_shape(rhs_shape)}: "
            f"lhs dimension -1 ({lhs_k}) and rhs dimension -2 ({rhs_k}) differ"
        )
    try:
        batch = broadcast_shapes(lhs_batch, rhs_batch)
    except VerifyException as error:
        raise VerifyException(f"matmul batch dimensions: {error}") from error
    result = (*batch, rows, columns)
    if DYNAMIC_INDEX in result[1:]:
        raise VerifyException(
            f"cannot multiply {format_shape(lhs_shape)} by {format_shape(rhs_shape)}: "
            f"the dynamic batch dimension would land at result dimension "
            f"{result.index(DYNAMIC_INDEX, 1)}"
        )
    return result


@irdl_op_definition
class LinearOp(OptionsFormatOp):
    """A fully connected layer, as ``torch.nn.functional.linear``::

        y[n, ..., o] = bias[o] + sum_i x[n, ..., i] * weight[o, i]

    i.e. ``y = x @ weight^T + bias``. Operands: ``input`` [N, ..., in] (rank >= 2),
    ``weight`` [out, in] and an optional ``bias`` [out], both static. The result
    shape is `infer_linear_shape`: ``input``'s with the last dimension ``out``.
    The optional ``activation`` (an epilogue entry of the pointwise table;
    absent: none) is applied after the bias, ``y = act(x @ weight^T + bias)``:
    fuse-epilogues folds a following activation (and, into a bias-less
    linear, a ``graph.bias_add`` of rank 2 or a ``graph.add`` of a [out]
    ``graph.param`` of any rank) into it.

        %y = graph.linear %x, %w, %b
            : (tensor<?x400xf32>, tensor<120x400xf32>, tensor<120xf32>) -> tensor<?x120xf32>
        %z = graph.linear %x, %w, %b activation relu
            : (tensor<?x400xf32>, tensor<120x400xf32>, tensor<120xf32>) -> tensor<?x120xf32>
    """

    name = "graph.linear"

    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)

    activation_attr = opt_prop_def(StringAttr, prop_name="activation")

    traits = traits_def(Pure())

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        "activation": keyword_option("activation", LINEAR_ACTIVATIONS),
    }

    def __init__(
        self,
        input: SSAValue | Operation,
        weight: SSAValue | Operation,
        bias: SSAValue | Operation | None = None,
        *,
        activation: str | None = None,
        result_type: TensorType | None = None,
    ):
        """Build a linear layer; without ``result_type`` the result type is
        inferred, raising `VerifyException` if the operands do not fit together.
        ``activation`` None stays absent (none)."""
        if result_type is None:
            shape = infer_linear_shape(
                check_tensor(value_type(input), "input"),
                check_tensor(value_type(weight), "weight", dynamic_batch=False),
            )
            result_type = TensorType(f32, shape)
        super().__init__(
            operands=[input, weight, bias],
            result_types=[result_type],
            properties={"activation": None if activation is None else StringAttr(activation)},
        )

    @property
    def activation(self) -> str:
        """The epilogue activation, or "none"."""
        return (
            pointwise.NO_ACTIVATION if self.activation_attr is None else self.activation_attr.data
        )

    def verify_(self) -> None:
        shape = infer_linear_shape(
            check_tensor(self.input.type, "input"),
            check_tensor(self.weight.type, "weight", dynamic_batch=False),
        )
        if self.bias is not None:
            check_channel_vector(self.bias.type, "bias", shape[-1])
        check_activation(self.activation_attr)
        check_tensor(self.result.type, "result")
        check_result(self.result, TensorType(f32, shape))


@irdl_op_definition
class MatmulOp(OptionsFormatOp):
    """Batched matrix product, as ``torch.matmul`` on operands of rank >= 2, with an
    optional bias and epilogue activation::

        y[*b, m, n] = act(sum_k lhs[*b, m, k] * rhs[*b, k, n] + bias[n])

    ``lhs`` is [*lhs_batch, M, K], ``rhs`` [*rhs_batch, K, N]; the batch
    dimensions broadcast with numpy's rules (a missing or size-1 dimension
    stretches), so a rank-2 operand multiplies every matrix of the other. The
    result shape is `infer_matmul_shape`. 1-D operands are not supported. The
    optional ``bias`` [N] (static) is added along the last dimension, and the
    optional ``activation`` (an epilogue entry of the pointwise table, as for
    `LinearOp`; absent: none) is applied after it: fuse-epilogues folds a
    following ``graph.add`` of a ``graph.param`` bias and an activation into it.

        %y = graph.matmul %a, %b : (tensor<?x4x8x16xf32>, tensor<4x16x5xf32>)
            -> tensor<?x4x8x5xf32>
        %z = graph.matmul %a, %b, %c activation silu
            : (tensor<?x4x8x16xf32>, tensor<4x16x5xf32>, tensor<5xf32>) -> tensor<?x4x8x5xf32>
    """

    name = "graph.matmul"

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)

    activation_attr = opt_prop_def(StringAttr, prop_name="activation")

    traits = traits_def(Pure())

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        "activation": keyword_option("activation", LINEAR_ACTIVATIONS),
    }

    def __init__(
        self,
        lhs: SSAValue | Operation,
        rhs: SSAValue | Operation,
        bias: SSAValue | Operation | None = None,
        *,
        activation: str | None = None,
        result_type: TensorType | None = None,
    ):
        """Build a matmul; without ``result_type`` the result type is inferred,
        raising `VerifyException` if the operands do not fit together.
        ``activation`` None stays absent (none)."""
        if result_type is None:
            shape = infer_matmul_shape(
                check_tensor(value_type(lhs), "lhs"), check_tensor(value_type(rhs), "rhs")
            )
            result_type = TensorType(f32, shape)
        super().__init__(
            operands=[lhs, rhs, bias],
            result_types=[result_type],
            properties={"activation": None if activation is None else StringAttr(activation)},
        )

    @property
    def activation(self) -> str:
        """The epilogue activation, or "none"."""
        return (
            pointwise.NO_ACTIVATION if self.activation_attr is None else self.activation_attr.data
        )

    def verify_(self) -> None:
        shape = infer_matmul_shape(
            check_tensor(self.lhs.type, "lhs"), check_tensor(self.rhs.type, "rhs")
        )
        if self.bias is not None:
            check_channel_vector(self.bias.type, "bias", shape[-1])
        check_activation(self.activation_attr)
        check_tensor(self.result.type, "result")
        check_result(self.result, TensorType(f32, shape))
