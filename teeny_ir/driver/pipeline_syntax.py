"""Parser and printer for MLIR's textual pass-pipeline syntax.

Full form::

    builtin.module(a,func.func(b,c{opt=1}),d{out-dir=/tmp/x archs=80,90})

Short form (as given to ``-p``): the bare element list ``a,b{k=v},func.func(c)``,
implicitly nested in ``builtin.module``.

Option values are lists of elements separated by ``,``; an element is a quoted
string (``\\"`` and ``\\\\`` escapes), a run of characters free of whitespace and
``,{}"``, or a braced group ``{...}`` kept verbatim (e.g. a nested pipeline).
A bare option key is a flag meaning ``key=true``.

Only the standard library is used, so importing this module is cheap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "MAX_DEPTH",
    "NestedSpec",
    "OptionValue",
    "PassSpec",
    "PipelineElement",
    "PipelineSyntaxError",
    "format_pipeline",
    "parse_any",
    "parse_pass_list",
    "parse_pipeline",
]

MAX_DEPTH = 64
"""Maximum number of nested ``(`` accepted by the parser."""

OptionValue = tuple[str, ...]
"""The unquoted list elements of an option value; a single value is a 1-tuple."""

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_\-.]*")
_VALUE_STOP = ',{}"'
_NEEDS_QUOTES = ',{}"='
_FLAG_VALUE: OptionValue = ("true",)


class PipelineSyntaxError(Exception):
    """A malformed pipeline string.

    ``column`` is the 0-based offset into the text; ``str()`` reports the
    1-based line and column, e.g. ``pipeline:1:17: expected ',' or ')'``.
    """

    def __init__(self, message: str, column: int, text: str = "") -> None:
        super().__init__(message, column, text)
        self.message = message
        self.column = column
        self.text = text

    def __str__(self) -> str:
        return f"pipeline:{_location(self.text, self.column)}: {self.message}"

    def render(self, text: str | None = None) -> str:
        """The message, the offending line of ``text`` and a caret under the column."""
        text = self.text if text is None else text
        start = text.rfind("\n", 0, self.column) + 1
        end = text.find("\n", self.column)
        line = text[start : len(text) if end == -1 else end]
        caret = "".join("\t" if ch == "\t" else " " for ch in line[: self.column - start])
        return f"{self}\n{line}\n{caret}^"


def _location(text: str, offset: int) -> str:
    """``line:column`` (both 1-based) of ``offset`` in ``text``."""
    line = text.count("\n", 0, offset) + 1
    column = offset - text.rfind("\n", 0, offset)
    return f"{line}:{column}"


@dataclass(frozen=True)
class PassSpec:
    """A pass invocation: ``name{key=value ...}`` with options in source order."""

    name: str
    options: tuple[tuple[str, OptionValue], ...] = ()
    column: int = field(default=0, compare=False)
    """0-based offset of the name in the parsed text (for diagnostics)."""

    def __post_init__(self) -> None:
        _check_ident(self.name, "pass name")
        seen: set[str] = set()
        for key, value in self.options:
            _check_ident(key, "option key")
            if key in seen:
                raise ValueError(f"duplicate option {key!r}")
            seen.add(key)
            if not value:
                raise ValueError(f"option {key!r} has an empty value list")


@dataclass(frozen=True)
class NestedSpec:
    """A pass manager anchored on an op name: ``anchor(element,...)``."""

    anchor: str
    elements: tuple[PipelineElement, ...] = ()
    column: int = field(default=0, compare=False)
    """0-based offset of the anchor in the parsed text (for diagnostics)."""

    def __post_init__(self) -> None:
        _check_ident(self.anchor, "op anchor")


PipelineElement = PassSpec | NestedSpec


def _check_ident(name: str, what: str) -> None:
    if not _IDENT.fullmatch(name):
        raise ValueError(f"invalid {what} {name!r}")


def _group_end(text: str, start: int) -> int | None:
    """Offset just past the ``}`` matching the ``{`` at ``start``, or None.

    Quoted strings inside the group are skipped, so they may contain braces.
    """
    depth, pos = 0, start
    while pos < len(text):
        ch = text[pos]
        if ch == '"':
            pos += 1
            while pos < len(text) and text[pos] != '"':
                pos += 2 if text[pos] == "\\" else 1
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return pos + 1
        pos += 1
    return None


class _Parser:
    """Recursive-descent parser over ``text``; ``pos`` is the current offset."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, message: str, column: int | None = None) -> PipelineSyntaxError:
        return PipelineSyntaxError(message, self.pos if column is None else column, self.text)

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def skip_ws(self) -> bool:
        """Skip whitespace; return whether any was skipped."""
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1
        return self.pos > start

    def ident(self, what: str) -> str:
        match = _IDENT.match(self.text, self.pos)
        if match is None:
            raise self.error(f"expected {what}")
        self.pos = match.end()
        return match.group()

    def expect_end(self, what: str) -> None:
        self.skip_ws()
        ch = self.peek()
        if ch in (")", "}"):
            raise self.error(f"unbalanced '{ch}'")
        if ch:
            raise self.error(what)

    def pipeline(self) -> NestedSpec:
        self.skip_ws()
        start = self.pos
        anchor = self.ident("op anchor name")
        self.skip_ws()
        if self.peek() != "(":
            raise self.error(f"expected '(' after op anchor '{anchor}'")
        spec = NestedSpec(anchor, self.elements(1, self.pos), start)
        self.expect_end("unexpected text after pipeline")
        return spec

    def pass_list(self) -> NestedSpec:
        spec = NestedSpec("builtin.module", self.elements(0, None))
        self.expect_end("expected ',' or end of pipeline")
        return spec

    def elements(self, depth: int, open_col: int | None) -> tuple[PipelineElement, ...]:
        """Parse an element list; with ``open_col``, also the ``(`` ``)`` around it."""
        if open_col is not None:
            self.pos += 1
        self.skip_ws()
        items: list[PipelineElement] = []
        if self.peek() != ("" if open_col is None else ")"):
            while True:
                items.append(self.element(depth, after_comma=bool(items)))
                self.skip_ws()
                if self.peek() != ",":
                    break
                self.pos += 1
                self.skip_ws()
        if open_col is not None:
            ch = self.peek()
            if ch == "":
                raise self.error(f"expected ')' to close '(' at {_location(self.text, open_col)}")
            if ch != ")":
                raise self.error("expected ',' or ')'")
            self.pos += 1
        return tuple(items)

    def element(self, depth: int, after_comma: bool) -> PipelineElement:
        ch = self.peek()
        if ch == "," or (after_comma and ch in ("", ")")):
            raise self.error("empty pipeline element")
        if ch == ")":
            raise self.error("unbalanced ')'")
        if ch == "":
            raise self.error("expected pass name or ')'")
        if ch == "{":
            raise self.error("empty pass name before '{'")
        if ch == "(":
            raise self.error("empty op anchor name before '('")
        start = self.pos
        name = self.ident("pass name")
        self.skip_ws()
        if self.peek() == "(":
            if depth >= MAX_DEPTH:
                raise self.error(f"pipeline nesting exceeds the maximum depth of {MAX_DEPTH}")
            return NestedSpec(name, self.elements(depth + 1, self.pos), start)
        if self.peek() == "{":
            return PassSpec(name, self.options(), start)
        return PassSpec(name, (), start)

    def options(self) -> tuple[tuple[str, OptionValue], ...]:
        open_col = self.pos
        self.pos += 1
        options: dict[str, OptionValue] = {}
        separated = True
        while True:
            separated = self.skip_ws() or separated
            ch = self.peek()
            if ch == "":
                raise self.error(f"expected '}}' to close '{{' at {_location(self.text, open_col)}")
            if ch == "}":
                self.pos += 1
                return tuple(options.items())
            if not separated:
                raise self.error("expected whitespace or '}' after option")
            key_col = self.pos
            key = self.ident("option key")
            if key in options:
                raise self.error(f"duplicate option '{key}'", key_col)
            separated = self.skip_ws()
            if self.peek() == "=":
                self.pos += 1
                self.skip_ws()
                options[key] = self.value()
                separated = False
            else:
                options[key] = _FLAG_VALUE

    def value(self) -> OptionValue:
        items = [self.value_element()]
        while True:
            ch = self.peek()
            if ch and not ch.isspace() and ch not in ",}":
                raise self.error("expected whitespace, ',' or '}' after option value")
            before_ws = self.pos
            self.skip_ws()
            if self.peek() != ",":
                self.pos = before_ws
                return tuple(items)
            self.pos += 1
            self.skip_ws()
            items.append(self.value_element())

    def value_element(self) -> str:
        start = self.pos
        ch = self.peek()
        if ch == '"':
            return self.string()
        if ch == "{":
            end = _group_end(self.text, start)
            if end is None:
                raise self.error("unterminated '{' in option value")
            self.pos = end
            return self.text[start:end]
        while (ch := self.peek()) and not ch.isspace() and ch not in _VALUE_STOP:
            self.pos += 1
        if self.pos == start:
            raise self.error("expected option value")
        return self.text[start : self.pos]

    def string(self) -> str:
        start = self.pos
        self.pos += 1
        chars: list[str] = []
        while (ch := self.peek()) != '"':
            if ch == "\\":
                self.pos += 1
                ch = self.peek()
                if ch and ch not in ('"', "\\"):
                    raise self.error("invalid escape sequence in string", self.pos - 1)
            if ch == "":
                raise self.error("unterminated string", start)
            chars.append(ch)
            self.pos += 1
        self.pos += 1
        return "".join(chars)


def parse_pipeline(text: str) -> NestedSpec:
    """Parse the full form ``anchor(element,...)``; the outer anchor is required."""
    return _Parser(text).pipeline()


def parse_pass_list(text: str) -> NestedSpec:
    """Parse the short form ``element,...`` as ``NestedSpec("builtin.module", ...)``."""
    return _Parser(text).pass_list()


def parse_any(text: str) -> NestedSpec:
    """Parse ``text`` as the full form if it is ``anchor(...)`` as a whole, else the short form."""
    spec = parse_pass_list(text)
    if len(spec.elements) == 1 and isinstance(spec.elements[0], NestedSpec):
        return spec.elements[0]
    return spec


def format_pipeline(spec: NestedSpec) -> str:
    """The canonical text of ``spec``, which ``parse_pipeline`` maps back to ``spec``."""
    return _format_element(spec)


def _format_element(element: PipelineElement) -> str:
    if isinstance(element, NestedSpec):
        return f"{element.anchor}({','.join(map(_format_element, element.elements))})"
    if not element.options:
        return element.name
    options = " ".join(
        f"{key}={','.join(map(_format_value, value))}" for key, value in element.options
    )
    return f"{element.name}{{{options}}}"


def _format_value(value: str) -> str:
    if value.startswith("{") and _group_end(value, 0) == len(value):
        return value
    if value and not any(ch.isspace() or ch in _NEEDS_QUOTES for ch in value):
        return value
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'
