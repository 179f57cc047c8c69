"""How the reference interpreter's semantics are assembled: every graph op is
covered (by its own rule, by the pointwise table, or by a reasoned opt-out), each
op has one definition, and pointwise ops and the fused convolution's epilogue are
evaluated from the pointwise table rather than from math of their own."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import teeny_ir
from dialects.graph import Graph
from dialects.graph.conv import Conv2dOp
from dialects.graph.elementwise import BiasAddOp, TanhOp
from dialects.graph.param import ParamOp
from teeny_ir.core import pointwise
from teeny_ir.core.facets import FacetError, OptOut
from teeny_ir.reference import SEMANTICS, run
from teeny_ir.reference import semantics as registry

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "teeny_ir" / "reference"
T = "tensor<?x4x3x2xf32>"


def _run(body: str, x: np.ndarray, weights: dict[str, np.ndarray] | None = None) -> np.ndarray:
    text = f"func.func @forward(%x: {T}) -> {T} {{\n{body}\n  func.return %y : {T}\n}}\n"
    (y,) = run(teeny_ir.parse_module(text), weights or {}, [x])
    return y


def _x() -> np.ndarray:
    return (3.0 * np.random.default_rng(3).standard_normal((2, 4, 3, 2))).astype(np.float32)


def test_every_graph_op_has_semantics_or_a_reasoned_opt_out() -> None:
    for op_type in Graph.operations:
        found = SEMANTICS.lookup(op_type)
        if op_type is ParamOp:
            assert isinstance(found, OptOut) and "run" in found.reason, found
        else:
            assert callable(found), f"{op_type.name}: {found}"


def test_an_op_without_semantics_is_reported_by_name_and_location() -> None:
    from xdsl.dialects.func import CallOp

    assert SEMANTICS.lookup(CallOp) is None
    text = (
        "func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %y = func.call @g(%x) : (tensor<2xf32>) -> tensor<2xf32>\n"
        "  func.return %y : tensor<2xf32>\n}\n"
        "func.func @g(%x: tensor<2xf32>) -> tensor<2xf32> {\n  func.return %x : tensor<2xf32>\n}\n"
    )
    with pytest.raises(teeny_ir.DiagnosticError) as caught:
        run(teeny_ir.parse_module(text, "m.mlir"), {}, [np.zeros(2, np.float32)])
    assert "m.mlir:2:" in str(caught.value)
    assert "the reference interpreter has no semantics for 'func.call'" in str(caught.value)


def test_pointwise_ops_share_the_table_rule_and_nothing_else_does() -> None:
    rules = {op: SEMANTICS.lookup(op) for op in Graph.operations}
    table_rule = SEMANTICS.pointwise_rule()
    assert table_rule is not None
    for op_type, rule in rules.items():
        in_table = pointwise.lookup(op_type.name) is not None
        assert (rule is table_rule) == in_table, op_type.name


def test_a_second_registration_for_one_op_raises() -> None:
    SEMANTICS.load()  # every module is loaded: Conv2dOp has its rule

    def rule(op: object, args: list[np.ndarray], weights: object) -> list[np.ndarray]:
        return args

    with pytest.raises(FacetError, match=re.escape("'graph.conv2d' has two reference semantics")):
        registry.semantics(Conv2dOp)(rule)
    with pytest.raises(FacetError, match=re.escape("'graph.param' already has a reference semantics opt-out")):
        registry.not_executed("again", ParamOp)
    with pytest.raises(FacetError, match=re.escape("'graph.bias_add' has a reference semantics")):
        registry.not_executed("again", BiasAddOp)
    with pytest.raises(FacetError, match="two reference semantics rules claim the pointwise table"):
        registry.pointwise_rule(rule)
    assert SEMANTICS.lookup(Conv2dOp) is not rule
    assert SEMANTICS.lookup(ParamOp) != OptOut("again")


def test_a_failed_registration_registers_none_of_its_ops() -> None:
    from xdsl.dialects.func import CallOp

    def rule(op: object, args: list[np.ndarray], weights: object) -> list[np.ndarray]:
        return args

    with pytest.raises(FacetError, match=re.escape("'graph.conv2d' has two reference semantics")):
        registry.semantics(CallOp, Conv2dOp)(rule)
    with pytest.raises(FacetError, match=re.escape("'func.call' is named twice")):
        registry.not_executed("twice", CallOp, CallOp)
    assert SEMANTICS.lookup(CallOp) is None


def test_a_pointwise_op_cannot_get_semantics_of_its_own() -> None:
    def rule(op: object, args: list[np.ndarray], weights: object) -> list[np.ndarray]:
        return args

    with pytest.raises(FacetError, match=re.escape("'graph.tanh' is in the pointwise table")):
        registry.semantics(TanhOp)(rule)
    assert SEMANTICS.lookup(TanhOp) is not rule


def test_tanh_is_evaluated_from_the_table() -> None:
    x = _x()
    got = _run(f"  %y = graph.tanh %x : {T}", x)
    np.testing.assert_allclose(got, np.tanh(x.astype(np.float64)), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("slope", [0.2, -1.5])
def test_leaky_relu_reads_its_negative_slope_from_the_op(slope: float) -> None:
    x = _x()
    got = _run(f"  %y = graph.leaky_relu %x negative_slope {slope} : {T}", x)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(got, np.where(x64 >= 0, x64, slope * x64), rtol=1e-6)
    assert (got[x < 0] != x[x < 0]).all()


@pytest.mark.parametrize("activation", pointwise.epilogue_names())
def test_fused_conv_epilogue_is_the_standalone_pointwise_op(activation: str) -> None:
    """The fused convolution's epilogue and the op it absorbed agree, both coming
    from the table entry of that name."""
    w_type = "tensor<4x4x1x1xf32>"
    types = f": ({T}, {w_type}) -> {T}"
    param = f'  %w = graph.param "conv.weight" : {w_type}\n'
    weights = {
        "conv.weight": np.random.default_rng(4).standard_normal((4, 4, 1, 1)).astype(np.float32)
    }
    x = _x()
    fused = _run(
        param + "  %y = graph.fused_conv2d %x, %w scale #derive.param<fill(1.0) : [4]> "
        f"shift #derive.param<fill(0.0) : [4]> activation {activation} {types}",
        x,
        weights,
    )
    unfused = _run(
        param + f"  %c = graph.conv2d %x, %w {types}\n  %y = graph.{activation} %c : {T}",
        x,
        weights,
    )
    np.testing.assert_allclose(fused, unfused, rtol=1e-6, atol=1e-7)


def test_semantics_modules_are_named_like_dialect_modules() -> None:
    graph_modules = {p.stem for p in (ROOT / "dialects" / "graph").glob("*.py")}
    loaded = {name.rpartition(".")[2] for name in SEMANTICS.load()}
    assert loaded and loaded <= graph_modules, sorted(loaded - graph_modules)


def test_the_reference_writes_no_pointwise_math_of_its_own() -> None:
    """The table owns the activations: their names (and so their math) appear
    nowhere in the interpreter."""
    words = re.compile(r"\b(sigmoid|silu|relu)\b", re.IGNORECASE)
    for path in sorted(REFERENCE.rglob("*.py")):
        assert not words.search(path.read_text()), path
