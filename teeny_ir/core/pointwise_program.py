"""Pointwise programs: a chain (a DAG) of pointwise-table entries computed as one
expression, what `graph.fused_pointwise` carries and the ``fused_elementwise``
kernel family renders.

A program is a sequence of steps; each step applies one entry of the pointwise
table (`teeny_ir.core.pointwise`, spelled as `pointwise.spell` writes it,
options included) to operands that are the program's inputs (``%0``, ``%1``,
...) or the results of earlier steps (``$0``, ``$1``, ...). The last step is the
program's value. Its text is the steps joined by ``"; "``::

    sub %0 %1; add %2 %3; add $0 $1; div $2 %4

which is ``((in0 - in1) + (in2 + in3)) / in4``. A step's result may be read by
several later steps (a value used twice inside one fused chain is computed once).

Operands broadcast as numpy does; every step is evaluated at the program's
output index (each input read through broadcasting strides), which gives the
values the unfused ops give, since a pointwise op commutes with broadcasting.

`parse` accepts only the canonical text (the spelling `Program.text` writes), so
a program has one text: kernel IR, plans and the compile cache see one variant
per program. The Triton source that `Program.triton_slot` writes holds only the
table's own expressions and generated identifiers; no text of the program
reaches it (each entry is looked up and re-spelled). Only the standard library
is imported.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from teeny_ir.core import pointwise

MAX_INPUTS = 6
"""The most inputs a program reads (the ``fused_elementwise`` family's pointers)."""
MAX_STEPS = 32
"""The most steps a program has: a bound on the rendered kernel's size."""

_REF = re.compile(r"([%$])(0|[1-9][0-9]*)")
_STEP = re.compile(r"(?P<spelling>\S(?:.*?\S)?)(?P<refs>(?: [%$](?:0|[1-9][0-9]*))+)")


@dataclass(frozen=True)
class Ref:
    """An operand of a step: input ``index`` (``%index``) or the result of step
    ``index`` (``$index``)."""

    kind: str
    """``%`` (a program input) or ``$`` (an earlier step's result)."""
    index: int

    def text(self) -> str:
        return f"{self.kind}{self.index}"


@dataclass(frozen=True)
class Step:
    """One entry of the pointwise table applied to ``operands``."""

    entry: pointwise.Pointwise
    options: Mapping[str, Any]
    operands: tuple[Ref, ...]

    @property
    def spelling(self) -> str:
        return pointwise.spell(self.entry, self.options)

    def text(self) -> str:
        return " ".join([self.spelling, *(ref.text() for ref in self.operands)])


@dataclass(frozen=True)
class Program:
    """A checked pointwise program (build it with `parse` or `Program.of`)."""

    steps: tuple[Step, ...]
    inputs: int
    """How many inputs it reads: every ``%k`` below it, each at least once."""

    @staticmethod
    def of(steps: Sequence[Step], inputs: int) -> Program:
        """The program of ``steps``, checked as `parse` checks a text."""
        return parse("; ".join(step.text() for step in steps), inputs)

    def text(self) -> str:
        return "; ".join(step.text() for step in self.steps)

    def ops(self) -> list[str]:
        """The graph op of every step, in order (``graph.sub``, ...)."""
        return [step.entry.op for step in self.steps]

    def evaluate(self, np: ModuleType, inputs: Sequence[Any]) -> Any:
        """The program's value on float64 ``inputs`` (numpy broadcasting), each step
        by its entry's semantics (`pointwise.Pointwise.evaluate`)."""
        if len(inputs) != self.inputs:
            raise ValueError(f"the program reads {self.inputs} inputs, got {len(inputs)}")
        results: list[Any] = []
        for step in self.steps:
            operands = [
                inputs[ref.index] if ref.kind == "%" else results[ref.index]
                for ref in step.operands
            ]
            results.append(step.entry.evaluate(np, operands, step.options))
        return results[-1]

    def triton_slot(self, name: str, params: Sequence[str]) -> str:
        """Triton source of the slot function ``name(params...)`` computing the
        program over its first `inputs` parameters: one ``@triton.jit`` helper per
        step (the entry's expression over ``x`` and ``y``), called in order."""
        if len(params) < self.inputs:
            raise ValueError(f"slot '{name}' takes {len(params)} inputs, the program {self.inputs}")
        helpers: list[str] = []
        body: list[str] = []
        for index, step in enumerate(self.steps):
            helper = f"{name}_step{index}"
            args = "x, y" if step.entry.arity == 2 else "x"
            helpers.append(
                f"@triton.jit\ndef {helper}({args}):\n"
                f"    return {step.entry.expression(step.options)}\n"
            )
            operands = ", ".join(
                params[ref.index] if ref.kind == "%" else f"t{ref.index}" for ref in step.operands
            )
            body.append(f"    t{index} = {helper}({operands})\n")
        head = f"@triton.jit\ndef {name}({', '.join(params)}):\n"
        tail = f"    return t{len(self.steps) - 1}\n"
        return "\n\n".join(helpers) + "\n\n" + head + "".join(body) + tail


def parse(text: str, inputs: int | None = None) -> Program:
    """The program ``text`` spells (raises ValueError saying what is wrong).

    Each step names a pointwise-table entry as `pointwise.spell` writes it, then
    its operands; every ``$j`` names an earlier step, every step but the last is
    read by a later one, the inputs ``%0 .. %(n-1)`` are each read (``inputs``,
    when given, is ``n``), and the text is canonical (single spaces, ``"; "``
    between steps)."""
    if not text:
        raise ValueError("the program has no steps")
    parts = text.split("; ")
    if len(parts) > MAX_STEPS:
        raise ValueError(f"the program has {len(parts)} steps, more than {MAX_STEPS}")
    steps: list[Step] = []
    read_steps: set[int] = set()
    read_inputs: set[int] = set()
    for index, part in enumerate(parts):
        match = _STEP.fullmatch(part)
        if match is None:
            raise ValueError(f"step {index} '{part}' is not '<entry> <operand>...'")
        try:
            entry, options = pointwise.parse_spelling(match["spelling"])
        except ValueError as err:
            raise ValueError(f"step {index}: {err}") from None
        refs = tuple(Ref(ref[1], int(ref[2])) for ref in _REF.finditer(match["refs"]))
        if len(refs) != entry.arity:
            raise ValueError(
                f"step {index}: '{entry.name}' takes {entry.arity} operand(s), got {len(refs)}"
            )
        for ref in refs:
            if ref.kind == "$":
                if ref.index >= index:
                    raise ValueError(
                        f"step {index} reads ${ref.index}, which is not an earlier step"
                    )
                read_steps.add(ref.index)
            else:
                if ref.index >= MAX_INPUTS:
                    raise ValueError(
                        f"step {index} reads %{ref.index}: at most {MAX_INPUTS} inputs"
                    )
                read_inputs.add(ref.index)
        step = Step(entry, options, refs)
        if step.text() != part:
            raise ValueError(f"step {index} '{part}' is not canonical: write '{step.text()}'")
        steps.append(step)
    unread = sorted(set(range(len(steps) - 1)) - read_steps)
    if unread:
        raise ValueError(f"the result of step {unread[0]} is never read")
    count = max(read_inputs) + 1 if read_inputs else 0
    if inputs is not None and count != inputs:
        raise ValueError(f"the program reads {count} input(s), expected {inputs}")
    missing = sorted(set(range(count)) - read_inputs)
    if missing:
        raise ValueError(f"input %{missing[0]} is never read")
    if count == 0:
        raise ValueError("the program reads no input")
    return Program(tuple(steps), count)
