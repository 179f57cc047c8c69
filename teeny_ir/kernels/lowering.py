"""The lowering facet: which kernel family runs each graph op, by decorator.

`LOWERINGS` is a `teeny_ir.core.facets.Facet`. A family's ``lowering`` module
registers one rule per op it implements with ``@lowers(OpClass)``; the
elementwise family registers one rule for every entry of the pointwise table
with `lowers_pointwise`. An op no family runs says why with `no_kernel` (in
`teeny_ir.kernels.opt_outs`). The conventions test asserts that every graph op
has one of these, so a gap is a named test failure, and lower-graph-to-kernel
is a thin driver over `lower`.

A rule is ``rule(ctx, op)``: it takes the `LoweringContext` of the lowering
running now (the tile profile; the same for every op of it) and the graph op,
and returns one ``kernel.launch`` (or, for the reshapes of
`teeny_ir.kernels.views`, a view op with no launch; for a collective,
`teeny_ir.kernels.collective`, a ``kernel.all_reduce``) or raises `Unlowerable`
with the reason, which the pass reports at the op's location. Whatever a rule
needs beyond the op comes in ``ctx``, never from global state, so a rule is a
function of its arguments and a test can call it for any profile.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from teeny_ir.core import symbols
from teeny_ir.core.facets import Facet, OptOut
from teeny_ir.kernels.families import FAMILY_PACKAGES
from teeny_ir.kernels.tiles import TileProfile, check_profile

if TYPE_CHECKING:
    from xdsl.dialects.builtin import TensorType
    from xdsl.ir import Operation, SSAValue

    from dialects.graph.conv import FusedConv2dOp
    from dialects.kernel import LaunchOp, ParamSlot


@dataclass(frozen=True)
class LoweringContext:
    """What every lowering rule is given besides its op: the choices of the
    lowering running now, which the op does not carry (lower-graph-to-kernel
    builds one from its options and passes it to each rule).

    Explicit, never global state (a context variable the rules would read), so
    a rule is a function of its arguments."""

    profile: TileProfile
    """The tile profile (`teeny_ir.kernels.tiles`: ``gpu`` or ``interpreter``)
    of the launches whose tiles the op does not carry (a fused convolution
    carries select-conv-algorithm's)."""

    def __post_init__(self) -> None:
        check_profile(self.profile)  # a ValueError naming the profiles


Rule = Callable[["LoweringContext", "Operation"], "LaunchOp | Operation"]
"""A lowering, ``rule(ctx, op)``: the ``kernel.launch`` that runs the op, or
(`teeny_ir.kernels.views`) the view op that needs no launch."""


class Unlowerable(Exception):
    """Why one op cannot become a kernel launch."""


def _homes() -> tuple[str, ...]:
    """Every family's lowering module, then the view rules, the collectives
    (`teeny_ir.kernels.collective`: no family, no launch) and the opt-outs."""
    families = (f"teeny_ir.kernels.{package}.lowering" for package in FAMILY_PACKAGES)
    return (
        *families,
        "teeny_ir.kernels.views",
        "teeny_ir.kernels.collective.lowering",
        "teeny_ir.kernels.opt_outs",
    )


LOWERINGS: Facet[Rule] = Facet("lowering", homes=_homes, pointwise=True)
"""The lowering of every graph op (`teeny_ir.core.facets.Facet`)."""

lowers = LOWERINGS.register
"""``@lowers(*op_types, when=None)``: the decorated function lowers ``op_types``.
With ``when``, the rule covers only the ops it accepts (a fused convolution
whose ``algorithm`` is the family's): several families may then share an op
class, each with its own condition, and the first that accepts an op lowers it."""
lowers_pointwise = LOWERINGS.pointwise
"""``@lowers_pointwise``: the one lowering of every pointwise-table op."""
no_kernel = LOWERINGS.opt_out
"""``no_kernel(reason, *op_types)``: no kernel runs ``op_types``, and why (the
user is told the reason)."""


def lower(ctx: LoweringContext, op: Operation) -> LaunchOp | Operation:
    """``op`` lowered by the rule `LOWERINGS` has for it; raises `Unlowerable`
    with the reason when there is none (its `no_kernel` reason, the families
    whose conditions refused it, or that no family implements it)."""
    found = LOWERINGS.lookup(type(op), subject=op)
    if isinstance(found, OptOut):
        raise Unlowerable(found.reason)
    if found is None:
        tried = sorted({family_of(rule) for rule in LOWERINGS.candidates(type(op))})
        if not tried:
            raise Unlowerable("no kernel family implements it yet")
        algorithm = getattr(op, "algorithm", None)
        what = f"algorithm '{algorithm}'" if isinstance(algorithm, str) else "it"
        raise Unlowerable(
            f"no kernel family implements {what} yet (families tried: {', '.join(tried)})"
        )
    return found(ctx, op)


def families_of(op_type: type[Operation]) -> list[str]:
    """The kernel families that lower ``op_type`` by a rule of their own (for
    the supported-ops table)."""
    return sorted({family_of(rule) for rule in LOWERINGS.candidates(op_type)})


def family_of(rule: Rule) -> str:
    """The family whose lowering module defines ``rule`` (for the supported-ops
    table); ``views`` for the rules of `teeny_ir.kernels.views` (no launch)."""
    return rule.__module__.removeprefix("teeny_ir.kernels.").removesuffix(".lowering")


# Helpers the family rules share: shapes as expressions over the batch symbol.


def dim_expr(size: int) -> str:
    """One dimension as an expression: the batch symbol ``B`` for ``?``
    (`teeny_ir.core.symbols.dim_expr`)."""
    return symbols.dim_expr(size)


def count_expr(sizes: Sequence[int]) -> str:
    """The element count of ``sizes`` as an expression: ``"B * 2331"`` or ``"42"``
    (`teeny_ir.core.symbols.count_expr`)."""
    return symbols.count_expr(sizes)


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
