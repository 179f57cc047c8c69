"""What a kernel family promises: the seed's ``RuntimeOp`` contract as data.

A family is a Triton kernel source plus its runtime contract: the ordered
non-constexpr arguments with their kind and Triton dtype, the constexprs, and
the grid's tile model, which says how many programs each grid axis needs so the
verifier can prove coverage. Each family subpackage defines one `KernelFamily`
as ``FAMILY`` in its ``contract`` module; `teeny_ir.kernels.families` lists them.
Only the standard library is imported here.

Argument kinds: ``input`` (an activation operand), ``param`` (a parameter
slot, bound from weights through a derivation), ``output`` (a result buffer),
and ``dim`` (an i32 computed from shape expressions, which the validator
proves to lie in [0, 2**31 - 1]). There is no float argument kind: a float a
kernel needs (a learning rate, an eps) travels in a parameter slot filled by a
derivation (`sgd_update`'s ``hyper``), or as a pointwise entry's option, which
rendering writes into the kernel as a literal.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

ArgKind = Literal["input", "param", "output", "dim"]
POINTER_KINDS = ("input", "param", "output")
ConstexprType = Literal["int", "bool", "pointwise", "program"]


@dataclass(frozen=True)
class KernelArg:
    """One non-constexpr argument of the kernel, in ABI order."""

    name: str
    kind: ArgKind
    dtype: str  # Triton signature type: "*fp32", "i32", "fp32"


def element_type_of(dtype: str) -> str:
    """The tensor element type (``f32`` or ``i64``) a pointer of Triton type
    ``dtype`` (``*fp32``, ``*i64``) takes."""
    return "i64" if dtype == "*i64" else "f32"


@dataclass(frozen=True)
class Constexpr:
    """A compile-time parameter.

    ``int`` and ``bool`` constexprs are integers: ``choices`` restricts their
    values when given, ``minimum`` bounds them below (``tl.dot`` needs tiles of
    at least 16x16x8). A ``pointwise`` constexpr names an entry of the pointwise
    table (`teeny_ir.core.pointwise`) whose expression is rendered into the
    kernel's slot function ``slot``; ``epilogue`` restricts it to the entries
    that may ride in an epilogue, plus ``none``. A ``program`` constexpr is a
    pointwise program (`teeny_ir.core.pointwise_program`, its canonical text)
    rendered into the slot function ``slot``.
    """

    name: str
    type: ConstexprType
    choices: tuple[int, ...] = ()
    power_of_two: bool = False
    minimum: int = 0
    slot: str = ""
    epilogue: bool = False


@dataclass(frozen=True)
class StatusCheck:
    """A status output the runtime reads after the run (`teeny_ir.runtime.checks`).

    ``index_range``: the kernel writes ``[count, first index, its value]`` (i64)
    for the indices it found outside ``[0, limit)``, where ``limit`` names a
    ``dim`` argument; a non-zero count is an error naming the launch's graph op
    (``"target 12 at index 3 is out of range [0, 10)"`` with ``what = "target"``).
    """

    kind: Literal["index_range"]
    limit: str
    what: str


@dataclass(frozen=True)
class GridAxis:
    """The programs one grid axis must launch: the product over ``covers`` of
    ``cdiv(extent, tile)``, where extents are expressions over the family's
    ``dim`` arguments and tiles over its constexprs."""

    covers: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class KernelFamily:
    """A kernel source and its runtime contract.

    ``package`` is the family's subpackage directory; its ``kernel.py`` is the
    Triton source (a real module, linted, read as text) defining the function
    ``kernel_function``."""

    name: str
    summary: str
    args: tuple[KernelArg, ...]
    constexprs: tuple[Constexpr, ...]
    grid: tuple[GridAxis, ...]
    package: Path
    kernel_function: str
    footprints: Mapping[str, str] = field(default_factory=dict[str, str])
    """Pointer argument -> how many elements from its base the kernel may touch,
    as an expression of the dim arguments (for a strided operand: the largest
    offset its strides reach, plus one). The validator proves each fits in the
    tensor bound to the argument."""
    implied: Implied | None = None
    """The dim arguments that the bound tensors' shapes imply (see `Implied`)."""
    blocks: tuple[tuple[str, ...], ...] = ()
    """Products of constexprs that are the element counts of one program's
    blocks; each must stay within `MAX_BLOCK_ELEMENTS`."""
    batch_strides: Mapping[str, str] = field(default_factory=dict[str, str])
    """Activation pointer argument -> the ``dim`` argument holding its batch
    stride: the elements between consecutive images of that operand, each image
    itself contiguous. A pointer listed here may be bound to a batch-strided
    view (a channel slice of a larger buffer: a split's part, a concat's input
    written in place); the validator requires the dim to equal the bound
    tensor's batch stride (``prod(shape[1:])`` when contiguous), and the
    pointer's footprint (an expression using the stride) to fit the tensor's
    span ``(B - 1) * stride + prod(shape[1:])``. A pointer not listed takes
    only contiguous tensors."""
    status_checks: Mapping[str, StatusCheck] = field(default_factory=dict[str, StatusCheck])
    """Output pointer argument -> the check the runtime applies to what the
    kernel wrote there (a run-time error, such as a class index out of range,
    that a kernel cannot raise itself)."""

    def arg(self, name: str) -> KernelArg:
        for arg in self.args:
            if arg.name == name:
                return arg
        raise KeyError(name)

    def args_of_kind(self, kind: ArgKind) -> tuple[KernelArg, ...]:
        return tuple(a for a in self.args if a.kind == kind)

    def constexpr(self, name: str) -> Constexpr:
        for constexpr in self.constexprs:
            if constexpr.name == name:
                return constexpr
        raise KeyError(name)

    def source(self) -> str:
        """The text of the family's Triton source (``kernel.py``)."""
        return (self.package / "kernel.py").read_text(encoding="utf-8")


Implied = Callable[[Mapping[str, tuple[int, ...]]], list[dict[str, int | None]]]
"""Concrete shapes of the tensors bound to the pointer arguments (by argument
name) -> the values the dim arguments must take: a list of alternatives (a
launch must match one), each dim -> its value, or None where any value is safe
(a stride of an axis of extent 1)."""

MAX_BLOCK_ELEMENTS = 2**20
"""Triton's largest block (``TRITON_MAX_TENSOR_NUMEL``)."""
MAX_GRID = (2**31 - 1, 65535, 65535)
"""CUDA's grid limits per axis (x, y, z)."""
MAX_NUM_WARPS = 32
"""1024 threads per block."""


def constexpr_problem(constexpr: Constexpr, value: int | str) -> str | None:
    """Why ``value`` is not a valid value of ``constexpr``, or None. The one check
    that the kernel verifier and the plan loader share."""
    name = constexpr.name
    if constexpr.type == "program":
        from teeny_ir.core import pointwise_program

        if not isinstance(value, str):
            return f"constexpr '{name}' must be a pointwise program, got {value!r}"
        try:
            pointwise_program.parse(value)
        except ValueError as err:
            return f"constexpr '{name}': {err}"
        return None
    if constexpr.type == "pointwise":
        from teeny_ir.core import pointwise

        if constexpr.epilogue:
            names = (pointwise.NO_ACTIVATION, *pointwise.epilogue_names())
            if isinstance(value, str) and value in names:
                return None
            return f"constexpr '{name}' = {value!r} is not one of {', '.join(names)}"
        if not isinstance(value, str):
            return f"constexpr '{name}' must name a pointwise-table entry, got {value!r}"
        try:
            pointwise.parse_spelling(value)
        except ValueError as err:
            return f"constexpr '{name}': {err}"
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        return f"constexpr '{name}' must be an i64 integer, got {value!r}"
    if constexpr.type == "bool" and value not in (0, 1):
        return f"constexpr '{name}' is a bool: expected 0 or 1, got {value}"
    if constexpr.choices and value not in constexpr.choices:
        choices = ", ".join(str(c) for c in constexpr.choices)
        return f"constexpr '{name}' = {value} is not one of {choices}"
    if value < constexpr.minimum:
        return f"constexpr '{name}' = {value} is below its minimum {constexpr.minimum}"
    if constexpr.power_of_two and (value < 1 or value & (value - 1)):
        return f"constexpr '{name}' = {value} must be a power of two"
    return None
