"""Normalisation: `graph.batch_norm`, and the backward of its training form,
`graph.batch_norm_backward`."""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from typing import ClassVar

from xdsl.dialects.builtin import (
    Float64Type,
    FloatAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
    f64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    result_def,
    traits_def,
    var_result_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from dialects.graph.shapes import (
    DEFAULT_EPS,
    DEFAULT_MOMENTUM,
    check_channel_vector,
    check_result,
    check_tensor,
)
from teeny_ir.core import pointwise
from teeny_ir.ir.format import (
    OptionParser,
    OptionsFormatOp,
    f64_attr,
    f64_option,
    keyword_option,
    value_type,
)

BATCH_NORM_ACTIVATIONS = pointwise.epilogue_names()
"""Epilogue activations of an inference `BatchNormOp` (absent: none): the
pointwise table's epilogue entries, as for `graph.linear`."""


def _check_eps(eps: float) -> None:
    """``eps`` is finite and > 0, as given and as the float32 the kernels add
    (``1e39`` overflows float32, ``1e-50`` is 0 there)."""
    if not (math.isfinite(eps) and eps > 0):
        raise VerifyException(f"expected eps to be finite and > 0, got {eps}")
    try:
        single = float(struct.unpack("f", struct.pack("f", eps))[0])
    except OverflowError:
        single = math.inf
    if not (math.isfinite(single) and single > 0):
        raise VerifyException(
            f"expected eps to be finite and > 0 in float32, the precision the batch norm "
            f"computes in, got {eps} ({single} in float32)"
        )


@irdl_op_definition
class BatchNormOp(OptionsFormatOp):
    """Batch normalisation over dimension 1 of ``input`` [N, C, ...], PyTorch style.

    Operands: ``input``, then ``gamma``, ``beta``, ``running_mean`` and
    ``running_var``, each [C]. Optional properties: ``eps`` (f64, default 1e-5,
    finite and > 0), ``momentum`` (f64, default 0.1, in [0, 1]), the unit
    ``training``, and ``activation`` (an epilogue entry of the pointwise table;
    absent: none), which only the inference form may carry.

    Inference (``training`` absent): one result, of ``input``'s type::

        y = act((x - running_mean) / sqrt(running_var + eps) * gamma + beta)

    (fuse-epilogues folds an activation that follows a standalone inference
    batch norm into its ``activation``.)

    Training (``training`` present): the same formula with the batch mean and
    the biased batch variance, taken over every dimension but 1, instead of the
    running statistics; and two more results, the updated running statistics
    (``tensor<Cxf32>`` each)::

        running_mean' = (1 - momentum) * running_mean + momentum * batch_mean
        running_var'  = (1 - momentum) * running_var + momentum * unbiased_batch_var

        %y = graph.batch_norm %x, %g, %b, %m, %v eps 1.000000e-03
            : (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>,
               tensor<16xf32>, tensor<16xf32>) -> tensor<?x16x8x8xf32>
        %z = graph.batch_norm %x, %g, %b, %m, %v eps 1.000000e-03 activation silu
            : (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>,
               tensor<16xf32>, tensor<16xf32>) -> tensor<?x16x8x8xf32>
    """

    name = "graph.batch_norm"

    input = operand_def(TensorType)
    gamma = operand_def(TensorType)
    beta = operand_def(TensorType)
    running_mean = operand_def(TensorType)
    running_var = operand_def(TensorType)
    result = result_def(TensorType)
    updated_running_stats = var_result_def(TensorType)
    """Training mode only: the updated running mean, then the updated running var."""

    eps_attr = opt_prop_def(FloatAttr[Float64Type], FloatAttr(DEFAULT_EPS, f64), prop_name="eps")
    momentum_attr = opt_prop_def(
        FloatAttr[Float64Type], FloatAttr(DEFAULT_MOMENTUM, f64), prop_name="momentum"
    )
    training_attr = opt_prop_def(UnitAttr, prop_name="training")
    activation_attr = opt_prop_def(StringAttr, prop_name="activation")

    traits = traits_def(Pure())

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        "eps": f64_option,
        "momentum": f64_option,
        "training": lambda parser: UnitAttr(),
        "activation": keyword_option("activation", BATCH_NORM_ACTIVATIONS),
    }

    def __init__(
        self,
        input: SSAValue | Operation,
        gamma: SSAValue | Operation,
        beta: SSAValue | Operation,
        running_mean: SSAValue | Operation,
        running_var: SSAValue | Operation,
        *,
        eps: float | None = None,
        momentum: float | None = None,
        training: bool = False,
        activation: str | None = None,
    ):
        """Build a batch norm; ``eps``, ``momentum`` and ``activation`` left as None
        stay absent.

        Result types: ``input``'s type, then in training mode the types of
        ``running_mean`` and ``running_var``.
        """
        stats = [running_mean, running_var] if training else []
        super().__init__(
            operands=[input, gamma, beta, running_mean, running_var],
            result_types=[value_type(input), [value_type(v) for v in stats]],
            properties={
                "eps": f64_attr(eps),
                "momentum": f64_attr(momentum),
                "training": UnitAttr() if training else None,
                "activation": None if activation is None else StringAttr(activation),
            },
        )

    @property
    def eps(self) -> float:
        """Effective epsilon added to the variance."""
        return self.eps_attr.value.data

    @property
    def momentum(self) -> float:
        """Effective running-statistics momentum (PyTorch convention)."""
        return self.momentum_attr.value.data

    @property
    def training(self) -> bool:
        """Whether the op normalises with batch statistics and updates running ones."""
        return self.training_attr is not None

    @property
    def activation(self) -> str:
        """The epilogue activation (inference form only), or "none"."""
        return (
            pointwise.NO_ACTIVATION if self.activation_attr is None else self.activation_attr.data
        )

    def verify_(self) -> None:
        input_shape = check_tensor(self.input.type, "input")
        if len(input_shape) < 2:
            raise VerifyException(
                f"expected input of rank >= 2 [N, C, ...], got rank {len(input_shape)}"
            )
        channels = input_shape[1]
        per_channel = (
            ("gamma", self.gamma),
            ("beta", self.beta),
            ("running_mean", self.running_mean),
            ("running_var", self.running_var),
        )
        for what, value in per_channel:
            check_channel_vector(value.type, what, channels)
        _check_eps(self.eps)
        if not 0 <= self.momentum <= 1:
            raise VerifyException(f"expected momentum in [0, 1], got {self.momentum}")
        if self.activation_attr is not None:
            if self.activation not in BATCH_NORM_ACTIVATIONS:
                raise VerifyException(
                    "expected activation to be an epilogue entry of the pointwise table, "
                    f"got '{self.activation}' (entries: {', '.join(BATCH_NORM_ACTIVATIONS)})"
                )
            if self.training:
                raise VerifyException(
                    "an activation is allowed only on an inference batch norm, not together "
                    "with 'training' (apply it as a separate op after the training form)"
                )
        check_result(self.result, self.input.type)
        stats = self.updated_running_stats
        if not self.training:
            if stats:
                raise VerifyException(f"expected 1 result in inference mode, got {len(stats) + 1}")
            return
        if len(stats) != 2:
            raise VerifyException(
                "expected 3 results (y, running mean, running var) in training mode, "
                f"got {len(stats) + 1}"
            )
        stats_type = TensorType(f32, [channels])
        for what, value in zip(("mean", "var"), stats, strict=True):
            if value.type != stats_type:
                raise VerifyException(
                    f"expected updated running {what} type {stats_type}, got {value.type}"
                )


@irdl_op_definition
class BatchNormBackwardOp(OptionsFormatOp):
    """The gradients of a training-form `graph.batch_norm` with respect to its
    input, ``gamma`` and ``beta``, as PyTorch's ``native_batch_norm_backward``
    (training): the batch statistics are recomputed from ``input`` x, over every
    dimension but 1 (N values per channel; the biased variance)::

        mean = sum(x) / N        var = sum((x - mean)^2) / N
        rstd = 1 / sqrt(var + eps)        xhat = (x - mean) * rstd
        dbeta  = sum(dy)                  dgamma = sum(dy * xhat)
        dx = gamma * rstd / N * (N * dy - dbeta - xhat * dgamma)

    with every sum per channel. The running statistics pass no gradient.
    Operands: ``input`` [N, C, ...] (rank >= 2), ``gamma`` [C] and ``grad`` (dy,
    of ``input``'s type); the optional property ``eps`` (f64, default 1e-5,
    finite and > 0) is the forward op's. Results: dx (``input``'s type), then
    dgamma and dbeta (``tensor<Cxf32>`` each).

        %dx, %dg, %db = graph.batch_norm_backward %x, %g, %dy eps 1.000000e-03
            : (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<?x16x8x8xf32>)
            -> (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>)
    """

    name = "graph.batch_norm_backward"

    input = operand_def(TensorType)
    gamma = operand_def(TensorType)
    grad = operand_def(TensorType)
    input_grad = result_def(TensorType)
    gamma_grad = result_def(TensorType)
    beta_grad = result_def(TensorType)

    eps_attr = opt_prop_def(FloatAttr[Float64Type], FloatAttr(DEFAULT_EPS, f64), prop_name="eps")

    traits = traits_def(Pure())

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {"eps": f64_option}

    def __init__(
        self,
        input: SSAValue | Operation,
        gamma: SSAValue | Operation,
        grad: SSAValue | Operation,
        *,
        eps: float | None = None,
    ):
        """Build the backward; ``eps`` left as None stays absent (1e-5). Result
        types: ``input``'s, then ``gamma``'s twice."""
        super().__init__(
            operands=[input, gamma, grad],
            result_types=[value_type(input), value_type(gamma), value_type(gamma)],
            properties={"eps": f64_attr(eps)},
        )

    @classmethod
    def of(
        cls, op: BatchNormOp, input: SSAValue, gamma: SSAValue, grad: SSAValue
    ) -> BatchNormBackwardOp:
        """The backward of the forward ``op``, with its ``eps`` as written."""
        backward = cls(input, gamma, grad)
        if "eps" in op.properties:
            backward.properties["eps"] = op.properties["eps"]
        return backward

    @property
    def eps(self) -> float:
        """Effective epsilon added to the variance."""
        return self.eps_attr.value.data

    def verify_(self) -> None:
        input_shape = check_tensor(self.input.type, "input")
        if len(input_shape) < 2:
            raise VerifyException(
                f"expected input of rank >= 2 [N, C, ...], got rank {len(input_shape)}"
            )
        channels = input_shape[1]
        check_channel_vector(self.gamma.type, "gamma", channels)
        check_tensor(self.grad.type, "grad")
        if self.grad.type != self.input.type:
            raise VerifyException(
                f"expected grad of the input's type {self.input.type}, got {self.grad.type}"
            )
        _check_eps(self.eps)
        check_result(self.input_grad, self.input.type)
        stats_type = TensorType(f32, [channels])
        for what, value in (("gamma", self.gamma_grad), ("beta", self.beta_grad)):
            if value.type != stats_type:
                raise VerifyException(
                    f"expected {what} gradient type {stats_type}, got {value.type}"
                )
