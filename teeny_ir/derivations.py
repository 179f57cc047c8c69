"""Derivations: how a kernel parameter is computed from the original weights.

One owner for every parameter transformation (ARCHITECTURE.md "Derivations"):
the graph dialect's fused ops and the kernel dialect's parameter slots carry a
`Derivation` (spelled ``#derive<...>`` in IR), the launch plan stores it as
JSON, and the reference interpreter, the runtime's weight binding and every
test call `evaluate` - nothing else reimplements the BN fold.

Kinds (sources are weight names, i.e. PyTorch state-dict keys):
- ``identity(w)``: ``w``.
- ``reshape(w)``: ``w`` reshaped to ``shape`` (e.g. a 1x1 weight ``[O, I, 1, 1]``
  to the GEMM's ``[O, I]``).
- ``fill(value)``: a constant tensor of ``shape`` (a conv without BN gets scale 1).
- ``bn_scale(gamma, var)``: ``gamma / sqrt(var + eps)``.
- ``bn_shift(gamma, beta, mean, var[, bias])``: ``beta - scale * mean``, plus
  ``scale * bias`` when the conv had a bias (the bias folded into the shift).

This module imports only the standard library; numpy is imported inside
`evaluate`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import numpy as np

Kind = Literal["identity", "reshape", "fill", "bn_scale", "bn_shift"]
KINDS: tuple[Kind, ...] = ("identity", "reshape", "fill", "bn_scale", "bn_shift")

_SOURCE_COUNTS: dict[str, tuple[int, ...]] = {
    "identity": (1,),
    "reshape": (1,),
    "fill": (0,),
    "bn_scale": (2,),
    "bn_shift": (4, 5),
}
_SOURCE_ROLES: dict[str, tuple[str, ...]] = {
    "identity": ("weight",),
    "reshape": ("weight",),
    "fill": (),
    "bn_scale": ("gamma", "var"),
    "bn_shift": ("gamma", "beta", "mean", "var", "bias"),
}


class DerivationError(ValueError):
    """A derivation that is malformed or does not fit the weights it names."""


@dataclass(frozen=True)
class Derivation:
    """A recipe for one parameter: ``kind(sources...)`` giving a tensor of ``shape``."""

    kind: Kind
    sources: tuple[str, ...]
    shape: tuple[int, ...]
    eps: float = 0.0
    value: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in _SOURCE_COUNTS:
            raise DerivationError(
                f"unknown derivation kind '{self.kind}' (valid: {', '.join(KINDS)})"
            )
        if len(self.sources) not in _SOURCE_COUNTS[self.kind]:
            counts = " or ".join(str(n) for n in _SOURCE_COUNTS[self.kind])
            raise DerivationError(
                f"derivation '{self.kind}' takes {counts} source weights, got {len(self.sources)}"
            )
        if any(not name for name in self.sources):
            raise DerivationError("derivation source weight names must be non-empty")
        if any(d < 1 for d in self.shape):
            raise DerivationError(f"derivation shape {list(self.shape)} has a size below 1")
        if self.kind in ("bn_scale", "bn_shift") and not (math.isfinite(self.eps) and self.eps > 0):
            raise DerivationError(f"batch-norm derivations need eps > 0, got {self.eps}")
        if not math.isfinite(self.value):
            raise DerivationError(f"fill value must be finite, got {self.value}")
        if self.eps and self.kind not in ("bn_scale", "bn_shift"):
            raise DerivationError(f"derivation '{self.kind}' takes no eps")
        if self.value and self.kind != "fill":
            raise DerivationError(f"derivation '{self.kind}' takes no fill value")

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def roles(self) -> dict[str, str]:
        """Source role -> weight name, e.g. ``{"gamma": "model.0.bn.weight", ...}``."""
        return dict(zip(_SOURCE_ROLES[self.kind], self.sources, strict=False))

    def check_sources(self, shapes: Mapping[str, Sequence[int]]) -> list[str]:
        """Problems with the source weights' shapes (empty when they fit)."""
        problems: list[str] = []
        for name in self.sources:
            if name not in shapes:
                problems.append(f"weight '{name}' is missing")
        if problems:
            return problems
        if self.kind in ("identity", "reshape"):
            (source,) = self.sources
            size = math.prod(shapes[source])
            if size != self.numel or (
                self.kind == "identity" and tuple(shapes[source]) != self.shape
            ):
                problems.append(
                    f"weight '{source}' has shape {list(shapes[source])}, "
                    f"expected {self.numel} elements as {list(self.shape)}"
                )
        elif self.kind in ("bn_scale", "bn_shift"):
            for source in self.sources:
                if tuple(shapes[source]) != self.shape:
                    problems.append(
                        f"weight '{source}' has shape {list(shapes[source])}, expected {list(self.shape)}"
                    )
        return problems

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": self.kind,
            "sources": list(self.sources),
            "shape": list(self.shape),
        }
        if self.kind in ("bn_scale", "bn_shift"):
            data["eps"] = self.eps
        if self.kind == "fill":
            data["value"] = self.value
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Derivation:
        """Inverse of `to_json` (the plan's schema has checked the types)."""
        return cls(
            kind=data["kind"],
            sources=tuple(data["sources"]),
            shape=tuple(int(d) for d in data["shape"]),
            eps=float(data.get("eps", 0.0)),
            value=float(data.get("value", 0.0)),
        )


def identity(name: str, shape: Sequence[int]) -> Derivation:
    return Derivation("identity", (name,), tuple(shape))


def reshape(name: str, shape: Sequence[int]) -> Derivation:
    return Derivation("reshape", (name,), tuple(shape))


def fill(value: float, shape: Sequence[int]) -> Derivation:
    return Derivation("fill", (), tuple(shape), value=float(value))


def bn_scale(gamma: str, var: str, eps: float, channels: int) -> Derivation:
    return Derivation("bn_scale", (gamma, var), (channels,), eps=eps)


def bn_shift(
    gamma: str, beta: str, mean: str, var: str, eps: float, channels: int, bias: str | None = None
) -> Derivation:
    sources = (gamma, beta, mean, var) if bias is None else (gamma, beta, mean, var, bias)
    return Derivation("bn_shift", sources, (channels,), eps=eps)


def evaluate(derivation: Derivation, weights: Mapping[str, Any]) -> np.ndarray:
    """Compute a parameter from the weights (float32, C-contiguous, of ``shape``).

    Arithmetic is done in float64 and rounded once, so the reference and the
    runtime bind bit-identical parameters.
    """
    import numpy as np

    problems = derivation.check_sources(
        {n: np.shape(weights[n]) for n in derivation.sources if n in weights}
    )
    if problems:
        raise DerivationError("; ".join(problems))
    get = {
        role: np.asarray(weights[name], dtype=np.float64)
        for role, name in derivation.roles().items()
    }
    if derivation.kind in ("identity", "reshape"):
        result = get["weight"].reshape(derivation.shape)
    elif derivation.kind == "fill":
        result = np.full(derivation.shape, derivation.value, dtype=np.float64)
    else:
        scale = get["gamma"] / np.sqrt(get["var"] + derivation.eps)
        if derivation.kind == "bn_scale":
            result = scale
        else:
            shift = get["beta"] - scale * get["mean"]
            result = shift + scale * get["bias"] if "bias" in get else shift
    return np.ascontiguousarray(result, dtype=np.float32)
