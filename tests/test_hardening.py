"""Bad input of every known class gives a located error and exit code 1.

Each test feeds one class of malformed input (see the notes on xDSL 0.75 in teeny_ir/ir/parsing.py for
the exception types that escape xDSL's parser) through the driver
(``teeny_ir.driver.opt.run``, in-process) and through the Python API
(``teeny_ir.parse_module``) and checks: exit code 1, no traceback, a
``file:LINE:COL: error:`` line on the expected line with a sensible message,
and a `DiagnosticError` carrying a location.
"""

from __future__ import annotations

import io
import re
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

import teeny_ir
from teeny_ir.driver.opt import run

ERROR_LINE = re.compile(r"^(?P<file>.*?):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>.*)$", re.M)
UNREGISTERED = ("--allow-unregistered-dialect",)


@dataclass
class Result:
    rc: int
    out: str
    err: str
    elapsed: float


def opt(data: str | bytes, *args: str, path: Path | None = None) -> Result:
    """Run teeny-opt in-process on ``data`` (stdin, or written to ``path``)."""
    raw = data.encode() if isinstance(data, str) else data
    if path is not None:
        path.write_bytes(raw)
        argv = [str(path), *args]
        stdin = io.BytesIO(b"")
    else:
        argv = ["-", *args]
        stdin = io.BytesIO(raw)
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    rc = run(argv, stdin, out, err)
    return Result(rc, out.getvalue(), err.getvalue(), time.perf_counter() - start)


def assert_error(result: Result, line: int, *words: str, filename: str = "-") -> re.Match[str]:
    """Exit 1, no traceback, first error on ``line`` mentioning one of ``words``."""
    assert "Traceback" not in result.err, result.err
    assert result.rc == 1, f"rc={result.rc}\nstderr:\n{result.err}"
    match = ERROR_LINE.search(result.err)
    assert match is not None, f"no located 'FILE:LINE:COL: error:' line in:\n{result.err}"
    assert match["file"] == filename, result.err
    assert int(match["line"]) == line, f"expected line {line}:\n{result.err}"
    assert int(match["col"]) >= 1, result.err
    if words:
        message = match["msg"].lower()
        assert any(w.lower() in message for w in words), (
            f"message {match['msg']!r} mentions none of {words}"
        )
    assert len(match["msg"]) < 1000, "message is unreasonably long"
    assert result.out == "", "no IR may be printed for bad input"
    return match


def assert_api_error(data: str | bytes, line: int, *words: str) -> None:
    """parse_module raises DiagnosticError whose first error is located on ``line``."""
    with pytest.raises(teeny_ir.DiagnosticError) as info:
        teeny_ir.parse_module(data, filename="api.mlir")
    diagnostics = info.value.diagnostics
    assert diagnostics, "DiagnosticError without diagnostics"
    first = diagnostics[0]
    assert first.severity.value == "error"
    assert first.location is not None, f"unlocated: {first.message}"
    assert first.location.filename == "api.mlir"
    assert first.location.line == line, f"{first.location}: {first.message}"
    if words:
        assert any(w.lower() in first.message.lower() for w in words), first.message


def check(
    data: str | bytes, line: int, *words: str, args: tuple[str, ...] = (), api: bool = True
) -> Result:
    result = opt(data, *args)
    assert_error(result, line, *words)
    if api and not args:
        assert_api_error(data, line, *words)
    return result


VALID = "func.func @f(%a: i32) -> i32 {\n  %0 = arith.addi %a, %a : i32\n  return %0 : i32\n}\n"


# --- unterminated strings (the stock lexer regex is exponential) ------------


@pytest.mark.parametrize(
    "text",
    [
        'func.func @f() attributes {a = "' + "a" * 64 + "\n}\n",
        'func.func @f() attributes {a = "' + "a" * 4000,
        'func.func @f() attributes {a = "' + "\\n" * 40 + "a" * 40 + "\n}\n",
        'func.func @f() attributes {a = "' + "\\\\" * 40 + "\\",
        'func.func @"' + "a" * 80 + "() {\n  return\n}\n",
    ],
    ids=["plain", "long-eof", "escapes", "backslashes", "symbol"],
)
def test_unterminated_string_is_fast(text: str) -> None:
    result = opt(text)
    assert result.elapsed < 5.0, f"took {result.elapsed:.2f} s"
    assert_error(result, 1, "string", "expected")
    start = time.perf_counter()
    assert_api_error(text, 1)
    assert time.perf_counter() - start < 5.0


def test_unterminated_string_in_unregistered_op() -> None:
    text = '"test.op"() {a = "' + "b" * 64 + "\n"
    result = opt(text, *UNREGISTERED)
    assert result.elapsed < 5.0
    assert_error(result, 1, "string")


# --- non-UTF-8 input ------------------------------------------------------


def test_non_utf8_byte_on_line_3_stdin() -> None:
    data = b"func.func @f() {\n  return\n  // caf\xff here\n}\n"
    match = assert_error(opt(data), 3, "utf-8", "utf8", "byte")
    assert int(match["col"]) == 9
    assert_api_error(data, 3, "utf-8", "utf8", "byte")


def test_non_utf8_byte_in_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.mlir"
    data = b"func.func @f() {\n  return\n  \xff }\n"
    assert_error(opt(data, path=path), 3, "utf-8", "byte", filename=str(path))


@pytest.mark.parametrize(
    "bad",
    [b"\x80", b"\xc3", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"],
    ids=["continuation", "truncated", "overlong", "surrogate", "5-byte"],
)
def test_non_utf8_variants(bad: bytes) -> None:
    data = b"func.func @f() {\n  return\n}\n// " + bad + b"\n"
    assert_error(opt(data), 4, "utf-8", "byte")
    assert_error(opt(data, "--split-input-file"), 4, "utf-8", "byte")


def test_non_utf8_at_end_of_file() -> None:
    data = VALID.encode() + b"\xe2\x82"
    assert_error(opt(data), 5, "utf-8", "byte")


# --- deep nesting ---------------------------------------------------------


def test_deep_type_nesting() -> None:
    text = (
        "// deep types\nfunc.func @f(%a: "
        + "tuple<" * 3000
        + "i32"
        + ">" * 3000
        + ") {\n  return\n}\n"
    )
    result = check(text, 2, "nest", "deep")
    assert result.elapsed < 5.0


def test_deep_region_nesting() -> None:
    text = (
        '// deep regions\n"t.op"() '
        + '({"t.op"() ' * 3000
        + ": () -> ()})" * 3000
        + " : () -> ()\n"
    )
    check(text, 2, "nest", "deep", args=UNREGISTERED)


def test_deep_region_nesting_multiline() -> None:
    lines = ["func.func @f() {"]
    lines += ['  "t.op"() ({'] * 3000
    lines += ["  }) : () -> ()"] * 3000
    lines += ["  return", "}"]
    result = opt("\n".join(lines) + "\n", *UNREGISTERED)
    assert "Traceback" not in result.err
    assert result.rc == 1, result.err
    match = ERROR_LINE.search(result.err)
    assert match is not None, result.err
    assert 2 <= int(match["line"]) <= 3001, result.err
    assert "nest" in match["msg"] or "deep" in match["msg"], match["msg"]


def test_deep_dense_literal_nesting() -> None:
    text = (
        "func.func @f() {\n  %0 = arith.constant dense<"
        + "[" * 3000
        + "1"
        + "]" * 3000
        + "> : tensor<1xi32>\n  return\n}\n"
    )
    check(text, 2, "nest", "deep")


def test_deep_attribute_dictionary_nesting() -> None:
    text = (
        "func.func @f() attributes {a = " + "{a = " * 3000 + "1" + "}" * 3000 + "} {\n  return\n}\n"
    )
    check(text, 1, "nest", "deep")


def test_moderate_nesting_is_accepted() -> None:
    depth = 40
    text = (
        "func.func @f() {\n"
        + '"t.op"() ({' * depth
        + '"t.x"() : () -> ()'
        + "}) : () -> ()" * depth
        + "\n  return\n}\n"
    )
    for args in ((), ("-p", "cse,canonicalize,dce"), ("--mlir-print-op-generic",)):
        result = opt(text, *UNREGISTERED, *args)
        assert result.rc == 0, result.err
        assert result.out.count('"t.op"') == depth


# --- values that are too large --------------------------------------------


def test_huge_integer_type_width() -> None:
    check("func.func @f(%a: i8000000000) {\n  return\n}\n", 1, "bitwidth", "width", "large")


@pytest.mark.parametrize(
    "type_", ["si99999999999999999999", "complex<i8000000000>", "tensor<2xui16777216>"]
)
def test_huge_integer_type_width_variants(type_: str) -> None:
    check(
        f"func.func @f() {{\n  return\n}}\nfunc.func @g(%a: {type_}) {{\n  return\n}}\n",
        4,
        "bitwidth",
        "width",
        "large",
    )


def test_huge_tensor_dimension() -> None:
    check(
        "func.func @f(%a: tensor<99999999999999x3xf32>) {\n  return\n}\n",
        1,
        "dimension",
        "large",
        "limit",
    )


@pytest.mark.parametrize(
    "text",
    [
        "func.func @f() {\n  %0 = arith.constant \u0663 : i64\n  return\n}\n",  # ARABIC-INDIC 3
        "func.func @f() {\n  %0 = arith.constant \uff11 : i64\n  return\n}\n",  # FULLWIDTH 1
        "func.func @f() {\n  %0 = arith.constant \u00bd : i64\n  return\n}\n",  # VULGAR 1/2
        "func.func @f() {\n  %0 = arith.constant 1\u0663 : i64\n  return\n}\n",
        "func.func @f() {\n  return\n}\nfunc.func @g(%a: tensor<\u0663xf32>) {\n  return\n}\n",
    ],
    ids=["arabic-indic", "fullwidth", "fraction", "ascii-then-arabic-indic", "in-a-type"],
)
def test_only_ascii_digits_are_numbers(text: str) -> None:
    # xDSL's lexer starts a number at any str.isnumeric() character, and int() reads
    # every Unicode decimal digit: "tensor<\u0663xf32>" was tensor<3xf32>.
    check(text, 4 if "@g" in text else 2, "unexpected character")


def test_5000_digit_integer_literal() -> None:
    text = "func.func @f() {\n  %0 = arith.constant " + "9" * 5000 + " : i32\n  return\n}\n"
    result = check(text, 2, "digit", "large")
    assert result.elapsed < 5.0


def test_5000_digit_integer_in_type() -> None:
    check(
        "func.func @f(%a: tensor<" + "7" * 5000 + "xf32>) {\n  return\n}\n",
        1,
        "digit",
        "large",
        "dimension",
    )


# --- duplicate block labels ------------------------------------------------


DUPLICATE_LABELS = {
    "func-forward-reference": (
        'func.func @f() {\n  "test.br"() [^bb1] : () -> ()\n^bb1:\n'
        '  "test.br"() [^bb1] : () -> ()\n^bb1:\n  return\n}\n',
        5,
        UNREGISTERED,
    ),
    "func-no-branch": (
        "func.func @f() {\n  return\n^bb1:\n  return\n^bb1:\n  return\n}\n",
        5,
        (),
    ),
    "func-two-successors": (
        'func.func @f(%c: i1) {\n  "test.cond_br"(%c) [^a, ^b] : (i1) -> ()\n^a:\n  return\n'
        "^b:\n  return\n^a:\n  return\n}\n",
        7,
        UNREGISTERED,
    ),
    "generic-entry": (
        '"t.op"() ({\n^bb0:\n  "t.a"() : () -> ()\n^bb0:\n  "t.b"() : () -> ()\n}) : () -> ()\n',
        4,
        UNREGISTERED,
    ),
    "generic-successor": (
        '"t.op"() ({\n^bb0:\n  "t.a"() [^bb1] : () -> ()\n^bb1:\n  "t.b"() : () -> ()\n'
        '^bb1:\n  "t.c"() : () -> ()\n}) : () -> ()\n',
        6,
        UNREGISTERED,
    ),
    "generic-with-args": (
        '"t.op"() ({\n^bb0(%x: i32):\n  "t.a"() [^bb1] : () -> ()\n^bb1(%y: i32):\n'
        '  "t.b"() : () -> ()\n^bb1(%z: i32):\n  "t.c"() : () -> ()\n}) : () -> ()\n',
        6,
        UNREGISTERED,
    ),
}


@pytest.mark.parametrize("name", sorted(DUPLICATE_LABELS))
def test_duplicate_block_label(name: str) -> None:
    text, line, args = DUPLICATE_LABELS[name]
    check(text, line, "redefin", "re-declar", "already defined", "duplicate", args=args)


# --- file-metadata trailers ------------------------------------------------


REPRODUCER = (
    '{-# external_resources: { mlir_reproducer: { pipeline: "builtin.module(cse)", '
    "disable_threading: true, verify_each: true } } #-}\n"
)


@pytest.mark.parametrize("args", [(), ("-p", "cse"), ("--split-input-file",)])
def test_reproducer_trailer_is_accepted(args: tuple[str, ...]) -> None:
    result = opt(VALID + "\n" + REPRODUCER, *args)
    assert result.rc == 0, result.err
    assert "Traceback" not in result.err
    assert "builtin.module {" in result.out
    assert "arith.addi %a, %a : i32" in result.out
    teeny_ir.parse_module(VALID + REPRODUCER)


@pytest.mark.parametrize(
    ("trailer", "words"),
    [
        ("{-# external_resources: { mlir_reproducer: { pipeline: , } } #-}", ("expected",)),
        ('{-# external_resources: { mlir_reproducer: { pipeline: "x" } #-}', ("expected",)),
        ("{-# external_resources: { mlir_reproducer: { pipeline: [1] } } #-}", ("expected",)),
        ('{-# external_resources: { "key": 1 } #-}', ("expected",)),
        ("{-# external_resources: 42 #-}", ("expected",)),
        ('{-# external_resources: { mlir_reproducer: { pipeline: "x" } } ', ("expected",)),
        ("{-# garbage #-}", ("expected",)),
    ],
)
def test_malformed_reproducer_trailer(trailer: str, words: tuple[str, ...]) -> None:
    text = VALID + "\n" + trailer + "\n"
    result = opt(text)
    assert "Traceback" not in result.err
    assert result.rc == 1, result.err
    match = ERROR_LINE.search(result.err)
    assert match is not None, result.err
    assert int(match["line"]) in (6, 7), result.err
    if words:
        assert any(w in match["msg"].lower() for w in words), match["msg"]
    with pytest.raises(teeny_ir.DiagnosticError) as info:
        teeny_ir.parse_module(text)
    assert info.value.diagnostics[0].location is not None


@pytest.mark.parametrize(
    "trailer",
    [
        '{-# dialect_resources: { builtin: { blob1: "zz" } } #-}',
        "{-# dialect_resources: { builtin: { blob1: 123 } } #-}",
        "{-# dialect_resources: { builtin: 5 } #-}",
        '{-# dialect_resources: { nodialect: { b: "0x00" } } #-}',
        "{-# dialect_resources: { @@ garbage } #-}",
        '{-# dialect_resources: { builtin: { "blob1": "0x08000000" } } #-}',
        "{-# dialect_resources: [[[ #-}",
    ],
)
def test_dialect_resources_garbage(trailer: str) -> None:
    check(VALID + "\n" + trailer + "\n", 6)


# --- empty input ------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["", "// just a comment\n// another one\n", "\n\n   \t\n", "// no newline at end"],
    ids=["empty", "comments", "blank", "comment-no-newline"],
)
def test_empty_input_is_an_empty_module(text: str) -> None:
    for args in ((), ("--split-input-file",), ("-p", "cse,canonicalize,dce")):
        result = opt(text, *args)
        assert result.rc == 0, result.err
        assert result.err == ""
        assert "builtin.module {" in result.out
        assert "func" not in result.out
    module = teeny_ir.parse_module(text)
    assert not list(module.body.block.ops)


def test_empty_file_on_disk(tmp_path: Path) -> None:
    result = opt(b"", path=tmp_path / "empty.mlir")
    assert result.rc == 0, result.err
    assert "builtin.module {" in result.out


def test_empty_split_chunks() -> None:
    result = opt("// -----\n// -----\n", "--split-input-file")
    assert result.rc == 0, result.err
    assert result.out.count("builtin.module {") == 3


# --- SSA values -------------------------------------------------------------


def test_value_used_before_definition() -> None:
    # mlir-opt: "operand #0 does not dominate this use" at the use.
    text = (
        "func.func @f() -> i32 {\n  %1 = arith.addi %0, %0 : i32\n"
        "  %0 = arith.constant 1 : i32\n  return %1 : i32\n}\n"
    )
    check(text, 2, "dominate", "before", "defin")


@pytest.mark.parametrize(
    "args", [(), ("-p", "cse,canonicalize,dce")], ids=["verify", "canonicalize"]
)
def test_value_used_by_its_own_definition(args: tuple[str, ...]) -> None:
    # Unchecked, this made `canonicalize` crash (exit 2, "Attempting to delete
    # SSA value that still has uses").
    text = (
        "func.func @f(%a: i32) -> i32 {\n  %c0 = arith.constant 0 : i32\n"
        "  %0 = arith.addi %0, %c0 : i32\n  return %0 : i32\n}\n"
    )
    check(text, 3, "dominate", "before", "defin", args=args)


# Uses in reachable blocks that the defining block does not dominate; mlir-opt:
# "operand #0 does not dominate this use" at the use. Branches are generic
# unregistered terminators with successors ("test.br", "test.cond_br").
NOT_DOMINATED = {
    # entry -> ^bb1 -> ^bb2 -> ^bb1: ^bb2 does not dominate ^bb1.
    "loop": (
        'func.func @f() {\n  "test.br"() [^bb1] : () -> ()\n^bb1:\n'
        '  %x = arith.addi %y, %y : i32\n  "test.br"() [^bb2] : () -> ()\n^bb2:\n'
        '  %y = arith.constant 1 : i32\n  "test.br"() [^bb1] : () -> ()\n}\n',
        4,
    ),
    # entry -> ^a | ^b -> ^join: ^a does not dominate ^join.
    "diamond": (
        'func.func @f(%c: i1) {\n  "test.cond_br"(%c) [^a, ^b] : (i1) -> ()\n^a:\n'
        '  %y = arith.constant 1 : i32\n  "test.br"() [^join] : () -> ()\n^b:\n'
        '  "test.br"() [^join] : () -> ()\n^join:\n  %z = arith.addi %y, %y : i32\n'
        "  return\n}\n",
        9,
    ),
    # The same loop in the region of an unregistered op.
    "generic-region": (
        '"test.op"() ({\n  "test.br"() [^bb1] : () -> ()\n^bb1:\n'
        '  "test.use"(%y) : (i32) -> ()\n  "test.br"() [^bb2] : () -> ()\n^bb2:\n'
        '  %y = "test.def"() : () -> i32\n  "test.br"() [^bb1] : () -> ()\n}) : () -> ()\n',
        4,
    ),
    # The use sits in a region nested in the non-dominated block.
    "nested-use": (
        'func.func @f() {\n  "test.br"() [^bb1] : () -> ()\n^bb1:\n  "test.op"() ({\n'
        '    "test.use"(%y) : (i32) -> ()\n  }) : () -> ()\n  "test.br"() [^bb2] : () -> ()\n'
        '^bb2:\n  %y = "test.def"() : () -> i32\n  "test.br"() [^bb1] : () -> ()\n}\n',
        5,
    ),
}


@pytest.mark.parametrize("name", sorted(NOT_DOMINATED))
@pytest.mark.parametrize(
    "args", [(), ("-p", "cse,canonicalize,dce")], ids=["verify", "canonicalize"]
)
def test_value_used_in_a_block_its_definition_does_not_dominate(
    name: str, args: tuple[str, ...]
) -> None:
    text, line = NOT_DOMINATED[name]
    check(text, line, "operand #0 does not dominate this use", args=(*UNREGISTERED, *args))


def test_unregistered_op_is_named_in_its_dominance_error() -> None:
    # mlir-opt: "'test.use' op operand #0 does not dominate this use".
    match = assert_error(opt(NOT_DOMINATED["generic-region"][0], *UNREGISTERED), 4)
    assert match["msg"] == "'test.use' op operand #0 does not dominate this use", match["msg"]


@pytest.mark.parametrize(
    "text",
    [
        # The definition in the entry block dominates every block.
        "func.func @f(%c: i1) {\n  %y = arith.constant 1 : i32\n"
        '  "test.cond_br"(%c) [^a, ^b] : (i1) -> ()\n^a:\n  "test.br"() [^join] : () -> ()\n'
        '^b:\n  "test.br"() [^join] : () -> ()\n^join:\n  %z = arith.addi %y, %y : i32\n'
        "  return\n}\n",
        # ^bb1 is unreachable: as in MLIR, uses there are not checked.
        "func.func @f() {\n  return\n^bb1:\n  %x = arith.addi %y, %y : i32\n"
        '  "test.br"() [^bb2] : () -> ()\n^bb2:\n  %y = arith.constant 1 : i32\n'
        '  "test.br"() [^bb1] : () -> ()\n}\n',
    ],
    ids=["dominated", "unreachable"],
)
def test_cross_block_use_is_accepted(text: str) -> None:
    result = opt(text, *UNREGISTERED)
    assert result.rc == 0, result.err
    assert result.err == ""
    assert "arith.addi %y, %y : i32" in result.out


def test_undefined_value_is_reported_at_its_use() -> None:
    # mlir-opt: "use of undeclared SSA value name" at the use (line 2).
    text = "func.func @f() -> i32 {\n  %1 = arith.addi %0, %0 : i32\n\n\n  return %1 : i32\n}\n"
    check(text, 2, "undeclared", "not defined", "undefined")


def test_undefined_value_in_graph_op() -> None:
    text = (
        "func.func @f() -> tensor<1x4xf32> {\n"
        "  %y = graph.silu %x : tensor<1x4xf32>\n"
        "  return %y : tensor<1x4xf32>\n}\n"
    )
    check(text, 2, "undeclared", "not defined", "undefined")


def test_redefined_value() -> None:
    text = (
        "func.func @f() {\n  %0 = arith.constant 1 : i32\n"
        "  %0 = arith.constant 2 : i32\n  return\n}\n"
    )
    check(text, 3, "already defined", "redefin")


def test_value_type_mismatch() -> None:
    text = (
        "func.func @f() {\n  %0 = arith.constant 1 : i64\n"
        "  %1 = arith.addi %0, %0 : i32\n  return\n}\n"
    )
    check(text, 3, "type")


# --- ops --------------------------------------------------------------------


def test_unknown_op() -> None:
    check(
        "func.func @f() {\n  %0 = arith.frobnicate : i32\n  return\n}\n",
        2,
        "arith.frobnicate",
        "not registered",
        "unknown",
    )


def test_unknown_generic_op() -> None:
    check('func.func @f() {\n  "foo.bar"() : () -> ()\n  return\n}\n', 2, "foo.bar")


def test_unknown_dialect_type() -> None:
    check("func.func @f(%a: !foo.bar) {\n  return\n}\n", 1, "foo.bar", "registered", "unknown")


@pytest.mark.parametrize(
    "body",
    [
        "%0, %1 = arith.constant 1 : i32",
        "%0:2 = arith.constant 1 : i32",
        '%0 = "arith.constant"() {value = 1 : i32} : () -> (i32, i32)',
        "%0:99999999999999999 = arith.constant 1 : i32",
    ],
)
def test_wrong_result_count(body: str) -> None:
    check("func.func @f() {\n  " + body + "\n  return\n}\n", 2, "result")


def test_huge_result_count_unregistered() -> None:
    text = 'func.func @f() {\n  %0:99999999999999999 = "t.op"() : () -> i32\n  return\n}\n'
    check(text, 2, "result", args=UNREGISTERED)


def test_verifier_error_is_located_at_the_op() -> None:
    text = "func.func @f() -> i64 {\n  %0 = arith.constant 1 : i32\n  return %0 : i32\n}\n"
    check(text, 3, "return", "type", "result")


# --- attribute verifiers failing during parsing ------------------------------
# The attribute is on line 2; the next token (`return`) is on line 3 or later.


def test_dense_wrong_element_count() -> None:
    text = (
        "func.func @f() {\n  %0 = arith.constant dense<[1, 2, 3]> : tensor<2xi32>\n\n\n"
        "  return\n}\n"
    )
    check(text, 2, "shape", "element", "mismatch")


def test_integer_out_of_range_for_type() -> None:
    text = "func.func @f() {\n  %0 = arith.constant 99999999999 : i8\n  return\n}\n"
    check(text, 2, "range")


def test_huge_dense_splat_shape() -> None:
    text = (
        "func.func @f() {\n  %0 = arith.constant dense<1> : tensor<2147483647x2147483647xi32>\n"
        "  return\n}\n"
    )
    result = check(text, 2, "large", "elements", "too many", "limit")
    assert result.elapsed < 5.0


def test_huge_dense_splat_shape_float() -> None:
    text = (
        "func.func @f() {\n  %0 = arith.constant dense<1.0> : "
        "tensor<2147483647x2147483647x2147483647xf32>\n  return\n}\n"
    )
    check(text, 2, "large", "elements", "too many", "limit")


def test_huge_dense_hex_shape() -> None:
    text = (
        'func.func @f() {\n  %0 = arith.constant dense<"0xFFFF"> : '
        "tensor<2147483647x2147483647xi8>\n  return\n}\n"
    )
    check(text, 2, "elements", "shape", "large")


# --- hex floats ---------------------------------------------------------------


@pytest.mark.parametrize(
    "literal",
    [
        "0x7FF0000000000000FF : f32",
        "0xFFFFFFFFFF : f32",
        "0x1FFFF : f16",
        "0x" + "F" * 5000 + " : f64",
    ],
    ids=["f32-long", "f32-5-bytes", "f16", "5000-digits"],
)
def test_hex_float_out_of_range(literal: str) -> None:
    check(
        "func.func @f() {\n  %0 = arith.constant " + literal + "\n  return\n}\n",
        2,
        "hexadecimal",
        "range",
    )


def test_hex_float_unsupported_type() -> None:
    text = "func.func @f() {\n  %0 = arith.constant 0x123456789ABCDEF0123 : f80\n  return\n}\n"
    check(text, 2)


# --- odd block and value names ----------------------------------------------


@pytest.mark.parametrize(
    ("text", "args"),
    [
        ('func.func @f() {\n  "test.br"() [^bb-1] : () -> ()\n^bb-1:\n  return\n}\n', UNREGISTERED),
        ("func.func @f() {\n  return\n^bb-1:\n  return\n}\n", ()),
    ],
    ids=["successor", "label"],
)
def test_block_name_with_dash_is_valid(text: str, args: tuple[str, ...]) -> None:
    # `^bb-1` is a valid MLIR suffix-id (id-punct includes '-').
    result = opt(text, *args)
    assert result.rc == 0, result.err
    assert "^bb-1:" in result.out


INVALID_LABEL_SITES = {
    "successor": ('func.func @f() {{\n  "test.br"() [{}] : () -> ()\n^bb1:\n  return\n}}\n', 2),
    "label": ("func.func @f() {{\n  return\n{}:\n  return\n}}\n", 3),
}


@pytest.mark.parametrize("site", sorted(INVALID_LABEL_SITES))
@pytest.mark.parametrize("label", ["^0abc", "^"])
def test_invalid_block_name(label: str, site: str) -> None:
    template, line = INVALID_LABEL_SITES[site]
    match = assert_error(opt(template.format(label), *UNREGISTERED), line, "block", "identifier")
    message = match["msg"]
    assert "('" not in message, f"raw exception args in message: {message!r}"
    assert not re.search(r"\{\w+\}", message), f"unformatted placeholder in message: {message!r}"


@pytest.mark.parametrize("suffix", [":-1", ":1.5", ":x"])
def test_bad_result_group_size(suffix: str) -> None:
    check(f"func.func @f() {{\n  %0{suffix} = arith.constant 1 : i32\n  return\n}}\n", 2)


# --- split input -----------------------------------------------------------


def test_errors_in_several_split_chunks_keep_file_lines() -> None:
    text = (
        VALID
        + "// -----\n"
        + "func.func @g(%a: i8000000000) {\n  return\n}\n"
        + "// -----\n"
        + "func.func @h() {\n  %0 = arith.frobnicate : i32\n  return\n}\n"
    )
    result = opt(text, "--split-input-file")
    assert "Traceback" not in result.err
    assert result.rc == 1
    lines = [int(m["line"]) for m in ERROR_LINE.finditer(result.err)]
    assert lines == [6, 11], result.err


# --- unregistered dialects ----------------------------------------------------
# teeny_ir registers func, arith and graph only; `cf` is not among them.

CF_BR = "func.func @f() {\n  %c0 = arith.constant 0 : i32\n  cf.br ^bb1\n^bb1:\n  return\n}\n"


@pytest.mark.parametrize(
    "args",
    [(), ("-p", "cse,canonicalize,dce"), ("--split-input-file",)],
    ids=["verify", "canonicalize", "split"],
)
def test_cf_br_is_not_registered(args: tuple[str, ...]) -> None:
    match = assert_error(opt(CF_BR, *args), 3, "operation 'cf.br' is not registered")
    assert int(match["col"]) == 3, match.group(0)
    with pytest.raises(teeny_ir.DiagnosticError) as info:
        teeny_ir.parse_module(CF_BR, filename="api.mlir")
    first = info.value.diagnostics[0]
    assert first.message == "operation 'cf.br' is not registered"
    assert first.location is not None
    assert (first.location.line, first.location.col) == (3, 3)


def test_unknown_custom_op_with_unregistered_dialects_allowed() -> None:
    # mlir-opt: "custom op 'cf.br' is unknown" at the op name: an unregistered
    # op has no custom form, even with --allow-unregistered-dialect.
    match = assert_error(opt(CF_BR, *UNREGISTERED), 3, "cf.br")
    assert int(match["col"]) == 3, match.group(0)
