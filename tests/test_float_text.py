"""Floats in IR text: every f32 and f64 bit pattern survives print -> parse, in
the custom and the generic form, as a `graph.constant` element, an f64 option
(``batch_norm`` eps and momentum, ``leaky_relu`` negative_slope), a builtin
float attribute and a derivation's eps or fill value.

Printing follows MLIR: decimal where that reads back exactly, else the bits in
hex (``0x4B800000`` for 16777216.0; NaN and +-inf are always hex, upper case).
Parsing reads hex where a float is expected as bits, as MLIR does: fewer digits
are zero-extended, more significant bits than the type has, or a leading
minus, is a located error. ``nan`` and ``inf`` are no float literals (nor in
mlir-opt).

What NaNs keep: an f64 keeps every bit. An f32 keeps its sign and payload, but
a signalling f32 NaN comes back quiet (bit 22 set): xDSL holds float values as
Python floats, and converting an f32 signalling NaN to a double quiets it.
"""

from __future__ import annotations

import math
import re
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    ModuleOp,
    TensorType,
    f32,
)
from xdsl.ir import Operation

from dialects.derive import DerivationAttr
from dialects.graph.constant import ConstantOp
from teeny_ir import parse_module, print_module
from teeny_ir.core.derivations import Derivation
from teeny_ir.core.diagnostics import DiagnosticError

FORMS = (False, True)  # custom, generic
F32_SPECIAL_BITS = (
    0x00000000,  # 0.0
    0x80000000,  # -0.0
    0x00000001,  # smallest subnormal
    0x807FFFFF,  # largest negative subnormal
    0x00800000,  # smallest normal
    0x7F7FFFFF,  # largest finite
    0xFF7FFFFF,
    0x7F800000,  # inf
    0xFF800000,  # -inf
    0x7FC00000,  # canonical quiet NaN
    0xFFC00000,  # negative quiet NaN
    0x7FC00001,  # quiet NaN with payload
    0x7F800001,  # signalling NaN
    0x4B800000,  # 16777216.0: integral, printed in hex by MLIR and xDSL
    0xCB800000,
    0x3F800000,  # 1.0
)
F64_SPECIAL_BITS = (
    0x0000000000000000,
    0x8000000000000000,
    0x0000000000000001,
    0x7FEFFFFFFFFFFFFF,
    0xFFEFFFFFFFFFFFFF,
    0x0010000000000000,
    0x7FF0000000000000,
    0xFFF0000000000000,
    0x7FF8000000000000,
    0xFFF8000000000001,
    0x7FF0000000000001,  # signalling NaN
    0x4132D68700000000,  # 1234567.0
    0x3EE4F8B588E368F1,  # 1e-05
)
f32_bits = st.one_of(st.sampled_from(F32_SPECIAL_BITS), st.integers(0, 2**32 - 1))
f64_bits = st.one_of(st.sampled_from(F64_SPECIAL_BITS), st.integers(0, 2**64 - 1))


def f32_nan(bits: int) -> bool:
    return bits & 0x7F800000 == 0x7F800000 and bits & 0x007FFFFF != 0


def kept_f32(bits: int) -> int:
    """The f32 bits that come back: signalling NaNs are quieted."""
    return bits | 0x00400000 if f32_nan(bits) else bits


def bits_of(value: float) -> int:
    return int.from_bytes(struct.pack("<d", value), "little")


def stored(attr: DenseIntOrFPElementsAttr) -> list[int]:
    """The element bit patterns of a dense literal."""
    size = 4 if attr.get_element_type() == f32 else 8
    data = attr.data.data
    return [int.from_bytes(data[i : i + size], "little") for i in range(0, len(data), size)]


def only(module: Operation, name: str) -> Operation:
    (op,) = (op for op in module.walk() if op.name == name)
    return op


def round_trips(text: str, verify: bool = True) -> list[ModuleOp]:
    """``text`` parsed, then printed in each form and parsed again; the printed
    text must be a fixed point."""
    first = parse_module(text, verify=verify)
    modules = [first]
    for generic in FORMS:
        printed = print_module(first, generic=generic)
        again = parse_module(printed, verify=verify)
        assert print_module(again, generic=generic) == printed
        modules.append(again)
    return modules


def dense(bits: list[int], element: str = "f32") -> str:
    width = 8 if element == "f32" else 16
    items = ", ".join(f"0x{b:0{width}X}" for b in bits)
    return f"dense<[{items}]> : tensor<{len(bits)}x{element}>"


# ----------------------------------------------------------- graph.constant


@settings(max_examples=200)
@given(st.lists(f32_bits, min_size=1, max_size=6))
def test_f32_constant_bits_survive_print_and_parse(bits: list[int]) -> None:
    raw = b"".join(b.to_bytes(4, "little") for b in bits)
    attr = DenseIntOrFPElementsAttr(TensorType(f32, [len(bits)]), BytesAttr(raw))
    module = ModuleOp([ConstantOp(attr)])
    for generic in FORMS:
        text = print_module(module, generic=generic)
        parsed = only(parse_module(text), "graph.constant")
        assert stored(parsed.value) == [kept_f32(b) for b in bits], text


@settings(max_examples=200)
@given(st.lists(f32_bits, min_size=1, max_size=6))
def test_hex_in_an_f32_dense_literal_is_bits(bits: list[int]) -> None:
    for module in round_trips(f"%c = graph.constant {dense(bits)}"):
        constant = only(module, "graph.constant")
        assert stored(constant.value) == [kept_f32(b) for b in bits]


@settings(max_examples=100)
@given(st.lists(f64_bits, min_size=1, max_size=6))
def test_f64_dense_bits_survive_exactly(bits: list[int]) -> None:
    # graph.constant is f32 only: parse without verifying, the text is the subject.
    for module in round_trips(f"%c = graph.constant {dense(bits, 'f64')}", verify=False):
        assert stored(only(module, "graph.constant").value) == bits


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (16777216.0, "dense<0x4B800000>"),
        (-16777216.0, "dense<0xCB800000>"),
        (math.nan, "dense<0x7FC00000>"),
        (math.inf, "dense<0x7F800000>"),
        (-math.inf, "dense<0xFF800000>"),
        (-0.0, "dense<-0.000000e+00>"),
        (3.4028234663852886e38, "dense<3.40282347e+38>"),
        (1.401298464324817e-45, "dense<1.401300e-45>"),
    ],
)
def test_constant_prints_like_mlir_and_reads_back(value: float, text: str) -> None:
    module = ModuleOp([ConstantOp.from_values([value], [2])])
    for generic in FORMS:
        printed = print_module(module, generic=generic)
        assert f"{text} : tensor<2xf32>" in printed
        want = int.from_bytes(struct.pack("<f", value), "little")
        assert stored(only(parse_module(printed), "graph.constant").value) == [want, want]


def test_mixed_zero_signs_are_no_splat() -> None:
    (_, custom, generic) = round_trips(
        "%c = graph.constant dense<[0.0, -0.0, 0.0]> : tensor<3xf32>"
    )
    for module in (custom, generic):
        assert stored(only(module, "graph.constant").value) == [0, 0x80000000, 0]
    assert "[0.000000e+00, -0.000000e+00, 0.000000e+00]" in print_module(custom)


def test_nested_literal_with_specials() -> None:
    text = "%c = graph.constant dense<[[1.0, 0x7FC00000], [0xFF800000, -0.0]]> : tensor<2x2xf32>"
    (_, custom, _) = round_trips(text)
    assert "[[1.000000e+00, 0x7FC00000], [0xFF800000, -0.000000e+00]]" in print_module(custom)


def test_large_constant_with_specials_round_trips_as_bytes() -> None:
    bits = [F32_SPECIAL_BITS[i % len(F32_SPECIAL_BITS)] for i in range(300)]
    for module in round_trips(f"%c = graph.constant {dense(bits)}"):
        assert stored(only(module, "graph.constant").value) == [kept_f32(b) for b in bits]


def test_short_hex_is_zero_extended_as_in_mlir() -> None:
    # mlir-opt: dense<0x1> : tensor<f32> is the smallest subnormal; leading zeros are fine.
    module = parse_module("%c = graph.constant dense<[0x1, 0x000000007FC00000]> : tensor<2xf32>")
    assert stored(only(module, "graph.constant").value) == [1, 0x7FC00000]


def test_hex_in_an_integer_dense_literal_is_a_value() -> None:
    module = parse_module("%c = graph.constant dense<[0x10, -0x10]> : tensor<2xi32>", verify=False)
    assert only(module, "graph.constant").value.get_values() == (16, -16)


def error_of(text: str) -> str:
    with pytest.raises(DiagnosticError) as info:
        parse_module(text, verify=False)
    (diagnostic,) = info.value.diagnostics
    return diagnostic.header()


@pytest.mark.parametrize(
    ("literal", "column", "message"),
    [
        ("dense<0x17FC00000> : tensor<2xf32>", 27, "out of range for type f32: it has 32 bits"),
        ("dense<[1.0, 0x7FC000000]> : tensor<2xf32>", 33, "out of range for type f32"),
        ("dense<0x17FF8000000000000> : tensor<2xf64>", 27, "out of range for type f64: it has 64"),
        ("dense<-0x7FC00000> : tensor<2xf32>", 27, "should not have a leading minus"),
        ("{x = 0x7FC0000000 : f32} dense<1.0> : tensor<2xf32>", 26, "out of range for type"),
        ("{x = -0x7FC00000 : f32} dense<1.0> : tensor<2xf32>", 26, "leading minus"),
    ],
)
def test_bad_hex_floats_are_located_errors(literal: str, column: int, message: str) -> None:
    header = error_of(f"%c = graph.constant {literal}")
    assert header.startswith(f"<string>:1:{column}: error:"), header
    assert message in header


@pytest.mark.parametrize("word", ["nan", "inf", "-inf", "NaN"])
def test_nan_and_inf_are_no_float_literals(word: str) -> None:
    # As mlir-opt: "expected element literal of primitive type"; write them in hex.
    with pytest.raises(DiagnosticError):
        parse_module(f"%c = graph.constant dense<{word}> : tensor<2xf32>")


@settings(max_examples=100)
@given(f32_bits, f64_bits)
def test_builtin_float_attributes_survive(bits32: int, bits64: int) -> None:
    text = (
        f"%c = graph.constant {{a = 0x{bits32:08X} : f32, b = 0x{bits64:016X} : f64}} "
        "dense<1.0> : tensor<2xf32>"
    )
    for module in round_trips(text):
        attributes = only(module, "graph.constant").attributes
        a, b = attributes["a"], attributes["b"]
        assert isinstance(a, FloatAttr) and isinstance(b, FloatAttr)
        assert int.from_bytes(struct.pack("<f", a.value.data), "little") == kept_f32(bits32)
        assert bits_of(b.value.data) == bits64


# ------------------------------------------------------------------ f64 options

FUNC = (
    "func.func @f(%x: tensor<1x4x2x2xf32>, %p: tensor<4xf32>) -> tensor<1x4x2x2xf32> {{\n"
    "  %y = {op}\n"
    "  func.return %y : tensor<1x4x2x2xf32>\n}}\n"
)
T4 = "tensor<1x4x2x2xf32>"
BN_TYPE = f"({T4}, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> {T4}"


def batch_norm(options: str) -> str:
    return FUNC.format(op=f"graph.batch_norm %x, %p, %p, %p, %p {options} : {BN_TYPE}")


def leaky_relu(options: str) -> str:
    return FUNC.format(op=f"graph.leaky_relu %x {options} : {T4}")


@settings(max_examples=100)
@given(f64_bits, f64_bits, f64_bits)
def test_f64_option_bits_survive(eps: int, momentum: int, slope: int) -> None:
    # Any bits, NaN included: without verifying (eps must be > 0, etc.).
    cases = [
        (batch_norm(f"eps 0x{eps:016X} momentum 0x{momentum:016X}"), "graph.batch_norm"),
        (leaky_relu(f"negative_slope 0x{slope:016X}"), "graph.leaky_relu"),
    ]
    for text, name in cases:
        for module in round_trips(text, verify=False):
            op = only(module, name)
            if name == "graph.batch_norm":
                got = [op.properties["eps"], op.properties["momentum"]]
                want = [eps, momentum]
            else:
                got, want = [op.properties["negative_slope"]], [slope]
            assert [bits_of(a.value.data) for a in got] == want


@settings(max_examples=100)
@given(
    # eps: positive and finite in float32, the precision the batch norm computes in
    st.floats(min_value=1e-44, max_value=3.4028234663852886e38),
    st.floats(min_value=-0.0, max_value=1.0),
    st.floats(allow_nan=False, allow_infinity=False),
)
def test_valid_f64_options_survive_decimal_printing(
    eps: float, momentum: float, slope: float
) -> None:
    """Verified ops: each value as Python's repr, then printed by us."""
    text_bn = batch_norm(f"eps {_literal(eps)} momentum {_literal(momentum)}")
    for module in round_trips(text_bn):
        op = only(module, "graph.batch_norm")
        assert bits_of(op.eps) == bits_of(eps)
        assert bits_of(op.momentum) == bits_of(momentum)
    for module in round_trips(leaky_relu(f"negative_slope {_literal(slope)}")):
        op = only(module, "graph.leaky_relu")
        assert bits_of(op.negative_slope) == bits_of(slope)


def _literal(value: float) -> str:
    """A float literal with MLIR's '.' (``1e-05`` is no float literal)."""
    text = repr(value)
    if "." not in text:
        mantissa, _, exponent = text.partition("e")
        text = f"{mantissa}.0" + (f"e{exponent}" if exponent else "")
    return text


def test_integral_f64_option_prints_in_hex_and_reads_back() -> None:
    (_, custom, generic) = round_trips(batch_norm("eps 1234567.0"))
    assert "eps 0x4132D68700000000 :" in print_module(custom)
    assert "eps = 0x4132D68700000000 : f64" in print_module(generic, generic=True)
    assert only(generic, "graph.batch_norm").eps == 1234567.0


def test_non_finite_f64_option_prints_as_upper_case_hex() -> None:
    module = parse_module(leaky_relu("negative_slope 0xFFF0000000000000"), verify=False)
    assert "negative_slope 0xFFF0000000000000 :" in print_module(module)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("eps 0x14132D68700000000", "out of range for type f64: it has 64 bits (16 hex digits)"),
        ("eps -0x4132D68700000000", "should not have a leading minus"),
    ],
)
def test_bad_hex_f64_options_are_located_errors(options: str, message: str) -> None:
    text = batch_norm(options)
    header = error_of(text)
    line, column = 2, text.splitlines()[1].index("0x") + 1 - ("-" in options)
    assert header.startswith(f"<string>:{line}:{column}: error:"), header
    assert message in header


# ------------------------------------------------------------------ derivations


def with_derivation(derivation: Derivation) -> ModuleOp:
    op = ConstantOp.from_values([1.0])
    op.attributes["d"] = DerivationAttr(derivation)
    return ModuleOp([op])


@settings(max_examples=100)
@given(
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(min_value=5e-324, allow_infinity=False),
)
def test_derivation_values_survive(value: float, eps: float) -> None:
    derivations = [
        Derivation("fill", (), (4,), value=value),
        Derivation("bn_scale", ("g", "v"), (4,), eps=eps),
    ]
    for derivation in derivations:
        module = with_derivation(derivation)
        for generic in FORMS:
            text = print_module(module, generic=generic)
            back = only(parse_module(text), "graph.constant").attributes["d"]
            assert isinstance(back, DerivationAttr)
            assert bits_of(back.data.value) == bits_of(derivation.value)
            assert bits_of(back.data.eps) == bits_of(derivation.eps)


def test_derivation_reads_hex_as_f64_bits() -> None:
    text = (
        "%c = graph.constant {d = #derive.param<fill(0x3FF0000000000000) : [4]>, "
        'e = #derive.param<bn_scale("g", "v") eps 0x4132D68700000000 : [4]>} '
        "dense<1.0> : tensor<2xf32>"
    )
    for module in round_trips(text):
        attributes = only(module, "graph.constant").attributes
        assert attributes["d"].data.value == 1.0
        assert attributes["e"].data.eps == 1234567.0
    printed = print_module(parse_module(text))
    assert re.search(r"fill\(1\.0\).*eps 1234567\.0 :", printed)


def test_derivation_rejects_a_too_wide_hex() -> None:
    header = error_of(
        "%c = graph.constant {d = #derive.param<fill(0x13FF0000000000000) : [4]>} "
        "dense<1.0> : tensor<2xf32>"
    )
    assert header.startswith("<string>:1:45: error: hexadecimal float constant out of range")
