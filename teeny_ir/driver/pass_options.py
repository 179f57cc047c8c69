"""Pass options: typed dataclass fields <-> MLIR ``{key=value}`` text.

A pass's options are the init fields of its frozen dataclass. Supported field
types: ``bool``, ``int``, ``float``, ``str``, ``Literal[...]`` choices, tuples
of those (``tuple[int, ...]``; ``k=1,2,3`` on the command line) and any of them
``| None``. Option names are the field names with ``_`` spelled ``-``.

Hand-written rather than xDSL's ``PipelinePassSpec`` conversion: xDSL's reads
``{flag}`` as None, refuses values with ``/`` or ``.``, and raises a
``BaseException`` subclass that ``except Exception`` does not catch.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import struct
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_origin

from teeny_ir.driver.pipeline_syntax import OptionValue, PassSpec

if typing.TYPE_CHECKING:
    from xdsl.passes import ModulePass

_INT = re.compile(r"[+-]?(0x[0-9a-fA-F]+|[0-9]+)")


def _as_float32(value: float) -> float:
    """``value`` rounded to float32 (infinite where float32 overflows). A float
    option is a float32 in the compiled program: a finite text that float32
    rounds to infinity (``lr=1e39``) is refused; ``inf`` and ``nan`` are left
    to the pass's own checks."""
    try:
        return float(struct.unpack("f", struct.pack("f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


class OptionError(Exception):
    """A pass option that does not exist or has an unusable value."""


@dataclass(frozen=True)
class OptionInfo:
    """One option of a pass, for parsing and for ``--list-passes``."""

    name: str
    field: str
    type: Any
    default: Any

    def type_text(self) -> str:
        return _type_text(self.type)


def nearest(word: str, choices: typing.Iterable[str]) -> str | None:
    """The closest choice to a misspelt word, if any is close."""
    matches = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return matches[0] if matches else None


def did_you_mean(word: str, choices: typing.Iterable[str]) -> str:
    """``; did you mean 'x'?`` or the empty string."""
    match = nearest(word, choices)
    return f"; did you mean '{match}'?" if match else ""


def options_of(cls: type[ModulePass]) -> list[OptionInfo]:
    """The options a pass class accepts, in field order."""
    hints = typing.get_type_hints(cls)
    infos: list[OptionInfo] = []
    for f in dataclasses.fields(cls):
        if not f.init or f.name.startswith("_"):
            continue
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = dataclasses.MISSING
        infos.append(OptionInfo(f.name.replace("_", "-"), f.name, hints[f.name], default))
    return infos


def build_pass(cls: type[ModulePass], spec: PassSpec) -> ModulePass:
    """Instantiate a pass from its parsed spec, checking every option."""
    infos = {info.name: info for info in options_of(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in spec.options:
        info = infos.get(key.replace("_", "-"))
        if info is None:
            valid = ", ".join(sorted(infos)) or "none"
            raise OptionError(
                f"pass '{spec.name}' has no option '{key}' (valid options: {valid})"
                + did_you_mean(key, infos)
            )
        try:
            kwargs[info.field] = _convert(info.type, value)
        except ValueError as err:
            raise OptionError(
                f"bad value '{','.join(value)}' for option '{info.name}' of pass "
                f"'{spec.name}': {err}"
            ) from None
    missing = [
        i.name for i in infos.values() if i.default is dataclasses.MISSING and i.field not in kwargs
    ]
    if missing:
        raise OptionError(f"pass '{spec.name}' needs option(s): {', '.join(missing)}")
    return cls(**kwargs)


def spec_of(instance: ModulePass) -> PassSpec:
    """The canonical spec of a pass instance: options that differ from their defaults."""
    options: list[tuple[str, OptionValue]] = []
    for info in options_of(type(instance)):
        value = getattr(instance, info.field)
        if value != info.default and value is not None:
            options.append((info.name, _render(value)))
    return PassSpec(instance.name, tuple(options))


def _render(value: object) -> OptionValue:
    if isinstance(value, tuple):
        return tuple(_render_scalar(v) for v in typing.cast(tuple[object, ...], value))
    return (_render_scalar(value),)


def _render_scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _strip_none(tp: Any) -> Any:
    if get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


def _convert(tp: Any, value: OptionValue) -> Any:
    tp = _strip_none(tp)
    if get_origin(tp) is tuple:
        element = get_args(tp)[0]
        if value == ("",):
            return ()
        return tuple(_scalar(element, v) for v in value)
    if len(value) != 1:
        raise ValueError(f"expected a single {_type_text(tp)}, got a list of {len(value)}")
    return _scalar(tp, value[0])


def _scalar(tp: Any, text: str) -> Any:
    if tp is bool:
        lowered = text.lower()
        if lowered in ("true", "1"):
            return True
        if lowered in ("false", "0"):
            return False
        raise ValueError("expected true or false")
    if tp is int:
        if not _INT.fullmatch(text):
            raise ValueError("expected an integer")
        return int(text, 0)
    if tp is float:
        if not text.isascii():  # float() reads any Unicode digit: float("٣") == 3.0
            raise ValueError("expected a number")
        try:
            value = float(text)
        except ValueError:
            raise ValueError("expected a number") from None
        if math.isfinite(value) and math.isinf(_as_float32(value)):
            raise ValueError(
                "expected a number within float32's range (at most 3.4028235e+38 in magnitude), "
                "the precision the compiled program computes in"
            )
        return value
    if tp is str:
        return text
    if get_origin(tp) is Literal:
        choices = [str(c) for c in get_args(tp)]
        if text not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}" + did_you_mean(text, choices))
        return text
    raise ValueError(f"options of type {tp!r} are not supported")


def _type_text(tp: Any) -> str:
    tp = _strip_none(tp)
    if get_origin(tp) is tuple:
        return f"list of {_type_text(get_args(tp)[0])}"
    if get_origin(tp) is Literal:
        return "|".join(str(c) for c in get_args(tp))
    return getattr(tp, "__name__", str(tp))
