"""A JSON Schema compiled once into closures: the fast check of a plan's JSON
(`fits_schema`), which the emitter runs on its draft and `load_plan` on every
plan it reads, with jsonschema asked only where the check does not pass (it
reads the error's location and message).

jsonschema interprets the schema afresh for every entry (about 0.15 s for
YOLOv8n's plan). Only the standard library is imported here.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

Check = Callable[[Any], bool]
"""Whether an instance passes one compiled (sub)schema."""


def fits_schema(instance: Any) -> bool:
    """Whether ``instance`` (a plan's JSON) passes `SCHEMA`, by `compile_schema`'s
    check: True only where jsonschema's Draft 2020-12 validator finds no error;
    False where it would, and wherever the check is stricter than needed (a
    float that is an integer, a keyword it does not know), so False means
    "ask jsonschema", never "invalid".

    jsonschema interprets the schema afresh for every entry (about 0.15 s for
    YOLOv8n's plan, validated twice per emission); this runs the closures
    built once per process."""
    check = _compiled_schema()
    return check is not None and check(instance)


@functools.cache
def _compiled_schema() -> Check | None:
    from teeny_ir.backend.plan import SCHEMA

    return compile_schema(SCHEMA)


_KNOWN_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    # jsonschema takes 1.0 as an integer too: refused here, it goes to jsonschema
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
_ANNOTATIONS = frozenset({"$schema", "title", "description", "$comment"})


def compile_schema(schema: Any) -> Check | None:
    """``schema`` as one closure, where it uses only the keywords `SCHEMA` does
    (``type``, ``properties``, ``required``, ``additionalProperties``,
    ``items``, ``oneOf``, ``enum``, ``const``, ``minLength``, ``maxLength``,
    ``minItems``, ``maxItems``, ``minimum``, ``maximum``, ``pattern`` and
    annotations), each with Draft 2020-12's meaning (a keyword applies only to
    instances of its type); None for anything else."""
    if schema is True:
        return lambda instance: True
    if schema is False:
        return lambda instance: False
    if not isinstance(schema, dict):
        return None
    checks: list[Check] = []
    for keyword, value in schema.items():
        check = _compile_keyword(keyword, value, schema)
        if check is None:
            return None
        checks.append(check)
    if len(checks) == 1:
        return checks[0]
    return lambda instance: all(check(instance) for check in checks)


def _compile_keyword(keyword: str, value: Any, schema: dict[str, Any]) -> Check | None:
    if keyword in _ANNOTATIONS:
        return lambda instance: True
    if keyword == "type":
        names = [value] if isinstance(value, str) else value
        if not isinstance(names, list) or not all(n in _KNOWN_TYPES for n in names):
            return None
        tests = [_KNOWN_TYPES[n] for n in names]
        return lambda instance: any(test(instance) for test in tests)
    if keyword == "properties":
        if not isinstance(value, dict):
            return None
        compiled = {name: compile_schema(sub) for name, sub in value.items()}
        if any(check is None for check in compiled.values()):
            return None
        properties = {name: check for name, check in compiled.items() if check is not None}

        def check_properties(instance: Any) -> bool:
            if not isinstance(instance, dict):
                return True
            return all(
                check(instance[name]) for name, check in properties.items() if name in instance
            )

        return check_properties
    if keyword == "additionalProperties":
        extra = compile_schema(value)
        known = frozenset(schema.get("properties", {}))
        if extra is None or "patternProperties" in schema:
            return None
        return lambda instance: (
            not isinstance(instance, dict)
            or all(extra(item) for name, item in instance.items() if name not in known)
        )
    if keyword == "required":
        if not isinstance(value, list):
            return None
        required = tuple(value)
        return lambda instance: (
            not isinstance(instance, dict) or all(name in instance for name in required)
        )
    if keyword == "items":
        item_check = compile_schema(value)
        if item_check is None or "prefixItems" in schema:
            return None
        return lambda instance: (
            not isinstance(instance, list) or all(item_check(item) for item in instance)
        )
    if keyword == "oneOf":
        branches = [compile_schema(sub) for sub in value] if isinstance(value, list) else [None]
        if any(branch is None for branch in branches):
            return None
        ones = [branch for branch in branches if branch is not None]
        return lambda instance: sum(1 for branch in ones if branch(instance)) == 1
    if keyword in ("enum", "const"):
        options = value if keyword == "enum" else [value]
        if not isinstance(options, list) or not all(_is_scalar(o) for o in options):
            return None
        # the same type too: jsonschema tells True from 1 (and 1 from 1.0 is left to it)
        return lambda instance: any(
            type(instance) is type(option) and instance == option for option in options
        )
    return _compile_bound(keyword, value)


def _compile_bound(keyword: str, value: Any) -> Check | None:
    """The length, size, range and pattern keywords."""
    if keyword == "pattern" and isinstance(value, str):
        pattern = re.compile(value)
        return lambda instance: (
            not isinstance(instance, str) or pattern.search(instance) is not None
        )
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    limit = value
    if keyword == "minLength":
        return lambda instance: not isinstance(instance, str) or len(instance) >= limit
    if keyword == "maxLength":
        return lambda instance: not isinstance(instance, str) or len(instance) <= limit
    if keyword == "minItems":
        return lambda instance: not isinstance(instance, list) or len(instance) >= limit
    if keyword == "maxItems":
        return lambda instance: not isinstance(instance, list) or len(instance) <= limit
    if keyword in ("minimum", "maximum"):
        low = keyword == "minimum"

        def check_range(instance: Any) -> bool:
            if isinstance(instance, bool) or not isinstance(instance, (int, float)):
                return True
            return instance >= limit if low else instance <= limit

        return check_range
    return None


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))
