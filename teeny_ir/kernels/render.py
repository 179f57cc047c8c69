"""Rendering a kernel variant: a family's Triton source with its slots filled.

The family source (``kernel.py``) is real Python. Rendering, for one variant:

1. replaces each ``pointwise`` constexpr's slot function (``def pointwise(x, y)``,
   ``def activation(v)``) by one that returns the pointwise table's expression
   for the constexpr's value (``none``: the value unchanged); a slot named
   `DERIVATIVE_SLOT` (``activation_grad``) gets the entry's derivative instead;
   a ``program`` constexpr's slot gets the program's steps, one helper each
   (`teeny_ir.core.pointwise_program.Program.triton_slot`);
2. pastes the shared helpers of `teeny_ir.kernels.triton_helpers` after the
   source's imports, so the emitted file is self-contained;
3. renames the kernel function to the variant's name;
4. with ``precision`` other than `DEFAULT_PRECISION` (``ieee``), passes
   ``input_precision=INPUT_PRECISION`` to every ``tl.dot`` of the source and
   defines that module constant (``tf32``, the default, renders the source's
   ``tl.dot`` calls unchanged: Triton's default for fp32 operands is tf32).

Only sanitised identifiers and the table's own text reach the output; no
string from an IR file does (constexpr values are checked against the table
before rendering). Only the standard library is imported.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

from teeny_ir.core import pointwise, pointwise_program
from teeny_ir.kernels.contract import KernelFamily

HELPERS = Path(__file__).with_name("triton_helpers.py")
PRECISIONS = ("tf32", "ieee")
"""``tl.dot``'s fp32 input precisions a variant may be rendered with."""
DEFAULT_PRECISION = "tf32"
DERIVATIVE_SLOT = "derivative"
"""The slot function name that renders the entry's ``derivative_triton``."""


class RenderError(ValueError):
    """A variant that cannot be rendered (an unknown entry, a malformed source)."""


def _function(tree: ast.Module, name: str) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise RenderError(f"the kernel source defines no function '{name}'")


def _first_line(node: ast.FunctionDef) -> int:
    """The 1-based line of the function's first decorator (or its ``def``)."""
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def _slot_source(node: ast.FunctionDef, value: str) -> str:
    """The slot function returning entry ``value``'s expression of its parameters."""
    params = [a.arg for a in node.args.args]
    if params not in (["x"], ["x", "y"]):
        raise RenderError(f"slot '{node.name}' must take (x) or (x, y), got {params}")
    if value == pointwise.NO_ACTIVATION:
        body = "x"
    else:
        try:
            entry, options = pointwise.parse_spelling(value)
        except ValueError as err:
            raise RenderError(str(err)) from None
        if entry.arity > len(params):
            raise RenderError(f"the {entry.arity}-ary '{entry.name}' does not fit slot '{node.name}'")
        try:
            body = (
                entry.derivative_expression(options)
                if node.name == DERIVATIVE_SLOT
                else entry.expression(options)
            )
        except ValueError as err:
            raise RenderError(str(err)) from None
    return f"@triton.jit\ndef {node.name}({', '.join(params)}):\n    return {body}\n"


def _program_source(node: ast.FunctionDef, value: str) -> str:
    """The slot function computing program ``value`` over its parameters
    (`teeny_ir.core.pointwise_program.Program.triton_slot`)."""
    params = [a.arg for a in node.args.args]
    try:
        return pointwise_program.parse(value).triton_slot(node.name, params)
    except ValueError as err:
        raise RenderError(str(err)) from None


def helpers_source() -> str:
    """The shared helper functions (without the module docstring and imports)."""
    text = HELPERS.read_text(encoding="utf-8")
    tree = ast.parse(text)
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    lines = text.splitlines(keepends=True)
    return "".join(lines[_first_line(functions[0]) - 1 :]).rstrip("\n") + "\n"


def render(
    family: KernelFamily,
    kernel_name: str,
    constexprs: Mapping[str, int | str],
    precision: str = DEFAULT_PRECISION,
) -> str:
    """The complete Triton source of one variant of ``family`` (``precision``:
    one of `PRECISIONS`, for its ``tl.dot`` calls)."""
    if not kernel_name.isidentifier():
        raise RenderError(f"kernel name '{kernel_name}' is not an identifier")
    if precision not in PRECISIONS:
        raise RenderError(f"unknown precision '{precision}' (known: {', '.join(PRECISIONS)})")
    text = family.source()
    if precision != DEFAULT_PRECISION:
        text = _with_input_precision(text)
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    replacements: list[tuple[int, int, str]] = []  # (first line, last line, text), 1-based
    for constexpr in family.constexprs:
        if constexpr.type == "program":
            node = _function(tree, constexpr.slot)
            value = constexprs[constexpr.name]
            if not isinstance(value, str):
                raise RenderError(f"constexpr '{constexpr.name}' must be a pointwise program")
            end = node.end_lineno or node.lineno
            replacements.append((_first_line(node), end, _program_source(node, value)))
        if constexpr.type == "pointwise":
            node = _function(tree, constexpr.slot)
            value = constexprs[constexpr.name]
            if not isinstance(value, str):
                raise RenderError(f"constexpr '{constexpr.name}' must name a pointwise entry")
            end = node.end_lineno or node.lineno
            replacements.append((_first_line(node), end, _slot_source(node, value)))
    kernel = _function(tree, family.kernel_function)
    renamed = lines[kernel.lineno - 1].replace(
        f"def {family.kernel_function}(", f"def {kernel_name}(", 1
    )
    replacements.append((kernel.lineno, kernel.lineno, renamed))
    imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    after_imports = max((n.end_lineno or n.lineno) for n in imports)
    for first, last, new in sorted(replacements, reverse=True):
        lines[first - 1 : last] = [new]
    constant = (
        f"\nINPUT_PRECISION = tl.constexpr({precision!r})\n"
        if precision != DEFAULT_PRECISION
        else ""
    )
    lines.insert(after_imports, "\n\n" + helpers_source() + constant)
    return "".join(lines)


def _with_input_precision(text: str) -> str:
    """``text`` with ``input_precision=INPUT_PRECISION`` added to every
    ``tl.dot(...)`` call that does not pass one."""
    lines = text.splitlines(keepends=True)
    calls = [
        node
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "dot"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "tl"
        and not any(k.arg == "input_precision" for k in node.keywords)
    ]
    # the closing parenthesis of each call, last first (so positions stay valid);
    # offsets are in UTF-8 bytes, which the sources (ASCII) share with characters
    for node in sorted(
        calls, key=lambda n: (n.end_lineno or 0, n.end_col_offset or 0), reverse=True
    ):
        row, col = (node.end_lineno or node.lineno) - 1, (node.end_col_offset or 0) - 1
        line = lines[row]
        lines[row] = line[:col] + ", input_precision=INPUT_PRECISION" + line[col:]
    return "".join(lines)
