"""split-bias, fuse-epilogues and select-conv-algorithm through the Python API:
structure, locations, diagnostics, and numerics against the reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import (
    ArrayAttr,
    FileLineColLoc,
    FusedLoc,
    IntAttr,
    ModuleOp,
    NameLoc,
    NoneAttr,
    StringAttr,
)
from xdsl.ir import Operation

import teeny_ir
from dialects.graph.conv import Conv2dOp, FusedConv2dOp
from dialects.graph.elementwise import BiasAddOp
from dialects.graph.param import ParamOp
from teeny_ir.core import derivations
from teeny_ir.core.diagnostics import Severity, SourceLoc, engine_of
from teeny_ir.ir.context import make_context

INFERENCE = "split-bias,fuse-epilogues,select-conv-algorithm"


def _param(name: str, shape: tuple[int, ...]) -> str:
    dims = "x".join(str(d) for d in shape)
    return f'  %{name.replace(".", "_")} = graph.param "{name}" : tensor<{dims}xf32>\n'


def _conv_block(prefix: str, x: str, c_in: int, c_out: int, hw: str, tail: str) -> str:
    """``conv1x1(bias) -> batch_norm(eps 1e-3) -> <tail>`` over ``%x``; result ``%<prefix>_y``."""
    p = prefix.replace(".", "_")
    t = f"tensor<?x{c_out}x{hw}xf32>"
    vec = f"tensor<{c_out}xf32>"
    text = _param(f"{prefix}.conv.weight", (c_out, c_in, 1, 1)) + _param(
        f"{prefix}.conv.bias", (c_out,)
    )
    for stat in ("weight", "bias", "running_mean", "running_var"):
        text += _param(f"{prefix}.bn.{stat}", (c_out,))
    text += (
        f"  %{p}_c = graph.conv2d %{x}, %{p}_conv_weight, %{p}_conv_bias : "
        f"(tensor<?x{c_in}x{hw}xf32>, tensor<{c_out}x{c_in}x1x1xf32>, {vec}) -> {t}\n"
        f"  %{p}_n = graph.batch_norm %{p}_c, %{p}_bn_weight, %{p}_bn_bias, "
        f"%{p}_bn_running_mean, %{p}_bn_running_var eps 1.0e-3 : "
        f"({t}, {vec}, {vec}, {vec}, {vec}) -> {t}\n"
    )
    return text + f"  %{p}_y = graph.{tail} %{p}_n : {t}\n"


CONV_BN_SILU = (
    "func.func @forward(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {\n"
    + _conv_block("m.0", "x", 8, 16, "4x4", "silu")
    + "  func.return %m_0_y : tensor<?x16x4x4xf32>\n}\n"
)


def _run(text: str, pipeline: str) -> ModuleOp:
    module = teeny_ir.parse_module(text, "model.mlir")
    teeny_ir.PassManager.parse(pipeline).run(module)
    return module


def _ops(module: ModuleOp, kind: type[Operation]) -> list[Operation]:
    return [op for op in module.walk() if isinstance(op, kind)]


def _loc(line: int, col: int = 12) -> FileLineColLoc:
    """Where an op of the test models starts: ``  %<name> = graph...`` (column 12)."""
    return FileLineColLoc(StringAttr("model.mlir"), IntAttr(line), IntAttr(col))


def test_split_bias_ops_keep_the_conv_location() -> None:
    module = _run(CONV_BN_SILU, "split-bias")
    (conv,) = _ops(module, Conv2dOp)
    (bias_add,) = _ops(module, BiasAddOp)
    assert isinstance(conv, Conv2dOp) and conv.bias is None
    assert isinstance(bias_add, BiasAddOp) and bias_add.input is conv.result
    assert conv.location == bias_add.location == _loc(8)


def test_fused_op_has_the_fold_and_a_fused_location() -> None:
    module = _run(CONV_BN_SILU, "split-bias,fuse-epilogues")
    (fused,) = _ops(module, FusedConv2dOp)
    assert isinstance(fused, FusedConv2dOp)
    bn = ("m.0.bn.weight", "m.0.bn.bias", "m.0.bn.running_mean", "m.0.bn.running_var")
    assert fused.scale.data == derivations.bn_scale(bn[0], bn[3], 1e-3, 16)
    assert fused.shift.data == derivations.bn_shift(*bn, 1e-3, 16, bias="m.0.conv.bias")
    assert fused.activation == "silu"
    # Each source named by its op (the plan's provenance); conv and bias_add share
    # the conv's location, and both are listed.
    assert fused.location == FusedLoc(
        ArrayAttr(
            [
                NameLoc(StringAttr(name), _loc(line))
                for name, line in (
                    ("graph.conv2d", 8),
                    ("graph.bias_add", 8),
                    ("graph.batch_norm", 9),
                    ("graph.silu", 10),
                )
            ]
        ),
        NoneAttr(),
    )
    names = [op.param_name.data for op in _ops(module, ParamOp) if isinstance(op, ParamOp)]
    assert names == ["m.0.conv.weight"]  # the orphaned bias and statistics are gone


def test_training_mode_keeps_the_batch_norm_and_says_why() -> None:
    ctx = make_context()
    module = teeny_ir.parse_module(CONV_BN_SILU, "model.mlir", ctx=ctx)
    teeny_ir.PassManager.parse("split-bias,fuse-epilogues{mode=training}").run(module, ctx)
    (fused,) = _ops(module, FusedConv2dOp)
    assert isinstance(fused, FusedConv2dOp)
    assert fused.scale.data == derivations.fill(1.0, [16])
    assert fused.shift.data == derivations.identity("m.0.conv.bias", [16])
    assert fused.activation == "none"
    (remark,) = engine_of(ctx).diagnostics
    assert remark.severity is Severity.REMARK
    assert remark.message == "not fused: mode=training never folds batch-norm statistics"
    assert remark.location == SourceLoc("model.mlir", 9, 12)


def test_mode_option_round_trips_and_rejects_unknown_values() -> None:
    manager = teeny_ir.PassManager.parse("fuse-epilogues{mode=training}")
    assert "fuse-epilogues{mode=training}" in manager.pipeline_string()
    with pytest.raises(teeny_ir.DiagnosticError, match="mode"):
        teeny_ir.PassManager.parse("fuse-epilogues{mode=eval}")


def test_select_marks_gemm_with_tiles() -> None:
    module = _run(CONV_BN_SILU, INFERENCE)
    (fused,) = _ops(module, FusedConv2dOp)
    assert isinstance(fused, FusedConv2dOp)
    assert (fused.algorithm, fused.tiles) == ("gemm", (64, 64, 8))


def test_select_wraps_a_plain_conv_at_its_location() -> None:
    module = _run(CONV_BN_SILU, "select-conv-algorithm")
    (fused,) = _ops(module, FusedConv2dOp)
    assert isinstance(fused, FusedConv2dOp)
    assert fused.location == _loc(8)
    assert fused.shift.data == derivations.identity("m.0.conv.bias", [16])
    assert not _ops(module, Conv2dOp)


def test_select_reports_every_unsupported_conv_at_once() -> None:
    # Every conv kind has a kernel path now: after the inference passes each
    # convolution, depthwise ones included, leaves labelled with its algorithm.
    labelled = (
        "func.func @forward(%x: tensor<?x4x8x8xf32>) -> (tensor<?x4x6x6xf32>, tensor<?x4x6x6xf32>, "
        "tensor<?x4x6x6xf32>, tensor<?x4x8x8xf32>) {\n"
        '  %w = graph.param "w" : tensor<4x1x3x3xf32>\n'
        '  %d = graph.param "d" : tensor<4x1x3x3xf32>\n'
        '  %g = graph.param "g" : tensor<4x4x3x3xf32>\n'
        '  %p = graph.param "p" : tensor<4x4x1x1xf32>\n'
        "  %a = graph.conv2d %x, %w groups 4 : (tensor<?x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<?x4x6x6xf32>\n"
        "  %b = graph.conv2d %x, %d groups 4 : (tensor<?x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<?x4x6x6xf32>\n"
        "  %c = graph.conv2d %x, %g : (tensor<?x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<?x4x6x6xf32>\n"
        "  %e = graph.conv2d %x, %p : (tensor<?x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x8x8xf32>\n"
        "  func.return %a, %b, %c, %e : tensor<?x4x6x6xf32>, tensor<?x4x6x6xf32>, "
        "tensor<?x4x6x6xf32>, tensor<?x4x8x8xf32>\n}\n"
    )
    module = _run(labelled, INFERENCE)
    assert not _ops(module, Conv2dOp)
    fused = [op for op in _ops(module, FusedConv2dOp) if isinstance(op, FusedConv2dOp)]
    assert [(op.location, op.algorithm) for op in fused] == [
        (_loc(6, 8), "depthwise"),
        (_loc(7, 8), "depthwise"),
        (_loc(8, 8), "implicit-gemm"),
        (_loc(9, 8), "gemm"),
    ]
    assert all(op.tiles is not None and len(op.tiles) == 3 for op in fused)
    # What the pass still refuses - a plain conv whose bias is not a graph.param
    # (the shift derivation must name a weight) - is reported for every such
    # conv at once, whatever its algorithm; the supported conv between them is not.
    refused = (
        "func.func @forward(%x: tensor<?x4x8x8xf32>, %v: tensor<4xf32>) -> (tensor<?x4x6x6xf32>, "
        "tensor<?x4x6x6xf32>, tensor<?x4x8x8xf32>) {\n"
        '  %w = graph.param "w" : tensor<4x1x3x3xf32>\n'
        '  %g = graph.param "g" : tensor<4x4x3x3xf32>\n'
        "  %a = graph.conv2d %x, %w, %v groups 4 : (tensor<?x4x8x8xf32>, tensor<4x1x3x3xf32>, "
        "tensor<4xf32>) -> tensor<?x4x6x6xf32>\n"
        "  %b = graph.conv2d %x, %g, %v : (tensor<?x4x8x8xf32>, tensor<4x4x3x3xf32>, "
        "tensor<4xf32>) -> tensor<?x4x6x6xf32>\n"
        "  %c = graph.conv2d %x, %w padding [1, 1, 1, 1] groups 4 : (tensor<?x4x8x8xf32>, "
        "tensor<4x1x3x3xf32>) -> tensor<?x4x8x8xf32>\n"
        "  func.return %a, %b, %c : tensor<?x4x6x6xf32>, tensor<?x4x6x6xf32>, "
        "tensor<?x4x8x8xf32>\n}\n"
    )
    with pytest.raises(teeny_ir.DiagnosticError) as caught:
        _run(refused, "select-conv-algorithm")
    message = "the convolution bias must be a graph.param (the shift derivation names it)"
    found = [(d.location, d.message) for d in caught.value.diagnostics]
    assert found == [
        (SourceLoc("model.mlir", 4, 8), message),
        (SourceLoc("model.mlir", 5, 8), message),
    ]


def test_pattern_sets_are_reusable() -> None:
    from passes.fuse_epilogues import FuseConvChain
    from passes.select_conv_algorithm import select_conv_algorithm_patterns
    from passes.split_bias import split_bias_patterns

    assert len(split_bias_patterns()) == 1
    assert len(select_conv_algorithm_patterns([])) == 2
    assert FuseConvChain.__doc__


# Numerics: the reference interpreter before and after the inference passes.


def _model(rng: np.random.Generator) -> tuple[str, dict[str, np.ndarray], int]:
    """A random graph of four conv blocks, one per activation, the last one's
    BN result also returned (two users: its activation is not fused)."""
    c_in, c1, c2 = (int(c) for c in rng.integers(1, 9, size=3))
    hw = f"{int(rng.integers(1, 6))}x{int(rng.integers(1, 6))}"
    body = (
        _conv_block("a", "x", c_in, c1, hw, "silu")
        + _conv_block("b", "a_y", c1, c2, hw, "relu")
        + _conv_block("c", "b_y", c2, c2, hw, "sigmoid")
        + _conv_block("d", "c_y", c2, c2, hw, "silu")
    )
    t_in, t_out = f"tensor<?x{c_in}x{hw}xf32>", f"tensor<?x{c2}x{hw}xf32>"
    text = (
        f"func.func @forward(%x: {t_in}) -> ({t_out}, {t_out}, {t_out}) {{\n{body}"
        f"  func.return %c_y, %d_n, %d_y : {t_out}, {t_out}, {t_out}\n}}\n"
    )
    weights: dict[str, np.ndarray] = {}
    for block, (cin, cout) in zip("abcd", [(c_in, c1), (c1, c2), (c2, c2), (c2, c2)], strict=True):
        weights[f"{block}.conv.weight"] = rng.normal(0, 0.5, (cout, cin, 1, 1))
        weights[f"{block}.conv.bias"] = rng.normal(0, 0.5, cout)
        weights[f"{block}.bn.weight"] = rng.uniform(0.5, 1.5, cout)
        weights[f"{block}.bn.bias"] = 0.1 * rng.normal(size=cout)
        weights[f"{block}.bn.running_mean"] = 0.1 * rng.normal(size=cout)
        weights[f"{block}.bn.running_var"] = rng.uniform(0.5, 1.5, cout)
    return text, {k: v.astype(np.float32) for k, v in weights.items()}, c_in


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("batch", [1, 3])
def test_inference_passes_preserve_numerics(seed: int, batch: int) -> None:
    from teeny_ir import reference

    rng = np.random.default_rng(seed)
    text, weights, c_in = _model(rng)
    module = teeny_ir.parse_module(text, "model.mlir")
    shape = module.ops.first.function_type.inputs.data[0].get_shape()  # type: ignore[union-attr]
    x = rng.normal(size=(batch, c_in, *shape[2:])).astype(np.float32)
    before = reference.run(module, weights, [x])
    teeny_ir.PassManager.parse(INFERENCE).run(module)
    assert len(_ops(module, FusedConv2dOp)) == 4 and not _ops(module, Conv2dOp)
    assert [op.name for op in module.walk() if op.name == "graph.silu"] == ["graph.silu"]
    after = reference.run(module, weights, [x])
    assert len(before) == len(after) == 3
    for ref, got in zip(before, after, strict=True):
        assert got.shape == ref.shape == (batch, *ref.shape[1:])
        assert np.isfinite(got).all()
        assert np.abs(got - ref).max() <= 1e-4 * max(1.0, float(np.abs(ref).max()))


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("mode", ["inference", "training"])
def test_fusion_preserves_numerics_of_windowed_convs(batch: int, mode: str) -> None:
    """fuse-epilogues handles any convolution (select-conv-algorithm is what
    refuses non-GEMM ones): a strided, padded, grouped 3x3 conv, and a bias_add."""
    from teeny_ir import reference

    t_in, t_out, vec = "tensor<?x4x7x6xf32>", "tensor<?x6x4x3xf32>", "tensor<6xf32>"
    text = (
        f"func.func @forward(%x: {t_in}) -> {t_out} {{\n"
        + _param("w", (6, 2, 3, 3))
        + "".join(_param(n, (6,)) for n in ("b", "g", "be", "m", "v"))
        + f"  %c = graph.conv2d %x, %w, %b strides [2, 2] padding [1, 0, 1, 1] groups 2 : "
        f"({t_in}, tensor<6x2x3x3xf32>, {vec}) -> {t_out}\n"
        f"  %n = graph.batch_norm %c, %g, %be, %m, %v : ({t_out}, {vec}, {vec}, {vec}, {vec}) -> {t_out}\n"
        f"  %y = graph.sigmoid %n : {t_out}\n"
        f"  func.return %y : {t_out}\n}}\n"
    )
    rng = np.random.default_rng(7)
    weights = {
        "w": rng.normal(0, 0.5, (6, 2, 3, 3)),
        "b": rng.normal(0, 0.5, 6),
        "g": rng.uniform(0.5, 1.5, 6),
        "be": 0.1 * rng.normal(size=6),
        "m": 0.1 * rng.normal(size=6),
        "v": rng.uniform(0.5, 1.5, 6),
    }
    weights = {k: v.astype(np.float32) for k, v in weights.items()}
    x = rng.normal(size=(batch, 4, 7, 6)).astype(np.float32)
    module = teeny_ir.parse_module(text, "model.mlir")
    (before,) = reference.run(module, weights, [x])
    teeny_ir.PassManager.parse(f"split-bias,fuse-epilogues{{mode={mode}}}").run(module)
    assert len(_ops(module, FusedConv2dOp)) == 1
    (after,) = reference.run(module, weights, [x])
    assert after.shape == before.shape == (batch, 6, 4, 3)
    assert np.abs(after - before).max() <= 1e-4 * max(1.0, float(np.abs(before).max()))
