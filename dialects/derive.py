"""The `derive` dialect: the IR spelling of `teeny_ir.core.derivations.Derivation`.

One attribute, ``#derive.param<...>``, used by fused graph ops (their epilogue
scale and shift) and by the kernel dialect's parameter slots. Its semantics
live in `teeny_ir.core.derivations` (the single evaluator); this module only parses,
prints and verifies it::

    #derive.param<identity("model.0.conv.bias") : [16]>
    #derive.param<reshape("model.0.conv.weight") : [16, 8]>
    #derive.param<fill(1.0) : [16]>
    #derive.param<bn_scale("m.bn.weight", "m.bn.running_var") eps 0.001 : [16]>
    #derive.param<bn_shift("m.bn.weight", "m.bn.bias", "m.bn.running_mean",
                           "m.bn.running_var", "m.conv.bias") eps 0.001 : [16]>
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.ir import Data, Dialect
from xdsl.irdl import irdl_attr_definition
from xdsl.utils.exceptions import VerifyException

from teeny_ir.core.derivations import KINDS, REGISTRY, Derivation, DerivationError
from teeny_ir.ir.format import f64_text, parse_f64

if TYPE_CHECKING:
    from xdsl.parser import AttrParser
    from xdsl.printer import Printer


def _float_text(value: float) -> str:
    """Shortest text that reads back as the same float, in MLIR's float syntax
    (which needs a '.': ``1.0e-05``, not ``1e-05``); see `f64_text`."""
    return f64_text(value)


@irdl_attr_definition
class DerivationAttr(Data[Derivation]):
    """How one parameter is computed from weights named by their state-dict keys."""

    name = "derive.param"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> Derivation:
        with parser.in_angle_brackets():
            start = parser.pos
            kind = parser.parse_identifier()
            if kind not in KINDS:
                parser.raise_error(
                    f"unknown derivation kind '{kind}' (valid: {', '.join(KINDS)})", start
                )
            value = 0.0
            values: list[float] = []
            sources: list[str] = []
            if "value" in REGISTRY[kind].attributes:
                with parser.in_parens():
                    value = parse_f64(parser)
            elif "values" in REGISTRY[kind].attributes:
                values = parser.parse_comma_separated_list(
                    parser.Delimiter.PAREN, lambda: parse_f64(parser), " (the literal's values)"
                )
            else:
                sources = parser.parse_comma_separated_list(
                    parser.Delimiter.PAREN, parser.parse_str_literal, " (source weight names)"
                )
            eps = 0.0
            if parser.parse_optional_keyword("eps") is not None:
                eps = parse_f64(parser)
            parser.parse_punctuation(":")
            shape = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, parser.parse_integer, " (the parameter's shape)"
            )
            try:
                return Derivation(
                    kind, tuple(sources), tuple(shape), eps=eps, value=value, values=tuple(values)
                )
            except DerivationError as err:
                parser.raise_error(str(err), start)

    def print_parameter(self, printer: Printer) -> None:
        d = self.data
        with printer.in_angle_brackets():
            printer.print_string(d.kind)
            if "value" in d.spec.attributes:
                printer.print_string(f"({_float_text(d.value)})")
            elif "values" in d.spec.attributes:
                printer.print_string("(" + ", ".join(_float_text(v) for v in d.values) + ")")
            else:
                printer.print_string("(")
                printer.print_list(d.sources, printer.print_string_literal)
                printer.print_string(")")
            if "eps" in d.spec.attributes:
                printer.print_string(f" eps {_float_text(d.eps)}")
            printer.print_string(" : [")
            printer.print_list(d.shape, lambda n: printer.print_string(str(n)))
            printer.print_string("]")

    def verify(self) -> None:
        if not isinstance(self.data, Derivation):
            raise VerifyException(f"expected a Derivation, got {type(self.data).__name__}")


Derive = Dialect("derive", [], [DerivationAttr])
