"""Normalisation: `graph.batch_norm`."""

from __future__ import annotations

import math
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

    (fuse-conv-bn-act folds an activation that follows a standalone inference
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
        if not (math.isfinite(self.eps) and self.eps > 0):
            raise VerifyException(f"expected eps to be finite and > 0, got {self.eps}")
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
