"""Backward ops and VJP rules of batch norm, the pools and upsampling.

(1) The reference semantics of `graph.max_pool2d_backward`,
`graph.avg_pool2d_backward` and `graph.batch_norm_backward` against
``torch.autograd.grad`` of the forward op in float64, on odd shapes at batch 1
and 3 (max pool: ties, overlapping windows, padding, dilation, ceil mode).
(2) Each VJP rule called directly on a one-op function, and (3) through
``insert-backward``, against torch. Everything runs in float64 (the
reference's op semantics without its per-op float32 rounding): tolerance
1e-8 relative.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from xdsl.dialects.builtin import DictionaryAttr, FunctionType, ModuleOp, StringAttr
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

import teeny_ir
from dialects.graph.norm import BatchNormBackwardOp
from dialects.graph.param import ParamOp
from dialects.graph.pool import (
    AvgPool2dBackwardOp,
    MaxPool2dBackwardOp,
    MaxPool2dOp,
)
from teeny_ir.autodiff.context import VjpContext
from teeny_ir.autodiff.registry import VJPS
from teeny_ir.core.facets import OptOut
from teeny_ir.reference.semantics import SEMANTICS

BATCHES = (1, 3)
RTOL = 1e-8
rng = np.random.default_rng(20261201)
Ints = Sequence[int]
OptInts = Sequence[int] | None


# ----------------------------------------------------------------- helpers


def ttype(shape: Sequence[int]) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


def run64(function: FuncOp, inputs: Sequence[np.ndarray], weights: dict[str, Any]) -> list[Any]:
    """Run ``function`` op by op in float64 (the reference semantics, unrounded)."""
    block = function.body.block
    env: dict[SSAValue, Any] = dict(zip(block.args, inputs, strict=True))
    for op in block.ops:
        if isinstance(op, ReturnOp):
            return [env[value] for value in op.arguments]
        if isinstance(op, ParamOp):
            env[op.result] = np.asarray(weights[op.param_name.data], np.float64)
            continue
        semantics = SEMANTICS.lookup(type(op))
        assert callable(semantics), op.name
        results = semantics(op, [env[v] for v in op.operands], weights)
        for result, value in zip(op.results, results, strict=True):
            env[result] = np.asarray(value, np.float64)
    raise AssertionError("no func.return")


def assert_close(got: Any, want: torch.Tensor | np.ndarray) -> None:
    want = want.detach().numpy() if isinstance(want, torch.Tensor) else want
    got = np.asarray(got, np.float64)
    assert got.shape == want.shape
    assert np.all(np.isfinite(got))
    scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
    assert float(np.max(np.abs(got - want))) <= RTOL * scale


def t64(array: np.ndarray, grad: bool = False) -> torch.Tensor:
    return torch.tensor(array, dtype=torch.float64, requires_grad=grad)


def one_op(arg_types: Sequence[str], op_text: str, result_types: Sequence[str]) -> ModuleOp:
    args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(arg_types))
    results = ", ".join(f"%r{i}" for i in range(len(result_types)))
    return teeny_ir.parse_module(
        f"func.func @forward({args}) -> ({', '.join(result_types)}) {{\n"
        f"  {results} = {op_text} : ({', '.join(arg_types[: op_text.count('%')])}) "
        f"-> ({', '.join(result_types)})\n"
        f"  func.return {results} : {', '.join(result_types)}\n}}"
    )


def apply_rule(
    arg_types: Sequence[str], op_text: str, result_types: Sequence[str], seeds: int = 1
) -> tuple[FuncOp, list[SSAValue | None]]:
    """A one-op @forward whose last ``seeds`` arguments are the upstream
    gradients of its results; the op's rule is applied and the function
    returns the operand gradients that are not None."""
    seed_types = list(result_types[:seeds])
    module = one_op([*arg_types, *seed_types], op_text, result_types)
    function = next(op for op in module.ops if isinstance(op, FuncOp))
    block = function.body.block
    forward = next(iter(block.ops))
    ret = block.last_op
    assert isinstance(ret, ReturnOp)
    ctx = VjpContext(block, ret)
    ctx.location = forward.location
    rule = VJPS.lookup(type(forward))
    assert callable(rule)
    seed_args = list(block.args[len(arg_types) :])
    grads = rule(ctx, forward, seed_args + [None] * (len(result_types) - seeds))
    assert len(grads) == len(forward.operands)
    for grad, operand in zip(grads, forward.operands, strict=True):
        assert grad is None or grad.type == operand.type
    present = [g for g in grads if g is not None]
    new_ret = ReturnOp(*present)
    block.insert_op_before(new_ret, ret)
    block.erase_op(ret)
    function.function_type = FunctionType.from_lists(
        function.function_type.inputs.data, [g.type for g in present]
    )
    module.verify()
    # the text round-trips, so the backward ops print and parse
    assert teeny_ir.print_module(teeny_ir.parse_module(teeny_ir.print_module(module))) == (
        teeny_ir.print_module(module)
    )
    return function, grads


def options_text(
    kernel: Ints,
    strides: OptInts,
    padding: OptInts,
    dilation: OptInts = None,
    ceil: bool = False,
    exclude: bool = False,
) -> str:
    text = f"kernel {list(kernel)}"
    if strides is not None:
        text += f" strides {list(strides)}"
    if padding is not None:
        text += f" padding {list(padding)}"
    if dilation is not None:
        text += f" dilation {list(dilation)}"
    if ceil:
        text += " ceil_mode"
    if exclude:
        text += " exclude_pad"
    return text


def torch_pool_args(
    kernel: Ints, strides: OptInts, padding: OptInts, dilation: OptInts = None
) -> dict[str, Any]:
    top, left, bottom, right = padding or (0, 0, 0, 0)
    assert (top, left) == (bottom, right)
    args: dict[str, Any] = {
        "kernel_size": tuple(kernel),
        "stride": tuple(strides or kernel),
        "padding": (top, left),
    }
    if dilation is not None:
        args["dilation"] = tuple(dilation)
    return args


def pool_out(
    shape: Ints,
    kernel: Ints,
    strides: OptInts,
    padding: OptInts,
    dilation: OptInts = None,
    ceil: bool = False,
) -> list[int]:
    from dialects.graph.pool import infer_pool2d_shape

    return list(
        infer_pool2d_shape(
            shape,
            kernel,
            strides or kernel,
            padding or (0, 0, 0, 0),
            dilation or (1, 1),
            ceil,
        )
    )


# (input C, H, W, kernel, strides, padding, dilation, ceil_mode)
MAX_CASES = [
    ((3, 7, 5), (2, 2), None, None, None, False),
    ((2, 7, 9), (3, 3), (1, 2), (1, 1, 1, 1), None, False),  # overlapping, padded
    ((2, 9, 7), (3, 2), (2, 1), (1, 1, 1, 1), (2, 3), False),  # dilated
    ((3, 7, 7), (3, 3), (2, 2), (1, 1, 1, 1), None, True),  # ceil mode
    ((1, 6, 5), (2, 3), (2, 2), None, (1, 2), True),
    ((2, 5, 5), (5, 5), (1, 1), (2, 2, 2, 2), None, False),  # SPPF-like
    ((2, 9, 11), (5, 5), (2, 2), (2, 2, 2, 2), None, True),  # SPPF's window, strided
    ((2, 11, 13), (2, 3), (3, 4), None, None, False),  # strides past the kernel
]


def _max_input(batch: int, shape: Ints, ties: bool) -> np.ndarray:
    full = (batch, *shape)
    if ties:  # few distinct values, negative ones too: ties and all-negative windows
        return rng.integers(-2, 1, full).astype(np.float64)
    return rng.standard_normal(full)


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("case", MAX_CASES)
def test_max_pool2d_backward_matches_torch(case: tuple[Any, ...], ties: bool, batch: int) -> None:
    shape, kernel, strides, padding, dilation, ceil = case
    x = _max_input(batch, shape, ties)
    out = pool_out((batch, *shape), kernel, strides, padding, dilation, ceil)
    dy = rng.standard_normal(out)
    module = one_op(
        [ttype(x.shape), ttype(out)],
        "graph.max_pool2d_backward %a0, %a1 "
        + options_text(kernel, strides, padding, dilation, ceil),
        [ttype(x.shape)],
    )
    module.verify()
    function = next(iter(module.ops))
    (got,) = run64(function, [x, dy], {})
    xt = t64(x, True)
    y = F.max_pool2d(xt, **torch_pool_args(kernel, strides, padding, dilation), ceil_mode=ceil)
    assert list(y.shape) == out
    (want,) = torch.autograd.grad(y, xt, t64(dy))
    assert_close(got, want)


def test_max_pool2d_backward_first_maximum_on_ties() -> None:
    # a constant input: every window's gradient goes to its first (top-left) tap
    x = np.zeros((1, 1, 3, 3))
    dy = np.array([[[[1.0, 10.0], [100.0, 1000.0]]]])
    module = one_op(
        [ttype(x.shape), ttype(dy.shape)],
        "graph.max_pool2d_backward %a0, %a1 kernel [2, 2] strides [1, 1]",
        [ttype(x.shape)],
    )
    (got,) = run64(next(iter(module.ops)), [x, dy], {})
    np.testing.assert_array_equal(got[0, 0], [[1, 10, 0], [100, 1000, 0], [0, 0, 0]])


def test_max_pool2d_backward_asymmetric_padding_matches_explicit_pad() -> None:
    x = rng.standard_normal((3, 2, 6, 7))
    padding, kernel = (1, 0, 0, 1), (3, 2)
    out = pool_out(x.shape, kernel, (2, 2), padding)
    dy = rng.standard_normal(out)
    module = one_op(
        [ttype(x.shape), ttype(out)],
        "graph.max_pool2d_backward %a0, %a1 " + options_text(kernel, (2, 2), padding),
        [ttype(x.shape)],
    )
    (got,) = run64(next(iter(module.ops)), [x, dy], {})
    xt = t64(x, True)
    padded = F.pad(xt, (0, 1, 1, 0), value=-float("inf"))
    (want,) = torch.autograd.grad(F.max_pool2d(padded, kernel, (2, 2)), xt, t64(dy))
    assert_close(got, want)


def test_max_pool2d_backward_nan_takes_the_gradient() -> None:
    x = rng.standard_normal((1, 2, 5, 5))
    x[0, 0, 1, 1] = x[0, 1, 3, 4] = np.nan
    dy = rng.standard_normal((1, 2, 4, 4))
    module = one_op(
        [ttype(x.shape), ttype(dy.shape)],
        "graph.max_pool2d_backward %a0, %a1 kernel [2, 2] strides [1, 1]",
        [ttype(x.shape)],
    )
    (got,) = run64(next(iter(module.ops)), [x, dy], {})
    xt = t64(x, True)
    (want,) = torch.autograd.grad(F.max_pool2d(xt, 2, 1), xt, t64(dy))
    assert_close(got, want)


def test_avg_pool2d_backward_asymmetric_padding_matches_explicit_pad() -> None:
    x_shape, padding, kernel = (3, 2, 6, 7), (1, 0, 0, 1), (3, 2)
    out = pool_out(x_shape, kernel, (2, 2), padding)
    dy = rng.standard_normal(out)
    module = one_op(
        [ttype(out)],
        "graph.avg_pool2d_backward %a0 " + options_text(kernel, (2, 2), padding),
        [ttype(x_shape)],
    )
    (got,) = run64(next(iter(module.ops)), [dy], {})
    xt = t64(rng.standard_normal(x_shape), True)
    y = F.avg_pool2d(F.pad(xt, (0, 1, 1, 0)), kernel, (2, 2))
    (want,) = torch.autograd.grad(y, xt, t64(dy))
    assert_close(got, want)


AVG_CASES = [
    ((3, 7, 5), (2, 2), None, None, False, False),
    ((2, 7, 9), (3, 3), (1, 2), (1, 1, 1, 1), False, False),
    ((2, 7, 9), (3, 3), (1, 2), (1, 1, 1, 1), False, True),  # exclude_pad
    ((3, 7, 7), (3, 3), (2, 2), (1, 1, 1, 1), True, False),  # ceil mode
    ((3, 8, 7), (3, 2), (2, 2), (1, 1, 1, 1), True, True),
    ((1, 5, 6), (2, 3), (3, 2), None, True, False),
]


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("case", AVG_CASES)
def test_avg_pool2d_backward_matches_torch(case: tuple[Any, ...], batch: int) -> None:
    shape, kernel, strides, padding, ceil, exclude = case
    x_shape = (batch, *shape)
    out = pool_out(x_shape, kernel, strides, padding, None, ceil)
    dy = rng.standard_normal(out)
    module = one_op(
        [ttype(out)],
        "graph.avg_pool2d_backward %a0 "
        + options_text(kernel, strides, padding, None, ceil, exclude),
        [ttype(x_shape)],
    )
    module.verify()
    (got,) = run64(next(iter(module.ops)), [dy], {})
    xt = t64(rng.standard_normal(x_shape), True)
    y = F.avg_pool2d(
        xt,
        **torch_pool_args(kernel, strides, padding),
        ceil_mode=ceil,
        count_include_pad=not exclude,
    )
    assert list(y.shape) == out
    (want,) = torch.autograd.grad(y, xt, t64(dy))
    assert_close(got, want)


BN_SHAPES = [(3, 5, 7), (5,), (2, 3, 2, 3)]


def _torch_bn_train(
    x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float
) -> torch.Tensor:
    return F.batch_norm(x, None, None, gamma, beta, training=True, eps=eps)


@pytest.mark.parametrize(
    ("shape", "batch"),
    # [1, C] has one value per channel: training batch norm is undefined there
    [(shape, batch) for shape in BN_SHAPES for batch in BATCHES if batch > 1 or len(shape) > 1],
)
def test_batch_norm_backward_matches_torch(shape: Ints, batch: int) -> None:
    channels = shape[0]
    x = rng.standard_normal((batch, *shape)) * 2 + 0.5
    gamma, beta = rng.standard_normal(channels), rng.standard_normal(channels)
    dy = rng.standard_normal(x.shape)
    c = ttype([channels])
    module = one_op(
        [ttype(x.shape), c, ttype(x.shape)],
        "graph.batch_norm_backward %a0, %a1, %a2 eps 1.0e-03",
        [ttype(x.shape), c, c],
    )
    module.verify()
    got = run64(next(iter(module.ops)), [x, gamma, dy], {})
    xt, gt, bt = t64(x, True), t64(gamma, True), t64(beta, True)
    want = torch.autograd.grad(_torch_bn_train(xt, gt, bt, 1e-3), (xt, gt, bt), t64(dy))
    for g, w in zip(got, want, strict=True):
        assert_close(g, w)


# ----------------------------------------------------------------- rules


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("case", [MAX_CASES[2], MAX_CASES[3]])
def test_max_pool2d_rule(case: tuple[Any, ...], batch: int) -> None:
    shape, kernel, strides, padding, dilation, ceil = case
    x = _max_input(batch, shape, ties=True)
    out = pool_out(x.shape, kernel, strides, padding, dilation, ceil)
    function, _ = apply_rule(
        [ttype(x.shape)],
        "graph.max_pool2d %a0 " + options_text(kernel, strides, padding, dilation, ceil),
        [ttype(out)],
    )
    backward = [op for op in function.body.block.ops if isinstance(op, MaxPool2dBackwardOp)]
    assert len(backward) == 1 and backward[0].input is function.body.block.args[0]
    dy = rng.standard_normal(out)
    (got,) = run64(function, [x, dy], {})
    xt = t64(x, True)
    y = F.max_pool2d(xt, **torch_pool_args(kernel, strides, padding, dilation), ceil_mode=ceil)
    assert_close(got, torch.autograd.grad(y, xt, t64(dy))[0])


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("case", [AVG_CASES[2], AVG_CASES[4]])
def test_avg_pool2d_rule(case: tuple[Any, ...], batch: int) -> None:
    shape, kernel, strides, padding, ceil, exclude = case
    x = rng.standard_normal((batch, *shape))
    out = pool_out(x.shape, kernel, strides, padding, None, ceil)
    function, _ = apply_rule(
        [ttype(x.shape)],
        "graph.avg_pool2d %a0 " + options_text(kernel, strides, padding, None, ceil, exclude),
        [ttype(out)],
    )
    assert any(isinstance(op, AvgPool2dBackwardOp) for op in function.body.block.ops)
    dy = rng.standard_normal(out)
    (got,) = run64(function, [x, dy], {})
    xt = t64(x, True)
    y = F.avg_pool2d(
        xt,
        **torch_pool_args(kernel, strides, padding),
        ceil_mode=ceil,
        count_include_pad=not exclude,
    )
    assert_close(got, torch.autograd.grad(y, xt, t64(dy))[0])


@pytest.mark.parametrize("batch", BATCHES)
def test_global_avg_pool2d_rule(batch: int) -> None:
    x = rng.standard_normal((batch, 3, 5, 7))
    function, _ = apply_rule(
        [ttype(x.shape)], "graph.global_avg_pool2d %a0", [ttype((batch, 3, 1, 1))]
    )
    dy = rng.standard_normal((batch, 3, 1, 1))
    (got,) = run64(function, [x, dy], {})
    xt = t64(x, True)
    want = torch.autograd.grad(F.adaptive_avg_pool2d(xt, 1), xt, t64(dy))[0]
    assert_close(got, want)


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("scales", [(2, 3), (3, 1), (1, 1)])
def test_upsample_nearest2d_rule(scales: Ints, batch: int) -> None:
    x = rng.standard_normal((batch, 2, 3, 5))
    out = (batch, 2, 3 * scales[0], 5 * scales[1])
    function, _ = apply_rule(
        [ttype(x.shape)], f"graph.upsample_nearest2d %a0 scales {list(scales)}", [ttype(out)]
    )
    dy = rng.standard_normal(out)
    (got,) = run64(function, [x, dy], {})
    xt = t64(x, True)
    y = F.interpolate(xt, scale_factor=scales, mode="nearest")
    assert_close(got, torch.autograd.grad(y, xt, t64(dy))[0])


def _bn_args(batch: int, shape: Sequence[int]) -> tuple[list[str], list[np.ndarray]]:
    channels = shape[0]
    x = rng.standard_normal((batch, *shape)) * 1.5 - 0.3
    vectors = [rng.standard_normal(channels) for _ in range(3)]
    var = rng.uniform(0.5, 2.0, channels)
    return [ttype(x.shape)] + [ttype([channels])] * 4, [x, *vectors, var]


@pytest.mark.parametrize("batch", BATCHES)
def test_batch_norm_training_rule(batch: int) -> None:
    types, (x, gamma, beta, mean, var) = _bn_args(batch, (3, 5, 7))
    c = types[1]
    # all three results seeded: the running statistics' gradients are ignored
    function, grads = apply_rule(
        types,
        "graph.batch_norm %a0, %a1, %a2, %a3, %a4 eps 1.0e-03 momentum 0.3 training",
        [types[0], c, c],
        seeds=3,
    )
    assert grads[3] is None and grads[4] is None
    (backward,) = [op for op in function.body.block.ops if isinstance(op, BatchNormBackwardOp)]
    assert backward.eps == 1e-3
    dy = rng.standard_normal(x.shape)
    got = run64(function, [x, gamma, beta, mean, var, dy, mean, var], {})
    xt, gt, bt = t64(x, True), t64(gamma, True), t64(beta, True)
    want = torch.autograd.grad(_torch_bn_train(xt, gt, bt, 1e-3), (xt, gt, bt), t64(dy))
    for g, w in zip(got, want, strict=True):
        assert_close(g, w)


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("activation", [None, "silu", "sigmoid", "tanh", "relu"])
def test_batch_norm_inference_rule(activation: str | None, batch: int) -> None:
    types, (x, gamma, beta, mean, var) = _bn_args(batch, (3, 5, 7))
    suffix = "" if activation is None else f" activation {activation}"
    function, grads = apply_rule(
        types, f"graph.batch_norm %a0, %a1, %a2, %a3, %a4 eps 1.0e-03{suffix}", [types[0]]
    )
    assert grads[3] is None and grads[4] is None
    assert not any(isinstance(op, BatchNormBackwardOp) for op in function.body.block.ops)
    dy = rng.standard_normal(x.shape)
    got = run64(function, [x, gamma, beta, mean, var, dy], {})
    xt, gt, bt = t64(x, True), t64(gamma, True), t64(beta, True)
    y = F.batch_norm(xt, t64(mean), t64(var), gt, bt, training=False, eps=1e-3)
    if activation is not None:
        y = getattr(torch, activation)(y) if activation != "silu" else F.silu(y)
    want = torch.autograd.grad(y, (xt, gt, bt), t64(dy))
    for g, w in zip(got, want, strict=True):
        assert_close(g, w)


@pytest.mark.parametrize("op_type", [MaxPool2dBackwardOp, AvgPool2dBackwardOp, BatchNormBackwardOp])
def test_backward_ops_are_not_differentiable(op_type: type[Operation]) -> None:
    assert isinstance(VJPS.lookup(op_type), OptOut)


@pytest.mark.parametrize(
    ("arg_types", "op_text", "result_types"),
    [
        (["tensor<1x2x4x4xf32>"], "graph.max_pool2d %a0 kernel [2, 2]", ["tensor<1x2x2x2xf32>"]),
        (["tensor<1x2x4x4xf32>"], "graph.avg_pool2d %a0 kernel [2, 2]", ["tensor<1x2x2x2xf32>"]),
        (["tensor<1x2x4x4xf32>"], "graph.global_avg_pool2d %a0", ["tensor<1x2x1x1xf32>"]),
        (
            ["tensor<1x2x4x4xf32>"],
            "graph.upsample_nearest2d %a0 scales [2, 2]",
            ["tensor<1x2x8x8xf32>"],
        ),
        (
            ["tensor<2x2x3xf32>"] + ["tensor<2xf32>"] * 4,
            "graph.batch_norm %a0, %a1, %a2, %a3, %a4 training",
            ["tensor<2x2x3xf32>", "tensor<2xf32>", "tensor<2xf32>"],
        ),
    ],
)
def test_rules_without_a_gradient_emit_nothing(
    arg_types: list[str], op_text: str, result_types: list[str]
) -> None:
    module = one_op(arg_types, op_text, result_types)
    block = next(iter(module.ops)).body.block
    forward = next(iter(block.ops))
    rule = VJPS.lookup(type(forward))
    assert callable(rule)
    grads = rule(VjpContext(block, block.last_op), forward, [None] * len(result_types))
    assert grads == [None] * len(forward.operands)
    assert len(list(block.ops)) == 2


# ----------------------------------------------------------------- verifiers


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "graph.max_pool2d_backward %a0, %a1 kernel [2, 2] : (tensor<1x2x5x5xf32>, "
            "tensor<1x2x3x3xf32>) -> tensor<1x2x5x5xf32>",
            "expected grad shape [1, 2, 2, 2] (the pool's result for input [1, 2, 5, 5]), "
            "got [1, 2, 3, 3]",
        ),
        (
            "graph.max_pool2d_backward %a0, %a1 kernel [2, 2] : (tensor<1x2x4x4xf32>, "
            "tensor<1x2x2x2xf32>) -> tensor<1x2x4x5xf32>",
            "expected result type tensor<1x2x4x4xf32>, got tensor<1x2x4x5xf32>",
        ),
        (
            "graph.avg_pool2d_backward %a0 kernel [2, 2] ceil_mode : (tensor<1x2x2x2xf32>) "
            "-> tensor<1x2x5x5xf32>",
            "expected grad shape [1, 2, 3, 3] (the pool's result for input [1, 2, 5, 5]), "
            "got [1, 2, 2, 2]",
        ),
        (
            "graph.avg_pool2d_backward %a0 kernel [2, 2] : (tensor<1x2x2x2xf32>) "
            "-> tensor<2x2xf32>",
            "expected input of rank 4 [N, C, H, W], got rank 2",
        ),
        (
            "graph.batch_norm_backward %a0, %a1, %a2 : (tensor<2x3x4xf32>, tensor<4xf32>, "
            "tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>)",
            "expected gamma shape [3], got [4]",
        ),
        (
            "graph.batch_norm_backward %a0, %a1, %a2 : (tensor<2x3x4xf32>, tensor<3xf32>, "
            "tensor<2x3x5xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>)",
            "expected grad of the input's type tensor<2x3x4xf32>, got tensor<2x3x5xf32>",
        ),
        (
            "graph.batch_norm_backward %a0, %a1, %a2 : (tensor<2x3x4xf32>, tensor<3xf32>, "
            "tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<4xf32>)",
            "expected beta gradient type tensor<3xf32>, got tensor<4xf32>",
        ),
    ],
)
def test_backward_op_verifiers(text: str, message: str) -> None:
    operands = text[text.index("(") + 1 : text.index(")")].split(", ")
    args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(operands))
    count = text.split("->")[1].count("tensor")
    with pytest.raises(teeny_ir.DiagnosticError, match=re.escape(message)):
        teeny_ir.parse_module(f"func.func @f({args}) {{\n  %r:{count} = {text}\n  func.return\n}}")


def test_builders_infer_types() -> None:
    module = one_op(
        ["tensor<?x2x7x7xf32>"],
        "graph.max_pool2d %a0 kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] ceil_mode",
        ["tensor<?x2x4x4xf32>"],
    )
    forward = next(iter(next(iter(module.ops)).body.block.ops))
    assert isinstance(forward, MaxPool2dOp)
    backward = MaxPool2dBackwardOp.of(forward, forward.input, forward.result)
    backward.verify()
    assert backward.result.type == forward.input.type
    assert backward.properties.keys() == forward.properties.keys()
    with pytest.raises(VerifyException, match="expected grad shape"):
        MaxPool2dBackwardOp(forward.input, forward.input, kernel=[3, 3]).verify()


# ----------------------------------------------------------------- insert-backward


def _grads_by_name(function: FuncOp, results: list[Any]) -> dict[str, Any]:
    assert function.res_attrs is not None
    found = {}
    for attrs, value in zip(function.res_attrs.data, results, strict=True):
        assert isinstance(attrs, DictionaryAttr)
        name = attrs.data.get("teeny.grad")
        if isinstance(name, StringAttr):
            found[name.data] = value
    return found


def test_insert_backward_through_pools_and_batch_norm() -> None:
    """A small net: batch norm (training) -> max pool -> upsample -> avg pool ->
    inference batch norm with silu -> global average; loss = sum(y * r)."""
    batch, c = 3, 2
    text = f"""
func.func @forward(%x: tensor<{batch}x{c}x7x7xf32>, %r: tensor<{batch}x{c}x1x1xf32>) -> tensor<f32> {{
  %g = graph.param "bn.weight" : tensor<{c}xf32>
  %b = graph.param "bn.bias" : tensor<{c}xf32>
  %m = graph.param "bn.running_mean" : tensor<{c}xf32>
  %v = graph.param "bn.running_var" : tensor<{c}xf32>
  %g2 = graph.param "bn2.weight" : tensor<{c}xf32>
  %b2 = graph.param "bn2.bias" : tensor<{c}xf32>
  %y, %nm, %nv = graph.batch_norm %x, %g, %b, %m, %v eps 1.0e-03 training : (tensor<{batch}x{c}x7x7xf32>, tensor<{c}xf32>, tensor<{c}xf32>, tensor<{c}xf32>, tensor<{c}xf32>) -> (tensor<{batch}x{c}x7x7xf32>, tensor<{c}xf32>, tensor<{c}xf32>)
  %p = graph.max_pool2d %y kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] ceil_mode : (tensor<{batch}x{c}x7x7xf32>) -> tensor<{batch}x{c}x4x4xf32>
  %u = graph.upsample_nearest2d %p scales [2, 1] : (tensor<{batch}x{c}x4x4xf32>) -> tensor<{batch}x{c}x8x4xf32>
  %a = graph.avg_pool2d %u kernel [3, 2] strides [2, 1] padding [1, 1, 1, 1] exclude_pad : (tensor<{batch}x{c}x8x4xf32>) -> tensor<{batch}x{c}x4x5xf32>
  %z = graph.batch_norm %a, %g2, %b2, %m, %v activation silu : (tensor<{batch}x{c}x4x5xf32>, tensor<{c}xf32>, tensor<{c}xf32>, tensor<{c}xf32>, tensor<{c}xf32>) -> tensor<{batch}x{c}x4x5xf32>
  %q = graph.global_avg_pool2d %z : (tensor<{batch}x{c}x4x5xf32>) -> tensor<{batch}x{c}x1x1xf32>
  %w = graph.mul %q, %r : (tensor<{batch}x{c}x1x1xf32>, tensor<{batch}x{c}x1x1xf32>) -> tensor<{batch}x{c}x1x1xf32>
  %l = graph.reduce_sum %w axes [0, 1, 2, 3] : (tensor<{batch}x{c}x1x1xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}}"""
    module = teeny_ir.parse_module(text)
    teeny_ir.PassManager.parse("insert-backward").run(module)
    module.verify()
    function = next(op for op in module.ops if isinstance(op, FuncOp))
    weights = {
        "bn.weight": rng.standard_normal(c),
        "bn.bias": rng.standard_normal(c),
        "bn.running_mean": rng.standard_normal(c),
        "bn.running_var": rng.uniform(0.5, 2, c),
        "bn2.weight": rng.standard_normal(c),
        "bn2.bias": rng.standard_normal(c),
    }
    x, r = rng.standard_normal((batch, c, 7, 7)), rng.standard_normal((batch, c, 1, 1))
    results = run64(function, [x, r], weights)
    # the ordinary (float32-rounding) interpreter runs the backward too
    f32_weights = {k: v.astype(np.float32) for k, v in weights.items()}
    rounded = teeny_ir.reference.run(
        module, f32_weights, [x.astype(np.float32), r.astype(np.float32)]
    )
    for value, exact in zip(rounded, results, strict=True):
        assert np.allclose(value, exact, rtol=1e-3, atol=1e-4)
    got = _grads_by_name(function, results)
    assert set(got) == {"bn.weight", "bn.bias", "bn2.weight", "bn2.bias"}

    params = {k: t64(v, k.endswith(("weight", "bias"))) for k, v in weights.items()}
    y = F.batch_norm(
        t64(x), None, None, params["bn.weight"], params["bn.bias"], training=True, eps=1e-3
    )
    p = F.max_pool2d(y, 3, 2, 1, ceil_mode=True)
    u = F.interpolate(p, scale_factor=(2, 1), mode="nearest")
    a = F.avg_pool2d(u, (3, 2), (2, 1), 1, count_include_pad=False)
    z = F.silu(
        F.batch_norm(
            a,
            params["bn.running_mean"],
            params["bn.running_var"],
            params["bn2.weight"],
            params["bn2.bias"],
            training=False,
        )
    )
    loss = (F.adaptive_avg_pool2d(z, 1) * t64(r)).sum()
    names = sorted(got)
    want = torch.autograd.grad(loss, [params[n] for n in names])
    for name, w in zip(names, want, strict=True):
        assert_close(got[name], w)
