"""The names kernel IR, the launch plan, the emitter and the runtime must spell
alike: the batch symbol, shapes over it, and the grammar of tensor bindings.

- ``B`` (`BATCH`) is the batch size, the one symbol a plan expression or a
  launch's argument and grid expressions may use; a tensor type's ``?``
  dimension (size `DYNAMIC`, xDSL's ``DYNAMIC_INDEX``) is that dimension.
- A launch's pointer arguments bind to tensor references::

      in<N>          operand N of the launch (N in ASCII decimal, no leading zero)
      out<N>         result N
      param.<slot>   the parameter slot named <slot> ([A-Za-z_][A-Za-z0-9_]*)

  `parse_binding` is the one parser of that grammar: the kernel verifier, its
  printer and the emitter all call it.

Standard library only (the dialects import it); shapes are sequences of ints.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Literal

BATCH = "B"
"""The batch size: the only symbol of plan and launch expressions (``"B * 64"``)."""

DYNAMIC = -(2**63)
"""The size of a ``?`` dimension: xDSL's ``DYNAMIC_INDEX`` (MLIR's
``ShapedType::kDynamic``, the least i64), written out so that this module imports
no xDSL; tests/test_kernel_dialect.py pins the two equal."""


def dim_expr(size: int) -> str:
    """One dimension as an expression: `BATCH` for ``?``, else the size."""
    return BATCH if size == DYNAMIC else str(size)


def batch_times(static: int) -> str:
    """``static`` images of the batch as an expression: ``"B"`` or ``"B * 64"``."""
    return BATCH if static == 1 else f"{BATCH} * {static}"


def count_expr(sizes: Sequence[int]) -> str:
    """The element count of ``sizes`` as an expression: ``"B * 2331"`` or ``"42"``."""
    static = math.prod(d for d in sizes if d != DYNAMIC)
    return batch_times(static) if DYNAMIC in sizes else str(static)


def symbolic_shape(shape: Sequence[int]) -> list[int | str]:
    """A shape as the plan writes it: ``?`` becomes `BATCH`, ``[?, 16, 4] -> ["B", 16, 4]``."""
    return [BATCH if d == DYNAMIC else d for d in shape]


def is_batch_shape(shape: Sequence[int], *, static: bool) -> bool:
    """Whether every size is >= 1, except a ``?`` batch at dimension 0 (none if ``static``)."""
    return all(d >= 1 or (d == DYNAMIC and i == 0 and not static) for i, d in enumerate(shape))


# The binding grammar.

BindingKind = Literal["in", "out", "param"]

_BINDING = re.compile(r"(in|out)(0|[1-9][0-9]*)|param\.([A-Za-z_][A-Za-z0-9_]*)")
"""``in<N>``, ``out<N>``, ``param.<slot>``: character classes, not ``\\d``/``\\w``,
which would take non-ASCII digits and letters."""

BINDING_FORMS: dict[BindingKind, str] = {"in": "in<N>", "out": "out<N>", "param": "param.<slot>"}
"""How messages name each form of reference."""


def parse_binding(text: str) -> tuple[BindingKind, int | str]:
    """``in<N>`` / ``out<N>`` -> (``"in"`` / ``"out"``, N); ``param.<slot>`` ->
    (``"param"``, slot). Raises ValueError for any other text (``in01``, ``in٣``)."""
    match = _BINDING.fullmatch(text)
    if match is None:
        raise ValueError(f"'{text}' is not a tensor reference (in<N>, out<N> or param.<slot>)")
    prefix, index, slot = match.groups()
    if slot is not None:
        return "param", slot
    try:
        return ("in" if prefix == "in" else "out"), int(index)
    except ValueError:  # past Python's limit on the digits of an int
        raise ValueError(f"'{text[:40]}...' has an index of {len(index)} digits") from None


def is_binding(text: str) -> bool:
    """Whether ``text`` is of the reference grammar (without raising: printers ask
    this of every expression; only an index past Python's limit on the digits of
    an int is of the grammar yet refused by `parse_binding`)."""
    return _BINDING.fullmatch(text) is not None


def format_binding(kind: BindingKind, where: int | str) -> str:
    """The reference `parse_binding` reads back: ``in0``, ``out1``, ``param.w``."""
    return f"param.{where}" if kind == "param" else f"{kind}{where}"
