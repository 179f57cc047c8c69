"""Hardened parsing, verification and printing of IR text.

xDSL's parser is used as it is, with these changes (each one a trap measured on xDSL 0.75):

- every op gets a ``file:line:col`` location on its name token, recorded as an
  offset while parsing and mapped to a line once at the end (linear time);
- the lexer's string-literal regex is replaced by an equivalent possessive form
  (the stock one backtracks exponentially on an unterminated string);
- limits on bracket nesting, integer-type width and dimension size give
  located errors instead of ``RecursionError``/``MemoryError``;
- every exception type that escapes xDSL for bad input becomes a located
  diagnostic, raised as one `DiagnosticError`;
- empty and comment-only input is an empty module, as in mlir-opt;
- the ``external_resources`` section of a file-metadata trailer (MLIR's
  reproducer configuration) is read and ignored instead of crashing;
- a hexadecimal literal in a float ``dense<...>`` is the element's bit pattern,
  as in MLIR (xDSL reads it as an integer value, so ``0x4B800000``, which its
  printer writes for 16777216.0, came back as 1266679808.0): checked against
  the element width, a leading minus refused, both located (as mlir-opt; so
  is ``-0x... : f32``, which xDSL read as a value). Values are held as Python
  floats, so an f32 signalling NaN reads back quiet; an f64 keeps every bit.

`print_module` prints with `TeenyPrinter`: xDSL's printer with non-finite
floats as MLIR's upper-case hex bits, and float ``dense<...>`` literals written
from their bits (xDSL's splat test compares values, so ``[0.0, -0.0]``
printed as the splat ``0.0``).

Verification (op by op, with dominance) lives in `teeny_ir.ir.verifier`.
"""

from __future__ import annotations

import math
import re
import struct
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import (
    UNKNOWN_LOC,
    AnyFloat,
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    UnregisteredOp,
)
from xdsl.ir import (
    Attribute,
    AttributeInvT,
    Operation,
    SSAValue,
    TypeAttribute,
)
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Input, Span, Token
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRToken, MLIRTokenKind, StringLiteral

from teeny_ir.core.diagnostics import (
    Diagnostic,
    DiagnosticError,
    Severity,
    SourceFile,
)

MAX_NESTING_DEPTH = 96
"""Deepest bracket nesting accepted; xDSL's recursive parser needs roughly ten
Python frames per level, and this keeps well inside the raised frame limit."""

MAX_INTEGER_WIDTH = 16_777_215
"""MLIR's limit on the bit width of an integer type."""

MAX_DIMENSION = 2**31 - 1
"""Largest tensor dimension accepted."""

MAX_DENSE_ELEMENTS = 1 << 20
"""Largest ``dense<...>`` literal accepted: xDSL expands even a splat to every
element (200M elements take ~50 s); large tensors belong in the weights."""

_RECURSION_LIMIT = 6000

# Same language as xDSL's `_unescaped_characters_regex`, written with possessive
# quantifiers so that an unterminated string fails in linear time.
_STRING_LITERAL = re.compile(r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"')

# Tokens that matter for the nesting pre-scan: strings and comments are
# skipped, `->` is not a closing bracket.
_NESTING_TOKENS = re.compile(r'"(?:[^"\\\n]++|\\.)*+"?|//[^\n]*+|->|[<(\[{]|[>)\]}]')
_OPENERS = frozenset("<([{")

_ATTRIBUTE_FAILURES = (
    VerifyException,
    ValueError,
    OverflowError,
    MemoryError,
    NotImplementedError,
    AssertionError,
    struct.error,
)

_INTEGER_TYPE = re.compile(r"[su]?i([0-9]+)")
_PLAIN_TENSOR = re.compile(r"tensor<(?:(?:\?|[0-9]{1,10})x)*(?:f16|bf16|f32|f64|i1|i8|i16|i32|i64)>")
"""A builtin tensor type spelled without spaces, encoding or unusual element
type: its value depends on nothing but its text (`TeenyParser.parse_optional_type`)."""

# --- floats as bits ---------------------------------------------------------
HEX_LITERAL = re.compile(r"(-?)\s*0x[0-9A-Fa-f]+")
"""A (possibly negated) hexadecimal integer token, as MLIR's lexer reads one."""


def float_bits(value: float, type_: AnyFloat) -> int:
    """The bit pattern of ``value`` stored as a ``type_``."""
    return int.from_bytes(type_.pack((value,)), "little")


def float_from_bits(bits: int, type_: AnyFloat) -> float:
    """The value whose ``type_`` bit pattern is ``bits`` (``0 <= bits < 2**width``)."""
    return next(iter(type_.unpack(bits.to_bytes(type_.compile_time_size, "little"), 1)))


def hex_float_text(bits: int, type_: AnyFloat) -> str:
    """MLIR's hexadecimal spelling of a float's bits: ``0x7FC00000`` (f32)."""
    return f"0x{bits:0{(type_.bitwidth + 3) // 4}X}"


def parse_optional_hex_float(parser: AttrParser, type_: AnyFloat) -> float | None:
    """A hexadecimal literal read as the bits of a ``type_``, if one is next.

    As in MLIR, a leading minus is an error, and so are more significant bits
    than ``type_`` has (fewer digits are zero-extended).
    """
    start = parser.pos
    match = HEX_LITERAL.match(parser.lexer.input.content, start)
    if match is None:
        return None
    end = match.end()
    if match.group(1):
        parser.raise_error("hexadecimal float literal should not have a leading minus", start, end)
    bits = parser.parse_integer(allow_boolean=False, allow_negative=False)
    check_hex_float_width(parser, bits, type_, start, end)
    return float_from_bits(bits, type_)


def check_hex_float_width(
    parser: AttrParser, bits: int, type_: AnyFloat, start: int, end: int
) -> None:
    """MLIR's check that a hexadecimal float literal fits its type."""
    if bits.bit_length() > type_.bitwidth:
        parser.raise_error(
            f"hexadecimal float constant out of range for type {type_}: it has "
            f"{type_.bitwidth} bits ({(type_.bitwidth + 3) // 4} hex digits)",
            start,
            end,
        )


class _HardenedLexer(MLIRLexer):
    _unescaped_characters_regex = _STRING_LITERAL

    def _lex_string_literal(self, start_pos: int) -> MLIRToken:
        # xDSL prints non-ASCII characters as escaped UTF-8 bytes ("caf\C3\A9")
        # but lexes such a literal back as bytes, so printed strings would not
        # round-trip; a literal whose bytes are valid UTF-8 is a string.
        token = super()._lex_string_literal(start_pos)
        if token.kind == MLIRTokenKind.BYTES_LIT:
            try:
                StringLiteral.from_span(token.span).bytes_contents.decode("utf-8")
            except UnicodeDecodeError:
                return token
            return Token(MLIRTokenKind.STRING_LIT, token.span)
        return token

    def _lex_number(self, start_pos: int) -> MLIRToken:
        # MLIRLexer starts a number at any character that str.isnumeric() takes and
        # int() then reads ("tensor<\u0663xf32>" would be tensor<3xf32>); MLIR's
        # numbers are ASCII digits.
        first = self.input.at(start_pos)
        if first is None or first not in "0123456789":
            raise ParseError(
                Span(start_pos, start_pos + 1, self.input), f"Unexpected character: {first}"
            )
        return super()._lex_number(start_pos)


class _HexLiteralElement(AttrParser._TensorLiteralElement):  # pyright: ignore[reportPrivateUsage]
    """A hexadecimal integer in a tensor literal: for a float element type it
    is the element's bit pattern (as in MLIR), for an integer type its value."""

    minus = False
    """Whether a '-' was written (``is_negative`` is xDSL's ``value < 0``)."""

    def to_type(self, parser: AttrParser, type: Any) -> Any:
        bits = self.value
        if not isinstance(type, AnyFloat) or not isinstance(bits, int):
            return super().to_type(parser, type)
        if self.minus:
            parser.raise_error(
                "hexadecimal float literal should not have a leading minus",
                at_position=self.span,
            )
        check_hex_float_width(parser, bits, type, self.span.start, self.span.end)
        return float_from_bits(bits, type)


class TeenyParser(Parser):
    """xDSL's parser with op locations, input limits and a tolerant metadata trailer."""

    def __init__(self, ctx: Context, source: SourceFile) -> None:
        # Parser.__init__ builds its own lexer; rebuild the state around ours.
        super().__init__(ctx, "", source.filename)
        from xdsl.parser.generic_parser import ParserState

        self._parser_state = ParserState(_HardenedLexer(Input(source.text, source.filename)))
        self.source = source
        self._name_offsets: list[int] = []
        self._located: list[tuple[Operation, int]] = []
        self._first_use: dict[str, Span] = {}
        self._plain_types: dict[str, TypeAttribute] = {}

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        """Parse the whole buffer: ops, alias definitions and file metadata.

        Unlike xDSL's, an input with no op (empty, comments only, or only a
        metadata trailer) is an empty module, and an undefined value is
        reported at its first use rather than at the end of the file.
        """
        ops: list[Operation] = []
        while (kind := self._current_token.kind) != MLIRTokenKind.EOF:
            if kind in (MLIRTokenKind.HASH_IDENT, MLIRTokenKind.EXCLAMATION_IDENT):
                self._parse_alias_def()  # type: ignore[no-untyped-call]  # untyped in xDSL
            elif kind == MLIRTokenKind.FILE_METADATA_BEGIN:
                self._parse_file_metadata_dictionary()
            elif (op := self.parse_optional_operation()) is not None:
                ops.append(op)
            else:
                self.raise_error("expected an operation, an alias definition or file metadata")
        if self.forward_ssa_references:
            name = next(iter(self.forward_ssa_references))
            self.raise_error(
                f"use of undeclared SSA value name '%{name}'", self._first_use.get(name)
            )
        if len(ops) == 1 and isinstance(ops[0], ModuleOp):
            return ops[0]
        module = ModuleOp(ops)
        module.location = FileLineColLoc(StringAttr(self.source.filename), IntAttr(0), IntAttr(0))
        return module

    def resolve_operand(
        self, operand: UnresolvedOperand, type: AttributeInvT
    ) -> SSAValue[AttributeInvT]:
        if operand.operand_name not in self.ssa_values:
            self._first_use.setdefault(operand.operand_name, operand.span)
        return super().resolve_operand(operand, type)

    def _get_op_by_name(self, name: str) -> type[Operation]:
        op_type = self.ctx.get_optional_op(name, dialect_stack=self._parser_state.dialect_stack)
        start = self._name_offsets[-1]
        at_name = Span(start, start + 1, self.lexer.input)
        if op_type is None:
            self.raise_error(f"operation '{name}' is not registered", at_name)
        if issubclass(op_type, UnregisteredOp) and self.source.text[start] != '"':
            # Only the generic form can spell an op of an unknown dialect.
            self.raise_error(f"custom op '{name}' is unknown", at_name)
        return op_type

    # --- locations -------------------------------------------------------
    def _parse_op_result_list(self) -> list[tuple[Span, int]]:
        results = super()._parse_op_result_list()
        self._name_offsets.append(self._current_token.span.start)
        return results

    def parse_operation(self) -> Operation:
        op = super().parse_operation()
        offset = self._name_offsets.pop()
        if op.location == UNKNOWN_LOC:
            self._located.append((op, offset))
        return op

    def assign_locations(self) -> None:
        """Give every parsed op without an explicit ``loc(...)`` its position."""
        filename = StringAttr(self.source.filename)
        line_col = self.source.line_col
        for op, offset in self._located:
            line, col = line_col(offset)
            op.location = FileLineColLoc(filename, IntAttr(line), IntAttr(col))
        self._located.clear()

    # --- errors raised while building attributes ----------------------------
    @contextmanager
    def _failures_located_here(self) -> Iterator[None]:
        """Attribute constructors verify (or overflow) after the parser has moved
        on; report such a failure where the attribute starts."""
        start = self._current_token.span.start
        try:
            yield
        except ParseError as err:
            # xDSL checks a dense literal against its type after reading the
            # type, so that error points past the attribute.
            if err.span.start > start and err.msg.startswith("Shape mismatch in dense literal"):
                raise ParseError(Span(start, start + 1, self.lexer.input), err.msg) from None
            raise
        except _ATTRIBUTE_FAILURES as err:
            raise ParseError(Span(start, start + 1, self.lexer.input), _describe(err)) from None

    # --- hexadecimal floats -----------------------------------------------
    def _parse_tensor_literal_element(self) -> AttrParser._TensorLiteralElement:
        element = super()._parse_tensor_literal_element()
        span = element.span
        text = span.input.content[span.start : span.end]
        if not HEX_LITERAL.fullmatch(text):
            return element
        hex_element = _HexLiteralElement(element.is_negative, element.value, span)
        hex_element.minus = text.startswith("-")
        return hex_element

    def parse_optional_builtin_int_or_float_attr(self) -> IntegerAttr | FloatAttr | None:
        # xDSL reads ``0x... : f32`` as bits, but ``-0x... : f32`` as a value.
        start = self._current_token.span.start
        match = HEX_LITERAL.match(self.lexer.input.content, start)
        attribute = super().parse_optional_builtin_int_or_float_attr()
        if match is not None and match.group(1) and isinstance(attribute, FloatAttr):
            self.raise_error(
                "hexadecimal float literal should not have a leading minus",
                Span(start, match.end(), self.lexer.input),
            )
        return attribute

    def parse_optional_attribute(self) -> Attribute | None:
        with self._failures_located_here():
            return super().parse_optional_attribute()

    def parse_attribute(self) -> Attribute:
        with self._failures_located_here():
            return super().parse_attribute()

    # --- speed -----------------------------------------------------------
    def parse_optional_type(self) -> TypeAttribute | None:
        # A graph spells the same few tensor types again and again (30k times in
        # a 10k-op model), and lexing and building one is most of parsing an op.
        # A plain tensor type already parsed (limits checked) is taken from a
        # table by its text, and the lexer resumes after it.
        token = self._current_token
        if token.kind != MLIRTokenKind.BARE_IDENT or token.text != "tensor":
            return super().parse_optional_type()
        match = _PLAIN_TENSOR.match(self.lexer.input.content, token.span.start)
        if match is None:
            return super().parse_optional_type()
        cached = self._plain_types.get(match.group())
        if cached is not None:
            self._resume_from(match.end())
            return cached
        parsed = super().parse_optional_type()
        between = self.lexer.input.content[match.end() : self.pos]
        if parsed is not None and not between.strip():
            self._plain_types[match.group()] = parsed
        return parsed

    # --- limits ----------------------------------------------------------
    def _parse_optional_integer_or_float_type(self) -> TypeAttribute | None:
        token = self._current_token
        if token.kind == MLIRTokenKind.BARE_IDENT:
            match = _INTEGER_TYPE.fullmatch(token.text)
            if match is not None and (
                len(match.group(1)) > 9 or int(match.group(1)) > MAX_INTEGER_WIDTH
            ):
                self.raise_error(
                    f"integer bitwidth is limited to {MAX_INTEGER_WIDTH} bits", token.span
                )
        return super()._parse_optional_integer_or_float_type()

    def parse_shape_dimension(self, allow_dynamic: bool = True) -> int:
        token = self._current_token
        value = super().parse_shape_dimension(allow_dynamic)
        if value > MAX_DIMENSION:
            self.raise_error(
                f"dimension size {value} exceeds the limit of {MAX_DIMENSION}", token.span
            )
        return value

    def _parse_dense_literal_type(self) -> Any:
        start = self._current_token.span.start
        type_ = super()._parse_dense_literal_type()
        count = math.prod(type_.get_shape())
        if count > MAX_DENSE_ELEMENTS:
            self.raise_error(
                f"dense literal of {count} elements exceeds the limit of "
                f"{MAX_DENSE_ELEMENTS}: large tensors belong in the weights",
                Span(start, start + 1, self.lexer.input),
            )
        return type_

    # --- file metadata ---------------------------------------------------
    def _parse_external_resources(self) -> None:
        """Read ``external_resources: {...}`` (e.g. an MLIR reproducer) and ignore it."""
        self.parse_comma_separated_list(self.Delimiter.BRACES, self._skip_resource_entry)

    def _skip_resource_entry(self) -> None:
        self._parse_token(MLIRTokenKind.BARE_IDENT, "expected a resource key")
        self._parse_token(MLIRTokenKind.COLON, "expected ':' after a resource key")
        if self._current_token.kind == MLIRTokenKind.L_BRACE:
            self.parse_comma_separated_list(self.Delimiter.BRACES, self._skip_resource_entry)
        elif self._current_token.kind in (
            MLIRTokenKind.STRING_LIT,
            MLIRTokenKind.INTEGER_LIT,
            MLIRTokenKind.BARE_IDENT,
        ):
            self._consume_token()
        else:
            self.raise_error("expected a resource value")


def _check_nesting(source: SourceFile) -> None:
    depth = 0
    for match in _NESTING_TOKENS.finditer(source.text):
        char = match.group()
        if char in _OPENERS:
            depth += 1
            if depth > MAX_NESTING_DEPTH:
                raise DiagnosticError.single(
                    f"nesting is deeper than the limit of {MAX_NESTING_DEPTH} levels",
                    source.loc(match.start()),
                )
        elif len(char) == 1 and depth > 0:
            depth -= 1


@contextmanager
def _recursion_headroom() -> Iterator[None]:
    old = sys.getrecursionlimit()
    if old < _RECURSION_LIMIT:
        sys.setrecursionlimit(_RECURSION_LIMIT)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def decode_source(data: bytes, filename: str) -> str:
    """Decode UTF-8 input, turning a bad byte into a located diagnostic."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        prefix = data[: err.start].decode("utf-8", errors="replace")
        source = SourceFile(prefix, filename)
        raise DiagnosticError.single(
            f"invalid UTF-8 byte 0x{data[err.start]:02x} in input", source.loc(len(prefix))
        ) from None


def _describe(err: BaseException) -> str:
    """A one-line message for an exception that escaped xDSL's parser."""
    if isinstance(err, RecursionError):
        return "input is nested too deeply to parse"
    if isinstance(err, MemoryError | OverflowError):
        return "a value in the input is too large"
    if isinstance(err, KeyError):
        return f"invalid input: redefinition or bad reference of {err}"
    if isinstance(err, ValueError) and "integer string conversion" in str(err):
        return "integer literal has too many digits"
    raw = err.args[0] if err.args and isinstance(err.args[0], str) else str(err)
    detail = " ".join(raw.split()) or type(err).__name__
    if isinstance(err, VerifyException):
        return detail
    return f"invalid input: {detail}"


def _parse_error_diagnostic(err: ParseError, source: SourceFile) -> Diagnostic:
    message = err.msg.strip().splitlines()[0] if err.msg.strip() else "parse error"
    # xDSL's lexer forgets the f-string prefix in one message.
    message = message.replace(
        "{first_char}", repr(source.text[err.span.start : err.span.start + 1])
    )
    return Diagnostic(Severity.ERROR, message, source.loc(err.span.start))


def parse_source(source: SourceFile, ctx: Context | None = None) -> ModuleOp:
    """Parse one buffer into a module with located ops (raises DiagnosticError)."""
    if ctx is None:
        from teeny_ir.ir.context import make_context

        ctx = make_context()
    _check_nesting(source)
    parser: TeenyParser | None = None
    try:
        with _recursion_headroom():
            parser = TeenyParser(ctx, source)
            module = parser.parse_module()
            parser.assign_locations()
            return module
    except ParseError as err:
        raise DiagnosticError([_parse_error_diagnostic(err, source)]) from None
    except DiagnosticError:
        raise
    except (Exception, RecursionError, MemoryError) as err:  # noqa: BLE001 - all become diagnostics
        raise DiagnosticError([_unexpected_failure(err, parser, source)]) from None
    except BaseException as err:
        # xDSL's ArgSpecParseError derives from BaseException; let the
        # interpreter's own control flow (KeyboardInterrupt, SystemExit) through.
        if isinstance(err, KeyboardInterrupt | SystemExit | GeneratorExit):
            raise
        raise DiagnosticError([_unexpected_failure(err, parser, source)]) from None


def _unexpected_failure(
    err: BaseException, parser: TeenyParser | None, source: SourceFile
) -> Diagnostic:
    offset = 0
    if parser is not None:
        try:
            offset = parser._current_token.span.start  # pyright: ignore[reportPrivateUsage]
        except Exception:  # noqa: BLE001 - the parser may be half-built
            offset = 0
    return Diagnostic(Severity.ERROR, _describe(err), source.loc(offset))


def parse_module(
    text: str | bytes,
    filename: str = "<string>",
    *,
    first_line: int = 1,
    ctx: Context | None = None,
    verify: bool = True,
) -> ModuleOp:
    """Parse (and by default verify) IR text; bad input raises `DiagnosticError`
    carrying every located message."""
    if isinstance(text, bytes):
        text = decode_source(text, filename)
    module = parse_source(SourceFile(text, filename, first_line), ctx)
    if verify:
        from teeny_ir.ir.verifier import verify_ops

        errors = verify_ops(module)
        if errors:
            raise DiagnosticError(errors)
    return module


class TeenyPrinter(Printer):
    """xDSL's printer with floats that read back as the same bits.

    Finite values print as xDSL (and MLIR) print them: decimal when that round-
    trips, else the hexadecimal bits. Non-finite ones print as MLIR's upper-case
    hex bits. A float ``dense<...>`` prints from its stored bits: a splat only
    when every element has the same bits (so ``-0.0`` survives, and so does a
    NaN's payload), each non-finite element as hex.
    """

    def print_float(self, value: float, type: AnyFloat) -> None:
        if math.isfinite(value):
            super().print_float(value, type)
        else:
            self.print_string(hex_float_text(float_bits(value, type), type))

    def print_attribute(self, attribute: Attribute) -> None:
        if isinstance(attribute, DenseIntOrFPElementsAttr) and isinstance(
            element := attribute.get_element_type(), Float32Type | Float64Type
        ):
            self._print_float_dense(attribute, element)
        else:
            super().print_attribute(attribute)

    def _print_float_dense(
        self, attribute: DenseIntOrFPElementsAttr, element: Float32Type | Float64Type
    ) -> None:
        data = attribute.data.data
        size = element.compile_time_size
        bits = [int.from_bytes(data[i : i + size], "little") for i in range(0, len(data), size)]
        self.print_string("dense<")
        if bits and bits.count(bits[0]) == len(bits):
            self._print_float_bits(bits[0], element)
        elif len(bits) > 100:  # as xDSL: the raw bytes, which read back exactly
            self.print_string(f'"0x{data.hex().upper()}"')
        elif bits:
            self._print_nested(bits, list(attribute.get_shape()), element)
        self.print_string("> : ")
        self.print_attribute(attribute.get_type())

    def _print_nested(
        self, bits: list[int], shape: list[int], element: Float32Type | Float64Type
    ) -> None:
        self.print_string("[")
        if len(shape) > 1:
            step = len(bits) // shape[0]
            self.print_list(
                (bits[i : i + step] for i in range(0, len(bits), step)),
                lambda rows: self._print_nested(rows, shape[1:], element),
            )
        else:
            self.print_list(bits, lambda one: self._print_float_bits(one, element))
        self.print_string("]")

    def _print_float_bits(self, bits: int, element: Float32Type | Float64Type) -> None:
        value = float_from_bits(bits, element)
        if math.isfinite(value):
            super().print_float(value, element)
        else:  # the stored bits, so a signalling NaN is printed as such
            self.print_string(hex_float_text(bits, element))


def print_module(module: Operation, *, generic: bool = False, debuginfo: bool = False) -> str:
    """Print IR text (custom formats unless ``generic``; locations with ``debuginfo``)."""
    from io import StringIO

    stream = StringIO()
    printer = TeenyPrinter(stream=stream, print_generic_format=generic, print_debuginfo=debuginfo)
    printer.print_op(module)
    stream.write("\n")
    return stream.getvalue()
