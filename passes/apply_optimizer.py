"""apply-optimizer: append one optimizer step (SGD or AdamW) to a training ``@forward``.

The training contract: after insert-backward, ``@forward`` returns the loss, the
model's results, the BN running statistics and one gradient per trainable
parameter, each gradient marked with the result attribute
``{teeny.grad = "<param name>"}``. This pass reads those gradients (by
attribute, never by position) and appends, for each, the updated parameter and
its optimizer state as new results marked ``{teeny.updated = "<name>"}``. The
math is one `graph.sgd_update` or `graph.adamw_update` per parameter, so the
step is graph IR the reference runs and lower-graph-to-kernel compiles (the
``sgd_update`` and ``adamw_update`` families).

Optimizer state is read from ``graph.param`` ops marked ``zero_default``, so a
first step, whose state the weights lack, starts it at zero as PyTorch does:
``<param>.momentum_buffer`` (SGD with momentum), ``<param>.exp_avg``,
``<param>.exp_avg_sq`` and ``<param>.step`` (AdamW; the step a ``tensor<f32>``).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Literal

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass

from dialects.graph.conv import Conv2dOp, FusedConv2dOp
from dialects.graph.linear import LinearOp
from dialects.graph.optim import (
    DEFAULT_ADAM_EPS,
    DEFAULT_BETA1,
    DEFAULT_BETA2,
    STEP_TYPE,
    AdamwUpdateOp,
    SgdUpdateOp,
)
from dialects.graph.param import ParamOp
from teeny_ir.core.diagnostics import Diagnostic, DiagnosticError, Severity, loc_of

GRAD_ATTR = "teeny.grad"
"""Result attribute naming the parameter a gradient result belongs to."""
UPDATED_ATTR = "teeny.updated"
"""Result attribute naming the parameter or state an appended result updates."""

ADAMW_DEFAULT_WEIGHT_DECAY = 1e-2
"""``torch.optim.AdamW``'s default weight decay (SGD's is 0)."""

DECAYED_WEIGHT_OF = (Conv2dOp, FusedConv2dOp, LinearOp)
"""Ops whose operand 1 (the weight) is decayed when ``decay-all`` is false."""


def decayed_params(forward: FuncOp) -> set[str]:
    """Names of the graph.params used as the weight (operand 1) of a convolution or
    a linear layer: the ones weight decay applies to by default."""
    names: set[str] = set()
    for op in forward.walk():
        if isinstance(op, DECAYED_WEIGHT_OF) and len(op.operands) > 1:
            owner = op.operands[1].owner
            if isinstance(owner, ParamOp):
                names.add(owner.param_name.data)
    return names


def _result_attrs(forward: FuncOp) -> list[DictionaryAttr]:
    count = len(forward.function_type.outputs.data)
    if forward.res_attrs is None:
        return [DictionaryAttr({}) for _ in range(count)]
    return list(forward.res_attrs.data)


@dataclass(frozen=True)
class _Gradient:
    index: int
    name: str
    value: SSAValue
    param: ParamOp


UPDATE_ATTR = "teeny.update"
"""The discardable attribute on every op this pass adds: the plan's ``update`` phase."""


def as_float32(value: float) -> float:
    """``value`` rounded to float32, the precision of the optimizer updates
    (infinite where float32 overflows)."""
    try:
        return float(struct.unpack("f", struct.pack("f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


@dataclass(frozen=True)
class ApplyOptimizerPass(ModulePass):
    """Append an SGD or AdamW step to @forward: updated params and optimizer state.

    Expects the module after insert-backward: ``func.func @forward`` whose
    gradient results carry ``{teeny.grad = "<param name>"}``, each naming a
    ``graph.param`` of the gradient's type. For each gradient, in result order,
    appends a `graph.sgd_update` (``kind=sgd``: ``torch.optim.SGD``, dampening
    0, no nesterov, ``weight-decay`` added to the gradient) or a
    `graph.adamw_update` (``kind=adamw``: ``torch.optim.AdamW``, decoupled
    decay), reading the state from ``zero_default`` graph.params
    ``<param>.momentum_buffer`` (SGD with nonzero ``momentum``) or
    ``<param>.exp_avg``, ``<param>.exp_avg_sq`` and ``<param>.step``
    (``tensor<f32>``), and returns the updated parameter and then its state,
    each with ``{teeny.updated = "<name>"}``. Existing results and their
    attributes stay; the function type follows. Weight decay applies to
    conv2d, fused_conv2d and linear weights (operand 1) only, unless
    ``decay-all=true`` (then to every parameter with a gradient).

    Options: ``kind`` (sgd|adamw), ``lr`` (> 0; default 1e-3), ``momentum``
    (sgd, in [0, 1); default 0), ``weight-decay`` (>= 0; default PyTorch's:
    0 for sgd, 1e-2 for adamw), ``betas`` (adamw, two values in [0, 1);
    default 0.9,0.999), ``eps`` (adamw, > 0; default 1e-8), ``decay-all``.
    Options of the other kind are checked and ignored, but a nonzero momentum
    with ``kind=adamw`` is refused. Refuses, as errors located at ``@forward``
    (at the module when there is none): bad option values, a @forward with
    no ``teeny.grad`` result, gradients naming no graph.param (or one of
    another type, or named twice), and a @forward that already has
    ``teeny.updated`` results.
    """

    name = "apply-optimizer"
    anchors: ClassVar[tuple[str, ...]] = ("builtin.module",)

    kind: Literal["sgd", "adamw"] = "sgd"
    """``sgd`` (torch.optim.SGD) or ``adamw`` (torch.optim.AdamW)."""
    lr: float = 1e-3
    """Learning rate, finite and > 0."""
    momentum: float | None = None
    """SGD momentum in [0, 1) (absent: 0, no buffer); sgd only (nonzero with adamw:
    an error)."""
    weight_decay: float | None = None
    """Weight decay, finite and >= 0 (absent: 0 for sgd, 1e-2 for adamw, as PyTorch)."""
    betas: tuple[float, ...] | None = None
    """AdamW's (beta1, beta2), each in [0, 1) (absent: 0.9,0.999); ignored by sgd."""
    eps: float | None = None
    """AdamW's epsilon, finite and > 0 (absent: 1e-8); ignored by sgd."""
    decay_all: bool = False
    """Decay every parameter with a gradient, not only conv and linear weights."""

    # --- options --------------------------------------------------------------
    def _effective_weight_decay(self) -> float:
        if self.weight_decay is not None:
            return self.weight_decay
        return ADAMW_DEFAULT_WEIGHT_DECAY if self.kind == "adamw" else 0.0

    def option_problems(self) -> list[str]:
        """What is wrong with the options (empty when they are fine). Each value
        is checked as given and as the float32 the update computes with: a
        finite ``lr=1e-50`` is 0 there, ``betas=0.9,0.999999999`` is 1."""
        problems: list[str] = []

        def check(value: float, fine: Callable[[float], bool], expected: str) -> None:
            if not fine(value):
                problems.append(f"expected {expected}, got {value}")
            elif not fine(single := as_float32(value)):
                problems.append(
                    f"expected {expected} in float32, the precision the update computes in, "
                    f"got {value} ({single} in float32)"
                )

        check(self.lr, lambda v: math.isfinite(v) and v > 0, "lr to be finite and > 0")
        if self.weight_decay is not None:
            check(
                self.weight_decay,
                lambda v: math.isfinite(v) and v >= 0,
                "weight-decay to be finite and >= 0",
            )
        if self.kind == "adamw" and self.momentum:
            problems.append(
                f"momentum={self.momentum} does not apply to kind=adamw (its momentum is betas[0])"
            )
        if self.momentum is not None:
            check(self.momentum, lambda v: 0 <= v < 1, "momentum in [0, 1)")
        if self.betas is not None:
            if len(self.betas) != 2:
                problems.append(f"expected betas to be two values, got {len(self.betas)}")
            for index, beta in enumerate(self.betas[:2]):
                check(beta, lambda v: 0 <= v < 1, f"betas[{index}] in [0, 1)")
        if self.eps is not None:
            check(self.eps, lambda v: math.isfinite(v) and v > 0, "eps to be finite and > 0")
        return problems

    # --- the pass -------------------------------------------------------------
    def apply(self, ctx: Context, op: ModuleOp) -> None:
        forward = next(
            (f for f in op.ops if isinstance(f, FuncOp) and f.sym_name.data == "forward"), None
        )
        if forward is None:
            raise DiagnosticError.single(
                "apply-optimizer needs a func.func @forward (the training function)", loc_of(op)
            )
        problems = [f"apply-optimizer: {p}" for p in self.option_problems()]
        if problems:
            raise DiagnosticError(Diagnostic(Severity.ERROR, p, loc_of(forward)) for p in problems)
        if len(forward.body.blocks) != 1 or not isinstance(
            ret := forward.body.block.last_op, ReturnOp
        ):
            raise DiagnosticError.single(
                "apply-optimizer expects @forward to be one block ending in func.return",
                loc_of(forward),
            )
        gradients = self._gradients(forward, ret)
        self._append_steps(forward, ret, gradients)

    def _gradients(self, forward: FuncOp, ret: ReturnOp) -> list[_Gradient]:
        """Every ``teeny.grad`` result with its graph.param; all problems in one error."""
        errors: list[str] = []
        params: dict[str, ParamOp] = {}
        for op in forward.body.block.ops:
            if isinstance(op, ParamOp):
                params.setdefault(op.param_name.data, op)
        found: list[_Gradient] = []
        seen: dict[str, int] = {}
        for index, attrs in enumerate(_result_attrs(forward)):
            if UPDATED_ATTR in attrs.data:
                errors.append(
                    f"apply-optimizer has already run on @forward: result #{index} carries "
                    f"'{UPDATED_ATTR}'"
                )
            attr = attrs.data.get(GRAD_ATTR)
            if attr is None:
                continue
            if not isinstance(attr, StringAttr) or not attr.data:
                errors.append(
                    f"result #{index}: '{GRAD_ATTR}' must be a non-empty string, got {attr}"
                )
                continue
            name = attr.data
            if name in seen:
                errors.append(
                    f"results #{seen[name]} and #{index} are both the gradient of '{name}'"
                )
                continue
            seen[name] = index
            param = params.get(name)
            value = ret.arguments[index]
            if param is None:
                errors.append(
                    f"result #{index} is the gradient of '{name}', which no graph.param "
                    "of @forward declares"
                )
            elif value.type != param.result.type:
                errors.append(
                    f"result #{index}, the gradient of '{name}', has type {value.type}; "
                    f"the parameter is {param.result.type}"
                )
            else:
                found.append(_Gradient(index, name, value, param))
        if not errors and not found:
            errors.append(
                f"apply-optimizer found no gradient: no result of @forward carries a "
                f"'{GRAD_ATTR}' attribute (run insert-backward first)"
            )
        if errors:
            raise DiagnosticError(Diagnostic(Severity.ERROR, e, loc_of(forward)) for e in errors)
        return found

    def _append_steps(self, forward: FuncOp, ret: ReturnOp, gradients: list[_Gradient]) -> None:
        block = forward.body.block
        decayed = decayed_params(forward)
        weight_decay = self._effective_weight_decay()
        results: list[SSAValue] = list(ret.arguments)
        attrs = _result_attrs(forward)

        def state(gradient: _Gradient, suffix: str, type_: Attribute) -> ParamOp:
            assert isinstance(type_, TensorType)
            param = ParamOp(f"{gradient.name}.{suffix}", type_, zero_default=True)
            param.location = gradient.param.location
            block.insert_op_before(param, ret)
            return param

        for gradient in gradients:
            decay = weight_decay if self.decay_all or gradient.name in decayed else 0.0
            type_ = gradient.param.result.type
            update: Operation
            if self.kind == "sgd":
                momentum = self.momentum or 0.0
                buffer = state(gradient, "momentum_buffer", type_) if momentum else None
                update = SgdUpdateOp(
                    gradient.param,
                    gradient.value,
                    buffer,
                    lr=self.lr,
                    momentum=momentum or None,
                    weight_decay=decay or None,
                )
                names = [gradient.name] + ([f"{gradient.name}.momentum_buffer"] if buffer else [])
            else:
                suffixes = ("exp_avg", "exp_avg_sq", "step")
                m, v, step = (
                    state(gradient, s, STEP_TYPE if s == "step" else type_) for s in suffixes
                )
                beta1, beta2 = self.betas or (DEFAULT_BETA1, DEFAULT_BETA2)
                eps = DEFAULT_ADAM_EPS if self.eps is None else self.eps
                update = AdamwUpdateOp(
                    gradient.param,
                    gradient.value,
                    m,
                    v,
                    step,
                    lr=self.lr,
                    beta1=None if beta1 == DEFAULT_BETA1 else beta1,
                    beta2=None if beta2 == DEFAULT_BETA2 else beta2,
                    eps=None if eps == DEFAULT_ADAM_EPS else eps,
                    weight_decay=decay or None,
                )
                names = [gradient.name] + [f"{gradient.name}.{s}" for s in suffixes]
            update.location = gradient.param.location
            update.attributes[UPDATE_ATTR] = UnitAttr()
            block.insert_op_before(update, ret)
            results += update.results
            attrs += [DictionaryAttr({UPDATED_ATTR: StringAttr(n)}) for n in names]
        new_ret = ReturnOp(*results)
        new_ret.location = ret.location
        new_ret.attributes.update(ret.attributes)
        block.insert_op_before(new_ret, ret)
        block.erase_op(ret)
        inputs = forward.function_type.inputs.data
        forward.function_type = FunctionType.from_lists(inputs, [r.type for r in results])
        forward.res_attrs = ArrayAttr(attrs)
