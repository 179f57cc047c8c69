"""Every entry of the pointwise table with sample option values, for the tests
that must follow the table (`teeny_ir.core.pointwise.TABLE`).

An entry added to the table is among `variants` at once; an entry with an
option that `OPTION_VALUES` knows no values for makes `variants` raise, naming
the option, so it cannot escape the tests that enumerate the table. Only the
standard library and the table are imported.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from teeny_ir.core import pointwise

__all__ = ["ABSENT", "OPTION_VALUES", "Variant", "variants"]

OPTION_VALUES: dict[str, tuple[str | float, ...]] = {
    "approximate": ("none", "tanh"),
    "negative_slope": (0.01, 0.2),
    "min_val": (-1.0, 0.0),
    "max_val": (1.0, 6.0),
    "alpha": (1.0, 0.5),
}
"""Values worth covering, by option name (an entry's ``options`` names its
op's properties): the op's default first."""
ABSENT = "none"
"""The value an option takes when the op's text leaves it out (GELU's exact form)."""


@dataclass(frozen=True)
class Variant:
    """One table entry with one value for each of its options."""

    entry: pointwise.Pointwise
    values: tuple[tuple[str, Any], ...] = ()
    """(option, value) for each of ``entry.options``, in order."""

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.values)

    @property
    def spelling(self) -> str:
        """How kernel IR names the variant (`teeny_ir.core.pointwise.spell`)."""
        return pointwise.spell(self.entry, self.options)

    def option_text(self, *, every: bool = False) -> str:
        """The options as a graph op's text writes them (``approximate tanh``,
        ``negative_slope 0.2``): the forward op leaves an option at `ABSENT` out;
        with ``every``, each is written (``graph.activation_grad`` carries all)."""
        words = [
            f"{name} {value!r}" if isinstance(value, float) else f"{name} {value}"
            for name, value in self.values
            if every or value != ABSENT
        ]
        return " ".join(words)


def variants(arity: int | None = None) -> list[Variant]:
    """Every entry of the table (of ``arity`` operands, when given), an entry
    with options once per combination of their `OPTION_VALUES`."""
    found = []
    for entry in pointwise.TABLE:
        if arity is not None and entry.arity != arity:
            continue
        missing = [name for name in entry.options if name not in OPTION_VALUES]
        if missing:
            raise ValueError(
                f"pointwise entry '{entry.name}' has option(s) {', '.join(missing)} with no "
                "sample values: add them to teeny_ir.testing.variants.OPTION_VALUES"
            )
        choices = [[(name, value) for value in OPTION_VALUES[name]] for name in entry.options]
        found += [Variant(entry, tuple(values)) for values in itertools.product(*choices)]
    return found
