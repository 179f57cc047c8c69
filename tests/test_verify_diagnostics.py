"""Tests for ``--split-input-file`` and ``--verify-diagnostics`` checking."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from teeny_ir.core.diagnostics import Diagnostic, Severity, SourceLoc
from teeny_ir.driver.verify_diagnostics import (
    Expectation,
    check_expectations,
    parse_expectations,
    split_input_file,
)

F = "t.mlir"


def err(line: int, message: str, col: int = 1, severity: Severity = Severity.ERROR) -> Diagnostic:
    return Diagnostic(severity, message, SourceLoc(F, line, col))


def check(text: str, *diags: Diagnostic, first_line: int = 1) -> list[str]:
    return [d.header() for d in check_expectations(text, first_line, F, list(diags))]


# --- split_input_file -------------------------------------------------------


def test_split_no_separator() -> None:
    assert split_input_file("a\nb\n") == [("a\nb\n", 1)]
    assert split_input_file("") == [("", 1)]


def test_split_absolute_lines_and_trailing_whitespace() -> None:
    text = "a\nb\n// -----\nc\n// -----   \t\nd\ne\n"
    assert split_input_file(text) == [("a\nb\n", 1), ("c\n", 4), ("d\ne\n", 6)]


def test_split_only_whole_lines() -> None:
    text = "a // ----- b\n  // -----\n// ------\n// -----x\n"
    assert split_input_file(text) == [(text, 1)]


def test_split_empty_chunks_and_crlf() -> None:
    assert split_input_file("// -----\n// -----\nx") == [("", 1), ("", 2), ("x", 3)]
    assert split_input_file("a\r\n// -----\r\nb\r\n") == [("a\r\n", 1), ("b\r\n", 3)]


LINES = st.lists(
    st.sampled_from(["x", "", "  ", "// -- ---", "y // -----", "//  -----"]), min_size=1, max_size=4
)


@given(st.lists(LINES, min_size=1, max_size=4))
def test_split_roundtrip(chunks: list[list[str]]) -> None:
    text = "\n// -----\n".join("\n".join(lines) for lines in chunks)
    expected: list[tuple[str, int]] = []
    line = 1
    for index, lines in enumerate(chunks):
        tail = "\n" if index < len(chunks) - 1 else ""
        expected.append(("\n".join(lines) + tail, line))
        line += len(lines) + 1
    assert split_input_file(text) == expected


# --- parse_expectations -----------------------------------------------------


def test_parse_forms() -> None:
    text = (
        "op  // expected-error {{on this line}}\n"  # 1
        "// expected-warning@+2 {{two below}}\n"  # 2
        "// expected-remark @-1{{one above}}\n"  # 3
        "op\n"  # 4
        "// expected-note@above {{above}}\n"  # 5
        "// expected-error@below {{below}}\n"  # 6
        "// expected-error@below {{below too}}\n"  # 7
        "op\n"  # 8
        "// expected-error@unknown {{nowhere}}\n"  # 9
        "// expected-error-re {{a {{[0-9]+}} b}}\n"  # 10
    )
    exps, errors = parse_expectations(text, 1)
    assert errors == []
    got = [(e.severity, e.line, e.pattern, e.is_regex, e.source_line, e.column) for e in exps]
    assert got == [
        (Severity.ERROR, 1, "on this line", False, 1, 8),
        (Severity.WARNING, 4, "two below", False, 2, 4),
        (Severity.REMARK, 2, "one above", False, 3, 4),
        (Severity.NOTE, 4, "above", False, 5, 4),
        (Severity.ERROR, 8, "below", False, 6, 4),
        (Severity.ERROR, 8, "below too", False, 7, 4),
        (Severity.ERROR, None, "nowhere", False, 9, 4),
        (Severity.ERROR, 10, "a {{[0-9]+}} b", True, 10, 4),
    ]
    assert isinstance(exps[0], Expectation)


def test_parse_uses_whole_file_lines() -> None:
    exps, _ = parse_expectations(
        "x\n// expected-error@above {{m}}\n// expected-error@-1 {{n}}\n", 41
    )
    assert [(e.line, e.source_line) for e in exps] == [(41, 42), (42, 43)]


def test_parse_above_at_start_and_dangling_below() -> None:
    exps, _ = parse_expectations("// expected-error@above {{a}}\n// expected-error@below {{b}}", 5)
    assert [e.line for e in exps] == [5, 6]


def test_parse_malformed() -> None:
    text = (
        "// expected-error oops\n"
        "// expected-warning@sideways {{x}}\n"
        "// expected-error {{unterminated\n"
        "// expected-error-re {{a {{[}} b}}\n"
        "// expected-error-re {{a {{x}}\n"
        "// expected-error@-9 {{x}}\n"
        "// expected-errors are discussed here, and unexpected-ish words: expected-\n"
    )
    exps, errors = parse_expectations(text, 1, F)
    assert exps == []
    assert [d.header() for d in errors] == [
        "t.mlir:1:4: error: invalid expected-error annotation: expected '{{' in expected-* string",
        (
            "t.mlir:2:4: error: invalid expected-warning annotation: invalid designator '@sideways'"
            " (use @+N, @-N, @above, @below or @unknown)"
        ),
        "t.mlir:3:4: error: invalid expected-error annotation: expected '}}' at end of expected-* string",
        (
            "t.mlir:4:4: error: invalid expected-error annotation: invalid regex: "
            "unterminated character set at position 0"
        ),
        "t.mlir:5:4: error: invalid expected-error annotation: found start of regex with no end '}}'",
        "t.mlir:6:4: error: invalid expected-error annotation: designator '@-9' points before line 1",
    ]


# --- check_expectations -----------------------------------------------------


def test_match_success_substring() -> None:
    text = "%0 = op\n// expected-error@-1 {{'op' has no result}}\n"
    assert check(text, err(1, "custom 'op' has no result type", 6)) == []


def test_missing_expectation_fails() -> None:
    text = "op\n// expected-error@-1 {{boom}}\n"
    assert check(text) == ['t.mlir:2:4: error: expected error "boom" was not produced']


def test_unexpected_diagnostic_fails() -> None:
    assert check("op\n", err(1, "boom", 3)) == ["t.mlir:1:3: error: unexpected error: boom"]
    warning = Diagnostic(Severity.WARNING, "hmm", None)
    assert check("op\n", warning) == ["<unknown>:0:0: error: unexpected warning: hmm"]


def test_wrong_line_or_message_fails() -> None:
    text = "op // expected-error {{boom}}\nop\n"
    assert check(text, err(2, "boom")) == [
        "t.mlir:2:1: error: unexpected error: boom",
        't.mlir:1:7: error: expected error "boom" was not produced',
    ]
    assert len(check(text, err(1, "bang"))) == 2


def test_severity_mismatch_fails() -> None:
    text = "op // expected-error {{boom}}\n"
    assert check(text, err(1, "boom", severity=Severity.WARNING)) == [
        "t.mlir:1:7: error: 'warning' diagnostic emitted when expecting a 'error'",
        't.mlir:1:7: error: expected error "boom" was not produced',
    ]


def test_every_designator_matches() -> None:
    text = (
        "a // expected-error {{e1}}\n"  # 1
        "// expected-warning@+1 {{w2}}\n"  # 2
        "b\n"  # 3
        "// expected-remark@above {{r3}}\n"  # 4
        "// expected-note@below {{n6}}\n"  # 5
        "c\n"  # 6
        "// expected-error@-6 {{f1}}\n"  # 7
        "// expected-error@unknown {{lost}}\n"  # 8
    )
    diags = [
        err(1, "e1"),
        err(3, "w2", severity=Severity.WARNING),
        err(3, "r3", severity=Severity.REMARK),
        err(6, "n6", severity=Severity.NOTE),
        err(1, "f1"),
        Diagnostic(Severity.ERROR, "lost", None),
    ]
    assert check(text, *diags) == []


def test_unknown_only_matches_unlocated() -> None:
    text = "a // expected-error@unknown {{lost}}\n"
    assert check(text, err(1, "lost")) == [
        "t.mlir:1:1: error: unexpected error: lost",
        't.mlir:1:6: error: expected error "lost" was not produced',
    ]


def test_regex_expectation() -> None:
    text = "a // expected-error-re {{type 'i{{[0-9]+}}' (is|was) bad.}}\n"
    assert check(text, err(1, "op: type 'i32' (is|was) bad.")) == []
    # Outside {{ }} the text is literal: '(' ')' '|' '.' are not regex syntax.
    assert len(check(text, err(1, "type 'i32' is bad."))) == 2
    assert len(check(text, err(1, "type 'i32' (is|was) bad!"))) == 2
    assert len(check(text, err(1, "type 'ix' (is|was) bad."))) == 2


def test_notes_are_checked() -> None:
    text = "a // expected-error {{bad}}\nb // expected-note {{defined here}}\n"
    main = err(1, "bad")
    main.attach_note("defined here", SourceLoc(F, 2, 1))
    assert check(text, main) == []
    lonely = err(1, "bad")
    lonely.attach_note("unlocated", None)
    assert check(text, lonely) == [
        "<unknown>:0:0: error: unexpected note: unlocated",
        't.mlir:2:6: error: expected note "defined here" was not produced',
    ]


def test_one_expectation_absorbs_identical_diagnostics() -> None:
    text = "a // expected-error {{dup}}\n"
    assert check(text, err(1, "dup"), err(1, "dup")) == []


def test_other_file_is_unexpected() -> None:
    text = "a // expected-error {{x}}\n"
    other = Diagnostic(Severity.ERROR, "x", SourceLoc("other.mlir", 1, 1))
    assert check(text, other) == [
        "other.mlir:1:1: error: unexpected error: x",
        't.mlir:1:6: error: expected error "x" was not produced',
    ]


def test_malformed_annotation_fails_check() -> None:
    assert check("a // expected-error boom\n") == [
        "t.mlir:1:6: error: invalid expected-error annotation: expected '{{' in expected-* string"
    ]


def test_split_chunks_keep_absolute_lines() -> None:
    text = "a\n// -----\nb\n// expected-error@-1 {{in chunk two}}\n"
    (first, l1), (second, l2) = split_input_file(text)
    assert check(first, first_line=l1) == []
    assert check(second, err(3, "in chunk two"), first_line=l2) == []
    assert check(second, err(1, "in chunk two"), first_line=l2) == [
        "t.mlir:1:1: error: unexpected error: in chunk two",
        't.mlir:4:4: error: expected error "in chunk two" was not produced',
    ]
