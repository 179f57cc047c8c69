"""The lowering facet: which kernel family runs each graph op, by decorator.

A family's ``lowering`` module registers one rule per op it implements with
``@lowers(OpClass)``; the elementwise family registers one rule for every entry
of the pointwise table with `lowers_pointwise`. An op no family runs says why
with `no_kernel` (in `teeny_ir.kernels.opt_outs`). The conventions test asserts
that every graph op has exactly one of these, so a gap is a named test failure,
and lower-graph-to-kernel is a thin driver over `lowering_for`.

A rule maps the graph op to one ``kernel.launch`` (or, for the reshapes of
`teeny_ir.kernels.views`, a view op with no launch) or raises `Unlowerable`
with the reason, which the pass reports at the op's location.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar, cast

from teeny_ir.core import pointwise
from teeny_ir.kernels.families import FAMILY_PACKAGES

if TYPE_CHECKING:
    from xdsl.dialects.builtin import TensorType
    from xdsl.ir import Operation, SSAValue

    from dialects.graph.conv import FusedConv2dOp
    from dialects.kernel import LaunchOp, ParamSlot
    from teeny_ir.kernels.conv_algorithms import TileProfile

Rule = Callable[["Operation"], "LaunchOp | Operation"]
"""A lowering: the ``kernel.launch`` that runs the op, or (`teeny_ir.kernels.views`)
the view op that needs no launch."""
R = TypeVar("R", bound=Callable[..., "LaunchOp | Operation"])

_RULES: dict[type[Operation], Rule] = {}
_GUARDED: dict[type[Operation], list[tuple[Callable[[Operation], bool], Rule]]] = {}
_POINTWISE: list[Rule] = []
_NO_KERNEL: dict[type[Operation], str] = {}


class Unlowerable(Exception):
    """Why one op cannot become a kernel launch."""


_PROFILE: contextvars.ContextVar[str] = contextvars.ContextVar("tile_profile", default="gpu")


def tile_profile() -> TileProfile:
    """The tile profile of the lowering running now (`teeny_ir.kernels.conv_algorithms`:
    ``gpu``, the default, or ``interpreter``): rules whose tiles do not come from
    the op (a fused convolution carries its own) ask it."""
    return cast("TileProfile", _PROFILE.get())


@contextlib.contextmanager
def lowering_profile(profile: str) -> Iterator[None]:
    """Run the enclosed lowering with tile profile ``profile``."""
    token = _PROFILE.set(profile)
    try:
        yield
    finally:
        _PROFILE.reset(token)


def lowers(
    *op_types: type[Operation], when: Callable[[Operation], bool] | None = None
) -> Callable[[R], R]:
    """Register the decorated function as the lowering of ``op_types``.

    With ``when``, the rule covers only the ops it accepts (a fused convolution
    whose ``algorithm`` is the family's): several families may then share an op
    class, each with its own condition, and the first that accepts an op lowers
    it. Without ``when`` the rule is the op class's only one."""

    def register(rule: R) -> R:
        for op_type in op_types:
            if op_type in _NO_KERNEL or op_type in _RULES:
                raise RuntimeError(f"'{op_type.name}' has two lowering facets")
            guarded = _GUARDED.setdefault(op_type, [])
            if when is None and guarded:
                raise RuntimeError(f"'{op_type.name}' has conditional and unconditional rules")
            if when is None:
                _RULES[op_type] = rule
            else:
                guarded.append((when, rule))
        return rule

    return register


def _dispatch(op_type: type[Operation]) -> Rule:
    """The rule of an op class lowered by conditional rules: the first that accepts."""

    def dispatch(op: Operation) -> LaunchOp | Operation:
        for when, rule in _GUARDED[op_type]:
            if when(op):
                return rule(op)
        families = ", ".join(sorted({family_of(rule) for _, rule in _GUARDED[op_type]}))
        algorithm = getattr(op, "algorithm", None)
        what = f"algorithm '{algorithm}'" if isinstance(algorithm, str) else "it"
        raise Unlowerable(f"no kernel family implements {what} yet (families tried: {families})")

    return dispatch


def lowers_pointwise(rule: R) -> R:
    """Register the decorated function as the lowering of every pointwise-table op."""
    if _POINTWISE:
        raise RuntimeError("two lowerings claim the pointwise table")
    _POINTWISE.append(rule)
    return rule


def no_kernel(reason: str, *op_types: type[Operation]) -> None:
    """Declare that no kernel runs ``op_types``, and why (shown to the user)."""
    for op_type in op_types:
        if op_type in _RULES or op_type in _NO_KERNEL or _GUARDED.get(op_type):
            raise RuntimeError(f"'{op_type.name}' has two lowering facets")
        _NO_KERNEL[op_type] = reason


@functools.cache
def load() -> None:
    """Import every family's lowering module and the opt-outs (once)."""
    for package in FAMILY_PACKAGES:
        importlib.import_module(f"teeny_ir.kernels.{package}.lowering")
    importlib.import_module("teeny_ir.kernels.opt_outs")
    importlib.import_module("teeny_ir.kernels.views")


def lowering_for(op_type: type[Operation]) -> Rule | str:
    """The rule that lowers ``op_type``, or the reason no kernel runs it."""
    load()
    if op_type in _RULES:
        return _RULES[op_type]
    if _GUARDED.get(op_type):
        return _dispatch(op_type)
    if op_type in _NO_KERNEL:
        return _NO_KERNEL[op_type]
    entry = pointwise.lookup(op_type.name)
    if entry is not None and _POINTWISE:
        return _POINTWISE[0]
    return "no kernel family implements it yet"


def lowering_rules() -> dict[type[Operation], Rule]:
    """The explicit ``@lowers`` rules, by op class (a dispatcher where several
    families' conditional rules share the class)."""
    load()
    rules = dict(_RULES)
    rules |= {op_type: _dispatch(op_type) for op_type, guarded in _GUARDED.items() if guarded}
    return rules


def families_of(op_type: type[Operation]) -> list[str]:
    """The kernel families that lower ``op_type`` (for the supported-ops table)."""
    load()
    if op_type in _RULES:
        return [family_of(_RULES[op_type])]
    return sorted({family_of(rule) for _, rule in _GUARDED.get(op_type, [])})


def opt_out_reasons() -> dict[type[Operation], str]:
    """The `no_kernel` declarations, by op class."""
    load()
    return dict(_NO_KERNEL)


def family_of(rule: Rule) -> str:
    """The family whose lowering module defines ``rule`` (for the supported-ops
    table); ``views`` for the rules of `teeny_ir.kernels.views` (no launch)."""
    return rule.__module__.removeprefix("teeny_ir.kernels.").removesuffix(".lowering")


# Helpers the family rules share: shapes as expressions over the batch symbol.


def dim_expr(size: int) -> str:
    """One dimension as an expression: the batch symbol ``B`` for ``?``."""
    from xdsl.dialects.builtin import DYNAMIC_INDEX

    return "B" if size == DYNAMIC_INDEX else str(size)


def count_expr(sizes: Sequence[int]) -> str:
    """The element count of ``sizes`` as an expression: ``"B * 2331"`` or ``"42"``."""
    from xdsl.dialects.builtin import DYNAMIC_INDEX

    static = math.prod(d for d in sizes if d != DYNAMIC_INDEX)
    if DYNAMIC_INDEX not in sizes:
        return str(static)
    return "B" if static == 1 else f"B * {static}"


def tensor_type(value: SSAValue) -> TensorType:
    """The tensor type of a value the graph verifiers have checked."""
    from xdsl.dialects.builtin import TensorType

    assert isinstance(value.type, TensorType)
    return value.type


def batch_stride_expr(value: SSAValue) -> str:
    """The batch stride of an activation operand or result, for a family's
    `batch_strides` dim: its layout's stride if it is a batch-strided view, else
    the size of one image (``prod(shape[1:])``)."""
    from dialects.kernel import batch_stride

    return str(batch_stride(tensor_type(value)))


@dataclass(frozen=True)
class ConvEpilogue:
    """What every fused-convolution family binds the same way: the weight's
    name, the scale and shift slots, the launch's operands and the residual
    pointer ``r`` (bound to the input, and never read, when there is none)."""

    weight: str
    slots: list[ParamSlot]
    operands: list[SSAValue]
    r_binding: str
    r_batch_stride: str
    has_residual: int


def conv_epilogue(op: FusedConv2dOp) -> ConvEpilogue:
    """The shared part of a fused convolution's launch (raises `Unlowerable`
    when its weight is not a ``graph.param``)."""
    from dialects.graph.param import ParamOp
    from dialects.kernel import ParamSlot

    weight = op.weight.owner
    if not isinstance(weight, ParamOp):
        raise Unlowerable("its weight is not a graph.param")
    channels = tensor_type(op.result).get_shape()[1]
    residual = op.residual
    r_value, r_binding = (op.input, "in0") if residual is None else (residual, "in1")
    return ConvEpilogue(
        weight.param_name.data,
        [
            ParamSlot("scale", (channels,), op.scale.data),
            ParamSlot("shift", (channels,), op.shift.data),
        ],
        [op.input] if residual is None else [op.input, residual],
        r_binding,
        batch_stride_expr(r_value),
        int(residual is not None),
    )


def conv_dims(
    x: Sequence[int],
    w: Sequence[int],
    y: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> dict[str, int | str]:
    """The geometry dim arguments the convolution families share, in their ABI
    order (``B`` to ``GROUPS``), from NCHW ``x`` (input or its gradient), ``w``
    (weight or its gradient), ``y`` (output or its gradient) and the
    convolution's options; raises `Unlowerable` past 32-bit offsets."""
    batch, c_in, height, width = x
    c_out, group_in, kernel_h, kernel_w = w
    _, _, out_h, out_w = y
    if max(c_in * height * width, c_out * out_h * out_w, c_out * group_in * kernel_h * kernel_w) > (
        2**31 - 1
    ):
        raise Unlowerable("an image or the weight exceeds the kernel's 32-bit offsets")
    return {
        "B": dim_expr(batch),
        "C_IN": c_in,
        "H": height,
        "W": width,
        "C_OUT": c_out,
        "OH": out_h,
        "OW": out_w,
        "KH": kernel_h,
        "KW": kernel_w,
        "STRIDE_H": strides[0],
        "STRIDE_W": strides[1],
        "PAD_T": padding[0],
        "PAD_L": padding[1],
        "DIL_H": dilation[0],
        "DIL_W": dilation[1],
        "GROUPS": groups,
    }
