"""The shape-expression grammar: parsing, evaluation, canonical text, rejections."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from teeny_ir.core.expressions import (
    BinOp,
    Call,
    Expr,
    ExpressionError,
    Num,
    Sym,
    evaluate,
    format_expr,
    parse,
    symbols,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("B * cdiv(63, 64) * cdiv(37, 64)", 3),
        ("cdiv(65, 64)", 2),
        ("floordiv(65, 64)", 1),
        ("min(B, 2) + max(B, 7)", 9),
        ("B - (2 - 1)", 2),
        ("(B + 1) * 2", 8),
        ("  B*2331 ", 6993),
    ],
)
def test_evaluates(text: str, value: int) -> None:
    assert evaluate(parse(text), {"B": 3}) == value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('__import__("os")', "unexpected character"),
        ("__import__(1, 2)", "call of '__import__' is not allowed"),
        ("B; 1", "unexpected character ';'"),
        ("1 +", "expected a number"),
        ("cdiv(1)", "expected ','"),
        ("cdiv", "must be called"),
        ("B ** 2", "expected a number"),
        ("(" * 100 + "1" + ")" * 100, "nested too deeply"),
        ("1" * 2000, "longer than"),
    ],
)
def test_rejects(text: str, message: str) -> None:
    with pytest.raises(ExpressionError, match=message.replace("(", r"\(").replace("*", r"\*")):
        parse(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("\u0663", "unexpected character '\u0663' at 0 in '\u0663'"),  # ARABIC-INDIC DIGIT THREE
        ("\uff11", "unexpected character '\uff11' at 0 in '\uff11'"),  # FULLWIDTH DIGIT ONE
        ("B * \u0663", "unexpected character '\u0663' at 4 in 'B * \u0663'"),
        ("1\u0663", "unexpected character '\u0663' at 1 in '1\u0663'"),  # not the number 13
        ("B\u00b2", "unexpected character '\u00b2' at 1 in 'B\u00b2'"),  # SUPERSCRIPT TWO
    ],
)
def test_only_ascii_digits_are_numbers(text: str, message: str) -> None:
    # int() reads every Unicode decimal digit (int("\u0663") == 3): the grammar must not.
    with pytest.raises(ExpressionError) as info:
        parse(text)
    assert str(info.value) == message


def test_unbound_symbol_and_division_by_zero() -> None:
    with pytest.raises(ExpressionError, match="unbound symbol 'C'"):
        evaluate(parse("C + 1"), {"B": 1})
    with pytest.raises(ExpressionError, match="division by zero"):
        evaluate(parse("cdiv(B, 0)"), {"B": 1})
    assert symbols(parse("B * cdiv(M, BLOCK_M)")) == {"B", "M", "BLOCK_M"}


def _exprs() -> st.SearchStrategy[Expr]:
    leaves = st.one_of(st.integers(0, 99).map(Num), st.sampled_from(["B", "M"]).map(Sym))
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.builds(BinOp, st.sampled_from(["+", "-", "*"]), inner, inner),
            st.builds(Call, st.sampled_from(["cdiv", "floordiv", "min", "max"]), inner, inner),
        ),
        max_leaves=12,
    )


@given(_exprs())
def test_canonical_text_round_trips(expr: Expr) -> None:
    text = format_expr(expr)
    assert parse(text) == expr
    assert format_expr(parse(text)) == text
