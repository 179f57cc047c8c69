"""The training stage for convolutions and matrix products: the backward ops
`graph.conv2d_backward_data` / `graph.conv2d_backward_weight` (verifiers,
assembly format, reference semantics against PyTorch) and the VJP rules of
`graph.conv2d`, `graph.fused_conv2d`, `graph.linear` and `graph.matmul`
(applied directly with a `VjpContext`, and through insert-backward), against
``torch.autograd.grad`` of the forward op with the same upstream gradient.

Everything is compared in float64 (the test's interpreter `_run64` evaluates the
reference semantics without the per-op float32 rounding of `reference.run`;
the data are float32-representable so the derivations' float32 binding is
exact), with relative tolerance 1e-8.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from xdsl.dialects.builtin import DYNAMIC_INDEX, FunctionType, ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue

import teeny_ir
from dialects.graph.conv import (
    Conv2dBackwardDataOp,
    Conv2dBackwardWeightOp,
    Conv2dOp,
    FusedConv2dOp,
)
from dialects.graph.elementwise import ActivationGradOp
from dialects.graph.linear import LinearOp, MatmulOp, infer_linear_shape, infer_matmul_shape
from dialects.graph.param import ParamOp
from dialects.graph.shapes import infer_conv2d_shape
from teeny_ir.autodiff.context import VjpContext
from teeny_ir.autodiff.registry import VJPS, VjpError
from teeny_ir.core.diagnostics import DiagnosticError
from teeny_ir.reference import SEMANTICS
from teeny_ir.testing import assert_round_trips

Q = DYNAMIC_INDEX
BATCHES = (1, 3)
RTOL = 1e-8
ACTIVATIONS = {
    "silu": F.silu,
    "relu": F.relu,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
}


# ----------------------------------------------------------------- helpers


def _rand(rng: np.random.Generator, shape: Sequence[int]) -> np.ndarray:
    """Float32-representable float64 data."""
    return rng.standard_normal(tuple(shape)).astype(np.float32).astype(np.float64)


def _t(shape: Sequence[int]) -> str:
    dims = "x".join("?" if d == Q else str(d) for d in shape)
    return f"tensor<{dims}xf32>" if dims else "tensor<f32>"


def _forward(module: ModuleOp) -> FuncOp:
    (func,) = [op for op in module.ops if isinstance(op, FuncOp)]
    return func


def _run64(module: ModuleOp, weights: dict[str, np.ndarray], inputs: Sequence[np.ndarray]):
    """@forward evaluated with the reference semantics in float64 throughout."""
    block = _forward(module).body.block
    env: dict[SSAValue, Any] = {
        arg: np.asarray(value, np.float64) for arg, value in zip(block.args, inputs, strict=True)
    }
    for op in block.ops:
        if isinstance(op, ReturnOp):
            return [env[value] for value in op.arguments]
        if isinstance(op, ParamOp):
            env[op.result] = np.asarray(weights[op.param_name.data], np.float64)
            continue
        semantics = SEMANTICS.lookup(type(op))
        assert callable(semantics), semantics
        results = semantics(op, [env[v] for v in op.operands], weights)
        for result, value in zip(op.results, results, strict=True):
            env[result] = np.asarray(value, np.float64)
    raise AssertionError("no func.return")


def _close(got: Any, want: Any) -> None:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    error = float(np.max(np.abs(got - want), initial=0.0))
    assert error <= RTOL * scale, f"max error {error} (scale {scale})"


def _apply_rule(module: ModuleOp, op_type: type[Operation]) -> list[SSAValue | None]:
    """Differentiate the one ``op_type`` op of @forward with its rule, seeded by
    @forward's last argument; make the non-None operand gradients (and then any
    reported parameter gradients) @forward's results. Returns the rule's list."""
    func = _forward(module)
    block = func.body.block
    (op,) = [o for o in block.ops if isinstance(o, op_type)]
    ret = block.last_op
    assert isinstance(ret, ReturnOp)
    ctx = VjpContext(block, ret)
    ctx.location = op.location
    rule = VJPS.lookup(op_type)
    assert callable(rule), rule
    grads = rule(ctx, op, [block.args[-1]])
    assert len(grads) == len(op.operands)
    for operand, grad in zip(op.operands, grads, strict=True):
        assert grad is None or grad.type == operand.type
    values = [g for g in grads if g is not None]
    values += [g for name in sorted(ctx.param_grads) for g in ctx.param_grads[name]]
    new_ret = ReturnOp(*values)
    block.insert_op_before(new_ret, ret)
    block.erase_op(ret)
    func.function_type = FunctionType.from_lists(
        list(func.function_type.inputs.data), [v.type for v in values]
    )
    module.verify()
    return grads


def _options_text(strides, padding, dilation, groups) -> str:
    parts = []
    if strides is not None:
        parts.append(f"strides {list(strides)}")
    if padding is not None:
        parts.append(f"padding {list(padding)}")
    if dilation is not None:
        parts.append(f"dilation {list(dilation)}")
    if groups is not None:
        parts.append(f"groups {groups}")
    return (" " + " ".join(parts)) if parts else ""


def _torch_conv(x, w, strides, padding, dilation, groups):
    """F.conv2d with per-side padding [top, left, bottom, right] (applied by F.pad)."""
    top, left, bottom, right = padding or (0, 0, 0, 0)
    return F.conv2d(
        F.pad(x, (left, right, top, bottom)),
        w,
        stride=tuple(strides or (1, 1)),
        dilation=tuple(dilation or (1, 1)),
        groups=groups or 1,
    )


def _tensors(*arrays: np.ndarray) -> list[torch.Tensor]:
    return [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]


def _grads(y: torch.Tensor, wrt: Sequence[torch.Tensor], dy: np.ndarray) -> list[np.ndarray]:
    got = torch.autograd.grad(y, list(wrt), torch.tensor(dy, dtype=torch.float64))
    return [g.detach().numpy() for g in got]


# ------------------------------------------------ convolution configurations

# (input [C, H, W], weight, strides, padding, dilation, groups); None: absent.
CONVS = [
    ((3, 7, 6), (4, 3, 3, 2), (2, 1), (1, 0, 2, 1), (1, 2), None),
    ((4, 9, 7), (6, 2, 3, 3), (2, 3), (0, 1, 1, 0), (2, 1), 2),
    ((5, 5, 5), (5, 1, 3, 3), None, (1, 1, 1, 1), None, 5),  # depthwise
    ((2, 8, 8), (3, 2, 2, 2), (3, 3), None, None, None),  # rows 2 and 5 read by no window
    ((3, 5, 7), (5, 3, 1, 1), None, None, None, None),  # 1x1, all defaults
]
CONV_IDS = ["strided-padded-dilated", "grouped", "depthwise", "gaps", "pointwise"]


def _conv_shapes(config, batch):
    (c, h, w), weight, strides, padding, dilation, groups = config
    x_shape = (batch, c, h, w)
    y_shape = infer_conv2d_shape(
        x_shape,
        weight,
        strides or (1, 1),
        padding or (0, 0, 0, 0),
        dilation or (1, 1),
        groups or 1,
    )
    return x_shape, weight, y_shape


# ------------------------------------------------- backward ops: semantics


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("config", CONVS, ids=CONV_IDS)
def test_backward_ops_match_torch(config, batch: int) -> None:
    """Both backward ops against autograd of F.conv2d (and torch.nn.grad where
    the padding is symmetric), at batch 1 and 3, through a dynamic batch."""
    _, _, strides, padding, dilation, groups = config
    x_shape, w_shape, y_shape = _conv_shapes(config, batch)
    opts = _options_text(strides, padding, dilation, groups)
    dyn = lambda s: (Q, *s[1:])  # noqa: E731
    text = f"""
func.func @forward(%x: {_t(dyn(x_shape))}, %dy: {_t(dyn(y_shape))}, %w: {_t(w_shape)})
    -> ({_t(dyn(x_shape))}, {_t(w_shape)}) {{
  %dx = graph.conv2d_backward_data %dy, %w{opts}
      : ({_t(dyn(y_shape))}, {_t(w_shape)}) -> {_t(dyn(x_shape))}
  %dw = graph.conv2d_backward_weight %x, %dy{opts}
      : ({_t(dyn(x_shape))}, {_t(dyn(y_shape))}) -> {_t(w_shape)}
  func.return %dx, %dw : {_t(dyn(x_shape))}, {_t(w_shape)}
}}
"""
    module = teeny_ir.parse_module(text)
    assert_round_trips(module)
    rng = np.random.default_rng(batch * 100 + len(opts))
    x, dy, w = _rand(rng, x_shape), _rand(rng, y_shape), _rand(rng, w_shape)
    got_dx, got_dw = _run64(module, {}, [x, dy, w])
    tx, tw = _tensors(x, w)
    want_dx, want_dw = _grads(_torch_conv(tx, tw, strides, padding, dilation, groups), [tx, tw], dy)
    _close(got_dx, want_dx)
    _close(got_dw, want_dw)
    top, left, bottom, right = padding or (0, 0, 0, 0)
    if (top, left) == (bottom, right):
        kwargs = dict(
            stride=strides or 1, padding=(top, left), dilation=dilation or 1, groups=groups or 1
        )
        tdy = torch.tensor(dy)
        _close(got_dx, torch.nn.grad.conv2d_input(x_shape, torch.tensor(w), tdy, **kwargs))
        _close(got_dw, torch.nn.grad.conv2d_weight(torch.tensor(x), w_shape, tdy, **kwargs))


def test_backward_data_zero_where_no_window_reads() -> None:
    """With stride 3 and a 2x2 kernel, rows/columns 2 and 5 feed no output."""
    x_shape, w_shape, y_shape = _conv_shapes(CONVS[3], 2)
    rng = np.random.default_rng(7)
    dy, w = _rand(rng, y_shape), _rand(rng, w_shape)
    text = f"""
func.func @forward(%dy: {_t(y_shape)}, %w: {_t(w_shape)}) -> {_t(x_shape)} {{
  %dx = graph.conv2d_backward_data %dy, %w strides [3, 3] : ({_t(y_shape)}, {_t(w_shape)}) -> {_t(x_shape)}
  func.return %dx : {_t(x_shape)}
}}
"""
    (dx,) = _run64(teeny_ir.parse_module(text), {}, [dy, w])
    assert np.all(dx[:, :, [2, 5], :] == 0) and np.all(dx[:, :, :, [2, 5]] == 0)
    assert np.any(dx[:, :, [0, 1, 3, 4, 6, 7], :] != 0)


# ------------------------------------------------- backward ops: builders, verifiers


def test_builders_and_printed_form() -> None:
    module = teeny_ir.parse_module(
        f"""
func.func @forward(%x: {_t((Q, 3, 8, 8))}, %dy: {_t((Q, 16, 4, 4))}) -> {_t((Q, 3, 8, 8))} {{
  %w = graph.param "w" : {_t((16, 3, 3, 3))}
  %dx = graph.conv2d_backward_data %dy, %w : ({_t((Q, 16, 4, 4))}, {_t((16, 3, 3, 3))}) -> {_t((Q, 3, 8, 8))}
  func.return %dx : {_t((Q, 3, 8, 8))}
}}
""",
        verify=False,
    )
    block = _forward(module).body.block
    x, dy = block.args
    w = next(op for op in block.ops if isinstance(op, ParamOp)).result
    assert isinstance(x.type, TensorType) and isinstance(w.type, TensorType)
    data = Conv2dBackwardDataOp(dy, w, x.type, strides=[2, 2], padding=[1, 1, 1, 1])
    weight = Conv2dBackwardWeightOp(x, dy, w.type, strides=[2, 2], padding=[1, 1, 1, 1])
    for op in (data, weight):
        op.verify()
        assert "dilation" not in op.properties and "groups" not in op.properties  # absent
    assert (data.strides, data.padding, data.dilation, data.groups) == (
        (2, 2),
        (1, 1, 1, 1),
        (1, 1),
        1,
    )
    ret = block.last_op
    assert ret is not None
    block.insert_op_before(data, ret)
    block.insert_op_before(weight, ret)
    printed = teeny_ir.print_module(module)
    assert (
        "graph.conv2d_backward_data %dy, %w strides [2, 2] padding [1, 1, 1, 1] : "
        "(tensor<?x16x4x4xf32>, tensor<16x3x3x3xf32>) -> tensor<?x3x8x8xf32>"
    ) in printed
    assert (
        "graph.conv2d_backward_weight %x, %dy strides [2, 2] padding [1, 1, 1, 1] : "
        "(tensor<?x3x8x8xf32>, tensor<?x16x4x4xf32>) -> tensor<16x3x3x3xf32>"
    ) in printed


def _verify_error(body: str, args: str) -> str:
    text = f"func.func @forward({args}) {{\n{body}\n  func.return\n}}"
    with pytest.raises(DiagnosticError) as info:
        teeny_ir.parse_module(text)
    return str(info.value)


@pytest.mark.parametrize(
    ("args", "body", "message"),
    [
        (
            "%dy: tensor<?x16x4x4xf32>, %w: tensor<16x3x3x3xf32>",
            "%dx = graph.conv2d_backward_data %dy, %w : (tensor<?x16x4x4xf32>, "
            "tensor<16x3x3x3xf32>) -> tensor<?x3x8x8xf32>",
            "expected grad of shape [?, 16, 6, 6] (the convolution of the result shape "
            "[?, 3, 8, 8]), got [?, 16, 4, 4]",
        ),
        (
            "%dy: tensor<?x16x4x4xf32>, %w: tensor<16x3x3x3xf32>",
            "%dx = graph.conv2d_backward_data %dy, %w strides [2, 2] padding [1, 1, 1, 1] : "
            "(tensor<?x16x4x4xf32>, tensor<16x3x3x3xf32>) -> tensor<?x4x8x8xf32>",
            "the result (the forward input) [?, 4, 8, 8] does not fit the convolution: "
            "expected weight dim 1 to be C_in / groups = 4, got 3",
        ),
        (
            "%dy: tensor<?x16x4xf32>, %w: tensor<16x3x3x3xf32>",
            "%dx = graph.conv2d_backward_data %dy, %w : (tensor<?x16x4xf32>, "
            "tensor<16x3x3x3xf32>) -> tensor<?x3x8x8xf32>",
            "expected grad of rank 4, got rank 3",
        ),
        (
            "%dy: tensor<?x16x4x4xf32>, %w: tensor<16x3x3x3xf32>",
            "%dx = graph.conv2d_backward_data %dy, %w strides [2, 2] padding [1, 1, 1, 1] : "
            "(tensor<?x16x4x4xf32>, tensor<16x3x3x3xf32>) -> tensor<2x3x8x8xf32>",
            "expected grad of shape [2, 16, 4, 4] (the convolution of the result shape "
            "[2, 3, 8, 8]), got [?, 16, 4, 4]",
        ),
        (
            "%x: tensor<?x3x8x8xf32>, %dy: tensor<?x16x4x4xf32>",
            "%dw = graph.conv2d_backward_weight %x, %dy strides [2, 2] : "
            "(tensor<?x3x8x8xf32>, tensor<?x16x4x4xf32>) -> tensor<16x3x3x3xf32>",
            "expected grad of shape [?, 16, 3, 3] (the convolution of the input by the "
            "result shape [16, 3, 3, 3]), got [?, 16, 4, 4]",
        ),
        (
            "%x: tensor<?x3x8x8xf32>, %dy: tensor<?x16x4x4xf32>",
            "%dw = graph.conv2d_backward_weight %x, %dy strides [2, 2] : "
            "(tensor<?x3x8x8xf32>, tensor<?x16x4x4xf32>) -> tensor<?x3x3x3xf32>",
            "expected result to be fully static, got shape [?, 3, 3, 3]",
        ),
        (
            "%x: tensor<?x3x8x8xf32>, %dy: tensor<?x16x4x4xf32>",
            "%dw = graph.conv2d_backward_weight %x, %dy strides [2, 2] : "
            "(tensor<?x3x8x8xf32>, tensor<?x16x4x4xf32>) -> tensor<16x3x3xf32>",
            "expected result of rank 4 [C_out, C_in / groups, KH, KW], got rank 3",
        ),
        (
            "%x: tensor<?x3x8x8xf16>, %dy: tensor<?x16x4x4xf32>",
            "%dw = graph.conv2d_backward_weight %x, %dy : "
            "(tensor<?x3x8x8xf16>, tensor<?x16x4x4xf32>) -> tensor<16x3x5x5xf32>",
            "unsupported dtype f16 for input: graph ops take f32 tensors",
        ),
        (
            "%x: tensor<?x3x8x8xf32>, %dy: tensor<?x16x4x4xf32>",
            "%dw = graph.conv2d_backward_weight %x, %dy groups 2 : "
            "(tensor<?x3x8x8xf32>, tensor<?x16x4x4xf32>) -> tensor<16x3x5x5xf32>",
            "the result (the forward weight) [16, 3, 5, 5] does not fit the convolution: "
            "expected C_in = 3 to be divisible by groups = 2",
        ),
    ],
)
def test_verifier_messages(args: str, body: str, message: str) -> None:
    assert message in _verify_error(body, args)


# ------------------------------------------------------------- conv2d rule


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("config", [*CONVS[:3], CONVS[4]], ids=[*CONV_IDS[:3], CONV_IDS[4]])
def test_conv2d_rule(config, bias: bool, batch: int) -> None:
    _, _, strides, padding, dilation, groups = config
    x_shape, w_shape, y_shape = _conv_shapes(config, batch)
    cout = w_shape[0]
    opts = _options_text(strides, padding, dilation, groups)
    b_arg, b_use, b_type = (
        (f", %b: {_t((cout,))}", ", %b", f", {_t((cout,))}") if bias else ("", "", "")
    )
    text = f"""
func.func @forward(%x: {_t(x_shape)}, %w: {_t(w_shape)}{b_arg}, %g: {_t(y_shape)}) -> {_t(y_shape)} {{
  %y = graph.conv2d %x, %w{b_use}{opts} : ({_t(x_shape)}, {_t(w_shape)}{b_type}) -> {_t(y_shape)}
  func.return %y : {_t(y_shape)}
}}
"""
    module = teeny_ir.parse_module(text)
    grads = _apply_rule(module, Conv2dOp)
    names = [op.name for op in _forward(module).body.block.ops]
    assert "graph.conv2d_backward_data" in names and "graph.conv2d_backward_weight" in names
    # The backward ops carry the forward's options exactly (absent ones stay absent).
    printed = teeny_ir.print_module(module)
    for line in printed.splitlines():
        if "graph.conv2d_backward" in line:  # marked as the backward's
            assert opts + " {teeny.backward} :" in line, line
    rng = np.random.default_rng(batch + 10 * bias)
    x, w, b, g = _rand(rng, x_shape), _rand(rng, w_shape), _rand(rng, (cout,)), _rand(rng, y_shape)
    got = _run64(module, {}, [x, w, *([b] if bias else []), g])
    tx, tw, tb = _tensors(x, w, b)
    y = _torch_conv(tx, tw, strides, padding, dilation, groups)
    if bias:
        y = y + tb.reshape(1, -1, 1, 1)
    want = _grads(y, [tx, tw, *([tb] if bias else [])], g)
    assert len(grads) == len(want)
    for a, b_ in zip(got, want, strict=True):
        _close(a, b_)


def test_conv2d_rule_without_gradient() -> None:
    module = teeny_ir.parse_module(
        """
func.func @forward(%x: tensor<1x3x5x5xf32>, %w: tensor<4x3x3x3xf32>, %g: tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32> {
  %y = graph.conv2d %x, %w : (tensor<1x3x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x3x3xf32>
  func.return %y : tensor<1x4x3x3xf32>
}
"""
    )
    block = _forward(module).body.block
    op = next(o for o in block.ops if isinstance(o, Conv2dOp))
    rule = VJPS.lookup(Conv2dOp)
    assert callable(rule)
    ctx = VjpContext(block, block.last_op)  # type: ignore[arg-type]
    assert rule(ctx, op, [None]) == [None, None]
    assert len(list(block.ops)) == 2  # nothing emitted


# ------------------------------------------------------- fused_conv2d rule


def _fused_text(batch_dim: int, activation: str | None, bias: str | None, residual: bool) -> str:
    x, w, y = (batch_dim, 3, 7, 6), (4, 3, 3, 2), (batch_dim, 4, 4, 5)
    shift = f'identity("{bias}")' if bias else "fill(0.0)"
    act = f" activation {activation}" if activation else ""
    r_arg = f", %r: {_t(y)}" if residual else ""
    r_use = " residual %r" if residual else ""
    r_type = f", {_t(y)}" if residual else ""
    return f"""
func.func @forward(%x: {_t(x)}, %w: {_t(w)}{r_arg}, %g: {_t(y)}) -> {_t(y)} {{
  %y = graph.fused_conv2d %x, %w{r_use} strides [2, 1] padding [1, 0, 2, 1] dilation [1, 2]
      scale #derive.param<fill(1.0) : [4]> shift #derive.param<{shift} : [4]>{act}
      : ({_t(x)}, {_t(w)}{r_type}) -> {_t(y)}
  func.return %y : {_t(y)}
}}
"""


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize(
    ("activation", "bias", "residual"),
    [
        (None, None, False),
        (None, "conv.bias", False),
        ("silu", "conv.bias", False),
        ("relu", None, False),
        ("sigmoid", "conv.bias", True),
        ("tanh", None, True),
    ],
)
def test_fused_conv2d_rule(activation, bias, residual: bool, batch: int) -> None:
    module = teeny_ir.parse_module(_fused_text(Q, activation, bias, residual))
    grads = _apply_rule(module, FusedConv2dOp)
    assert len(grads) == 3 if residual else 2
    ops = list(_forward(module).body.block.ops)
    assert any(isinstance(op, ActivationGradOp) for op in ops) == (activation is not None)
    rng = np.random.default_rng(batch)
    x, w, r = _rand(rng, (batch, 3, 7, 6)), _rand(rng, (4, 3, 3, 2)), _rand(rng, (batch, 4, 4, 5))
    b, g = _rand(rng, (4,)), _rand(rng, (batch, 4, 4, 5))
    weights = {"conv.bias": b.astype(np.float32)} if bias else {}
    got = _run64(module, weights, [x, w, *([r] if residual else []), g])
    tx, tw, tb, tr = _tensors(x, w, b, r)
    y = _torch_conv(tx, tw, (2, 1), (1, 0, 2, 1), (1, 2), None)
    if bias:
        y = y + tb.reshape(1, -1, 1, 1)
    if activation:
        y = ACTIVATIONS[activation](y)
    if residual:
        y = y + tr
    want = _grads(y, [tx, tw, *([tr] if residual else []), *([tb] if bias else [])], g)
    assert len(got) == len(want)
    for a, b_ in zip(got, want, strict=True):
        _close(a, b_)


@pytest.mark.parametrize(
    ("scale", "shift", "message"),
    [
        (
            'bn_scale("g", "v") eps 0.001',
            'bn_shift("g", "b", "m", "v") eps 0.001',
            "cannot differentiate graph.fused_conv2d with scale bn_scale['g', 'v']: only the "
            "training-mode fusion (scale fill(1.0); no batch-norm fold) is supported",
        ),
        ("fill(2.0)", "fill(0.0)", "with scale fill"),
        (
            "fill(1.0)",
            "fill(0.5)",
            "with shift fill: only identity(bias) or fill(0.0) is supported",
        ),
    ],
)
def test_fused_conv2d_rule_refuses_other_epilogues(scale: str, shift: str, message: str) -> None:
    module = teeny_ir.parse_module(
        f"""
func.func @forward(%x: tensor<1x3x5x5xf32>, %w: tensor<4x3x3x3xf32>, %g: tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32> {{
  %y = graph.fused_conv2d %x, %w scale #derive.param<{scale} : [4]> shift #derive.param<{shift} : [4]>
      : (tensor<1x3x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x3x3xf32>
  func.return %y : tensor<1x4x3x3xf32>
}}
"""
    )
    with pytest.raises(VjpError, match=None) as info:
        _apply_rule(module, FusedConv2dOp)
    assert message in str(info.value)


# ------------------------------------------------------- linear and matmul


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize(
    ("x_shape", "bias", "activation", "dynamic"),
    [
        ((5,), False, None, True),
        ((5,), True, "silu", True),
        ((3, 5), True, None, True),
        ((2, 3, 5), True, "tanh", True),
        ((3, 5), False, "relu", False),
        ((5,), True, "sigmoid", False),
    ],
)
def test_linear_rule(x_shape, bias: bool, activation, dynamic: bool, batch: int) -> None:
    out = 7
    x_full = (batch, *x_shape)
    x_decl = (Q, *x_shape) if dynamic else x_full
    y_decl = infer_linear_shape(x_decl, (out, x_shape[-1]))
    w_t, b_t = _t((out, x_shape[-1])), _t((out,))
    b_arg, b_use, b_type = (f", %b: {b_t}", ", %b", f", {b_t}") if bias else ("", "", "")
    act = f" activation {activation}" if activation else ""
    text = f"""
func.func @forward(%x: {_t(x_decl)}, %w: {w_t}{b_arg}, %g: {_t(y_decl)}) -> {_t(y_decl)} {{
  %y = graph.linear %x, %w{b_use}{act} : ({_t(x_decl)}, {w_t}{b_type}) -> {_t(y_decl)}
  func.return %y : {_t(y_decl)}
}}
"""
    module = teeny_ir.parse_module(text)
    _apply_rule(module, LinearOp)
    names = {op.name for op in _forward(module).body.block.ops}
    assert names <= {
        "graph.linear",
        "graph.matmul",
        "graph.transpose",
        "graph.reshape",
        "graph.reduce_sum",
        "graph.activation_grad",
        "graph.conv2d_backward_weight",  # the weight gradient over batch x positions
        "func.return",
    }, names
    rng = np.random.default_rng(batch + len(x_shape))
    x, w, b = _rand(rng, x_full), _rand(rng, (out, x_shape[-1])), _rand(rng, (out,))
    g = _rand(rng, (batch, *x_shape[:-1], out))
    got = _run64(module, {}, [x, w, *([b] if bias else []), g])
    tx, tw, tb = _tensors(x, w, b)
    y = F.linear(tx, tw, tb if bias else None)
    if activation:
        y = ACTIVATIONS[activation](y)
    want = _grads(y, [tx, tw, *([tb] if bias else [])], g)
    for a, b_ in zip(got, want, strict=True):
        _close(a, b_)


# (lhs, rhs) with Q the batch at dimension 0 of whichever operand is batched.
MATMULS = [
    ((Q, 3, 5), (5, 4)),  # rhs shared across the batch
    ((Q, 5), (5, 4)),  # rows are the batch
    ((3, 5), (Q, 5, 4)),  # lhs shared across the batch
    ((Q, 2, 3, 5), (2, 5, 4)),  # batch dims broadcast over missing leading dims
    ((Q, 1, 3, 5), (2, 5, 4)),  # lhs batch dim of size 1 stretched
    ((Q, 2, 3, 5), (Q, 1, 5, 4)),  # rhs size-1 dim stretched, both batched
    ((2, 3, 5), (1, 5, 4)),  # static
]


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("extras", [(False, None), (True, "silu")], ids=["plain", "bias-silu"])
@pytest.mark.parametrize("shapes", MATMULS, ids=[str(i) for i in range(len(MATMULS))])
def test_matmul_rule(shapes, extras, batch: int) -> None:
    bias, activation = extras
    lhs_decl, rhs_decl = shapes
    y_decl = infer_matmul_shape(lhs_decl, rhs_decl)
    n = rhs_decl[-1]
    b_arg, b_use, b_type = (f", %b: {_t((n,))}", ", %b", f", {_t((n,))}") if bias else ("", "", "")
    act = f" activation {activation}" if activation else ""
    text = f"""
func.func @forward(%a: {_t(lhs_decl)}, %c: {_t(rhs_decl)}{b_arg}, %g: {_t(y_decl)}) -> {_t(y_decl)} {{
  %y = graph.matmul %a, %c{b_use}{act} : ({_t(lhs_decl)}, {_t(rhs_decl)}{b_type}) -> {_t(y_decl)}
  func.return %y : {_t(y_decl)}
}}
"""
    module = teeny_ir.parse_module(text)
    _apply_rule(module, MatmulOp)
    full = lambda s: tuple(batch if d == Q else d for d in s)  # noqa: E731
    rng = np.random.default_rng(batch + 3 * len(lhs_decl))
    lhs, rhs = _rand(rng, full(lhs_decl)), _rand(rng, full(rhs_decl))
    b, g = _rand(rng, (n,)), _rand(rng, full(y_decl))
    got = _run64(module, {}, [lhs, rhs, *([b] if bias else []), g])
    tl, tr, tb = _tensors(lhs, rhs, b)
    y = torch.matmul(tl, tr)
    if bias:
        y = y + tb
    if activation:
        y = ACTIVATIONS[activation](y)
    want = _grads(y, [tl, tr, *([tb] if bias else [])], g)
    for a, b_ in zip(got, want, strict=True):
        _close(a, b_)


# ------------------------------------------------------- through insert-backward


def _insert_backward(text: str) -> tuple[ModuleOp, list[str]]:
    module = teeny_ir.parse_module(text)
    teeny_ir.PassManager.parse("insert-backward").run(module)
    module.verify()
    func = _forward(module)
    assert func.res_attrs is not None
    names = []
    for attrs in func.res_attrs.data[1:]:
        names.append(attrs.data["teeny.grad"].data)  # type: ignore[attr-defined]
    return module, names


TRAIN_TEXT = """
func.func @forward(%x: tensor<?x3x7x6xf32>, %r: tensor<?x6xf32>) -> tensor<f32> {
  %w1 = graph.param "conv.weight" : tensor<4x3x3x2xf32>
  %b1 = graph.param "conv.bias" : tensor<4xf32>
  %w2 = graph.param "fc.weight" : tensor<4x4x3x3xf32>
  %fb = graph.param "fc.bias" : tensor<4xf32>
  %c = graph.conv2d %x, %w1, %b1 strides [2, 1] padding [1, 0, 2, 1] dilation [1, 2]
      : (tensor<?x3x7x6xf32>, tensor<4x3x3x2xf32>, tensor<4xf32>) -> tensor<?x4x4x5xf32>
  %f = graph.fused_conv2d %c, %w2 padding [1, 1, 1, 1]
      scale #derive.param<fill(1.0) : [4]> shift #derive.param<identity("fc.bias") : [4]>
      activation silu : (tensor<?x4x4x5xf32>, tensor<4x4x3x3xf32>) -> tensor<?x4x4x5xf32>
  %h = graph.reshape %f shape [0, 80] : (tensor<?x4x4x5xf32>) -> tensor<?x80xf32>
  %lw = graph.param "lin.weight" : tensor<9x80xf32>
  %lb = graph.param "lin.bias" : tensor<9xf32>
  %l = graph.linear %h, %lw, %lb activation tanh
      : (tensor<?x80xf32>, tensor<9x80xf32>, tensor<9xf32>) -> tensor<?x9xf32>
  %m = graph.param "mm.rhs" : tensor<9x6xf32>
  %y = graph.matmul %l, %m : (tensor<?x9xf32>, tensor<9x6xf32>) -> tensor<?x6xf32>
  %p = graph.mul %y, %r : (tensor<?x6xf32>, tensor<?x6xf32>) -> tensor<?x6xf32>
  %loss = graph.reduce_sum %p axes [0, 1] : (tensor<?x6xf32>) -> tensor<f32>
  func.return %loss : tensor<f32>
}
"""


@pytest.mark.parametrize("batch", BATCHES)
def test_through_insert_backward(batch: int) -> None:
    """conv2d (bias) -> fused_conv2d (identity bias, silu) -> reshape -> linear
    (bias, tanh) -> matmul -> loss; the fused bias ``fc.bias`` is read only
    through the shift derivation, its (unused) graph.param makes it trainable."""
    text = TRAIN_TEXT
    module, names = _insert_backward(text)
    assert names == [
        "conv.weight",
        "conv.bias",
        "fc.weight",
        "fc.bias",
        "lin.weight",
        "lin.bias",
        "mm.rhs",
    ]
    rng = np.random.default_rng(batch)
    shapes = {
        "conv.weight": (4, 3, 3, 2),
        "conv.bias": (4,),
        "fc.weight": (4, 4, 3, 3),
        "fc.bias": (4,),
        "lin.weight": (9, 80),
        "lin.bias": (9,),
        "mm.rhs": (9, 6),
    }
    weights = {name: _rand(rng, shape) * 0.3 for name, shape in shapes.items()}
    weights = {k: v.astype(np.float32).astype(np.float64) for k, v in weights.items()}
    x, r = _rand(rng, (batch, 3, 7, 6)), _rand(rng, (batch, 6))
    loss, *got = _run64(module, weights, [x, r])
    t = {k: torch.tensor(v, requires_grad=True) for k, v in weights.items()}
    c = _torch_conv(torch.tensor(x), t["conv.weight"], (2, 1), (1, 0, 2, 1), (1, 2), None)
    c = c + t["conv.bias"].reshape(1, -1, 1, 1)
    f = F.silu(
        _torch_conv(c, t["fc.weight"], None, (1, 1, 1, 1), None, None)
        + t["fc.bias"].reshape(1, -1, 1, 1)
    )
    lin = torch.tanh(F.linear(f.reshape(batch, 80), t["lin.weight"], t["lin.bias"]))
    want_loss = (torch.matmul(lin, t["mm.rhs"]) * torch.tensor(r)).sum()
    _close(loss, want_loss.detach().numpy())
    want = torch.autograd.grad(want_loss, [t[n] for n in names])
    assert len(got) == len(names)
    for a, b_ in zip(got, want, strict=True):
        _close(a, b_.numpy())
