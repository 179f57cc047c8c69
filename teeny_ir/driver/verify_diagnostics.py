"""``--split-input-file`` and ``--verify-diagnostics``, as in ``mlir-opt``.

A test file holds ``// expected-error {{message}}`` annotations; the driver
runs the file, collects the diagnostics it emits and calls
`check_expectations`, which returns one error for each diagnostic nobody
expected and each expectation that nothing produced. The annotation grammar
and the matching rules follow MLIR's ``SourceMgrDiagnosticVerifierHandler``
(``mlir/lib/IR/Diagnostics.cpp``)::

    expected-(error|warning|remark|note)(-re)? *(@designator)? *{{message}}

where the designator is ``+N`` / ``-N`` (relative line), ``above`` / ``below``
(the nearest line that is not itself an annotation line) or ``unknown`` (a
diagnostic without a location). Without ``-re`` the message must occur as a
substring; with ``-re``, ``{{...}}`` pieces inside it are regular expressions
and the rest is literal. Unlike MLIR, a malformed annotation is an error
rather than being silently ignored.

Only the standard library is imported.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from teeny_ir.core.diagnostics import Diagnostic, Severity, SourceLoc

SPLIT_MARKER = "// -----"

# MLIR's regex, searched in each right-trimmed line.
_ANNOTATION = re.compile(
    r"expected-(error|note|remark|warning)(-re)? *(@([+-][0-9]+|above|below|unknown))? *\{\{(.*)\}\}$"
)
# Anything that looks like an attempt at an annotation (used to flag typos).
_ATTEMPT = re.compile(r"expected-(error|note|remark|warning)(-re)?(?![\w-])")
_DESIGNATOR = re.compile(r"@([+-][0-9]+|above|below|unknown)(?= |\{\{|$)")


def split_input_file(text: str) -> list[tuple[str, int]]:
    """Split ``text`` on lines that are exactly ``// -----`` (trailing
    whitespace allowed) and return each chunk with its first line number in
    the whole file. Separator lines belong to no chunk; a chunk keeps the
    newline ending its last line. Without a separator: ``[(text, 1)]``."""
    lines = text.split("\n")
    chunks: list[tuple[str, int]] = []
    start = 0
    for index, line in enumerate(lines):
        if line.rstrip() == SPLIT_MARKER:
            chunks.append(
                ("\n".join(lines[start:index]) + ("\n" if index > start else ""), start + 1)
            )
            start = index + 1
    chunks.append(("\n".join(lines[start:]), start + 1))
    return chunks


@dataclass
class Expectation:
    """One ``expected-*`` annotation.

    ``line`` is the whole-file line a diagnostic must be reported on (None for
    ``@unknown``); ``source_line`` / ``column`` locate the annotation itself.
    """

    severity: Severity
    line: int | None
    pattern: str
    is_regex: bool
    source_line: int
    column: int
    matched: bool = field(default=False, compare=False)
    _regex: re.Pattern[str] | None = field(default=None, compare=False, repr=False)

    def matches(self, message: str) -> bool:
        """Whether a diagnostic message satisfies this expectation."""
        if not self.is_regex:
            return self.pattern in message
        if self._regex is None:
            self._regex = re.compile(_regex_of(self.pattern))
        return self._regex.search(message) is not None


def _regex_of(pattern: str) -> str:
    """Translate an ``-re`` message to a Python regex: literal text, with each
    ``{{...}}`` piece a regex group. Raises ValueError when malformed."""
    parts: list[str] = []
    rest = pattern
    while (start := rest.find("{{")) != -1:
        parts.append(re.escape(rest[:start]))
        rest = rest[start + 2 :]
        end = rest.find("}}")
        if end == -1:
            raise ValueError("found start of regex with no end '}}'")
        piece = rest[:end]
        try:
            re.compile(piece)
        except re.error as err:
            raise ValueError(f"invalid regex: {err}") from None
        parts.append(f"({piece})")
        rest = rest[end + 2 :]
    parts.append(re.escape(rest))
    return "".join(parts)


def _malformed_reason(tail: str) -> str:
    """Why the text after ``expected-<kind>(-re)?`` is not a valid annotation."""
    tail = tail.lstrip(" ")
    if tail.startswith("@"):
        designator = _DESIGNATOR.match(tail)
        if designator is None:
            bad = re.match(r"@[^ {]*", tail)
            assert bad is not None
            return f"invalid designator '{bad.group()}' (use @+N, @-N, @above, @below or @unknown)"
        tail = tail[designator.end() :].lstrip(" ")
    if not tail.startswith("{{"):
        return "expected '{{' in expected-* string"
    return "expected '}}' at end of expected-* string"


def parse_expectations(
    text: str, first_line: int = 1, filename: str = "<input>"
) -> tuple[list[Expectation], list[Diagnostic]]:
    """Collect the annotations of a chunk whose first line is ``first_line``.

    Returns the expectations and one error (located in ``filename``) per
    malformed annotation.
    """
    expectations: list[Expectation] = []
    errors: list[Diagnostic] = []
    lines = text.split("\n")
    last_plain = first_line  # MLIR: @above with no plain line above is line 1
    pending_below: list[Expectation] = []

    def error(line: int, col: int, kind: str, reason: str) -> None:
        message = f"invalid expected-{kind} annotation: {reason}"
        errors.append(Diagnostic(Severity.ERROR, message, SourceLoc(filename, line, col)))

    for index, raw in enumerate(lines):
        lineno = first_line + index
        line = raw.rstrip()
        found = _ANNOTATION.search(line)
        if found is None:
            attempt = _ATTEMPT.search(line)
            if attempt is not None:
                error(
                    lineno,
                    attempt.start() + 1,
                    attempt.group(1),
                    _malformed_reason(line[attempt.end() :]),
                )
                continue
            for pending in pending_below:
                pending.line = lineno
            pending_below.clear()
            last_plain = lineno
            continue

        kind, is_regex, designator, message = (
            found.group(1),
            bool(found.group(2)),
            found.group(4),
            found.group(5),
        )
        column = found.start() + 1
        expectation = Expectation(Severity(kind), lineno, message, is_regex, lineno, column)
        if is_regex:
            try:
                expectation._regex = re.compile(_regex_of(message))
            except ValueError as err:
                error(lineno, column, kind, str(err))
                continue
        # No designator: the annotation's own line (set above).
        if designator is None:
            expectations.append(expectation)
            continue
        if designator[0] in "+-":
            target = lineno + int(designator)
            if target < 1:
                error(lineno, column, kind, f"designator '@{designator}' points before line 1")
                continue
            expectation.line = target
        elif designator == "unknown":
            expectation.line = None
        elif designator == "above":
            expectation.line = last_plain
        else:  # below: the next plain line; if none, the last line (as MLIR)
            expectation.line = first_line + len(lines) - 1
            pending_below.append(expectation)
        expectations.append(expectation)
    return expectations, errors


def _flatten(diagnostics: Iterable[Diagnostic]) -> Iterator[Diagnostic]:
    """Each diagnostic followed by its notes (recursively), as MLIR processes them."""
    for diagnostic in diagnostics:
        yield diagnostic
        yield from _flatten(diagnostic.notes)


def check_expectations(
    text: str, first_line: int, filename: str, diagnostics: list[Diagnostic]
) -> list[Diagnostic]:
    """Check emitted ``diagnostics`` against the annotations of a chunk.

    Returns the failures as errors, in mlir-opt's order and wording (empty
    means success): malformed annotations, then ``unexpected <kind>: <msg>``
    at each unmatched diagnostic (or ``'<kind>' diagnostic emitted when
    expecting a '<kind>'`` at an annotation differing only in severity), then
    ``expected <kind> "<msg>" was not produced`` for each unmatched annotation.
    As in MLIR, one annotation may absorb several identical diagnostics.
    Diagnostics located in another file are unexpected.
    """
    expectations, failures = parse_expectations(text, first_line, filename)

    def at_annotation(expectation: Expectation) -> SourceLoc:
        return SourceLoc(filename, expectation.source_line, expectation.column)

    for diagnostic in _flatten(diagnostics):
        loc = diagnostic.location
        near_miss: Expectation | None = None
        if loc is None:
            candidates = [e for e in expectations if e.line is None]
        elif loc.filename == filename:
            candidates = [e for e in expectations if e.line == loc.line]
        else:
            candidates = []
        for expectation in candidates:
            if expectation.matches(diagnostic.message):
                if expectation.severity is diagnostic.severity:
                    expectation.matched = True
                    break
                near_miss = expectation
        else:
            kind = diagnostic.severity.value
            if near_miss is not None:
                message = (
                    f"'{kind}' diagnostic emitted when expecting a '{near_miss.severity.value}'"
                )
                failures.append(Diagnostic(Severity.ERROR, message, at_annotation(near_miss)))
            else:
                failures.append(
                    Diagnostic(Severity.ERROR, f"unexpected {kind}: {diagnostic.message}", loc)
                )

    for expectation in expectations:
        if not expectation.matched:
            message = (
                f'expected {expectation.severity.value} "{expectation.pattern}" was not produced'
            )
            failures.append(Diagnostic(Severity.ERROR, message, at_annotation(expectation)))
    return failures
