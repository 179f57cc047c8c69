"""Tests for teeny_ir.driver.pipeline_syntax: parsing, printing, errors, round-trips."""

from __future__ import annotations

import contextlib
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teeny_ir.driver.pipeline_syntax import (
    MAX_DEPTH,
    NestedSpec,
    PassSpec,
    PipelineSyntaxError,
    format_pipeline,
    parse_any,
    parse_pass_list,
    parse_pipeline,
)


def P(name: str, **options: tuple[str, ...]) -> PassSpec:
    """Shorthand: option keywords use '_' for '-'."""
    return PassSpec(name, tuple((k.replace("_", "-"), v) for k, v in options.items()))


def M(*elements: PassSpec | NestedSpec) -> NestedSpec:
    return NestedSpec("builtin.module", elements)


# ---------------------------------------------------------------- parsing


def test_full_example() -> None:
    text = "builtin.module(a,func.func(b,c{opt=1}),d{out-dir=/tmp/x})"
    spec = parse_pipeline(text)
    assert spec == M(
        P("a"),
        NestedSpec("func.func", (P("b"), P("c", opt=("1",)))),
        P("d", out_dir=("/tmp/x",)),
    )
    assert format_pipeline(spec) == text


def test_list_option_and_path() -> None:
    spec = parse_pass_list("emit-triton{out-dir=/tmp/x archs=80,90}")
    assert spec == M(P("emit-triton", out_dir=("/tmp/x",), archs=("80", "90")))
    assert format_pipeline(spec) == "builtin.module(emit-triton{out-dir=/tmp/x archs=80,90})"


def test_unquoted_values_keep_punctuation() -> None:
    spec = parse_pass_list(r"p{a=1.5e-3 b=a.b-c c=x=y d=f(x) e=C:\dir}")
    assert spec.elements[0] == PassSpec(
        "p",
        (
            ("a", ("1.5e-3",)),
            ("b", ("a.b-c",)),
            ("c", ("x=y",)),
            ("d", ("f(x)",)),
            ("e", (r"C:\dir",)),
        ),
    )


def test_quoted_values_and_escapes() -> None:
    spec = parse_pass_list(r'p{msg="hello, world" esc="a\"b\\c" empty="" l="x y",z}')
    assert spec.elements[0] == PassSpec(
        "p",
        (("msg", ("hello, world",)), ("esc", ('a"b\\c',)), ("empty", ("",)), ("l", ("x y", "z"))),
    )
    assert (
        format_pipeline(spec)
        == r'builtin.module(p{msg="hello, world" esc="a\"b\\c" empty="" l="x y",z})'
    )


def test_flags() -> None:
    spec = parse_pass_list("p{verbose fast=false quiet}")
    assert spec.elements[0] == P("p", verbose=("true",), fast=("false",), quiet=("true",))
    assert format_pipeline(spec) == "builtin.module(p{verbose=true fast=false quiet=true})"


def test_braced_option_value_kept_verbatim() -> None:
    text = 'builtin.module(inline{pipeline={func.func(cse,canon{x="}" y=1})} n=2})'
    spec = parse_pipeline(text)
    assert spec.elements[0] == P(
        "inline", pipeline=('{func.func(cse,canon{x="}" y=1})}',), n=("2",)
    )
    assert format_pipeline(spec) == text


def test_nested_two_deep() -> None:
    spec = parse_pipeline("builtin.module(gpu.module(func.func(a,b{k=v}),c),d)")
    assert spec == M(
        NestedSpec("gpu.module", (NestedSpec("func.func", (P("a"), P("b", k=("v",)))), P("c"))),
        P("d"),
    )


def test_empty_lists_and_options() -> None:
    assert parse_pipeline("builtin.module()") == M()
    assert parse_pipeline("builtin.module(func.func())") == M(NestedSpec("func.func", ()))
    assert parse_pass_list("a{}") == M(P("a"))
    assert parse_pass_list("") == parse_pass_list(" \t\n") == M()


@pytest.mark.parametrize(
    "text",
    [
        "builtin.module(a,func.func(b{k=1 f},c))",
        " builtin.module ( a , func.func ( b { k = 1  f } , c ) ) ",
        "builtin.module(\n  a,\n  func.func(\tb{\n k=1\n f\n},c)\n)\n",
    ],
)
def test_whitespace_variants(text: str) -> None:
    spec = parse_pipeline(text)
    assert format_pipeline(spec) == "builtin.module(a,func.func(b{k=1 f=true},c))"


def test_whitespace_around_list_commas() -> None:
    assert parse_pass_list("p{a=1 , 2 ,3 b}") == M(P("p", a=("1", "2", "3"), b=("true",)))


def test_short_form_and_parse_any() -> None:
    short = "a,b{k=v},func.func(c)"
    expected = M(P("a"), P("b", k=("v",)), NestedSpec("func.func", (P("c"),)))
    assert parse_pass_list(short) == parse_any(short) == expected
    assert parse_any("builtin.module(a)") == M(P("a"))
    assert parse_any(" func.func( a ) ") == NestedSpec("func.func", (P("a"),))
    assert parse_pass_list("func.func(a)") == M(NestedSpec("func.func", (P("a"),)))
    assert parse_any("func.func(a),b") == M(NestedSpec("func.func", (P("a"),)), P("b"))
    assert parse_any("a") == M(P("a"))


def test_max_depth_accepted() -> None:
    text = "m(" * MAX_DEPTH + ")" * MAX_DEPTH
    spec = parse_pipeline(text)
    for _ in range(MAX_DEPTH - 1):
        (spec,) = spec.elements  # type: ignore[assignment]
    assert spec == NestedSpec("m", ())


# ---------------------------------------------------------------- errors

ERROR_CASES = [
    # (parser, text, message, column)
    (parse_pipeline, "builtin.module(a", "expected ')' to close '(' at 1:15", 16),
    (parse_pipeline, "builtin.module(a,func.func(b)", "expected ')' to close '(' at 1:15", 29),
    (parse_pipeline, "builtin.module(", "expected pass name or ')'", 15),
    (parse_pipeline, "builtin.module(a))", "unbalanced ')'", 17),
    (parse_pipeline, "builtin.module(a) b", "unexpected text after pipeline", 18),
    (parse_pipeline, "builtin.module(a b)", "expected ',' or ')'", 17),
    (parse_pipeline, "builtin.module(a}", "expected ',' or ')'", 16),
    (parse_pipeline, "a,b", "expected '(' after op anchor 'a'", 1),
    (parse_pipeline, "", "expected op anchor name", 0),
    (parse_pipeline, "(a)", "expected op anchor name", 0),
    (parse_pass_list, "a)", "unbalanced ')'", 1),
    (parse_pass_list, ")", "unbalanced ')'", 0),
    (parse_pass_list, "a{k=v}}", "unbalanced '}'", 6),
    (parse_pass_list, "a b", "expected ',' or end of pipeline", 2),
    (parse_pass_list, "a,,b", "empty pipeline element", 2),
    (parse_pass_list, ",a", "empty pipeline element", 0),
    (parse_pass_list, "a,", "empty pipeline element", 2),
    (parse_pass_list, "m(a, )", "empty pipeline element", 5),
    (parse_pass_list, "{k=v}", "empty pass name before '{'", 0),
    (parse_pass_list, "a,(b)", "empty op anchor name before '('", 2),
    (parse_pass_list, "1abc", "expected pass name", 0),
    (parse_pass_list, "a{k=v", "expected '}' to close '{' at 1:2", 5),
    (parse_pass_list, "a{k={x}", "expected '}' to close '{' at 1:2", 7),
    (parse_pass_list, "a{k={x{y}", "unterminated '{' in option value", 4),
    (parse_pass_list, 'a{k="abc}', "unterminated string", 4),
    (parse_pass_list, 'a{k="abc\\', "unterminated string", 4),
    (parse_pass_list, 'a{k="\\n"}', "invalid escape sequence in string", 5),
    (parse_pass_list, "a{k=1 k=2}", "duplicate option 'k'", 6),
    (parse_pass_list, "a{k f k}", "duplicate option 'k'", 6),
    (parse_pass_list, "a{k=}", "expected option value", 4),
    (parse_pass_list, "a{k= }", "expected option value", 5),
    (parse_pass_list, "a{k=1,}", "expected option value", 6),
    (parse_pass_list, "a{k=1,,2}", "expected option value", 6),
    (parse_pass_list, "a{=1}", "expected option key", 2),
    (parse_pass_list, 'a{k="x"y}', "expected whitespace, ',' or '}' after option value", 7),
    (parse_pass_list, "a{k={x}y}", "expected whitespace, ',' or '}' after option value", 7),
    (parse_pass_list, 'a{k"x"}', "expected whitespace or '}' after option", 3),
    (
        parse_pass_list,
        "m(" * (MAX_DEPTH + 1),
        f"pipeline nesting exceeds the maximum depth of {MAX_DEPTH}",
        2 * MAX_DEPTH + 1,
    ),
]


@pytest.mark.parametrize(("parse", "text", "message", "column"), ERROR_CASES)
def test_errors(parse, text: str, message: str, column: int) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(PipelineSyntaxError) as info:
        parse(text)
    assert (info.value.message, info.value.column) == (message, column)
    assert 0 <= info.value.column <= len(text)


def test_error_str_and_render() -> None:
    text = "builtin.module(a b)"
    with pytest.raises(PipelineSyntaxError) as info:
        parse_pipeline(text)
    assert str(info.value) == "pipeline:1:18: expected ',' or ')'"
    assert info.value.render(text) == (
        "pipeline:1:18: expected ',' or ')'\nbuiltin.module(a b)\n                 ^"
    )


def test_error_location_multiline_and_tabs() -> None:
    text = "builtin.module(\n\ta,,b)"
    with pytest.raises(PipelineSyntaxError) as info:
        parse_pipeline(text)
    assert info.value.column == 19
    assert str(info.value) == "pipeline:2:4: empty pipeline element"
    assert info.value.render() == "pipeline:2:4: empty pipeline element\n\ta,,b)\n\t  ^"


def test_error_pickles() -> None:
    err = PipelineSyntaxError("boom", 3, "abcdef")
    copy = pickle.loads(pickle.dumps(err))
    assert (copy.message, copy.column, str(copy)) == ("boom", 3, "pipeline:1:4: boom")


def test_deep_input_never_recursion_error() -> None:
    for text in [
        "m(" * 100_000,
        "a{k=" + "{" * 100_000,
        "(" * 100_000,
        "a{k=" + "{" * 50_000 + "}" * 50_000 + "}",
    ]:
        with contextlib.suppress(PipelineSyntaxError):
            parse_any(text)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: PassSpec("a b"), "invalid pass name 'a b'"),
        (lambda: PassSpec("a", (("k", ("1",)), ("k", ("2",)))), "duplicate option 'k'"),
        (lambda: PassSpec("a", (("k=", ("1",)),)), "invalid option key 'k='"),
        (lambda: PassSpec("a", (("k", ()),)), "option 'k' has an empty value list"),
        (lambda: NestedSpec("", ()), "invalid op anchor ''"),
    ],
)
def test_invalid_specs_rejected(make, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(") + "$"):
        make()


# ---------------------------------------------------------------- properties

idents = st.from_regex(r"[A-Za-z_][A-Za-z0-9_\-.]{0,6}", fullmatch=True)
awkward = st.sampled_from([*" \t\n,{}\"=\\()'", "", "{a}", "{x=1 y}", '{"}"}', "true"])
value_elements = st.one_of(
    st.text(alphabet=st.sampled_from(list(' ,{}"=\\\tab1./-')), max_size=8),
    st.text(max_size=6),
    awkward,
)
option_values = st.lists(value_elements, min_size=1, max_size=3).map(tuple)
options = st.lists(st.tuples(idents, option_values), max_size=4, unique_by=lambda kv: kv[0]).map(
    tuple
)
passes = st.builds(PassSpec, idents, options)
elements = st.recursive(
    passes,
    lambda children: st.builds(NestedSpec, idents, st.lists(children, max_size=4).map(tuple)),
    max_leaves=12,
)
pipelines = st.builds(NestedSpec, idents, st.lists(elements, max_size=4).map(tuple))


@settings(max_examples=150)
@given(pipelines)
def test_round_trip(spec: NestedSpec) -> None:
    text = format_pipeline(spec)
    assert parse_pipeline(text) == spec
    assert format_pipeline(parse_pipeline(text)) == text


@given(pipelines)
def test_short_form_round_trip(spec: NestedSpec) -> None:
    inner = format_pipeline(spec)[len(spec.anchor) + 1 : -1]
    assert parse_pass_list(inner) == NestedSpec("builtin.module", spec.elements)


pipeline_alphabet = st.sampled_from(list('abm._-=,(){}" \t\n\\1/'))
junk = st.one_of(st.text(), st.text(alphabet=pipeline_alphabet, max_size=40))


@settings(max_examples=1000)
@given(junk)
def test_arbitrary_text_only_raises_syntax_error(text: str) -> None:
    for parse in (parse_pipeline, parse_pass_list, parse_any):
        try:
            spec = parse(text)
        except PipelineSyntaxError as err:
            assert 0 <= err.column <= len(text)
            assert err.render(text).count("\n") == 2
        else:
            canonical = format_pipeline(spec)
            assert parse_pipeline(canonical) == spec
            assert format_pipeline(parse_pipeline(canonical)) == canonical
