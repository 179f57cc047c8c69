"""The kernel family registry: one table that the kernel dialect's verifier,
the Triton emitter, the AOT compiler and the runtime all read.

A family is a Triton kernel template plus its runtime contract (the seed's
``RuntimeOp``): the ordered non-constexpr arguments with their kind and Triton
dtype, the constexprs, and the grid's tile model, which says how many programs
each grid axis needs so the verifier can prove coverage. Templates are text
(``teeny_ir/templates/<family>.py`` holds ``SOURCE``); nothing here imports
triton.

Argument kinds: ``input`` (an activation operand), ``param`` (a parameter
slot, bound from weights through a derivation), ``output`` (a result buffer),
``dim`` and ``scalar`` (integers/floats computed from shape expressions).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Literal

ArgKind = Literal["input", "param", "output", "dim", "scalar"]
POINTER_KINDS = ("input", "param", "output")


@dataclass(frozen=True)
class KernelArg:
    """One non-constexpr argument of the kernel, in ABI order."""

    name: str
    kind: ArgKind
    dtype: str  # Triton signature type: "*fp32", "i32", "fp32"


@dataclass(frozen=True)
class Constexpr:
    """A compile-time parameter; ``choices`` restricts its values when given,
    ``minimum`` bounds it below (``tl.dot`` needs tiles of at least 16x16x8)."""

    name: str
    type: Literal["int", "bool"]
    choices: tuple[int, ...] = ()
    power_of_two: bool = False
    minimum: int = 0


@dataclass(frozen=True)
class GridAxis:
    """The programs one grid axis must launch: the product over ``covers`` of
    ``cdiv(extent, tile)``, where extents are expressions over the family's
    ``dim`` arguments and tiles over its constexprs."""

    covers: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class KernelFamily:
    """A kernel template and its runtime contract."""

    name: str
    summary: str
    args: tuple[KernelArg, ...]
    constexprs: tuple[Constexpr, ...]
    grid: tuple[GridAxis, ...]

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

    def template(self) -> str:
        """The Triton source template (``string.Template`` with ``$kernel_name``)."""
        module = importlib.import_module(f"teeny_ir.templates.{self.name}")
        source: str = module.SOURCE
        return source


ELEMENTWISE_OPS = {"silu": 0, "relu": 1, "sigmoid": 2, "add": 3, "mul": 4}
"""Op -> the elementwise family's ``OP`` constexpr; add and mul are binary."""
BINARY_OPS = ("add", "mul")

ACTIVATIONS = {"none": 0, "silu": 1, "relu": 2, "sigmoid": 3}
"""Epilogue activation -> the GEMM family's ``ACTIVATION`` constexpr."""

_I32 = "i32"
_PTR = "*fp32"

ELEMENTWISE = KernelFamily(
    name="elementwise",
    summary=(
        "out = op(x) or op(x, y) over a rank-4 (left-padded) output, with numpy "
        "broadcasting through per-operand strides (0 on broadcast dims)"
    ),
    args=(
        KernelArg("x", "input", _PTR),
        KernelArg("y", "input", _PTR),
        KernelArg("out", "output", _PTR),
        KernelArg("numel", "dim", _I32),
        KernelArg("size1", "dim", _I32),
        KernelArg("size2", "dim", _I32),
        KernelArg("size3", "dim", _I32),
        KernelArg("x_stride0", "dim", _I32),
        KernelArg("x_stride1", "dim", _I32),
        KernelArg("x_stride2", "dim", _I32),
        KernelArg("x_stride3", "dim", _I32),
        KernelArg("y_stride0", "dim", _I32),
        KernelArg("y_stride1", "dim", _I32),
        KernelArg("y_stride2", "dim", _I32),
        KernelArg("y_stride3", "dim", _I32),
    ),
    constexprs=(
        Constexpr("OP", "int", tuple(ELEMENTWISE_OPS.values())),
        Constexpr("BLOCK", "int", power_of_two=True, minimum=1),
    ),
    grid=(GridAxis((("numel", "BLOCK"),)),),
)

CONV1X1_GEMM = KernelFamily(
    name="conv1x1_gemm",
    summary=(
        "per batch Y_b[C_OUT, M] = W[C_OUT, C_IN] @ X_b[C_IN, M] with tl.dot, batch "
        "folded into the grid, GROUP_M swizzle, epilogue act(scale * acc + shift)"
    ),
    args=(
        KernelArg("x", "input", _PTR),
        KernelArg("w", "param", _PTR),
        KernelArg("scale", "param", _PTR),
        KernelArg("shift", "param", _PTR),
        KernelArg("y", "output", _PTR),
        KernelArg("B", "dim", _I32),
        KernelArg("C_IN", "dim", _I32),
        KernelArg("C_OUT", "dim", _I32),
        KernelArg("M", "dim", _I32),
        KernelArg("y_row_stride", "dim", _I32),
    ),
    constexprs=(
        Constexpr("BLOCK_M", "int", power_of_two=True, minimum=16),
        Constexpr("BLOCK_N", "int", power_of_two=True, minimum=16),
        Constexpr("BLOCK_K", "int", power_of_two=True, minimum=8),
        Constexpr("GROUP_M", "int", minimum=1),
        Constexpr("ACTIVATION", "int", tuple(ACTIVATIONS.values())),
    ),
    grid=(GridAxis((("B", "1"), ("M", "BLOCK_M"), ("C_OUT", "BLOCK_N"))),),
)

FAMILIES: dict[str, KernelFamily] = {f.name: f for f in (ELEMENTWISE, CONV1X1_GEMM)}


def lookup(name: str) -> KernelFamily | None:
    return FAMILIES.get(name)


MAX_GRID = (2**31 - 1, 65535, 65535)
"""CUDA's grid limits per axis (x, y, z)."""
MAX_NUM_WARPS = 32
"""1024 threads per block."""
