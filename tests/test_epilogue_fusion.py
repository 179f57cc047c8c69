"""Bias and activation epilogues of ``graph.matmul``, ``graph.linear`` (a
``graph.add`` bias at any rank) and a standalone inference ``graph.batch_norm``.

The ops: the ``bias`` operand and ``activation`` property of ``graph.matmul``,
``activation`` on an inference ``graph.batch_norm`` (refused together with
``training``), their text forms and reference semantics. The pass:
fuse-conv-bn-act's `FuseMatmulChain` (``matmul -> [add of a [N] graph.param]
-> [activation]``), a linear of any rank absorbing such an add, and
`FuseNormChain` (an inference batch norm no convolution absorbed, then an
activation); the remarks of blocked fusions; the reference of random graphs
(odd shapes) before and after the pass. The lowerings: the matmul's shift slot
``identity(bias)`` and ``ACTIVATION``, and the batch norm's ``ACTIVATION``,
run in Triton's interpreter at batch 1 and 3 on shapes that are no tile
multiples, against the reference of the unfused graph: every case in one
harness process (`teeny_ir.testing.kernels.run_cases`), inputs NaN-padded,
outputs NaN-filled and canary-padded, grids with more programs than needed. (AOT compilation of a
matmul with ``ACTIVATION = silu`` for sm_80 and sm_90 is
test_linear_gemm.py's `test_variants_compile_ahead_of_time`.)
"""

from __future__ import annotations

import re
import zlib
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import FusedLoc, NameLoc
from xdsl.ir import BlockArgument, Operation
from xdsl.utils.exceptions import VerifyException

import teeny_ir
from dialects.graph.conv import FusedConv2dOp
from dialects.graph.linear import LinearOp, MatmulOp
from dialects.graph.norm import BatchNormOp
from dialects.kernel import LaunchOp
from teeny_ir import reference
from teeny_ir.core import derivations, pointwise
from teeny_ir.core.diagnostics import Severity, engine_of
from teeny_ir.ir.context import make_context
from teeny_ir.kernels import validator
from teeny_ir.testing import REDUCTION_TOL, assert_close, assert_round_trips
from teeny_ir.testing.kernels import Case, Results, launch_case, lower_op, problems

FUSE = "fuse-conv-bn-act"


def _t(*shape: int | str) -> str:
    return "tensor<" + "x".join(str(d) for d in shape) + "xf32>"


def _run(text: str, pipeline: str = FUSE) -> tuple[Any, list[tuple[str, int]]]:
    """The module after ``pipeline``, and its remarks as (message, line)."""
    ctx = make_context()
    module = teeny_ir.parse_module(text, "m.mlir", ctx=ctx)
    teeny_ir.PassManager.parse(pipeline).run(module, ctx)
    remarks = []
    for diagnostic in engine_of(ctx).diagnostics:
        assert diagnostic.severity is Severity.REMARK
        remarks.append((diagnostic.message, diagnostic.location.line))
    return module, remarks


def _ops(module: Operation, kind: type[Operation]) -> list[Any]:
    return [op for op in module.walk() if isinstance(op, kind)]


def _loc_name(location: Any) -> str:
    """The op name a fused location's entry gives (a NameLoc)."""
    assert isinstance(location, NameLoc)
    return location.desc.data


def _names(module: Operation) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("graph.")]


# ---------------------------------------------------------------- the ops


MATMUL_TEXT = f"""\
func.func @forward(%a: {_t("?", 4, 8, 16)}, %b: {_t(16, 5)}) -> {_t("?", 4, 8, 5)} {{
  %c = graph.param "c" : {_t(5)}
  %y = graph.matmul %a, %b, %c activation silu : ({_t("?", 4, 8, 16)}, {_t(16, 5)}, {_t(5)}) -> {_t("?", 4, 8, 5)}
  func.return %y : {_t("?", 4, 8, 5)}
}}
"""

BN_TEXT = f"""\
func.func @forward(%x: {_t("?", 3, 5)}) -> {_t("?", 3, 5)} {{
  %g = graph.param "g" : {_t(3)}
  %y = graph.batch_norm %x, %g, %g, %g, %g eps 1.0e-3 activation relu : ({_t("?", 3, 5)}, {_t(3)}, {_t(3)}, {_t(3)}, {_t(3)}) -> {_t("?", 3, 5)}
  func.return %y : {_t("?", 3, 5)}
}}
"""


def test_text_forms_round_trip_custom_and_generic() -> None:
    module = teeny_ir.parse_module(MATMUL_TEXT)
    printed = teeny_ir.print_module(module)
    assert "graph.matmul %a, %b, %c activation silu : (" in printed
    generic = teeny_ir.print_module(module, generic=True)
    assert '"graph.matmul"(%a, %b, %c) <{activation = "silu"}>' in generic
    assert teeny_ir.print_module(teeny_ir.parse_module(generic)) == printed
    assert_round_trips(module)
    (matmul,) = _ops(module, MatmulOp)
    assert matmul.activation == "silu" and matmul.bias is not None

    module = teeny_ir.parse_module(BN_TEXT)
    printed = teeny_ir.print_module(module)
    assert "eps 1.000000e-03 activation relu : (" in printed
    assert 'activation = "relu"' in teeny_ir.print_module(module, generic=True)
    assert_round_trips(module)
    (bn,) = _ops(module, BatchNormOp)
    assert bn.activation == "relu"


def test_builders_default_to_no_bias_and_no_activation() -> None:
    module = teeny_ir.parse_module(MATMUL_TEXT)
    (matmul,) = _ops(module, MatmulOp)
    plain = MatmulOp(matmul.lhs, matmul.rhs)
    assert (
        plain.bias is None and plain.activation == "none" and "activation" not in plain.properties
    )
    fused = MatmulOp(matmul.lhs, matmul.rhs, matmul.bias, activation="tanh")
    assert fused.result.type == matmul.result.type and fused.activation == "tanh"
    fused.verify()
    (bn,) = _ops(teeny_ir.parse_module(BN_TEXT), BatchNormOp)
    assert BatchNormOp(*bn.operands, activation="sigmoid").activation == "sigmoid"


BN_TRAINING = f"""\
func.func @forward(%x: {_t("?", 3, 5)}) -> {_t("?", 3, 5)} {{
  %g = graph.param "g" : {_t(3)}
  %y, %rm, %rv = graph.batch_norm %x, %g, %g, %g, %g training activation relu : ({_t("?", 3, 5)}, {_t(3)}, {_t(3)}, {_t(3)}, {_t(3)}) -> ({_t("?", 3, 5)}, {_t(3)}, {_t(3)})
  func.return %y : {_t("?", 3, 5)}
}}
"""


GENERIC_BN = f"""\
"func.func"() <{{sym_name = "forward", function_type = ({_t("?", 3)}) -> {_t("?", 3)}}}> ({{
^bb0(%x: {_t("?", 3)}):
  %g = "graph.param"() <{{param_name = "g"}}> : () -> {_t(3)}
  %y = "graph.batch_norm"(%x, %g, %g, %g, %g) <{{activation = "gelu"}}> : ({_t("?", 3)}, {_t(3)}, {_t(3)}, {_t(3)}, {_t(3)}) -> {_t("?", 3)}
  "func.return"(%y) : ({_t("?", 3)}) -> ()
}}) : () -> ()
"""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            MATMUL_TEXT.replace(", %c activation", ", %b activation").replace(
                f"{_t(16, 5)}, {_t(5)})", f"{_t(16, 5)}, {_t(16, 5)})"
            ),
            "expected bias shape [5], got [16, 5]",
        ),
        (
            MATMUL_TEXT.replace("activation silu", "activation gelu"),
            f"expected activation to be one of {', '.join(pointwise.epilogue_names())}",
        ),
        (
            BN_TRAINING,
            "an activation is allowed only on an inference batch norm, not together with "
            "'training'",
        ),
        (
            GENERIC_BN,
            "expected activation to be an epilogue entry of the pointwise table, got 'gelu'",
        ),
    ],
    ids=["matmul-bias-shape", "matmul-activation", "bn-training-activation", "bn-generic"],
)
def test_the_verifier_and_parser_refuse(text: str, message: str) -> None:
    with pytest.raises((VerifyException, teeny_ir.DiagnosticError), match=re.escape(message)):
        teeny_ir.parse_module(text).verify()


def test_reference_applies_bias_and_activation() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 4, 8, 16)).astype(np.float32)
    b = rng.standard_normal((16, 5)).astype(np.float32)
    c = rng.standard_normal(5).astype(np.float32)
    (got,) = reference.run(teeny_ir.parse_module(MATMUL_TEXT), {"c": c}, [a, b])
    y = np.matmul(a.astype(np.float64), b) + c
    assert_close(got.astype(np.float64), y / (1 + np.exp(-y)), REDUCTION_TOL)
    x = rng.standard_normal((2, 3, 5)).astype(np.float32) * 3
    g = rng.uniform(0.5, 1.5, 3).astype(np.float32)
    (got,) = reference.run(teeny_ir.parse_module(BN_TEXT), {"g": g}, [x])
    bn = (x - g[:, None]) / np.sqrt(g[:, None] + 1e-3) * g[:, None] + g[:, None]
    assert_close(got.astype(np.float64), np.maximum(bn, 0), REDUCTION_TOL)


# ---------------------------------------------------------------- the pass


FUSIONS = f"""\
func.func @forward(%a: {_t("?", 3, 7, 6)}, %r: {_t(6, 5)}, %x: {_t("?", 2, 3, 6)}, %v: {_t("?", 4, 3, 2)}) -> ({_t("?", 3, 7, 5)}, {_t("?", 3, 7, 5)}, {_t("?", 2, 3, 5)}, {_t("?", 4, 3, 2)}) {{
  %b = graph.param "b" : {_t(5)}
  %w = graph.param "w" : {_t(5, 6)}
  %g = graph.param "g" : {_t(4)}
  %y = graph.matmul %a, %r : ({_t("?", 3, 7, 6)}, {_t(6, 5)}) -> {_t("?", 3, 7, 5)}
  %yb = graph.add %y, %b : ({_t("?", 3, 7, 5)}, {_t(5)}) -> {_t("?", 3, 7, 5)}
  %ya = graph.relu %yb : {_t("?", 3, 7, 5)}
  %z = graph.matmul %a, %r : ({_t("?", 3, 7, 6)}, {_t(6, 5)}) -> {_t("?", 3, 7, 5)}
  %zb = graph.add %b, %z : ({_t(5)}, {_t("?", 3, 7, 5)}) -> {_t("?", 3, 7, 5)}
  %l = graph.linear %x, %w : ({_t("?", 2, 3, 6)}, {_t(5, 6)}) -> {_t("?", 2, 3, 5)}
  %lb = graph.add %b, %l : ({_t(5)}, {_t("?", 2, 3, 5)}) -> {_t("?", 2, 3, 5)}
  %la = graph.tanh %lb : {_t("?", 2, 3, 5)}
  %n = graph.batch_norm %v, %g, %g, %g, %g eps 1.0e-3 : ({_t("?", 4, 3, 2)}, {_t(4)}, {_t(4)}, {_t(4)}, {_t(4)}) -> {_t("?", 4, 3, 2)}
  %na = graph.silu %n : {_t("?", 4, 3, 2)}
  func.return %ya, %zb, %la, %na : {_t("?", 3, 7, 5)}, {_t("?", 3, 7, 5)}, {_t("?", 2, 3, 5)}, {_t("?", 4, 3, 2)}
}}
"""


def test_matmul_linear_and_batch_norm_epilogues_fuse() -> None:
    module, remarks = _run(FUSIONS)
    assert remarks == []
    assert _names(module) == [
        *["graph.param"] * 3,
        "graph.matmul",
        "graph.matmul",
        "graph.linear",
        "graph.batch_norm",
    ]
    first, second = _ops(module, MatmulOp)
    assert (first.activation, second.activation) == ("relu", "none")
    assert all(
        op.bias is not None and op.bias.owner.param_name.data == "b" for op in (first, second)
    )
    (linear,) = _ops(module, LinearOp)
    assert linear.activation == "tanh" and linear.bias is not None
    (bn,) = _ops(module, BatchNormOp)
    assert bn.activation == "silu"
    # Fused locations name each source, as the other chains' do.
    assert isinstance(first.location, FusedLoc)
    assert [_loc_name(entry) for entry in first.location.locations] == [
        "graph.matmul",
        "graph.add",
        "graph.relu",
    ]
    assert [_loc_name(entry) for entry in bn.location.locations] == [
        "graph.batch_norm",
        "graph.silu",
    ]
    assert_round_trips(module)


def test_training_mode_fuses_the_products_but_not_the_batch_norm() -> None:
    module, remarks = _run(FUSIONS, f"{FUSE}{{mode=training}}")
    assert remarks == []
    assert [op.activation for op in _ops(module, MatmulOp)] == ["relu", "none"]
    assert [op.activation for op in _ops(module, LinearOp)] == ["tanh"]
    assert [op.activation for op in _ops(module, BatchNormOp)] == ["none"]
    assert "graph.silu" in _names(module)


def test_the_conv_chain_still_absorbs_its_batch_norm() -> None:
    text = f"""\
func.func @forward(%x: {_t("?", 2, 5, 5)}) -> {_t("?", 4, 5, 5)} {{
  %w = graph.param "w" : {_t(4, 2, 1, 1)}
  %g = graph.param "g" : {_t(4)}
  %c = graph.conv2d %x, %w : ({_t("?", 2, 5, 5)}, {_t(4, 2, 1, 1)}) -> {_t("?", 4, 5, 5)}
  %n = graph.batch_norm %c, %g, %g, %g, %g : ({_t("?", 4, 5, 5)}, {_t(4)}, {_t(4)}, {_t(4)}, {_t(4)}) -> {_t("?", 4, 5, 5)}
  %y = graph.relu %n : {_t("?", 4, 5, 5)}
  func.return %y : {_t("?", 4, 5, 5)}
}}
"""
    module, remarks = _run(text)
    assert remarks == []
    assert _names(module) == ["graph.param", "graph.fused_conv2d"]
    (fused,) = _ops(module, FusedConv2dOp)
    assert fused.activation == "relu"
    assert fused.scale.data.kind == "bn_scale"
    # A convolution result with a second user keeps its batch norm, which then
    # takes the activation as a standalone one.
    shared = text.replace(
        f"-> {_t('?', 4, 5, 5)} {{", f"-> ({_t('?', 4, 5, 5)}, {_t('?', 4, 5, 5)}) {{"
    ).replace(
        f"func.return %y : {_t('?', 4, 5, 5)}",
        f"func.return %y, %c : {_t('?', 4, 5, 5)}, {_t('?', 4, 5, 5)}",
    )
    module, remarks = _run(shared)
    assert remarks == [("not fused: the graph.conv2d result has 2 uses", 5)]
    assert _names(module) == ["graph.param", "graph.param", "graph.conv2d", "graph.batch_norm"]
    assert [op.activation for op in _ops(module, BatchNormOp)] == ["relu"]


BLOCKED = f"""\
func.func @forward(%a: {_t("?", 7, 6)}, %r: {_t(6, 5)}, %c: {_t(5)}, %x: {_t("?", 6)}, %v: {_t("?", 4, 3)}) -> ({_t("?", 7, 5)}, {_t("?", 7, 5)}, {_t("?", 7, 5)}, {_t("?", 7, 5)}, {_t("?", 5)}, {_t("?", 4, 3)}, {_t("?", 4, 3)}) {{
  %b = graph.param "b" : {_t(5)}
  %one = graph.param "one" : {_t(1)}
  %w = graph.param "w" : {_t(5, 6)}
  %g = graph.param "g" : {_t(4)}
  %y1 = graph.matmul %a, %r : ({_t("?", 7, 6)}, {_t(6, 5)}) -> {_t("?", 7, 5)}
  %b1 = graph.add %y1, %c : ({_t("?", 7, 5)}, {_t(5)}) -> {_t("?", 7, 5)}
  %y2 = graph.matmul %a, %r : ({_t("?", 7, 6)}, {_t(6, 5)}) -> {_t("?", 7, 5)}
  %b2 = graph.add %one, %y2 : ({_t(1)}, {_t("?", 7, 5)}) -> {_t("?", 7, 5)}
  %y3 = graph.matmul %a, %r : ({_t("?", 7, 6)}, {_t(6, 5)}) -> {_t("?", 7, 5)}
  %b3 = graph.add %y3, %b : ({_t("?", 7, 5)}, {_t(5)}) -> {_t("?", 7, 5)}
  %a3 = graph.sigmoid %b3 : {_t("?", 7, 5)}
  %l = graph.linear %x, %w, %b : ({_t("?", 6)}, {_t(5, 6)}, {_t(5)}) -> {_t("?", 5)}
  %lb = graph.add %l, %b : ({_t("?", 5)}, {_t(5)}) -> {_t("?", 5)}
  %n = graph.batch_norm %v, %g, %g, %g, %g : ({_t("?", 4, 3)}, {_t(4)}, {_t(4)}, {_t(4)}, {_t(4)}) -> {_t("?", 4, 3)}
  %na = graph.relu %n : {_t("?", 4, 3)}
  func.return %b1, %b2, %b3, %a3, %lb, %n, %na : {_t("?", 7, 5)}, {_t("?", 7, 5)}, {_t("?", 7, 5)}, {_t("?", 7, 5)}, {_t("?", 5)}, {_t("?", 4, 3)}, {_t("?", 4, 3)}
}}
"""


def test_blocked_fusions_leave_the_ops_and_say_why() -> None:
    module, remarks = _run(BLOCKED)
    assert remarks == [
        ("not fused: the bias of graph.add is not a graph.param", 7),
        (
            "not fused: the other operand of graph.add has type tensor<1xf32>, not a bias [5] "
            "along the last dimension of the graph.matmul result",
            9,
        ),
        ("not fused: the graph.add result has 2 uses", 12),
        ("not fused: the linear layer already has a bias", 14),
        ("not fused: the graph.batch_norm result has 2 uses", 16),
    ]
    # The third matmul took its bias; its activation stayed (two users).
    names = _names(module)
    assert names.count("graph.add") == 3 and names.count("graph.matmul") == 3
    assert [op.bias is not None for op in _ops(module, MatmulOp)] == [False, False, True]
    assert [op.activation for op in _ops(module, BatchNormOp)] == ["none"]
    assert "graph.sigmoid" in names and "graph.relu" in names


def _random_graph(rng: np.random.Generator) -> tuple[str, dict[str, np.ndarray], list[Any]]:
    """Every fusable chain kind at random odd sizes, plus a blocked one; the text,
    its weights and one input shape (without the batch) per argument."""
    m, k, n, rows, c, inner = (int(v) for v in rng.integers(1, 12, size=6))
    acts = [str(a) for a in rng.choice(pointwise.epilogue_names(), size=4)]
    a, y, x, lx, v = (
        _t("?", 2, m, k),
        _t("?", 2, m, n),
        _t("?", rows, k),
        _t("?", rows, n),
        _t("?", c, inner),
    )
    text = f"""\
func.func @forward(%a: {a}, %x: {x}, %v: {v}) -> ({y}, {y}, {lx}, {v}, {y}) {{
  %r = graph.param "r" : {_t(k, n)}
  %b = graph.param "b" : {_t(n)}
  %w = graph.param "w" : {_t(n, k)}
  %g = graph.param "g" : {_t(c)}
  %be = graph.param "be" : {_t(c)}
  %mu = graph.param "mu" : {_t(c)}
  %var = graph.param "var" : {_t(c)}
  %p = graph.matmul %a, %r : ({a}, {_t(k, n)}) -> {y}
  %pb = graph.add %b, %p : ({_t(n)}, {y}) -> {y}
  %pa = graph.{acts[0]} %pb : {y}
  %q = graph.matmul %a, %r : ({a}, {_t(k, n)}) -> {y}
  %qa = graph.{acts[1]} %q : {y}
  %l = graph.linear %x, %w : ({x}, {_t(n, k)}) -> {lx}
  %lb = graph.add %l, %b : ({lx}, {_t(n)}) -> {lx}
  %la = graph.{acts[2]} %lb : {lx}
  %nn = graph.batch_norm %v, %g, %be, %mu, %var eps 1.0e-3 : ({v}, {_t(c)}, {_t(c)}, {_t(c)}, {_t(c)}) -> {v}
  %na = graph.{acts[3]} %nn : {v}
  %s = graph.matmul %a, %r : ({a}, {_t(k, n)}) -> {y}
  %sb = graph.add %s, %b : ({y}, {_t(n)}) -> {y}
  %sa = graph.relu %sb : {y}
  %t = graph.add %sa, %sb : ({y}, {y}) -> {y}
  func.return %pa, %qa, %la, %na, %t : {y}, {y}, {lx}, {v}, {y}
}}
"""
    weights = {
        "r": rng.standard_normal((k, n)),
        "b": rng.standard_normal(n),
        "w": rng.standard_normal((n, k)),
        "g": rng.uniform(0.5, 1.5, c) * np.where(rng.random(c) < 0.5, -1, 1),
        "be": rng.standard_normal(c),
        "mu": rng.standard_normal(c),
        "var": rng.uniform(0.2, 2.0, c),
    }
    inputs = [(2, m, k), (rows, k), (c, inner)]
    return text, {name: w.astype(np.float32) for name, w in weights.items()}, inputs


@pytest.mark.parametrize("seed", range(6))
def test_fused_graphs_match_the_unfused_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    text, weights, shapes = _random_graph(rng)
    unfused = teeny_ir.parse_module(text)
    fused, remarks = _run(text)
    assert remarks == [("not fused: the graph.add result has 2 uses", 21)]
    matmuls = _ops(fused, MatmulOp)
    assert [op.bias is not None for op in matmuls] == [True, False, True]
    assert [op.activation != "none" for op in matmuls] == [True, True, False]
    assert [op.activation != "none" and op.bias is not None for op in _ops(fused, LinearOp)] == [
        True
    ]
    assert _names(fused).count("graph.add") == 1  # only the residual-like add stays
    assert len(_ops(fused, BatchNormOp)) == 1 and _ops(fused, BatchNormOp)[0].activation != "none"
    for batch in (1, 3):
        inputs = [rng.standard_normal((batch, *s)).astype(np.float32) for s in shapes]
        want = reference.run(unfused, weights, inputs)
        got = reference.run(fused, weights, inputs)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.shape[0] == batch
            assert_close(g.astype(np.float64), w.astype(np.float64), REDUCTION_TOL)


# ---------------------------------------------------------------- lowering


def _lowered(text: str) -> tuple[Any, Any, LaunchOp]:
    """The unfused module, the fused op and its launch from the family's rule."""
    unfused = teeny_ir.parse_module(text)
    fused, _ = _run(text)
    (op,) = [o for o in fused.walk() if isinstance(o, MatmulOp | BatchNormOp | LinearOp)]
    return unfused, op, lower_op(op)


def _matmul_graph(a: tuple[int, ...], n: int, activation: str, swap: bool = False) -> str:
    """``act(a @ rhs + bias)`` with a dynamic batch, rhs an argument [K, N]."""
    k = a[-1]
    at, rt, yt = _t("?", *a[1:]), _t(k, n), _t("?", *a[1:-1], n)
    add = (
        f"graph.add %bias, %y : ({_t(n)}, {yt}) -> {yt}"
        if swap
        else f"graph.add %y, %bias : ({yt}, {_t(n)}) -> {yt}"
    )
    return f"""\
func.func @forward(%a: {at}, %r: {rt}) -> {yt} {{
  %bias = graph.param "bias" : {_t(n)}
  %y = graph.matmul %a, %r : ({at}, {rt}) -> {yt}
  %z = {add}
  %o = graph.{activation} %z : {yt}
  func.return %o : {yt}
}}
"""


def _bn_graph(shape: tuple[int, ...], activation: str) -> str:
    t, v = _t("?", *shape[1:]), _t(shape[1])
    params = "".join(
        f'  %{n} = graph.param "bn.{n}" : {v}\n' for n in ("weight", "bias", "mean", "var")
    )
    return f"""\
func.func @forward(%x: {t}) -> {t} {{
{params}  %n = graph.batch_norm %x, %weight, %bias, %mean, %var eps 1.0e-3 : ({t}, {v}, {v}, {v}, {v}) -> {t}
  %o = graph.{activation} %n : {t}
  func.return %o : {t}
}}
"""


def _linear_graph(shape: tuple[int, ...], n: int, activation: str) -> str:
    xt, yt = _t("?", *shape[1:]), _t("?", *shape[1:-1], n)
    wt = _t(n, shape[-1])
    return f"""\
func.func @forward(%x: {xt}) -> {yt} {{
  %w = graph.param "w" : {wt}
  %bias = graph.param "bias" : {_t(n)}
  %y = graph.linear %x, %w : ({xt}, {wt}) -> {yt}
  %z = graph.add %bias, %y : ({_t(n)}, {yt}) -> {yt}
  %o = graph.{activation} %z : {yt}
  func.return %o : {yt}
}}
"""


def test_matmul_lowering_takes_the_bias_slot_and_activation() -> None:
    _, op, launch = _lowered(_matmul_graph((1, 3, 37, 29), 45, "silu"))
    assert isinstance(op, MatmulOp)
    scale, shift = launch.param_slots
    assert scale.derivation == derivations.fill(1.0, [45])
    assert shift.derivation == derivations.identity("bias", [45])
    assert launch.constexpr_values["ACTIVATION"] == "silu"
    assert len(launch.operands) == 2
    validator.validate(launch.contract())


def test_batch_norm_lowering_takes_the_activation() -> None:
    _, op, launch = _lowered(_bn_graph((1, 5, 7, 9), "sigmoid"))
    assert isinstance(op, BatchNormOp)
    assert launch.family == "channel_affine"
    assert launch.constexpr_values["ACTIVATION"] == "sigmoid"
    validator.validate(launch.contract())


def test_whole_pipeline_lowers_the_fused_ops() -> None:
    module = teeny_ir.parse_module(_matmul_graph((1, 3, 7, 5), 6, "relu"))
    teeny_ir.PassManager.parse(f"{FUSE},lower-graph-to-kernel").run(module)
    (launch,) = _ops(module, LaunchOp)
    assert launch.family == "matmul" and launch.constexpr_values["ACTIVATION"] == "relu"
    weights = [op for op in module.walk() if op.name == "kernel.weight"]
    assert [w.weight_name for w in weights] == ["bias"]


def test_a_matmul_bias_that_is_no_param_is_a_located_error() -> None:
    text = f"""\
func.func @forward(%a: {_t("?", 7, 6)}, %r: {_t(6, 5)}, %c: {_t(5)}) -> {_t("?", 7, 5)} {{
  %y = graph.matmul %a, %r, %c activation relu : ({_t("?", 7, 6)}, {_t(6, 5)}, {_t(5)}) -> {_t("?", 7, 5)}
  func.return %y : {_t("?", 7, 5)}
}}
"""
    module = teeny_ir.parse_module(text, filename="bad.mlir")
    with pytest.raises(teeny_ir.DiagnosticError) as caught:
        teeny_ir.PassManager.parse("lower-graph-to-kernel").run(module)
    assert (
        "bad.mlir:2:8: error: cannot lower 'graph.matmul' to a kernel: its bias is not a "
        "graph.param" in str(caught.value)
    )


# ---------------------------------------------------------------- interpreter


def _case(
    name: str, text: str, shapes: list[tuple[int, ...]], weights: dict[str, Any], extra: int
) -> Case:
    """The fused op of ``text`` lowered, bound at the batch of ``shapes`` (the
    function's arguments), against the reference of the unfused graph."""
    unfused, _, launch = _lowered(text)
    batch = shapes[0][0]
    rng = np.random.default_rng(zlib.crc32(name.encode()) + batch)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    (want,) = reference.run(unfused, weights, inputs)
    operands = []
    for value in launch.operands:
        assert isinstance(value, BlockArgument)
        operands.append(inputs[value.index])
    constexprs = dict(launch.constexpr_values)
    if launch.family == "channel_affine":
        pad = int(constexprs["BLOCK"]) * (1 + extra)
    else:
        pad = int(constexprs["BLOCK_M"]) * want.shape[-1] + int(constexprs["BLOCK_N"])
    return launch_case(
        f"{name}-b{batch}",
        launch,
        batch,
        operands,
        [want],
        pad=pad,
        tol=REDUCTION_TOL,
        weights=weights,
        extra_programs=extra,
        spec=launch.contract(),
    )


def _bn_weights(channels: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(channels)
    sign = np.where(rng.random(channels) < 0.5, -1.0, 1.0)
    return {
        "bn.weight": (sign * rng.uniform(0.5, 1.5, channels)).astype(np.float32),
        "bn.bias": rng.standard_normal(channels).astype(np.float32),
        "bn.mean": rng.standard_normal(channels).astype(np.float32),
        "bn.var": rng.uniform(0.2, 2.0, channels).astype(np.float32),
    }


def all_cases() -> list[Case]:
    rng = np.random.default_rng(21)
    bias45 = {"bias": rng.standard_normal(45).astype(np.float32)}
    bias19 = {"bias": rng.standard_normal(19).astype(np.float32)}
    linear = {
        "w": (rng.standard_normal((19, 23)) / 5).astype(np.float32),
        **bias19,
    }
    cases = []
    for batch in (1, 3):
        for activation in pointwise.epilogue_names():
            cases.append(
                _case(
                    f"matmul-3x37x29@29x45-{activation}",
                    _matmul_graph((batch, 3, 37, 29), 45, activation),
                    [(batch, 3, 37, 29), (29, 45)],
                    bias45,
                    2,
                )
            )
        cases.append(
            _case(
                "matmul-21x17@17x19-swapped-tanh",
                _matmul_graph((batch, 21, 17), 19, "tanh", swap=True),
                [(batch, 21, 17), (17, 19)],
                bias19,
                1,
            )
        )
        cases.append(
            _case(
                "batch_norm-5x7x9-silu",
                _bn_graph((batch, 5, 7, 9), "silu"),
                [(batch, 5, 7, 9)],
                _bn_weights(5),
                2,
            )
        )
        cases.append(
            _case(
                "batch_norm-37-relu",
                _bn_graph((batch, 37), "relu"),
                [(batch, 37)],
                _bn_weights(37),
                1,
            )
        )
        cases.append(
            _case(
                "linear-5x23to19-add-relu",
                _linear_graph((batch, 5, 23), 19, "relu"),
                [(batch, 5, 23)],
                linear,
                1,
            )
        )
    return cases


CASES = all_cases()


HARNESS_CASES = CASES
"""What the `results` fixture (tests/conftest.py) runs, in one interpreter process."""


def test_cases_cover_the_brief() -> None:
    assert {case.id.rsplit("-b", 1)[1] for case in CASES} == {"1", "3"}
    for case in CASES:
        if case.family == "matmul":
            m, n, k = (dict(case.args)[d] for d in ("M", "N", "K"))
            block_m, block_n, block_k = (
                int(case.constexprs[b]) for b in ("BLOCK_M", "BLOCK_N", "BLOCK_K")
            )
            assert m % block_m and n % block_n and k % block_k, case.id
    activations = {(c.family, c.constexprs["ACTIVATION"]) for c in CASES}
    assert activations >= {("matmul", a) for a in pointwise.epilogue_names()}
    assert ("channel_affine", "silu") in activations and ("linear", "relu") in activations


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_kernel_matches_the_reference(case: Case, results: Results) -> None:
    """Canaries intact, every output element written, the values within the
    tolerance rule (against the unfused graph)."""
    assert problems(case, results) == []


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_every_case_is_a_valid_launch(case: Case) -> None:
    """The launch as lowered (over every batch) and as the harness binds it."""
    validator.validate(case.spec)
    validator.validate(case.contract())
