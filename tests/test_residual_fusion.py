"""graph.fused_conv2d's residual operand and the residual-add fusion of fuse-epilogues:
the op (builder, accessors, text, verifier), the pass (structure, locations,
remarks, modes) and numerics: the reference of the fused module against the
reference of the unfused one, on small chains and on examples/yolov8n.

Tolerance (docs/architecture.md, anything with a reduction):
``max|got - ref| <= 1e-4 * max(1, max|ref|)``.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    FileLineColLoc,
    FusedLoc,
    IntAttr,
    ModuleOp,
    NameLoc,
    NoneAttr,
    StringAttr,
    TensorType,
    f32,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region
from xdsl.utils.exceptions import VerifyException

import teeny_ir
from dialects.graph.conv import Conv2dOp, FusedConv2dOp
from dialects.graph.elementwise import AddOp
from dialects.graph.param import ParamOp
from teeny_ir import reference
from teeny_ir.core import derivations
from teeny_ir.core.diagnostics import Severity, engine_of
from teeny_ir.ir.context import make_context
from teeny_ir.kernels.conv_algorithms import classify_conv
from teeny_ir.testing import REDUCTION_TOL, assert_close, assert_round_trips

Q = DYNAMIC_INDEX
YOLOV8N = Path(__file__).resolve().parent.parent / "examples" / "yolov8n"
FUSE = "split-bias,fuse-epilogues"


def _tensor(*shape: int) -> TensorType:
    return TensorType(f32, shape)


def _ops(module: Operation, kind: type[Operation]) -> list[Operation]:
    return [op for op in module.walk() if isinstance(op, kind)]


def _fused(module: Operation) -> list[FusedConv2dOp]:
    return [op for op in module.walk() if isinstance(op, FusedConv2dOp)]


def _run(text: str, pipeline: str, filename: str = "model.mlir") -> ModuleOp:
    module = teeny_ir.parse_module(text, filename)
    teeny_ir.PassManager.parse(pipeline).run(module)
    return module


# --- the op -------------------------------------------------------------------


def _module(ops: list[Operation], block: Block) -> ModuleOp:
    block.add_ops([*ops, ReturnOp()])
    return ModuleOp([FuncOp("f", (block.arg_types, ()), Region(block))])


def test_builder_residual_kwarg_and_accessor() -> None:
    block = Block(arg_types=(_tensor(Q, 8, 5, 5), _tensor(Q, 16, 5, 5)))
    x, r = block.args
    weight = ParamOp("w", _tensor(16, 8, 3, 3))
    scale, shift = derivations.fill(1.0, [16]), derivations.fill(0.0, [16])
    fused = FusedConv2dOp(
        x, weight, scale=scale, shift=shift, activation="silu", padding=[1] * 4, residual=r
    )
    bare = FusedConv2dOp(x, weight, scale=scale, shift=shift, padding=[1] * 4)
    module = _module([weight, fused, bare], block)
    assert fused.residual is r and bare.residual is None
    assert fused.result.type == fused.residual.type == _tensor(Q, 16, 5, 5)
    assert list(fused.operands) == [x, weight.result, r]
    text = teeny_ir.print_module(module)
    assert "graph.fused_conv2d %0, %2 residual %1 padding [1, 1, 1, 1] scale" in text
    assert "(tensor<?x8x5x5xf32>, tensor<16x8x3x3xf32>, tensor<?x16x5x5xf32>)" in text
    assert_round_trips(module)


def test_verifier_wants_the_residual_of_the_result_type() -> None:
    block = Block(arg_types=(_tensor(Q, 8, 5, 5), _tensor(Q, 16, 1, 1)))
    x, r = block.args
    weight = ParamOp("w", _tensor(16, 8, 1, 1))
    fused = FusedConv2dOp(
        x,
        weight,
        scale=derivations.fill(1.0, [16]),
        shift=derivations.fill(0.0, [16]),
        residual=r,
    )
    _module([weight, fused], block)
    with pytest.raises(VerifyException, match=r"expected residual of the result type"):
        fused.verify()


def test_text_form_round_trips_custom_and_generic() -> None:
    text = (
        "func.func @forward(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {\n"
        '  %w = graph.param "w" : tensor<4x4x1x1xf32>\n'
        "  %y = graph.fused_conv2d %x, %w residual %x scale #derive.param<fill(1.0) : [4]> "
        "shift #derive.param<fill(0.0) : [4]> activation relu "
        ": (tensor<?x4x4x4xf32>, tensor<4x4x1x1xf32>, tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>\n"
        "  func.return %y : tensor<?x4x4x4xf32>\n"
        "}\n"
    )
    module = teeny_ir.parse_module(text)
    printed = teeny_ir.print_module(module)
    assert "graph.fused_conv2d %x, %w residual %x scale" in printed
    assert teeny_ir.print_module(teeny_ir.parse_module(printed)) == printed
    generic = teeny_ir.print_module(module, generic=True)
    assert '"graph.fused_conv2d"(%x, %w, %x)' in generic
    assert teeny_ir.print_module(teeny_ir.parse_module(generic)) == printed
    assert_round_trips(module)


# --- the pass -----------------------------------------------------------------


def _loc(line: int, col: int = 8) -> FileLineColLoc:
    return FileLineColLoc(StringAttr("model.mlir"), IntAttr(line), IntAttr(col))


BOTTLENECK = """\
func.func @forward(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  %w = graph.param "m.cv2.conv.weight" : tensor<4x4x3x3xf32>
  %g = graph.param "m.cv2.bn.weight" : tensor<4xf32>
  %b = graph.param "m.cv2.bn.bias" : tensor<4xf32>
  %m = graph.param "m.cv2.bn.running_mean" : tensor<4xf32>
  %v = graph.param "m.cv2.bn.running_var" : tensor<4xf32>
  %c = graph.conv2d %x, %w padding [1, 1, 1, 1] : (tensor<?x4x4x4xf32>, tensor<4x4x3x3xf32>) -> tensor<?x4x4x4xf32>
  %n = graph.batch_norm %c, %g, %b, %m, %v eps 1.0e-3 : (tensor<?x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  %y = graph.silu %n : tensor<?x4x4x4xf32>
  %z = graph.add {lhs}, {rhs} : (tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %z : tensor<?x4x4x4xf32>
}
"""


@pytest.mark.parametrize("order", [("%x", "%y"), ("%y", "%x")], ids=["residual_lhs", "chain_lhs"])
def test_residual_add_fuses_in_either_order_with_a_fused_location(
    order: tuple[str, str],
) -> None:
    module = _run(BOTTLENECK.replace("{lhs}", order[0]).replace("{rhs}", order[1]), FUSE)
    (fused,) = _fused(module)
    (function,) = _ops(module, FuncOp)
    assert isinstance(function, FuncOp)
    (x,) = function.body.block.args
    assert fused.residual is x and fused.input is x
    assert fused.activation == "silu"
    assert not _ops(module, AddOp) and not _ops(module, Conv2dOp)
    # conv, batch_norm, silu and the add, in that order, each named by its op.
    names = ("graph.conv2d", "graph.batch_norm", "graph.silu", "graph.add")
    assert fused.location == FusedLoc(
        ArrayAttr(
            [
                NameLoc(StringAttr(n), _loc(line))
                for n, line in zip(names, range(7, 11), strict=True)
            ]
        ),
        NoneAttr(),
    )
    # The fused op takes the add's place: right before the return.
    assert isinstance(fused.next_op, ReturnOp) and fused.next_op.arguments[0] is fused.result


def test_training_mode_keeps_the_residual_add_and_says_why() -> None:
    text = (
        "func.func @forward(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {\n"
        '  %w = graph.param "w" : tensor<4x4x1x1xf32>\n'
        "  %c = graph.conv2d %x, %w : (tensor<?x4x4x4xf32>, tensor<4x4x1x1xf32>) "
        "-> tensor<?x4x4x4xf32>\n"
        "  %y = graph.relu %c : tensor<?x4x4x4xf32>\n"
        "  %z = graph.add %y, %x : (tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) "
        "-> tensor<?x4x4x4xf32>\n"
        "  func.return %z : tensor<?x4x4x4xf32>\n"
        "}\n"
    )
    ctx = make_context()
    module = teeny_ir.parse_module(text, "model.mlir", ctx=ctx)
    teeny_ir.PassManager.parse("fuse-epilogues{mode=training}").run(module, ctx)
    (fused,) = _fused(module)
    assert fused.residual is None and fused.activation == "relu"
    (add,) = _ops(module, AddOp)
    assert isinstance(add, AddOp) and add.lhs is fused.result
    (remark,) = engine_of(ctx).diagnostics
    assert remark.severity is Severity.REMARK
    assert remark.message == "not fused: mode=training never folds a residual graph.add"


# --- numerics -----------------------------------------------------------------


def _param(name: str, shape: tuple[int, ...]) -> str:
    return f'  %{name} = graph.param "{name}" : tensor<{"x".join(map(str, shape))}xf32>\n'


def _chain(
    name: str,
    x: str,
    c: int,
    kernel: int,
    groups: int,
    bn: bool,
    bias: bool,
    activation: str | None,
    residual_first: bool,
) -> str:
    """``%<name>_z = add(%x, act(bn(bias(conv(%x)))))`` over [?, c, 6, 6]; the add in
    the given order; the conv keeps the spatial shape."""
    t = f"tensor<?x{c}x6x6xf32>"
    vec = f"tensor<{c}xf32>"
    w_shape = (c, c // groups, kernel, kernel)
    w_type = f"tensor<{'x'.join(map(str, w_shape))}xf32>"
    pad = (kernel - 1) // 2
    text = _param(f"{name}_w", w_shape)
    bias_operand = ""
    if bias:
        text += _param(f"{name}_b", (c,))
        bias_operand = f", %{name}_b"
    options = f" padding [{pad}, {pad}, {pad}, {pad}]" if pad else ""
    options += f" groups {groups}" if groups > 1 else ""
    types = f"({t}, {w_type}{', ' + vec if bias else ''})"
    text += f"  %{name}_c = graph.conv2d %{x}, %{name}_w{bias_operand}{options} : {types} -> {t}\n"
    value = f"{name}_c"
    if bn:
        for stat in ("g", "be", "m", "v"):
            text += _param(f"{name}_{stat}", (c,))
        text += (
            f"  %{name}_n = graph.batch_norm %{value}, %{name}_g, %{name}_be, %{name}_m, "
            f"%{name}_v eps 1.0e-3 : ({t}, {vec}, {vec}, {vec}, {vec}) -> {t}\n"
        )
        value = f"{name}_n"
    if activation is not None:
        text += f"  %{name}_a = graph.{activation} %{value} : {t}\n"
        value = f"{name}_a"
    lhs, rhs = (x, value) if residual_first else (value, x)
    return text + f"  %{name}_z = graph.add %{lhs}, %{rhs} : ({t}, {t}) -> {t}\n"


# name: channels, kernel, groups, bn, bias, activation, residual first
CHAINS = {
    "bn_silu_3x3": (8, 3, 1, True, False, "silu", True),
    "bn_bias_relu_1x1": (8, 1, 1, True, True, "relu", False),
    "bias_silu_1x1": (8, 1, 1, False, True, "silu", True),
    "bias_only_3x3": (8, 3, 1, False, True, None, False),
    "bn_sigmoid_depthwise": (8, 3, 8, True, False, "sigmoid", False),
    "bias_silu_grouped": (8, 3, 2, False, True, "silu", True),
    "conv_only_1x1": (8, 1, 1, False, False, None, True),
}


def _chains_module() -> str:
    """Every chain of `CHAINS` in sequence, each reading the previous one's result."""
    body, x = "", "x"
    for name, case in CHAINS.items():
        body += _chain(name, x, *case)
        x = f"{name}_z"
    t = "tensor<?x8x6x6xf32>"
    return f"func.func @forward(%x: {t}) -> {t} {{\n{body}  func.return %{x} : {t}\n}}\n"


def _random_weights(module: ModuleOp, rng: np.random.Generator) -> dict[str, np.ndarray]:
    weights: dict[str, np.ndarray] = {}
    for op in module.walk():
        if not isinstance(op, ParamOp):
            continue
        assert isinstance(op.result.type, TensorType)
        shape = op.result.type.get_shape()
        name = op.param_name.data
        if name.endswith("_v"):  # a running variance: positive
            value = rng.uniform(0.5, 2.0, shape)
        elif len(shape) == 4:
            value = rng.standard_normal(shape) * 1.6 / math.sqrt(math.prod(shape[1:]))
        else:
            value = rng.standard_normal(shape)
        weights[name] = value.astype(np.float32)
    return weights


def test_fused_chains_match_the_unfused_reference_for_every_conv_algorithm() -> None:
    text = _chains_module()
    unfused = teeny_ir.parse_module(text)
    fused = _run(text, FUSE)
    ops = _fused(fused)
    assert len(ops) == len(CHAINS) and not _ops(fused, AddOp)
    assert all(op.residual is not None for op in ops)
    algorithms = set()
    for op in ops:
        assert isinstance(op.weight.type, TensorType) and isinstance(op.input.type, TensorType)
        algorithms.add(
            classify_conv(
                op.input.type.get_shape()[1],
                op.weight.type.get_shape(),
                op.strides,
                op.padding,
                op.dilation,
                op.groups,
            )
        )
    assert algorithms == {"gemm", "implicit-gemm", "depthwise"}
    rng = np.random.default_rng(7)
    weights = _random_weights(unfused, rng)
    for batch in (1, 3):
        x = rng.standard_normal((batch, 8, 6, 6)).astype(np.float32)
        want = reference.run(unfused, weights, [x])
        got = reference.run(fused, weights, [x])
        assert_close(got, want, REDUCTION_TOL, dtype=np.float32)
        assert float(np.max(np.abs(want[0]))) > 1.0  # not a trivially small output


# --- yolov8n ------------------------------------------------------------------


def _yolov8n_weights(scaled: bool) -> dict[str, np.ndarray]:
    """The bundled weights, or with every conv weight drawn from N(0, 1.6^2 / fan_in)
    (large activations throughout, as tests/test_models.py does)."""
    weights = load_file(str(YOLOV8N / "yolov8n.safetensors"))
    if scaled:
        rng = np.random.default_rng(1)
        for key, value in sorted(weights.items()):
            if key.endswith("weight") and value.ndim == 4:
                std = 1.6 / math.sqrt(math.prod(value.shape[1:]))
                weights[key] = (std * rng.standard_normal(value.shape)).astype(np.float32)
    return weights


@pytest.fixture(scope="module")
def yolov8n() -> tuple[ModuleOp, ModuleOp, list[str]]:
    """The unfused module, the fused one, and the remarks fusing it gave."""
    text = (YOLOV8N / "yolov8n.mlir").read_text()
    ctx = make_context()
    fused = teeny_ir.parse_module(text, "yolov8n.mlir", ctx=ctx)
    teeny_ir.PassManager.parse(FUSE).run(fused, ctx)
    remarks = [d.message for d in engine_of(ctx).diagnostics]
    return teeny_ir.parse_module(text, "yolov8n.mlir"), fused, remarks


def test_yolov8n_bottleneck_adds_all_fuse(yolov8n: tuple[ModuleOp, ModuleOp, list[str]]) -> None:
    unfused, fused, remarks = yolov8n
    assert len(_ops(unfused, AddOp)) == 6
    assert not _ops(fused, AddOp)
    assert not _ops(fused, Conv2dOp)
    assert sum(op.residual is not None for op in _fused(fused)) == 6
    assert remarks == []


@pytest.mark.parametrize("scaled", [False, True], ids=["bundled", "scaled"])
def test_yolov8n_fused_reference_matches_unfused(
    yolov8n: tuple[ModuleOp, ModuleOp, list[str]], scaled: bool
) -> None:
    unfused, fused, _ = yolov8n
    weights = _yolov8n_weights(scaled)
    x = np.random.default_rng(2).standard_normal((2, 3, 64, 64)).astype(np.float32)
    want = reference.run(unfused, weights, [x])
    got = reference.run(fused, weights, [x])
    assert_close(got, want, REDUCTION_TOL, dtype=np.float32)


def test_select_conv_algorithm_keeps_the_residuals() -> None:
    module = _run((YOLOV8N / "yolov8n.mlir").read_text(), f"{FUSE},select-conv-algorithm")
    ops = _fused(module)
    assert all(op.algorithm is not None for op in ops)
    assert sum(op.residual is not None for op in ops) == 6
    module.verify()
