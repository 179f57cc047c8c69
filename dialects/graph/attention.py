"""Scaled dot-product attention: `graph.attention` and its backward,
`graph.attention_backward`.

Both take ``q``, ``k`` and ``v`` with the same batch dimensions ``[*b]`` (rank
>= 2; only dimension 0 may be dynamic, as everywhere in the dialect). In the
*logical* layout (``torch.nn.functional.scaled_dot_product_attention``'s)
``q`` is ``[*b, N, Dk]`` (N queries), ``k`` ``[*b, M, Dk]`` (M keys), ``v``
``[*b, M, Dv]`` and the output ``o`` ``[*b, N, Dv]``::

    o[*b, n, :] = sum_m softmax_m(scale * q[*b, n, :] . k[*b, m, :]) * v[*b, m, :]

The ``transposed`` property (four 0/1 flags, for ``q``, ``k``, ``v`` and
``o``; absent: all 0) says which of them are stored with their last two
dimensions swapped: features first, as YOLO11's C2PSA keeps them (``q`` as
``[*b, Dk, N]``, ``o`` as ``[*b, Dv, N]``). The kernels read either layout
through strides, so no transpose is ever materialised around an attention.

`AttentionOp` has two results: ``o`` and ``lse`` ``[*b, N]``, the natural
log-sum-exp of each query's scaled scores (``log sum_m exp(scale * q . k)``),
the one row statistic the backward needs to recompute the probabilities
(FlashAttention's). fuse-attention makes the op from the matmul / softmax /
matmul pattern the importers produce; ``scale`` (f64, finite, non-zero) is
required, as in the text form ``scale 0.125``.

`AttentionBackwardOp` takes ``q``, ``k``, ``v``, ``o``, ``lse`` and ``do`` (the
gradient of ``o``, in ``o``'s layout) and returns ``dq``, ``dk`` and ``dv``,
each of its operand's type::

    p = exp(scale * q k^T - lse)        delta = rowsum(do * o)
    dv = p^T do      ds = p * (do v^T - delta)
    dq = scale * ds k      dk = scale * ds^T q
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    Float64Type,
    FloatAttr,
    TensorType,
    f32,
    f64,
)
from xdsl.ir import Operation, SSAValue
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

from dialects.graph.shapes import Shape, check_result, check_tensor, format_shape
from teeny_ir.ir.format import (
    OptionParser,
    OptionsFormatOp,
    f64_option,
    i64_array,
    int_array_option,
    value_type,
)

OPERANDS = ("q", "k", "v", "o")
"""The four tensors whose layout ``transposed`` gives, in its order."""
NO_TRANSPOSE = (0, 0, 0, 0)


def _swap(shape: Sequence[int], flag: int) -> Shape:
    """``shape`` with its last two dimensions swapped when ``flag``."""
    if not flag:
        return tuple(shape)
    return (*shape[:-2], shape[-1], shape[-2])


def stored_shape(logical: Sequence[int], flag: int) -> Shape:
    """The stored shape of a tensor of ``logical`` shape under its ``transposed`` flag."""
    return _swap(logical, flag)


def logical_shape(stored: Sequence[int], flag: int) -> Shape:
    """The logical shape of a tensor stored as ``stored`` under its ``transposed`` flag."""
    return _swap(stored, flag)


def check_transposed(values: Sequence[int]) -> tuple[int, ...]:
    """Check a ``transposed`` property: four flags, each 0 or 1."""
    flags = tuple(values)
    if len(flags) != 4 or any(flag not in (0, 1) for flag in flags):
        raise VerifyException(
            f"expected transposed to be four flags of 0 or 1 (for q, k, v, o), got {list(flags)}"
        )
    return flags


def check_scale(scale: float) -> None:
    if not math.isfinite(scale) or scale == 0.0:
        raise VerifyException(f"expected a finite, non-zero scale, got {scale}")


def infer_attention_shapes(
    q_shape: Sequence[int],
    k_shape: Sequence[int],
    v_shape: Sequence[int],
    transposed: Sequence[int] = NO_TRANSPOSE,
) -> tuple[Shape, Shape]:
    """The stored shapes of ``o`` and ``lse`` for stored operand shapes, under
    ``transposed``. Raises `VerifyException` naming the first violated rule:
    ranks >= 2 and equal, the same batch dimensions, ``Dk`` of ``q`` and ``k``
    equal, ``M`` of ``k`` and ``v`` equal."""
    flags = check_transposed(transposed)
    shapes = {}
    for name, shape, flag in zip("qkv", (q_shape, k_shape, v_shape), flags, strict=False):
        if len(shape) < 2:
            raise VerifyException(f"expected {name} of rank >= 2, got rank {len(shape)}")
        shapes[name] = logical_shape(shape, flag)
    q, k, v = shapes["q"], shapes["k"], shapes["v"]
    if not len(q) == len(k) == len(v):
        raise VerifyException(
            f"expected q, k and v of one rank, got {len(q)}, {len(k)} and {len(v)}"
        )
    if not q[:-2] == k[:-2] == v[:-2]:
        raise VerifyException(
            "expected q, k and v to share their batch dimensions, got "
            f"{format_shape(q[:-2])}, {format_shape(k[:-2])} and {format_shape(v[:-2])}"
        )
    if q[-1] != k[-1]:
        raise VerifyException(f"expected the key dimension of q ({q[-1]}) and k ({k[-1]}) to agree")
    if k[-2] != v[-2]:
        raise VerifyException(f"expected the key count of k ({k[-2]}) and v ({v[-2]}) to agree")
    o = stored_shape((*q[:-1], v[-1]), flags[3])
    return o, tuple(q[:-1])


def _transposed_prop(values: Sequence[int]) -> DenseArrayBase[I64] | None:
    flags = check_transposed(values)
    result = None if flags == NO_TRANSPOSE else i64_array(flags)
    assert result is None or isinstance(result, DenseArrayBase)
    return result


class AttentionFamilyOp(OptionsFormatOp):
    """What `AttentionOp` and `AttentionBackwardOp` share: ``scale`` and ``transposed``."""

    scale_attr = prop_def(FloatAttr[Float64Type], prop_name="scale")
    transposed_attr = opt_prop_def(DenseArrayBase[I64], prop_name="transposed")

    traits = traits_def(Pure())

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        "scale": f64_option,
        "transposed": int_array_option("transposed", 4, " (q, k, v, o)"),
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("scale",)

    @property
    def scale(self) -> float:
        return self.scale_attr.value.data

    @property
    def transposed(self) -> tuple[int, ...]:
        """The four layout flags (q, k, v, o)."""
        if self.transposed_attr is None:
            return NO_TRANSPOSE
        return tuple(self.transposed_attr.get_values())

    def _check_operands(self, q: SSAValue, k: SSAValue, v: SSAValue) -> tuple[Shape, Shape]:
        check_scale(self.scale)
        shapes = [
            check_tensor(value.type, name) for name, value in zip("qkv", (q, k, v), strict=True)
        ]
        for shape, name in zip(shapes, "qkv", strict=True):
            if len(shape) == 2 and any(size < 0 for size in shape):
                raise VerifyException(
                    f"expected a static {name}: a rank-2 operand has no batch dimension "
                    "that could be dynamic"
                )
        return infer_attention_shapes(shapes[0], shapes[1], shapes[2], self.transposed)


@irdl_op_definition
class AttentionOp(AttentionFamilyOp):
    """Scaled dot-product attention (module docstring): ``o`` and the row
    statistic ``lse``::

        %o, %lse = graph.attention %q, %k, %v scale 0.125 transposed [1, 1, 1, 1]
            : (tensor<?x2x32x16xf32>, tensor<?x2x32x16xf32>, tensor<?x2x64x16xf32>)
            -> (tensor<?x2x64x16xf32>, tensor<?x2x16xf32>)
    """

    name = "graph.attention"

    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    output = result_def(TensorType)
    lse = result_def(TensorType)

    def __init__(
        self,
        q: SSAValue | Operation,
        k: SSAValue | Operation,
        v: SSAValue | Operation,
        scale: float,
        transposed: Sequence[int] = NO_TRANSPOSE,
    ):
        """Build the op; the result types are inferred (`VerifyException` if the
        operands do not fit together)."""
        shapes = [
            check_tensor(value_type(x), name) for name, x in zip("qkv", (q, k, v), strict=True)
        ]
        o_shape, lse_shape = infer_attention_shapes(shapes[0], shapes[1], shapes[2], transposed)
        super().__init__(
            operands=[q, k, v],
            result_types=[TensorType(f32, o_shape), TensorType(f32, lse_shape)],
            properties={
                "scale": FloatAttr(scale, f64),
                "transposed": _transposed_prop(transposed),
            },
        )

    def verify_(self) -> None:
        o_shape, lse_shape = self._check_operands(self.q, self.k, self.v)
        check_result(self.output, TensorType(f32, o_shape))
        check_result(self.lse, TensorType(f32, lse_shape))


@irdl_op_definition
class AttentionBackwardOp(AttentionFamilyOp):
    """The gradients of `AttentionOp` (module docstring): ``dq``, ``dk`` and
    ``dv`` from ``q``, ``k``, ``v``, ``o``, ``lse`` and ``do``::

        %dq, %dk, %dv = graph.attention_backward %q, %k, %v, %o, %lse, %do scale 0.125
            : (...) -> (tensor<?x2x16x32xf32>, tensor<?x2x16x32xf32>, tensor<?x2x16x64xf32>)
    """

    name = "graph.attention_backward"

    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    output = operand_def(TensorType)
    lse = operand_def(TensorType)
    output_grad = operand_def(TensorType)
    q_grad = result_def(TensorType)
    k_grad = result_def(TensorType)
    v_grad = result_def(TensorType)

    def __init__(
        self,
        q: SSAValue | Operation,
        k: SSAValue | Operation,
        v: SSAValue | Operation,
        output: SSAValue | Operation,
        lse: SSAValue | Operation,
        output_grad: SSAValue | Operation,
        scale: float,
        transposed: Sequence[int] = NO_TRANSPOSE,
    ):
        """Build the op; the gradients take the types of ``q``, ``k`` and ``v``."""
        super().__init__(
            operands=[q, k, v, output, lse, output_grad],
            result_types=[value_type(q), value_type(k), value_type(v)],
            properties={
                "scale": FloatAttr(scale, f64),
                "transposed": _transposed_prop(transposed),
            },
        )

    def verify_(self) -> None:
        o_shape, lse_shape = self._check_operands(self.q, self.k, self.v)
        for value, shape, what in (
            (self.output, o_shape, "o"),
            (self.output_grad, o_shape, "do"),
            (self.lse, lse_shape, "lse"),
        ):
            if value.type != TensorType(f32, shape):
                raise VerifyException(
                    f"expected {what} of type {TensorType(f32, shape)}, got {value.type}"
                )
        for result, operand in (
            (self.q_grad, self.q),
            (self.k_grad, self.k),
            (self.v_grad, self.v),
        ):
            check_result(result, operand.type)
