"""Crash reproducers, as MLIR writes and replays them.

``--mlir-pass-pipeline-crash-reproducer=FILE``: when a pass fails or crashes,
`CrashReproducer` writes the IR as it was before that pass ran (the whole
module, even for a pass nested on a function), followed by MLIR's trailer
naming the pass in its nesting::

    {-#
      external_resources: {
        mlir_reproducer: {
          pipeline: "builtin.module(func.func(some-pass{k=v}))",
          disable_threading: true,
          verify_each: true
        }
      }
    #-}

``--run-reproducer`` reads that trailer back (`read_trailer`, a small textual
parser of the file's end; the IR parser never sees it in that mode) and runs
its pipeline on the IR.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn, TextIO

from teeny_ir.core.diagnostics import Diagnostic, DiagnosticError, Severity, SourceFile
from teeny_ir.driver.instrumentation import PassInstrumentation, PassRun

if TYPE_CHECKING:
    from xdsl.ir import Operation

    from teeny_ir.driver.pass_manager import PassInternalError

TRAILER_OPEN = "{-#"
TRAILER_CLOSE = "#-}"


class CrashReproducer(PassInstrumentation):
    """Keeps a copy of the op each pass runs on; on the first failure, renders
    the reproducer (`text`), which `write` puts in ``path`` atomically."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.verify_each = True
        """Recorded in the trailer (the pass manager sets it from its own setting)."""
        self.text: str | None = None
        self.failed_pass: str | None = None
        self._before: Operation | None = None

    def run_before_pass(self, run: PassRun) -> None:
        if self.text is None:
            self._before = run.op.clone()

    def run_after_pass(self, run: PassRun) -> None:
        self._before = None

    def run_after_pass_failed(
        self, run: PassRun, error: DiagnosticError | PassInternalError
    ) -> None:
        before, self._before = self._before, None
        if self.text is not None or before is None:
            return
        from teeny_ir.driver.pass_options import spec_of
        from teeny_ir.driver.pipeline_syntax import NestedSpec, format_pipeline
        from teeny_ir.ir.parsing import print_module

        spec = NestedSpec(run.anchors[-1], (spec_of(run.pass_),))
        for anchor in reversed(run.anchors[:-1]):
            spec = NestedSpec(anchor, (spec,))
        module = before if run.op is run.root else _module_with(run.root, run.op, before)
        self.text = (
            print_module(module) + "\n" + render_trailer(format_pipeline(spec), self.verify_each)
        )
        self.failed_pass = run.name

    def write(self, stdout: TextIO) -> None:
        """Write the reproducer (``-`` is ``stdout``); raises `OutputError`."""
        from teeny_ir.core.files import write_text

        assert self.text is not None
        write_text(self.path, self.text, stdout)


def _module_with(root: Operation, target: Operation, replacement: Operation) -> Operation:
    """A copy of ``root`` with its top-level op ``target`` replaced by
    ``replacement`` (``target`` is not copied: a crashed pass may have left it
    broken)."""
    from xdsl.ir import Block, SSAValue

    copy = root.clone_without_regions()
    values: dict[SSAValue, SSAValue] = {}
    for region, new_region in zip(root.regions, copy.regions, strict=True):
        for block in region.blocks:
            new_block = Block(arg_types=block.arg_types)
            for old, new in zip(block.args, new_block.args, strict=True):
                values[old] = new
            new_region.add_block(new_block)
            for op in block.ops:
                new_block.add_op(replacement if op is target else op.clone(values))
    return copy


def check_not_input(path: str, input_path: str) -> None:
    """Refuse a reproducer path naming the input file (by identity, not spelling)."""
    from teeny_ir.core.files import OutputError

    if path == "-" or input_path == "-":
        return
    try:
        same = os.path.samefile(path, input_path)
    except OSError:
        same = os.path.abspath(path) == os.path.abspath(input_path)
    if same:
        raise OutputError(
            f"refusing to overwrite the input file '{input_path}' with the crash reproducer"
        )


def render_trailer(pipeline: str, verify_each: bool) -> str:
    """MLIR's reproducer trailer for ``pipeline``."""
    return (
        "{-#\n"
        "  external_resources: {\n"
        "    mlir_reproducer: {\n"
        f"      pipeline: {_quote(pipeline)},\n"
        "      disable_threading: true,\n"
        f"      verify_each: {str(verify_each).lower()}\n"
        "    }\n"
        "  }\n"
        "#-}\n"
    )


def _quote(text: str) -> str:
    out = ['"']
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\{ord(char):02X}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


# --- reading a trailer back -------------------------------------------------------------------


@dataclass(frozen=True)
class ReproducerConfig:
    """What a reproducer trailer says, and where it is in the file."""

    pipeline: str
    pipeline_offset: int
    """Offset in the file of the pipeline's first character (for error locations)."""
    pipeline_escaped: bool
    """Whether the pipeline literal has escapes (its offsets then do not map 1:1)."""
    verify_each: bool | None
    disable_threading: bool | None
    start: int
    """Offset of ``{-#``; the trailer runs to the end of the file."""

    def blanked(self, text: str) -> str:
        """``text`` with the trailer replaced by spaces (line numbers kept)."""
        tail = re.sub(r"[^\n]", " ", text[self.start :])
        return text[: self.start] + tail


_TOKEN = re.compile(
    r'(?P<ws>\s+)|(?P<string>"(?:[^"\\\n]|\\.)*"?)|(?P<word>[A-Za-z_][A-Za-z0-9_.$-]*)'
    r"|(?P<number>-?[0-9][0-9A-Za-z.+-]*)|(?P<punct>[{}:,])"
)
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_ESCAPE = re.compile(r'\\(?:(["\\nt])|([0-9A-Fa-f]{2}))')


@dataclass
class _Value:
    kind: str  # "dict", "string", "word", "number"
    offset: int
    text: str = ""
    escaped: bool = False
    entries: dict[str, tuple[int, _Value]] | None = None


class _TrailerParser:
    def __init__(self, source: SourceFile, start: int, end: int) -> None:
        self.source = source
        self.tokens: list[tuple[str, str, int]] = []
        pos = start
        text = source.text
        while pos < end:
            match = _TOKEN.match(text, pos, end)
            if match is None:
                self._fail(f"unexpected character '{text[pos]}' in the reproducer trailer", pos)
            kind = match.lastgroup
            assert kind is not None
            if kind != "ws":
                self.tokens.append((kind, match.group(), pos))
            pos = match.end()
        self.end = end
        self.index = 0

    def _fail(self, message: str, offset: int) -> NoReturn:
        raise DiagnosticError([Diagnostic(Severity.ERROR, message, self.source.loc(offset))])

    def _peek(self) -> tuple[str, str, int]:
        if self.index < len(self.tokens):
            return self.tokens[self.index]
        return ("end", "", self.end)

    def _next(self) -> tuple[str, str, int]:
        token = self._peek()
        self.index += 1
        return token

    def _expect(self, text: str, what: str) -> None:
        kind, got, offset = self._next()
        if got != text or kind not in ("punct",):
            self._fail(f"expected {what} in the reproducer trailer", offset)

    def entries(self, closing: str | None) -> dict[str, tuple[int, _Value]]:
        """``key: value`` pairs separated by commas, up to ``closing`` (or the end)."""
        found: dict[str, tuple[int, _Value]] = {}
        if closing is not None and self._peek()[1] == closing:
            self._next()
            return found
        while True:
            kind, key, offset = self._next()
            if kind != "word":
                self._fail("expected a key in the reproducer trailer", offset)
            if key in found:
                self._fail(f"duplicate key '{key}' in the reproducer trailer", offset)
            self._expect(":", f"':' after '{key}'")
            found[key] = (offset, self.value())
            kind, text, offset = self._peek()
            if text == ",":
                self._next()
                continue
            if closing is None:
                if kind != "end":
                    self._fail("expected ',' or '#-}' in the reproducer trailer", offset)
                return found
            if text != closing:
                self._fail(f"expected ',' or '{closing}' in the reproducer trailer", offset)
            self._next()
            return found

    def value(self) -> _Value:
        kind, text, offset = self._next()
        if kind == "punct" and text == "{":
            return _Value("dict", offset, entries=self.entries("}"))
        if kind == "string":
            if _STRING.fullmatch(text) is None:
                self._fail("unterminated string in the reproducer trailer", offset)
            body = text[1:-1]
            pos = body.find("\\")
            while pos >= 0:
                escape = _ESCAPE.match(body, pos)
                if escape is None:
                    self._fail("invalid escape in a string", offset + 1 + pos)
                pos = body.find("\\", escape.end())
            return _Value("string", offset, _unescape(body), escaped="\\" in body)
        if kind in ("word", "number"):
            return _Value(kind, offset, text)
        self._fail("expected a value in the reproducer trailer", offset)


def _unescape(body: str) -> str:
    def replace(match: re.Match[str]) -> str:
        simple, hexa = match.groups()
        if simple is not None:
            return {"n": "\n", "t": "\t"}.get(simple, simple)
        return chr(int(hexa, 16))

    return _ESCAPE.sub(replace, body)


_EXPECTED = (
    "expected the input to end with a reproducer trailer "
    "'{-# external_resources: { mlir_reproducer: { pipeline: \"...\" } } #-}'"
)


def read_trailer(source: SourceFile) -> ReproducerConfig:
    """The reproducer configuration at the end of ``source`` (only whitespace and
    ``//`` comment lines may follow it). Raises `DiagnosticError` located in the
    file when there is none or it is malformed."""
    text = source.text
    end = len(text)
    while True:  # skip trailing whitespace and whole comment lines
        stripped = text[:end].rstrip()
        line_start = stripped.rfind("\n") + 1
        if stripped[line_start:].lstrip().startswith("//"):
            end = line_start
            continue
        end = len(stripped)
        break
    start = text.rfind(TRAILER_OPEN, 0, end)
    while start >= 0 and "//" in text[text.rfind("\n", 0, start) + 1 : start]:
        start = text.rfind(TRAILER_OPEN, 0, start)  # that one is in a comment
    if start < 0:
        raise DiagnosticError.single(_EXPECTED, source.loc(end))
    if not text.endswith(TRAILER_CLOSE, 0, end) or end - start < 2 * len(TRAILER_OPEN):
        raise DiagnosticError.single(
            "unterminated reproducer trailer: expected '#-}' at the end of the input",
            source.loc(start),
        )
    parser = _TrailerParser(source, start + len(TRAILER_OPEN), end - len(TRAILER_CLOSE))
    top = parser.entries(None)

    def group(entries: dict[str, tuple[int, _Value]], key: str, where: int) -> _Value:
        if key not in entries:
            raise DiagnosticError.single(
                f"the reproducer trailer has no '{key}' entry", source.loc(where)
            )
        found = entries[key][1]
        if found.kind != "dict" or found.entries is None:
            raise DiagnosticError.single(
                f"'{key}' in the reproducer trailer must be a dictionary",
                source.loc(found.offset),
            )
        return found

    resources = group(top, "external_resources", start)
    assert resources.entries is not None
    reproducer = group(resources.entries, "mlir_reproducer", resources.offset)
    assert reproducer.entries is not None
    flags: dict[str, bool | None] = {"disable_threading": None, "verify_each": None}
    for key, (offset, found) in reproducer.entries.items():
        if key == "pipeline":
            if found.kind != "string":
                raise DiagnosticError.single(
                    "'pipeline' in the reproducer trailer must be a string",
                    source.loc(found.offset),
                )
        elif key in flags:
            if found.kind != "word" or found.text not in ("true", "false"):
                raise DiagnosticError.single(
                    f"'{key}' in the reproducer trailer must be true or false",
                    source.loc(found.offset),
                )
            flags[key] = found.text == "true"
        else:
            raise DiagnosticError.single(
                f"unknown key '{key}' in 'mlir_reproducer' "
                "(valid: pipeline, disable_threading, verify_each)",
                source.loc(offset),
            )
    if "pipeline" not in reproducer.entries:
        raise DiagnosticError.single(
            "the reproducer trailer has no 'pipeline' entry", source.loc(reproducer.offset)
        )
    pipeline = reproducer.entries["pipeline"][1]
    return ReproducerConfig(
        pipeline=pipeline.text,
        pipeline_offset=pipeline.offset + 1,
        pipeline_escaped=pipeline.escaped,
        verify_each=flags["verify_each"],
        disable_threading=flags["disable_threading"],
        start=start,
    )


def relocate(err: DiagnosticError, config: ReproducerConfig, source: SourceFile) -> DiagnosticError:
    """A pipeline error (``<pipeline>:1:N``) moved to the pipeline's place in the file."""
    moved: list[Diagnostic] = []
    for diagnostic in err.diagnostics:
        offset = config.pipeline_offset
        if diagnostic.location is not None and not config.pipeline_escaped:
            offset += diagnostic.location.col - 1
        moved.append(
            Diagnostic(
                diagnostic.severity, diagnostic.message, source.loc(offset), diagnostic.notes
            )
        )
    return DiagnosticError(moved)
