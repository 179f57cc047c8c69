"""The checks of a launch's constexprs, parameter slots and ABI bindings that
come before the contract validator (`teeny_ir.kernels.validator`): that each
value has the right kind, each slot a fitting static type, and each pointer
argument a tensor reference (`teeny_ir.core.symbols.parse_binding`) to an
operand, result or slot of the launch, each of which some argument takes.

They read attributes and counts, not ops: `LaunchOp.check_plan` calls them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.dialects.builtin import IntegerAttr, StringAttr, i64
from xdsl.ir import Attribute
from xdsl.utils.exceptions import VerifyException

from dialects.kernel.attributes import IDENTIFIER, ParamSlotAttr, is_batch_tensor
from teeny_ir.core.symbols import BINDING_FORMS, BindingKind, format_binding, parse_binding
from teeny_ir.kernels.contract import KernelFamily, element_type_of

REFERENCE_KINDS: dict[str, BindingKind] = {"input": "in", "output": "out", "param": "param"}
"""ABI argument kind -> the kind of tensor reference it binds to (the other
kinds bind to expressions)."""


def constexpr_value(attr: Attribute) -> int | str | None:
    """An i64 integer or a string constexpr's value (None for anything else)."""
    if isinstance(attr, IntegerAttr) and attr.type == i64:
        return attr.value.data
    if isinstance(attr, StringAttr):
        return attr.data
    return None


def constexpr_values(family: KernelFamily, values: Mapping[str, Attribute]) -> dict[str, int | str]:
    """The constexpr attributes as values: i64 integers, or strings for the
    family's pointwise and program constexprs (the validator checks the values)."""
    kinds = {c.name: c.type for c in family.constexprs}
    checked: dict[str, int | str] = {}
    for name, attr in values.items():
        value = constexpr_value(attr)
        kind_of = kinds.get(name)
        textual = kind_of in ("pointwise", "program")
        if value is None or (name in kinds and isinstance(value, str) != textual):
            kind = {"pointwise": "a pointwise op name", "program": "a pointwise program"}.get(
                kind_of or "", "an i64 integer"
            )
            raise VerifyException(f"constexpr '{name}' must be {kind}, got {attr}")
        checked[name] = value
    return checked


def check_slots(slots: Sequence[ParamSlotAttr]) -> set[str]:
    """Check each slot's name (an identifier, declared once), its static f32 type
    and that its shape is its derivation's; returns the slot names."""
    names: set[str] = set()
    for slot in slots:
        name = slot.slot_name.data
        if not IDENTIFIER.fullmatch(name):
            raise VerifyException(f"parameter slot name '{name}' is not an identifier")
        if name in names:
            raise VerifyException(f"parameter slot '{name}' is declared twice")
        names.add(name)
        if not is_batch_tensor(slot.slot_type, static=True):
            raise VerifyException(
                f"parameter slot '{name}' must be a static f32 tensor with sizes >= 1, got {slot.slot_type}"
            )
        shape = slot.slot().shape
        if shape != slot.derivation.data.shape:
            raise VerifyException(
                f"parameter slot '{name}' has shape {list(shape)} but its derivation gives "
                f"{list(slot.derivation.data.shape)}"
            )
    return names


def element_types(family: KernelFamily, bindings: Sequence[tuple[str, str]]) -> dict[str, str]:
    """``in<N>``/``out<N>`` -> the element type the ABI argument bound to it takes
    (a pointer of the family's ``*i64`` type takes an i64 tensor, else f32)."""
    types: dict[str, str] = {}
    for arg, (_, text) in zip(family.args, bindings, strict=False):
        if arg.kind in ("input", "output"):
            types.setdefault(text, element_type_of(arg.dtype))
    return types


def check_bindings(
    family: KernelFamily,
    bindings: Sequence[tuple[str, str]],
    inputs: int,
    outputs: int,
    slots: set[str],
) -> None:
    """Check the ABI bindings' names and order, and that the pointer arguments
    bind to references to the launch's ``inputs`` operands, ``outputs`` results
    and ``slots``, each taken by some argument (the validator evaluates the
    expressions)."""
    abi = [a.name for a in family.args]
    if len(bindings) != len(abi):
        raise VerifyException(
            f"family '{family.name}' takes {len(abi)} arguments ({', '.join(abi)}), "
            f"got {len(bindings)} bindings"
        )
    counts = {"in": inputs, "out": outputs}
    used: set[str] = set()
    for index, ((name, text), arg) in enumerate(zip(bindings, family.args, strict=True)):
        if name != arg.name:
            raise VerifyException(
                f"argument binding #{index} names '{name}', expected '{arg.name}' "
                f"(the family's ABI order: {', '.join(abi)})"
            )
        expected = REFERENCE_KINDS.get(arg.kind)
        if expected is None:
            continue
        try:
            kind, where = parse_binding(text)
        except ValueError:
            kind, where = None, ""
        if kind != expected:
            raise VerifyException(
                f"argument '{name}' (kind {arg.kind}) must bind to "
                f"{BINDING_FORMS[expected]}, got '{text}'"
            )
        used.add(text)
        if isinstance(where, str):
            if where not in slots:
                raise VerifyException(
                    f"argument '{name}' binds to unknown parameter slot '{where}'"
                )
        elif where >= counts[expected]:
            count, what = counts[expected], "operand" if expected == "in" else "result"
            raise VerifyException(
                f"argument '{name}' binds to {text}, but the launch has "
                f"{count} {what}{'s' if count != 1 else ''}"
            )
    references = [(format_binding("in", i), f"operand #{i}", "input") for i in range(inputs)]
    references += [(format_binding("out", i), f"result #{i}", "output") for i in range(outputs)]
    references += [(format_binding("param", s), f"parameter slot '{s}'", "") for s in sorted(slots)]
    for reference, what, kind_text in references:
        if reference not in used:
            raise VerifyException(
                f"{what} is not bound to any {kind_text + ' ' if kind_text else ''}argument"
            )
