"""Facets: what the project knows about one op, one decorator per kind of knowledge.

An op's knowledge lives outside its class, one concern per module, as MLIR keeps
interface implementations outside the op: its reference semantics
(`teeny_ir.reference`), its VJP rule (`teeny_ir.autodiff`), its lowering to a
kernel family (`teeny_ir.kernels`) and, for the importers, the rule that turns
a foreign op into graph ops. Each kind is one `Facet`, and every facet has the
same contract:

- ``@facet.register(*keys)`` (each facet module binds it to a readable name:
  ``semantics``, ``vjp``, ``lowers``) makes the decorated function the rule of
  ``keys``. Keys are op classes for the compiler's own facets, or any hashable
  name (an ONNX op type, an ATen target) for an importer's. ``when=`` makes a
  rule conditional on the op it is asked about (several families may lower one
  op class, each its own forms), and ``since=`` versions it (an ONNX handler
  for opsets from 13 on).
- ``facet.opt_out(reason, *keys)`` declares that ``keys`` have no rule on
  purpose, and why: the user is told the reason.
- ``@facet.pointwise`` registers the one rule that serves every entry of the
  pointwise table (`teeny_ir.core.pointwise`), which owns their math; a table
  op then cannot get a rule of its own in that facet.
- ``facet.lookup(key, subject=op, version=v)`` is the rule, an `OptOut`, or
  None where nothing is registered (a gap the caller reports in its own words).

A facet knows the modules that register into it (``homes``) and imports them the
first time it is asked, so the decorators run without anyone listing the rules
and start-up pays for none of them. Two registrations for one key are a bug
raised at import (`FacetError`), checked for every key before any is
registered, so a failed claim registers nothing.

Standard library only: the dialects may import this module.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

R = TypeVar("R", bound=Callable[..., Any])
F = TypeVar("F", bound=Callable[..., Any])
Key = object
"""A facet key: an op class, or an importer's hashable name."""


@dataclass(frozen=True)
class OptOut:
    """A key that has no rule in a facet on purpose; ``reason`` is what the user is told."""

    reason: str


class FacetError(RuntimeError):
    """A registration that contradicts another (a second rule for one key, a rule
    for an opted-out key): a bug in a facet module, raised when it is imported."""


@dataclass(frozen=True)
class _Entry(Generic[R]):
    rule: R
    when: Callable[[Any], bool] | None
    since: int | None


def key_name(key: Key) -> str:
    """How messages name a key: an op class by its op name (``graph.conv2d``),
    anything else by its text."""
    name = getattr(key, "name", None)
    if isinstance(name, str):
        return name
    return key.__qualname__ if isinstance(key, type) else str(key)


def in_pointwise_table(key: Key) -> bool:
    """Whether ``key`` is an op class that the pointwise table describes."""
    from teeny_ir.core import pointwise

    name = getattr(key, "name", None)
    return isinstance(name, str) and pointwise.lookup(name) is not None


def modules_of(package: str, *, skip: Iterable[str] = ()) -> tuple[str, ...]:
    """The modules of ``package`` (dotted names, in name order) but ``skip``:
    the homes of a facet whose rules live one module per dialect module."""
    path = importlib.import_module(package).__path__
    skipped = set(skip)
    return tuple(
        f"{package}.{info.name}"
        for info in sorted(pkgutil.iter_modules(path), key=lambda info: info.name)
        if info.name not in skipped
    )


class Facet(Generic[R]):
    """One kind of per-op knowledge: rules by key, reasoned opt-outs, and (where
    ``pointwise``) one rule for the whole pointwise table."""

    def __init__(
        self, name: str, *, homes: Callable[[], Iterable[str]], pointwise: bool = False
    ) -> None:
        """``name`` says what a rule is, in messages (``reference semantics``);
        ``homes`` returns the modules whose decorators register the rules;
        ``pointwise`` allows `pointwise` (a facet of graph ops only)."""
        self.name = name
        self._homes = homes
        self._covers_pointwise = pointwise
        self._rules: dict[Key, list[_Entry[R]]] = {}
        self._opt_outs: dict[Key, str] = {}
        self._pointwise_rule: R | None = None
        self._loaded: tuple[str, ...] | None = None
        self._loading = False

    def __repr__(self) -> str:
        return f"Facet({self.name!r})"

    # Registration.

    def register(
        self,
        *keys: Key,
        when: Callable[[Any], bool] | None = None,
        since: int | None = None,
    ) -> Callable[[F], F]:
        """Register the decorated function as the rule of ``keys``; it is returned
        unchanged. With ``when``, the rule covers only the subjects it accepts, and
        the first registered rule that accepts one serves it; with ``since``, it
        serves versions from ``since`` on, until a rule with a higher ``since``."""

        def register(rule: F) -> F:
            for index, key in enumerate(keys):
                self._check_claim(key, keys[:index])
                for entry in self._rules.get(key, ()):
                    if entry.since != since:
                        continue
                    if entry.when is None or when is None:
                        version = "" if since is None else f" from version {since}"
                        raise FacetError(f"'{key_name(key)}' has two {self.name} rules{version}")
            for key in keys:
                self._rules.setdefault(key, []).append(_Entry(cast(R, rule), when, since))
            return rule

        return register

    def opt_out(self, reason: str, *keys: Key) -> None:
        """Declare that ``keys`` have no rule in this facet, and why."""
        if not reason.strip():
            raise FacetError(f"an opt-out of the {self.name} facet needs a reason")
        for index, key in enumerate(keys):
            self._check_claim(key, keys[:index])
            if key in self._rules:
                raise FacetError(f"'{key_name(key)}' has a {self.name} rule and an opt-out")
        self._opt_outs.update(dict.fromkeys(keys, reason))

    def pointwise(self, rule: F) -> F:
        """Register the decorated function as the rule of every pointwise-table
        op: one rule that reads the op's entry, so the math is written only there."""
        if not self._covers_pointwise:
            raise FacetError(f"the {self.name} facet does not cover the pointwise table")
        if self._pointwise_rule is not None:
            raise FacetError(f"two {self.name} rules claim the pointwise table")
        self._pointwise_rule = cast(R, rule)
        return rule

    def _check_claim(self, key: Key, earlier: tuple[Key, ...]) -> None:
        if key in earlier:
            raise FacetError(f"'{key_name(key)}' is named twice in one {self.name} registration")
        if key in self._opt_outs:
            raise FacetError(f"'{key_name(key)}' already has a {self.name} opt-out")
        if self._covers_pointwise and in_pointwise_table(key):
            raise FacetError(
                f"'{key_name(key)}' is in the pointwise table, which owns its {self.name}"
            )

    # Lookup.

    def load(self) -> tuple[str, ...]:
        """Import the facet's home modules once, in order (their decorators
        register the rules); returns their names."""
        if self._loaded is None and not self._loading:
            self._loading = True
            try:
                names = tuple(self._homes())
                for name in names:
                    importlib.import_module(name)
                self._loaded = names
            finally:
                self._loading = False
        return self._loaded or ()

    def lookup(
        self, key: Key, *, subject: object = None, version: int | None = None
    ) -> R | OptOut | None:
        """The rule for ``key``; its `OptOut`; or None when nothing serves it.

        ``subject`` is the op the rule is for, which conditional rules (``when``)
        need; ``version`` picks among versioned rules (``since``) the one with the
        highest ``since`` not above it. None also answers a subject that no
        conditional rule accepts, or a version below every rule's."""
        self.load()
        entries = self._rules.get(key)
        if entries:
            if version is not None:
                entries = [e for e in entries if e.since is None or e.since <= version]
            if entries:
                newest = max(e.since or 0 for e in entries)
                entries = [e for e in entries if (e.since or 0) == newest]
            for entry in entries:
                if entry.when is None:
                    return entry.rule
                if subject is None:
                    raise TypeError(
                        f"the {self.name} rules of '{key_name(key)}' are conditional: "
                        "lookup needs the subject"
                    )
                if entry.when(subject):
                    return entry.rule
            return None
        if key in self._opt_outs:
            return OptOut(self._opt_outs[key])
        if self._pointwise_rule is not None and in_pointwise_table(key):
            return self._pointwise_rule
        return None

    def covers(self, key: Key) -> bool:
        """Whether ``key`` has a rule (of any condition or version), an opt-out, or
        the pointwise rule: what the conventions test asks of every graph op."""
        self.load()
        return bool(
            self._rules.get(key)
            or key in self._opt_outs
            or (self._pointwise_rule is not None and in_pointwise_table(key))
        )

    def since(self, key: Key, version: int) -> int | None:
        """The ``since`` of the versioned rules that `lookup` picks for ``version``
        (the highest not above it); None when no versioned rule of ``key`` is that old."""
        self.load()
        found = [e.since for e in self._rules.get(key, ()) if e.since is not None]
        older = [since for since in found if since <= version]
        return max(older) if older else None

    def candidates(self, key: Key) -> list[R]:
        """Every rule registered for ``key`` (conditional and versioned ones
        included), in registration order: what a caller names when none applies."""
        self.load()
        return [entry.rule for entry in self._rules.get(key, ())]

    def rules(self) -> dict[Key, list[R]]:
        """Every key with rules of its own, and its rules (not the pointwise rule)."""
        self.load()
        return {key: [e.rule for e in entries] for key, entries in self._rules.items()}

    def opt_outs(self) -> dict[Key, str]:
        """Every opted-out key, and its reason."""
        self.load()
        return dict(self._opt_outs)

    def pointwise_rule(self) -> R | None:
        """The rule that serves the pointwise table, if one is registered."""
        self.load()
        return self._pointwise_rule
