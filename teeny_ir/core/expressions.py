"""Shape expressions: the tiny integer language of grids, dims and shapes.

Grammar (parsed, never ``eval``-ed)::

    expr   ::= term (('+' | '-') term)*
    term   ::= factor ('*' factor)*
    factor ::= INT | SYMBOL | FUNC '(' expr ',' expr ')' | '(' expr ')'
    FUNC   ::= 'cdiv' | 'floordiv' | 'min' | 'max'
    INT    ::= [0-9]+
    SYMBOL ::= [A-Za-z_][A-Za-z0-9_]*   (not a FUNC name)

Symbols are shape symbols (``B``, the batch) or, inside a kernel family's tile
model, constexpr names. A call of anything but the four functions is an error,
as is any other character: the plan's grid strings are data, not code. Digits
and letters are ASCII only: an Arabic-Indic ``٣`` or a fullwidth digit is an
unexpected character, not a number.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

FUNCTIONS = ("cdiv", "floordiv", "min", "max")
_TOKEN = re.compile(r"\s*(?:([0-9]+)|([A-Za-z_][A-Za-z0-9_]*)|(.))")
"""``[0-9]``, not ``\\d``: ``\\d`` matches every Unicode decimal digit, and ``int``
reads them all (``int("٣") == 3``)."""
_MAX_LENGTH = 1000


class ExpressionError(ValueError):
    """Text that is not an expression of the grammar, or an unbound symbol."""


@dataclass(frozen=True)
class Num:
    value: int


@dataclass(frozen=True)
class Sym:
    name: str


@dataclass(frozen=True)
class BinOp:
    op: str  # '+', '-', '*'
    lhs: Expr
    rhs: Expr


@dataclass(frozen=True)
class Call:
    func: str
    lhs: Expr
    rhs: Expr


Expr = Num | Sym | BinOp | Call


def parse(text: str) -> Expr:
    """Parse an expression (raises ExpressionError with the offending position)."""
    if len(text) > _MAX_LENGTH:
        raise ExpressionError(f"expression longer than {_MAX_LENGTH} characters")
    tokens: list[tuple[str, str, int]] = []
    pos = 0
    for match in _TOKEN.finditer(text):
        if match.end() == match.start():
            break
        number, name, other = match.groups()
        at = match.start() + len(match.group(0)) - len(match.group(0).lstrip())
        if number is not None:
            tokens.append(("int", number, at))
        elif name is not None:
            tokens.append(("name", name, at))
        elif other is not None and not other.isspace():
            if other not in "+-*(),":
                raise ExpressionError(f"unexpected character {other!r} at {at} in '{text}'")
            tokens.append((other, other, at))
        pos = match.end()
    if text[pos:].strip():
        raise ExpressionError(f"unexpected text at {pos} in '{text}'")
    parser = _Parser(tokens, text)
    expr = parser.expr(0)
    if parser.index != len(tokens):
        raise ExpressionError(f"unexpected '{tokens[parser.index][1]}' in '{text}'")
    return expr


class _Parser:
    def __init__(self, tokens: list[tuple[str, str, int]], text: str) -> None:
        self.tokens = tokens
        self.text = text
        self.index = 0

    def peek(self) -> str | None:
        return self.tokens[self.index][0] if self.index < len(self.tokens) else None

    def take(self, kind: str) -> str:
        if self.peek() != kind:
            found = self.tokens[self.index][1] if self.index < len(self.tokens) else "end"
            raise ExpressionError(f"expected '{kind}', found '{found}' in '{self.text}'")
        value = self.tokens[self.index][1]
        self.index += 1
        return value

    def expr(self, depth: int) -> Expr:
        if depth > 64:
            raise ExpressionError(f"expression nested too deeply in '{self.text[:40]}...'")
        node = self.term(depth)
        while self.peek() in ("+", "-"):
            op = self.take(self.peek() or "")
            node = BinOp(op, node, self.term(depth))
        return node

    def term(self, depth: int) -> Expr:
        node = self.factor(depth)
        while self.peek() == "*":
            self.take("*")
            node = BinOp("*", node, self.factor(depth))
        return node

    def factor(self, depth: int) -> Expr:
        kind = self.peek()
        if kind == "int":
            return Num(int(self.take("int")))
        if kind == "(":
            self.take("(")
            inner = self.expr(depth + 1)
            self.take(")")
            return inner
        if kind == "name":
            name = self.take("name")
            if self.peek() == "(":
                if name not in FUNCTIONS:
                    raise ExpressionError(
                        f"call of '{name}' is not allowed (functions: {', '.join(FUNCTIONS)})"
                    )
                self.take("(")
                lhs = self.expr(depth + 1)
                self.take(",")
                rhs = self.expr(depth + 1)
                self.take(")")
                return Call(name, lhs, rhs)
            if name in FUNCTIONS:
                raise ExpressionError(f"'{name}' must be called: {name}(a, b)")
            return Sym(name)
        found = self.tokens[self.index][1] if self.index < len(self.tokens) else "end"
        raise ExpressionError(
            f"expected a number, a symbol or '(', found '{found}' in '{self.text}'"
        )


def evaluate(expr: Expr, env: Mapping[str, int]) -> int:
    """Evaluate with integer semantics (``cdiv`` rounds up, ``floordiv`` down)."""
    if isinstance(expr, Num):
        return expr.value
    if isinstance(expr, Sym):
        if expr.name not in env:
            raise ExpressionError(f"unbound symbol '{expr.name}'")
        return env[expr.name]
    lhs, rhs = evaluate(expr.lhs, env), evaluate(expr.rhs, env)
    if isinstance(expr, BinOp):
        return lhs + rhs if expr.op == "+" else lhs - rhs if expr.op == "-" else lhs * rhs
    if expr.func in ("cdiv", "floordiv") and rhs == 0:
        raise ExpressionError(f"division by zero in {expr.func}")
    if expr.func == "cdiv":
        return -((-lhs) // rhs)
    if expr.func == "floordiv":
        return lhs // rhs
    return min(lhs, rhs) if expr.func == "min" else max(lhs, rhs)


def symbols(expr: Expr) -> set[str]:
    if isinstance(expr, Sym):
        return {expr.name}
    if isinstance(expr, Num):
        return set()
    return symbols(expr.lhs) | symbols(expr.rhs)


def format_expr(expr: Expr) -> str:
    """Canonical text; parses back to an equal expression."""
    if isinstance(expr, Num):
        return str(expr.value)
    if isinstance(expr, Sym):
        return expr.name
    if isinstance(expr, Call):
        return f"{expr.func}({format_expr(expr.lhs)}, {format_expr(expr.rhs)})"
    lhs, rhs = format_expr(expr.lhs), format_expr(expr.rhs)
    if expr.op == "*":
        lhs = f"({lhs})" if isinstance(expr.lhs, BinOp) and expr.lhs.op != "*" else lhs
        rhs = f"({rhs})" if isinstance(expr.rhs, BinOp) else rhs
    elif isinstance(expr.rhs, BinOp) and expr.rhs.op != "*":
        rhs = f"({rhs})"
    return f"{lhs} {expr.op} {rhs}"


def eval_text(text: str, env: Mapping[str, int]) -> int:
    return evaluate(parse(text), env)


@functools.lru_cache(maxsize=65536)
def parse_cached(text: str) -> Expr:
    """`parse`, memoised: verifiers and loaders meet the same texts again and again."""
    return parse(text)


Compiled = Callable[[Mapping[str, int]], int]


@functools.lru_cache(maxsize=65536)
def compile_expr(expr: Expr) -> Compiled:
    """A closure that evaluates ``expr`` exactly as `evaluate` does (same errors),
    without walking the tree on every call."""
    if isinstance(expr, Num):
        value = expr.value
        return lambda env: value
    if isinstance(expr, Sym):
        name = expr.name

        def symbol(env: Mapping[str, int]) -> int:
            if name not in env:
                raise ExpressionError(f"unbound symbol '{name}'")
            return env[name]

        return symbol
    lhs, rhs = compile_expr(expr.lhs), compile_expr(expr.rhs)
    if isinstance(expr, BinOp):
        if expr.op == "+":
            return lambda env: lhs(env) + rhs(env)
        if expr.op == "-":
            return lambda env: lhs(env) - rhs(env)
        return lambda env: lhs(env) * rhs(env)
    func = expr.func

    def call(env: Mapping[str, int]) -> int:
        a, b = lhs(env), rhs(env)
        if func in ("cdiv", "floordiv") and b == 0:
            raise ExpressionError(f"division by zero in {func}")
        if func == "cdiv":
            return -((-a) // b)
        if func == "floordiv":
            return a // b
        return min(a, b) if func == "min" else max(a, b)

    return call
