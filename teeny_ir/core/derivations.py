"""Derivations: how a kernel parameter is computed from the original weights.

One owner for every parameter transformation (docs/architecture.md):
the graph dialect's fused ops and the kernel dialect's parameter slots carry a
`Derivation` (spelled ``#derive<...>`` in IR), the launch plan stores it as
JSON, and the reference interpreter, the runtime's weight binding and every
test call `evaluate` - nothing else reimplements the BN fold.

The kinds are the entries of `REGISTRY`, each with its source roles, how the
sources must fit, its numeric attributes, its summary and its numpy rule
(sources are weight names, i.e. PyTorch state-dict keys).

This module imports only the standard library; numpy is imported inside
`evaluate`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import numpy as np


class DerivationError(ValueError):
    """A derivation that is malformed or does not fit the weights it names."""


Compute = Callable[[ModuleType, Mapping[str, Any], "Derivation"], Any]
"""``(np, role -> float64 array, derivation) -> float64 array`` of the derivation's shape."""


@dataclass(frozen=True)
class DerivationKind:
    """One kind of derivation: what it takes, how its sources must fit, how it computes.

    ``roles`` name the source weights in order; the last ``optional`` of them may
    be absent. ``fit`` says how each source's shape relates to the derivation's
    ``shape``: ``shape`` (the same shape), ``numel`` (the same element count, a
    reshape), ``vector`` (the same per-channel vector) or ``none`` (no sources). ``attributes`` are the numeric fields it
    takes (``eps``, ``value``); `dialects.derive` prints ``value`` in the
    parentheses and ``eps`` as a keyword."""

    name: str
    summary: str
    roles: tuple[str, ...]
    fit: Literal["shape", "numel", "vector", "none"]
    compute: Compute
    optional: int = 0
    attributes: tuple[Literal["eps", "value", "values"], ...] = ()
    finite: bool = True
    """Whether a non-finite result is an error (it names the weights to blame);
    a literal's NaN and inf are the program's own."""

    @property
    def source_counts(self) -> tuple[int, ...]:
        return tuple(range(len(self.roles) - self.optional, len(self.roles) + 1))


def _bn_scale(np: ModuleType, get: Mapping[str, Any], d: Derivation) -> Any:
    return get["gamma"] / np.sqrt(get["var"] + d.eps)


def _bn_shift(np: ModuleType, get: Mapping[str, Any], d: Derivation) -> Any:
    scale = _bn_scale(np, get, d)
    shift = get["beta"] - scale * get["mean"]
    return shift + scale * get["bias"] if "bias" in get else shift


REGISTRY: dict[str, DerivationKind] = {
    kind.name: kind
    for kind in (
        DerivationKind(
            "identity",
            "the weight as it is",
            ("weight",),
            "shape",
            lambda np, get, d: get["weight"],
        ),
        DerivationKind(
            "reshape",
            "the weight reshaped (a 1x1 conv weight [O, I, 1, 1] to the GEMM's [O, I])",
            ("weight",),
            "numel",
            lambda np, get, d: get["weight"].reshape(d.shape),
        ),
        DerivationKind(
            "fill",
            "a constant tensor (a conv without batch norm gets scale 1)",
            (),
            "none",
            lambda np, get, d: np.full(d.shape, d.value, dtype=np.float64),
            attributes=("value",),
        ),
        DerivationKind(
            "literal",
            "a tensor written in the IR (a graph.constant), element by element",
            (),
            "none",
            lambda np, get, d: np.array(d.values, dtype=np.float64).reshape(d.shape),
            attributes=("values",),
            finite=False,
        ),
        DerivationKind(
            "bn_scale",
            "gamma / sqrt(var + eps)",
            ("gamma", "var"),
            "vector",
            _bn_scale,
            attributes=("eps",),
        ),
        DerivationKind(
            "bn_shift",
            "beta - scale * mean, plus scale * bias when the conv had one (folded in)",
            ("gamma", "beta", "mean", "var", "bias"),
            "vector",
            _bn_shift,
            optional=1,
            attributes=("eps",),
        ),
    )
}
"""Every derivation kind, by name: adding one is one entry here."""
KINDS: tuple[str, ...] = tuple(REGISTRY)


@dataclass(frozen=True)
class Derivation:
    """A recipe for one parameter: ``kind(sources...)`` giving a tensor of ``shape``."""

    kind: str
    sources: tuple[str, ...]
    shape: tuple[int, ...]
    eps: float = 0.0
    value: float = 0.0
    values: tuple[float, ...] = ()
    """The elements of a ``literal``, row-major (f32 values; NaN and inf allowed)."""

    def __post_init__(self) -> None:
        spec = REGISTRY.get(self.kind)
        if spec is None:
            raise DerivationError(
                f"unknown derivation kind '{self.kind}' (valid: {', '.join(KINDS)})"
            )
        if len(self.sources) not in spec.source_counts:
            counts = " or ".join(str(n) for n in spec.source_counts)
            raise DerivationError(
                f"derivation '{self.kind}' takes {counts} source weights, got {len(self.sources)}"
            )
        if any(not name for name in self.sources):
            raise DerivationError("derivation source weight names must be non-empty")
        if any(d < 1 for d in self.shape):
            raise DerivationError(f"derivation shape {list(self.shape)} has a size below 1")
        if "eps" in spec.attributes and not (math.isfinite(self.eps) and self.eps > 0):
            raise DerivationError(f"batch-norm derivations need eps > 0, got {self.eps}")
        if not math.isfinite(self.value):
            raise DerivationError(f"fill value must be finite, got {self.value}")
        if self.eps and "eps" not in spec.attributes:
            raise DerivationError(f"derivation '{self.kind}' takes no eps")
        if self.value and "value" not in spec.attributes:
            raise DerivationError(f"derivation '{self.kind}' takes no fill value")
        if "values" in spec.attributes and len(self.values) != self.numel:
            raise DerivationError(
                f"literal of shape {list(self.shape)} needs {self.numel} values, "
                f"got {len(self.values)}"
            )
        if self.values and "values" not in spec.attributes:
            raise DerivationError(f"derivation '{self.kind}' takes no literal values")

    @property
    def spec(self) -> DerivationKind:
        """The kind's registry entry."""
        return REGISTRY[self.kind]

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def roles(self) -> dict[str, str]:
        """Source role -> weight name, e.g. ``{"gamma": "model.0.bn.weight", ...}``."""
        return dict(zip(self.spec.roles, self.sources, strict=False))

    def check_sources(self, shapes: Mapping[str, Sequence[int]]) -> list[str]:
        """Problems with the source weights' shapes (empty when they fit)."""
        problems: list[str] = []
        for name in self.sources:
            if name not in shapes:
                problems.append(f"weight '{name}' is missing")
        if problems:
            return problems
        for source in self.sources:
            got = tuple(shapes[source])
            reshaped = self.spec.fit == "numel" and math.prod(got) != self.numel
            if reshaped or (self.spec.fit == "shape" and got != self.shape):
                problems.append(
                    f"weight '{source}' has shape {list(got)}, "
                    f"expected {self.numel} elements as {list(self.shape)}"
                )
            elif self.spec.fit == "vector" and got != self.shape:
                problems.append(
                    f"weight '{source}' has shape {list(got)}, expected {list(self.shape)}"
                )
        return problems

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": self.kind,
            "sources": list(self.sources),
            "shape": list(self.shape),
        }
        for attribute in self.spec.attributes:
            if attribute == "values":  # f32 bit patterns: exact, and NaN/inf survive JSON
                data["bits"] = [f32_bits(v) for v in self.values]
            else:
                data[attribute] = getattr(self, attribute)
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
            values=tuple(f32_from_bits(int(b)) for b in data.get("bits", ())),
        )


def f32_bits(value: float) -> int:
    """The IEEE-754 binary32 bit pattern of ``value`` (rounded to f32)."""
    import struct

    return int(struct.unpack("<I", struct.pack("<f", value))[0])


def f32_from_bits(bits: int) -> float:
    import struct

    return float(struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0])


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
    runtime bind bit-identical parameters. Raises `DerivationError` when a
    source is missing, mis-shaped or not real numbers, and when the result is
    not finite (a negative running variance under the BN fold's square root, a
    NaN weight, an overflow to float32): the message names the derivation and
    its weights, and numpy emits no warning on the way.
    """
    import numpy as np

    problems = derivation.check_sources(
        {n: np.shape(weights[n]) for n in derivation.sources if n in weights}
    )
    if problems:
        raise DerivationError("; ".join(problems))
    get: dict[str, Any] = {}
    for role, name in derivation.roles().items():
        source = np.asarray(weights[name])
        if source.dtype.kind not in "biuf":
            raise DerivationError(
                f"weight '{name}' has dtype {source.dtype}, not real numbers "
                f"(read by {_spelling(derivation)})"
            )
        get[role] = source.astype(np.float64)
    with np.errstate(all="ignore"):  # a non-finite result is reported below, by name
        result = derivation.spec.compute(np, get, derivation)
        bound = np.ascontiguousarray(np.broadcast_to(result, derivation.shape), dtype=np.float32)
    finite = np.isfinite(bound)
    if derivation.spec.finite and not finite.all():
        raise DerivationError(_non_finite(np, derivation, get, finite))
    return bound


def _spelling(derivation: Derivation) -> str:
    """``bn_scale('bn.weight', 'bn.running_var')``, for messages."""
    return f"{derivation.kind}({', '.join(repr(s) for s in derivation.sources)})"


def _non_finite(np: ModuleType, derivation: Derivation, get: Mapping[str, Any], finite: Any) -> str:
    """Which entries of a derivation are not finite, and the weights to blame."""
    bad = np.flatnonzero(~finite)
    first = int(bad[0])
    index = [int(i) for i in np.unravel_index(first, derivation.shape)]
    roles = derivation.roles()
    values = {
        role: float(get[role].reshape(-1)[first])
        for role in roles
        if get[role].size == derivation.numel
    }
    message = (
        f"derivation {_spelling(derivation)} is not finite at {bad.size} of "
        f"{derivation.numel} entries (first at index {index})"
    )
    blamed = [roles[r] for r, v in values.items() if not math.isfinite(v)]
    if blamed:
        return f"{message}: weight {', '.join(repr(n) for n in blamed)} is not finite there"
    if "var" in values and values["var"] + derivation.eps <= 0:
        return (
            f"{message}: the running variance {roles['var']!r} is {values['var']:g} there, "
            f"and variance + eps ({derivation.eps:g}) must be positive"
        )
    at = ", ".join(f"{roles[role]!r} = {value:g}" for role, value in values.items())
    return f"{message}: the weights there ({at}) overflow float32" if at else message
