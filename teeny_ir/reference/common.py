"""What the semantics modules share: the array and weight types, per-channel
broadcasting and located errors."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from xdsl.ir import Operation

from teeny_ir.core.diagnostics import DiagnosticError, loc_of

Array = np.ndarray[Any, np.dtype[Any]]
Weights = Mapping[str, Any]
"""State-dict name -> array, as `teeny_ir.reference.run` receives them."""
Semantics = Callable[[Any, list[Array], Weights], list[Array]]
"""``(op, operand arrays, weights) -> result arrays``, computed in float64; `run`
rounds each result to its declared dtype once."""


def channel(vector: Array, rank: int) -> Array:
    """A per-channel vector [C] shaped to broadcast along dimension 1 of a
    rank-``rank`` tensor, since graph tensors are channel-major (NCHW)."""
    return np.asarray(vector, dtype=np.float64).reshape((-1,) + (1,) * (rank - 2))


def error(message: str, where: Operation | None = None) -> DiagnosticError:
    """A one-diagnostic error located at ``where``, so a bad run points at the op
    (or function) that could not execute."""
    return DiagnosticError.single(message, loc_of(where))
