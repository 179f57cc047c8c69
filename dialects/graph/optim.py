"""Optimizer updates: `graph.sgd_update` and `graph.adamw_update`, one parameter's
step of ``torch.optim.SGD`` and ``torch.optim.AdamW`` (apply-optimizer builds them)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar

from xdsl.dialects.builtin import Float64Type, FloatAttr, TensorType, f32, f64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    opt_result_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from dialects.graph.shapes import check_tensor
from teeny_ir.ir.format import OptionParser, OptionsFormatOp, f64_attr, f64_option, value_type

DEFAULT_BETA1 = 0.9
DEFAULT_BETA2 = 0.999
DEFAULT_ADAM_EPS = 1e-8
"""``torch.optim.AdamW``'s defaults for ``betas`` and ``eps``."""

STEP_TYPE = TensorType(f32, [])
"""The type of AdamW's step count: a scalar, as PyTorch keeps it."""


def check_lr(lr: float) -> None:
    """The learning rate must be finite and > 0."""
    if not (math.isfinite(lr) and lr > 0):
        raise VerifyException(f"expected lr to be finite and > 0, got {lr}")


def check_unit_interval(value: float, what: str) -> None:
    """A momentum or beta must lie in [0, 1)."""
    if not 0 <= value < 1:
        raise VerifyException(f"expected {what} in [0, 1), got {value}")


def check_weight_decay(weight_decay: float) -> None:
    """The weight decay must be finite and >= 0."""
    if not (math.isfinite(weight_decay) and weight_decay >= 0):
        raise VerifyException(f"expected weight_decay to be finite and >= 0, got {weight_decay}")


def _check_like(param: SSAValue, values: Mapping[str, SSAValue | None]) -> None:
    """``param`` is a static f32 tensor, and each present value has its type."""
    check_tensor(param.type, "param", dynamic_batch=False)
    for what, value in values.items():
        if value is not None and value.type != param.type:
            raise VerifyException(f"expected {what} type {param.type}, got {value.type}")


def _float(attr: FloatAttr[Float64Type]) -> float:
    return attr.value.data


@irdl_op_definition
class SgdUpdateOp(OptionsFormatOp):
    """One parameter's step of ``torch.optim.SGD`` (dampening 0, no nesterov).

    Operands: ``param`` and its gradient ``grad`` (one static f32 type), then
    the ``momentum_buffer`` (that type too) exactly when ``momentum`` is
    nonzero. Properties: ``lr`` (f64, required, finite and > 0), ``momentum``
    (f64, default 0, in [0, 1)) and ``weight_decay`` (f64, default 0, finite
    and >= 0). Results: the updated parameter, then the updated buffer when
    there is one::

        g'    = grad + weight_decay * param
        buf'  = momentum * buf + g'            (with a buffer)
        param' = param - lr * buf'             (without: param - lr * g')

    A buffer that starts at zero gives PyTorch's first step (``buf = g'``).

        %p2 = graph.sgd_update %p, %g lr 1.000000e-02 : (tensor<16xf32>, tensor<16xf32>)
            -> tensor<16xf32>
        %w2, %buf2 = graph.sgd_update %w, %gw, %buf lr 5.000000e-02 momentum 9.000000e-01
              weight_decay 5.000000e-04
            : (tensor<6x1x5x5xf32>, tensor<6x1x5x5xf32>, tensor<6x1x5x5xf32>)
            -> (tensor<6x1x5x5xf32>, tensor<6x1x5x5xf32>)
    """

    name = "graph.sgd_update"

    param = operand_def(TensorType)
    grad = operand_def(TensorType)
    momentum_buffer = opt_operand_def(TensorType)
    new_param = result_def(TensorType)
    new_momentum_buffer = opt_result_def(TensorType)

    lr_attr = prop_def(FloatAttr[Float64Type], prop_name="lr")
    momentum_attr = opt_prop_def(FloatAttr[Float64Type], FloatAttr(0.0, f64), prop_name="momentum")
    weight_decay_attr = opt_prop_def(
        FloatAttr[Float64Type], FloatAttr(0.0, f64), prop_name="weight_decay"
    )

    traits = traits_def(Pure())

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        "lr": f64_option,
        "momentum": f64_option,
        "weight_decay": f64_option,
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("lr",)

    def __init__(
        self,
        param: SSAValue | Operation,
        grad: SSAValue | Operation,
        momentum_buffer: SSAValue | Operation | None = None,
        *,
        lr: float,
        momentum: float | None = None,
        weight_decay: float | None = None,
    ):
        """Build an SGD step; ``momentum`` and ``weight_decay`` left as None stay
        absent (0). Result types: ``param``'s, twice with a buffer."""
        types: list[Attribute] = [value_type(param)]
        super().__init__(
            operands=[param, grad, momentum_buffer],
            result_types=[types[0], types if momentum_buffer is not None else []],
            properties={
                "lr": FloatAttr(lr, f64),
                "momentum": f64_attr(momentum),
                "weight_decay": f64_attr(weight_decay),
            },
        )

    @property
    def lr(self) -> float:
        return _float(self.lr_attr)

    @property
    def momentum(self) -> float:
        """Effective momentum (0: no buffer)."""
        return _float(self.momentum_attr)

    @property
    def weight_decay(self) -> float:
        """Effective weight decay, added to the gradient (L2, as SGD does)."""
        return _float(self.weight_decay_attr)

    def verify_(self) -> None:
        check_lr(self.lr)
        check_unit_interval(self.momentum, "momentum")
        check_weight_decay(self.weight_decay)
        buffer = self.momentum_buffer
        _check_like(self.param, {"grad": self.grad, "momentum_buffer": buffer})
        if self.momentum != 0 and buffer is None:
            raise VerifyException(
                f"momentum {self.momentum} needs a momentum_buffer operand (the third)"
            )
        if self.momentum == 0 and buffer is not None:
            raise VerifyException("a momentum_buffer operand needs a nonzero momentum")
        expected = 1 if buffer is None else 2
        if len(self.results) != expected:
            raise VerifyException(
                f"expected {expected} result(s) (param{', buffer' if buffer else ''}), "
                f"got {len(self.results)}"
            )
        for index, result in enumerate(self.results):
            if result.type != self.param.type:
                raise VerifyException(
                    f"expected result #{index} type {self.param.type}, got {result.type}"
                )


@irdl_op_definition
class AdamwUpdateOp(OptionsFormatOp):
    """One parameter's step of ``torch.optim.AdamW`` (no amsgrad, no maximize).

    Operands: ``param``, its gradient ``grad`` and the moments ``exp_avg`` and
    ``exp_avg_sq`` (one static f32 type), then ``step``, the count of steps
    taken so far, a ``tensor<f32>`` (exact up to 2**24). Properties: ``lr``
    (f64, required, finite and > 0), ``beta1`` (default 0.9) and ``beta2``
    (default 0.999), each in [0, 1), ``eps`` (default 1e-8, finite and > 0)
    and ``weight_decay`` (default 0, finite and >= 0), decoupled. Results: the
    updated ``param``, ``exp_avg``, ``exp_avg_sq`` and ``step``::

        step'   = step + 1
        p       = param * (1 - lr * weight_decay)
        m'      = beta1 * exp_avg + (1 - beta1) * grad
        v'      = beta2 * exp_avg_sq + (1 - beta2) * grad * grad
        param'  = p - lr / (1 - beta1**step') * m'
                      / (sqrt(v') / sqrt(1 - beta2**step') + eps)

    State that starts at zero (moments and step) gives PyTorch's first step.

        %p2, %m2, %v2, %s2 = graph.adamw_update %p, %g, %m, %v, %s lr 1.000000e-03
              weight_decay 1.000000e-02
            : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<f32>)
            -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<f32>)
    """

    name = "graph.adamw_update"

    param = operand_def(TensorType)
    grad = operand_def(TensorType)
    exp_avg = operand_def(TensorType)
    exp_avg_sq = operand_def(TensorType)
    step = operand_def(TensorType)
    new_param = result_def(TensorType)
    new_exp_avg = result_def(TensorType)
    new_exp_avg_sq = result_def(TensorType)
    new_step = result_def(TensorType)

    lr_attr = prop_def(FloatAttr[Float64Type], prop_name="lr")
    beta1_attr = opt_prop_def(
        FloatAttr[Float64Type], FloatAttr(DEFAULT_BETA1, f64), prop_name="beta1"
    )
    beta2_attr = opt_prop_def(
        FloatAttr[Float64Type], FloatAttr(DEFAULT_BETA2, f64), prop_name="beta2"
    )
    eps_attr = opt_prop_def(
        FloatAttr[Float64Type], FloatAttr(DEFAULT_ADAM_EPS, f64), prop_name="eps"
    )
    weight_decay_attr = opt_prop_def(
        FloatAttr[Float64Type], FloatAttr(0.0, f64), prop_name="weight_decay"
    )

    traits = traits_def(Pure())

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        "lr": f64_option,
        "beta1": f64_option,
        "beta2": f64_option,
        "eps": f64_option,
        "weight_decay": f64_option,
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("lr",)

    def __init__(
        self,
        param: SSAValue | Operation,
        grad: SSAValue | Operation,
        exp_avg: SSAValue | Operation,
        exp_avg_sq: SSAValue | Operation,
        step: SSAValue | Operation,
        *,
        lr: float,
        beta1: float | None = None,
        beta2: float | None = None,
        eps: float | None = None,
        weight_decay: float | None = None,
    ):
        """Build an AdamW step; options left as None stay absent (their defaults).
        Result types: ``param``'s three times, then ``step``'s."""
        type_ = value_type(param)
        super().__init__(
            operands=[param, grad, exp_avg, exp_avg_sq, step],
            result_types=[type_, type_, type_, value_type(step)],
            properties={
                "lr": FloatAttr(lr, f64),
                "beta1": f64_attr(beta1),
                "beta2": f64_attr(beta2),
                "eps": f64_attr(eps),
                "weight_decay": f64_attr(weight_decay),
            },
        )

    @property
    def lr(self) -> float:
        return _float(self.lr_attr)

    @property
    def beta1(self) -> float:
        return _float(self.beta1_attr)

    @property
    def beta2(self) -> float:
        return _float(self.beta2_attr)

    @property
    def eps(self) -> float:
        return _float(self.eps_attr)

    @property
    def weight_decay(self) -> float:
        """Effective decoupled weight decay (``param *= 1 - lr * weight_decay``)."""
        return _float(self.weight_decay_attr)

    def verify_(self) -> None:
        check_lr(self.lr)
        check_unit_interval(self.beta1, "beta1")
        check_unit_interval(self.beta2, "beta2")
        if not (math.isfinite(self.eps) and self.eps > 0):
            raise VerifyException(f"expected eps to be finite and > 0, got {self.eps}")
        check_weight_decay(self.weight_decay)
        _check_like(
            self.param, {"grad": self.grad, "exp_avg": self.exp_avg, "exp_avg_sq": self.exp_avg_sq}
        )
        if self.step.type != STEP_TYPE:
            raise VerifyException(f"expected step type {STEP_TYPE}, got {self.step.type}")
        expected = (self.param.type, self.param.type, self.param.type, STEP_TYPE)
        for index, (result, type_) in enumerate(zip(self.results, expected, strict=True)):
            if result.type != type_:
                raise VerifyException(f"expected result #{index} type {type_}, got {result.type}")
