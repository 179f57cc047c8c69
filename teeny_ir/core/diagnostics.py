"""Located diagnostics: errors, warnings, remarks and notes, as MLIR reports them.

A diagnostic points at a source position (``file:line:col``) resolved from an
op's location attribute. Positions are recorded by the parser as byte offsets
and mapped to lines lazily through `SourceFile` (one table of line starts and
``bisect``), so parsing stays linear.

This module imports only the standard library and xDSL's builtin dialect (for
location attributes, imported lazily), so it is safe to use at start-up.
"""

from __future__ import annotations

import bisect
import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xdsl.context import Context
    from xdsl.ir import Attribute, Operation


class Severity(enum.Enum):
    """How serious a diagnostic is; the value is the word MLIR prints."""

    ERROR = "error"
    WARNING = "warning"
    REMARK = "remark"
    NOTE = "note"


@dataclass(frozen=True)
class SourceLoc:
    """A resolved position: 1-based line and column in a named file."""

    filename: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.col}"


class SourceFile:
    """The text of one input buffer, with a lazily built table of line starts.

    ``first_line`` lets a chunk of a larger file (``--split-input-file``) report
    the line numbers of the whole file.
    """

    def __init__(self, text: str, filename: str, first_line: int = 1) -> None:
        self.text = text
        self.filename = filename
        self.first_line = first_line
        self._line_starts: list[int] | None = None

    def _starts(self) -> list[int]:
        if self._line_starts is None:
            starts = [0]
            find = self.text.find
            pos = find("\n")
            while pos != -1:
                starts.append(pos + 1)
                pos = find("\n", pos + 1)
            self._line_starts = starts
        return self._line_starts

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a character offset, in whole-file lines."""
        starts = self._starts()
        offset = max(0, min(offset, len(self.text)))
        index = bisect.bisect_right(starts, offset) - 1
        return index + self.first_line, offset - starts[index] + 1

    def loc(self, offset: int) -> SourceLoc:
        line, col = self.line_col(offset)
        return SourceLoc(self.filename, line, col)

    def line_text(self, line: int) -> str:
        """The text of a whole-file line number, without its newline."""
        starts = self._starts()
        index = line - self.first_line
        if not 0 <= index < len(starts):
            return ""
        end = starts[index + 1] - 1 if index + 1 < len(starts) else len(self.text)
        return self.text[starts[index] : end]


@dataclass
class Diagnostic:
    """One message with a severity, an optional location and attached notes."""

    severity: Severity
    message: str
    location: SourceLoc | None = None
    notes: list[Diagnostic] = field(default_factory=lambda: list[Diagnostic]())

    def attach_note(self, message: str, location: SourceLoc | None = None) -> Diagnostic:
        """Add a note (MLIR's ``attachNote``) and return it."""
        note = Diagnostic(Severity.NOTE, message, location)
        self.notes.append(note)
        return note

    def header(self) -> str:
        """The one-line form ``file:line:col: error: message``."""
        where = str(self.location) if self.location is not None else "<unknown>:0:0"
        return f"{where}: {self.severity.value}: {self.message}"

    def format(self, sources: Sequence[SourceFile] = ()) -> str:
        """The header, the source line with a caret when known, then the notes."""
        lines = [self.header()]
        snippet = _snippet(self.location, sources)
        if snippet:
            lines.extend(snippet)
        for note in self.notes:
            lines.append(note.format(sources))
        return "\n".join(lines)


def _snippet(location: SourceLoc | None, sources: Sequence[SourceFile]) -> list[str]:
    if location is None:
        return []
    for source in sources:
        if source.filename == location.filename:
            text = source.line_text(location.line)
            if not text or len(text) > 400:
                return []
            pad = "".join("\t" if c == "\t" else " " for c in text[: location.col - 1])
            return [text, pad + "^"]
    return []


class DiagnosticError(Exception):
    """Raised by the Python API when input is rejected; carries every message."""

    def __init__(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.diagnostics = list(diagnostics)
        super().__init__("\n".join(d.header() for d in self.diagnostics))

    @classmethod
    def single(cls, message: str, location: SourceLoc | None = None) -> DiagnosticError:
        return cls([Diagnostic(Severity.ERROR, message, location)])


def loc_of(where: Operation | Attribute | SourceLoc | None) -> SourceLoc | None:
    """Resolve an op, a location attribute or a position to a `SourceLoc`.

    Fused locations resolve to their first file location, name and call-site
    locations to the location they wrap; unknown locations to None.
    """
    if where is None or isinstance(where, SourceLoc):
        return where
    from xdsl.dialects.builtin import ArrayAttr, CallSiteLoc, FileLineColLoc, FusedLoc, NameLoc
    from xdsl.ir import Operation

    attr = where.location if isinstance(where, Operation) else where
    if isinstance(attr, FileLineColLoc):
        return SourceLoc(attr.filename.data, attr.line.data, attr.column.data)
    if isinstance(attr, FusedLoc) and isinstance(attr.locations, ArrayAttr):
        for inner in attr.locations:
            if (resolved := loc_of(inner)) is not None:
                return resolved
        return None
    if isinstance(attr, NameLoc):
        return loc_of(attr.location)
    if isinstance(attr, CallSiteLoc):
        return loc_of(attr.callee)
    return None


class DiagnosticEngine:
    """Collects diagnostics emitted while parsing, verifying or running passes.

    Passes reach the engine of the current run through `engine_of(ctx)`; the
    driver reports what it collected (or checks it under
    ``--verify-diagnostics``) when the run ends.
    """

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []

    def emit(
        self,
        severity: Severity,
        message: str,
        where: Operation | Attribute | SourceLoc | None = None,
    ) -> Diagnostic:
        """Record a diagnostic; attach notes to the returned object."""
        diagnostic = Diagnostic(severity, message, loc_of(where))
        self.diagnostics.append(diagnostic)
        return diagnostic

    def error(
        self, message: str, where: Operation | Attribute | SourceLoc | None = None
    ) -> Diagnostic:
        return self.emit(Severity.ERROR, message, where)

    def warning(
        self, message: str, where: Operation | Attribute | SourceLoc | None = None
    ) -> Diagnostic:
        return self.emit(Severity.WARNING, message, where)

    def remark(
        self, message: str, where: Operation | Attribute | SourceLoc | None = None
    ) -> Diagnostic:
        return self.emit(Severity.REMARK, message, where)

    def extend(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.diagnostics.extend(diagnostics)

    @property
    def has_errors(self) -> bool:
        return any(d.severity is Severity.ERROR for d in self.diagnostics)

    def take(self) -> list[Diagnostic]:
        """Return the collected diagnostics and start afresh."""
        taken, self.diagnostics = self.diagnostics, []
        return taken


_ENGINE_ATTR = "_teeny_diagnostics"


def engine_of(ctx: Context) -> DiagnosticEngine:
    """The diagnostic engine attached to a context (created on first use)."""
    engine = getattr(ctx, _ENGINE_ATTR, None)
    if engine is None:
        engine = DiagnosticEngine()
        setattr(ctx, _ENGINE_ATTR, engine)
    return engine


def provenance(where: Operation | Attribute, default_name: str) -> list[tuple[str, str]]:
    """The (op name, ``file:line:col`` or "") pairs a location records.

    A fused location lists each op it fuses; a name location
    ``loc("graph.conv2d"(...))`` names the op at the location it wraps (fusing
    passes wrap each source this way); a bare location is ``default_name``'s.
    """
    from xdsl.dialects.builtin import ArrayAttr, FusedLoc, NameLoc, UnknownLoc
    from xdsl.ir import Operation

    attr = where.location if isinstance(where, Operation) else where
    if isinstance(attr, UnknownLoc):
        return [(default_name, "")]
    if isinstance(attr, FusedLoc) and isinstance(attr.locations, ArrayAttr):
        pairs: list[tuple[str, str]] = []
        for inner in attr.locations:
            for pair in provenance(inner, default_name):
                if pair not in pairs:
                    pairs.append(pair)
        return pairs or [(default_name, "")]
    if isinstance(attr, NameLoc):
        resolved = loc_of(attr.location)
        return [(attr.desc.data, "" if resolved is None else str(resolved))]
    resolved = loc_of(attr)
    return [(default_name, "" if resolved is None else str(resolved))]
