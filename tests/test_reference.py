"""The reference interpreter against PyTorch, op by op, at batch 1 and 3; its input
and weight validation; and the slice example end to end.

Tolerance (docs/architecture.md): outputs finite, same shapes, and
``max|got - ref| <= tol * max(1, max|ref|)``, tol 1e-5 for elementwise ops and
1e-4 for anything with a reduction.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import DYNAMIC_INDEX

import teeny_ir
from dialects.graph.shapes import broadcast_shapes, infer_conv2d_shape
from teeny_ir import reference
from teeny_ir.core.diagnostics import DiagnosticError
from teeny_ir.testing import ELEMENTWISE_TOL, REDUCTION_TOL, assert_close

REPO = Path(__file__).resolve().parent.parent
SLICE = REPO / "examples" / "slice"
Q = DYNAMIC_INDEX
BATCHES = (1, 3)


def ttype(shape: Sequence[int]) -> str:
    dims = "".join(("?" if d == Q else str(d)) + "x" for d in shape)
    return f"tensor<{dims}f32>"


def forward(args: Sequence[Sequence[int]], results: Sequence[Sequence[int]], body: str) -> str:
    """``@forward`` over arguments ``%a0, %a1, ...`` returning ``%r0, %r1, ...``."""
    signature = ", ".join(f"%a{i}: {ttype(s)}" for i, s in enumerate(args))
    outs = ", ".join(ttype(s) for s in results)
    names = ", ".join(f"%r{i}" for i in range(len(results)))
    return (
        f"func.func @forward({signature}) -> ({outs}) {{\n{body}\n"
        f"  func.return {names} : {outs}\n}}\n"
    )


def run(text: str, weights: dict[str, np.ndarray], inputs: Sequence[np.ndarray]) -> list[Any]:
    return reference.run(teeny_ir.parse_module(text), weights, inputs)


def rand(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (scale * rng.standard_normal(shape)).astype(np.float32)


def concrete(shape: Sequence[int], batch: int) -> tuple[int, ...]:
    return tuple(batch if d == Q else d for d in shape)


def bn_stats(rng: np.random.Generator, channels: int) -> dict[str, np.ndarray]:
    """Non-trivial BatchNorm parameters, named like a PyTorch state dict."""
    return {
        "bn.weight": rng.uniform(0.5, 1.5, channels).astype(np.float32),
        "bn.bias": rand(rng, channels, scale=0.1),
        "bn.running_mean": rand(rng, channels, scale=0.1),
        "bn.running_var": rng.uniform(0.5, 1.5, channels).astype(np.float32),
    }


def torch_tensors(arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    import torch

    return {name: torch.from_numpy(value.copy()) for name, value in arrays.items()}


# graph.conv2d

CONV_CASES = {
    # c_in, c_out, h, w, (kh, kw), strides, padding [t, l, b, r], dilation, groups, bias
    "3x3": (3, 5, 8, 7, (3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1, False),
    "stride2_pad1_bias": (3, 4, 9, 9, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1, True),
    "asymmetric_dilated_grouped": (4, 6, 9, 10, (3, 2), (2, 1), (0, 1, 2, 3), (2, 1), 2, True),
    "depthwise_dilated": (6, 6, 7, 7, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 6, False),
    "depthwise_multiplier_bias": (4, 8, 5, 6, (3, 3), (2, 1), (1, 0, 1, 2), (1, 1), 4, True),
    "1x1_odd_channels": (37, 37, 7, 9, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, True),
    "5x5_pad2": (1, 6, 12, 12, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 1, True),
}


def conv_options(
    strides: Sequence[int], padding: Sequence[int], dilation: Sequence[int], groups: int
) -> str:
    return (
        f"strides {list(strides)} padding {list(padding)} dilation {list(dilation)} groups {groups}"
    )


def torch_conv(
    x: Any, w: Any, b: Any, strides: Any, padding: Any, dilation: Any, groups: int
) -> Any:
    import torch.nn.functional as F

    top, left, bottom, right = padding
    padded = F.pad(x, (left, right, top, bottom))
    return F.conv2d(padded, w, b, stride=strides, dilation=dilation, groups=groups)


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("case", CONV_CASES.values(), ids=CONV_CASES.keys())
def test_conv2d_matches_torch(case: tuple[Any, ...], batch: int) -> None:
    c_in, c_out, h, w, kernel, strides, padding, dilation, groups, bias = case
    x_shape = (Q, c_in, h, w)
    w_shape = (c_out, c_in // groups, *kernel)
    y_shape = infer_conv2d_shape(x_shape, w_shape, strides, padding, dilation, groups)
    operands = "%a0, %w, %b" if bias else "%a0, %w"
    types = f"{ttype(x_shape)}, {ttype(w_shape)}" + (f", {ttype([c_out])}" if bias else "")
    body = (
        f'  %w = graph.param "conv.weight" : {ttype(w_shape)}\n'
        + (f'  %b = graph.param "conv.bias" : {ttype([c_out])}\n' if bias else "")
        + f"  %r0 = graph.conv2d {operands} {conv_options(strides, padding, dilation, groups)} "
        f": ({types}) -> {ttype(y_shape)}"
    )
    rng = np.random.default_rng(1)
    weights = {"conv.weight": rand(rng, *w_shape)}
    if bias:
        weights["conv.bias"] = rand(rng, c_out)
    x = rand(rng, batch, c_in, h, w)
    got = run(forward([x_shape], [y_shape], body), weights, [x])
    t = torch_tensors({"x": x, **weights})
    want = torch_conv(
        t["x"], t["conv.weight"], t.get("conv.bias"), strides, padding, dilation, groups
    )
    assert_close(got, [want.numpy()], REDUCTION_TOL, dtype=np.float32)


# graph.batch_norm

BN_CASES = {
    # input shape, eps, momentum, training (None: the default, left out of the IR)
    "inference_nchw": ((Q, 5, 4, 3), None, None, False),
    "inference_nc_eps": ((Q, 7), 1e-3, None, False),
    "inference_ncl_momentum": ((Q, 4, 6), 1e-2, 0.3, False),
    "training_nchw": ((Q, 5, 4, 3), None, None, True),
    "training_nchw_yolo": ((Q, 6, 3, 5), 1e-3, 0.03, True),
    "training_ncl": ((Q, 3, 4), None, 0.5, True),
}


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("case", BN_CASES.values(), ids=BN_CASES.keys())
def test_batch_norm_matches_torch(case: tuple[Any, ...], batch: int) -> None:
    import torch.nn.functional as F

    shape, eps, momentum, training = case
    options = "".join(
        [
            "" if eps is None else f" eps {eps!r}",
            "" if momentum is None else f" momentum {momentum!r}",
            " training" if training else "",
        ]
    )
    channels = shape[1]
    vec = ttype([channels])
    params = "\n".join(
        f'  %{role} = graph.param "bn.{key}" : {vec}'
        for role, key in (
            ("g", "weight"),
            ("b", "bias"),
            ("m", "running_mean"),
            ("v", "running_var"),
        )
    )
    results = [shape, (channels,), (channels,)] if training else [shape]
    heads = "%r0, %r1, %r2" if training else "%r0"
    out_types = ", ".join(ttype(s) for s in results)
    body = (
        f"{params}\n  {heads} = graph.batch_norm %a0, %g, %b, %m, %v{options} "
        f": ({ttype(shape)}, {vec}, {vec}, {vec}, {vec}) -> ({out_types})"
    )
    rng = np.random.default_rng(2)
    weights = bn_stats(rng, channels)
    x = rand(rng, *concrete(shape, batch), scale=2.0) + 0.5
    got = run(forward([shape], results, body), weights, [x])

    t = torch_tensors({"x": x, **weights})
    want = F.batch_norm(
        t["x"],
        t["bn.running_mean"],
        t["bn.running_var"],
        t["bn.weight"],
        t["bn.bias"],
        training=training,
        momentum=0.1 if momentum is None else momentum,
        eps=1e-5 if eps is None else eps,
    )
    expected = [want.numpy()]
    if training:  # torch updated the running statistics in place
        expected += [t["bn.running_mean"].numpy(), t["bn.running_var"].numpy()]
    assert_close(got, expected, REDUCTION_TOL, dtype=np.float32)


def test_batch_norm_training_needs_two_values_per_channel() -> None:
    vec = ttype([3])
    body = (
        f'  %p = graph.param "p" : {vec}\n'
        f"  %r0, %r1, %r2 = graph.batch_norm %a0, %p, %p, %p, %p training "
        f": ({ttype((Q, 3))}, {vec}, {vec}, {vec}, {vec}) -> ({ttype((Q, 3))}, {vec}, {vec})"
    )
    text = forward([(Q, 3)], [(Q, 3), (3,), (3,)], body)
    weights = {"p": np.ones(3, np.float32)}
    with pytest.raises(DiagnosticError, match="more than 1 value per channel, got 1"):
        run(text, weights, [np.ones((1, 3), np.float32)])


# Activations

EXTREMES = np.array([0.0, -0.0, 1e-30, -1e-30, 88.8, -88.8, 100.0, -100.0, 1000.0, -1000.0])
ACTIVATION_SHAPES = {"nchw": (Q, 4, 5, 6), "nc": (Q, 10), "ncl": (Q, 3, 10)}


def activation_input(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Normal values at several scales, with the extremes planted in."""
    x = rand(rng, *shape, scale=4.0)
    flat = x.reshape(-1)
    flat[: len(EXTREMES)] = EXTREMES
    return x


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("shape", ACTIVATION_SHAPES.values(), ids=ACTIVATION_SHAPES.keys())
@pytest.mark.parametrize("op", ["silu", "relu", "sigmoid"])
def test_activations_match_torch(op: str, shape: tuple[int, ...], batch: int) -> None:
    import torch
    import torch.nn.functional as F

    body = f"  %r0 = graph.{op} %a0 : {ttype(shape)}"
    x = activation_input(np.random.default_rng(3), concrete(shape, batch))
    got = run(forward([shape], [shape], body), {}, [x])
    torch_op = {"silu": F.silu, "relu": F.relu, "sigmoid": torch.sigmoid}[op]
    assert_close(got, [torch_op(torch.from_numpy(x)).numpy()], ELEMENTWISE_TOL, dtype=np.float32)


def test_sigmoid_saturates_without_overflow() -> None:
    shape = (Q, 4)
    x = np.array([[-1e4, -800.0, 800.0, 1e4]], np.float32)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        (sigmoid,) = run(
            forward([shape], [shape], f"  %r0 = graph.sigmoid %a0 : {ttype(shape)}"), {}, [x]
        )
        (silu,) = run(
            forward([shape], [shape], f"  %r0 = graph.silu %a0 : {ttype(shape)}"), {}, [x]
        )
    assert sigmoid.tolist() == [[0.0, 0.0, 1.0, 1.0]]
    assert silu.tolist() == [[0.0, 0.0, 800.0, 1e4]]


# Broadcasting binaries and bias_add

BINARY_CASES = {
    # lhs, rhs: dynamic shapes are inputs, static ones are params
    "channel_bias": ((Q, 16, 5, 5), (16, 1, 1)),
    "same_shape": ((Q, 4), (Q, 4)),
    "scalar_lhs": ((), (Q, 3, 2)),
    "outer": ((Q, 1, 5), (Q, 6, 1)),
    "row": ((Q, 3, 4), (1, 4)),
}


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("case", BINARY_CASES.values(), ids=BINARY_CASES.keys())
@pytest.mark.parametrize("op", ["add", "mul"])
def test_binaries_broadcast_like_torch(op: str, case: tuple[Any, ...], batch: int) -> None:
    import torch

    rng = np.random.default_rng(4)
    arg_shapes: list[tuple[int, ...]] = []
    lines: list[str] = []
    values: list[np.ndarray] = []
    weights: dict[str, np.ndarray] = {}
    inputs: list[np.ndarray] = []
    for index, shape in enumerate(case):
        value = rand(rng, *concrete(shape, batch))
        values.append(value)
        if Q in shape:
            lines.append(f"  %v{index} = graph.silu %a{len(arg_shapes)} : {ttype(shape)}")
            arg_shapes.append(shape)
            inputs.append(value)
            values[-1] = torch.nn.functional.silu(torch.from_numpy(value)).numpy()
        else:
            lines.append(f'  %v{index} = graph.param "p{index}" : {ttype(shape)}')
            weights[f"p{index}"] = value
    result = broadcast_shapes(*case)
    lines.append(
        f"  %r0 = graph.{op} %v0, %v1 : ({ttype(case[0])}, {ttype(case[1])}) -> {ttype(result)}"
    )
    got = run(forward(arg_shapes, [result], "\n".join(lines)), weights, inputs)
    lhs, rhs = (torch.from_numpy(np.ascontiguousarray(v)) for v in values)
    want = lhs + rhs if op == "add" else lhs * rhs
    assert_close(got, [want.numpy()], ELEMENTWISE_TOL, dtype=np.float32)


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("shape", [(Q, 6), (Q, 5, 7), (Q, 16, 4, 3)], ids=["nc", "ncl", "nchw"])
def test_bias_add_matches_torch(shape: tuple[int, ...], batch: int) -> None:
    import torch

    channels = shape[1]
    body = (
        f'  %b = graph.param "conv.bias" : {ttype([channels])}\n'
        f"  %r0 = graph.bias_add %a0, %b : ({ttype(shape)}, {ttype([channels])}) -> {ttype(shape)}"
    )
    rng = np.random.default_rng(5)
    x, bias = rand(rng, *concrete(shape, batch)), rand(rng, channels)
    got = run(forward([shape], [shape], body), {"conv.bias": bias}, [x])
    view = (1, channels) + (1,) * (len(shape) - 2)
    want = torch.from_numpy(x) + torch.from_numpy(bias).reshape(view)
    assert_close(got, [want.numpy()], ELEMENTWISE_TOL, dtype=np.float32)


# graph.fused_conv2d, through its derivations

FUSED_CASES = {
    # c_in, c_out, kernel, strides, padding, dilation, groups, (bn, conv bias), activation
    "bn_fold_silu_1x1": (8, 12, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, (True, False), "silu"),
    "bn_fold_bias_relu_3x3": (3, 5, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1, (True, True), "relu"),
    "bias_sigmoid_depthwise": (6, 6, 3, (1, 1), (1, 0, 1, 2), (1, 1), 6, (False, True), "sigmoid"),
    "bias_no_activation": (4, 8, 3, (1, 2), (0, 0, 0, 0), (2, 1), 2, (False, True), "none"),
}


def fused_derivations(c_out: int, bn: bool, bias: bool) -> tuple[str, str]:
    """The scale and shift fuse-conv-bn-act would record."""
    names = '"bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"'
    conv_bias = ', "conv.bias"' if bias else ""
    if bn:
        return (
            f'#derive.param<bn_scale("bn.weight", "bn.running_var") eps 1.0e-3 : [{c_out}]>',
            f"#derive.param<bn_shift({names}{conv_bias}) eps 1.0e-3 : [{c_out}]>",
        )
    return (
        f"#derive.param<fill(1.0) : [{c_out}]>",
        f'#derive.param<identity("conv.bias") : [{c_out}]>',
    )


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("case", FUSED_CASES.values(), ids=FUSED_CASES.keys())
def test_fused_conv2d_matches_torch_conv_bn_act(case: tuple[Any, ...], batch: int) -> None:
    import torch
    import torch.nn.functional as F

    c_in, c_out, k, strides, padding, dilation, groups, (bn, bias), activation = case
    options = conv_options(strides, padding, dilation, groups)
    x_shape, w_shape = (Q, c_in, 9, 8), (c_out, c_in // groups, k, k)
    y_shape = infer_conv2d_shape(x_shape, w_shape, strides, padding, dilation, groups)
    scale, shift = fused_derivations(c_out, bn, bias)
    act = "" if activation == "none" else f" activation {activation}"
    body = (
        f'  %w = graph.param "conv.weight" : {ttype(w_shape)}\n'
        f"  %r0 = graph.fused_conv2d %a0, %w {options} scale {scale} shift {shift}{act} "
        f": ({ttype(x_shape)}, {ttype(w_shape)}) -> {ttype(y_shape)}"
    )
    rng = np.random.default_rng(6)
    weights = {"conv.weight": rand(rng, *w_shape), **bn_stats(rng, c_out)}
    if bias:
        weights["conv.bias"] = rand(rng, c_out)
    x = rand(rng, *concrete(x_shape, batch))
    got = run(forward([x_shape], [y_shape], body), weights, [x])

    t = torch_tensors({"x": x, **weights})
    y = torch_conv(t["x"], t["conv.weight"], t.get("conv.bias"), strides, padding, dilation, groups)
    if bn:
        y = F.batch_norm(
            y, t["bn.running_mean"], t["bn.running_var"], t["bn.weight"], t["bn.bias"], eps=1e-3
        )
    activations = {"silu": F.silu, "relu": F.relu, "sigmoid": torch.sigmoid, "none": lambda v: v}
    assert_close(got, [activations[activation](y).numpy()], REDUCTION_TOL, dtype=np.float32)


# graph.param, outputs and validation

P4 = ttype([4])


def test_param_returns_a_float32_copy_of_the_weight() -> None:
    text = forward(
        [(Q, 4)],
        [(4,), (Q, 4)],
        f'  %r0 = graph.param "w" : {P4}\n  %r1 = graph.relu %a0 : {ttype((Q, 4))}',
    )
    weight = np.arange(4, dtype=np.float64)
    x = np.ones((2, 4), np.float32)
    out, _ = run(
        text, {"w": weight, "unused": np.zeros(3), "bn.num_batches_tracked": np.array(7)}, [x]
    )
    assert out.dtype == np.float32 and out.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_returned_inputs_are_copies() -> None:
    shape = (Q, 4)
    text = f"func.func @forward(%x: {ttype(shape)}) -> {ttype(shape)} {{\n  func.return %x : {ttype(shape)}\n}}\n"
    x = np.ones((2, 4), np.float32)
    (out,) = run(text, {}, [x])
    out[0, 0] = 5.0
    assert x[0, 0] == 1.0


def test_every_missing_and_misshaped_weight_is_reported_at_once() -> None:
    body = (
        f'  %a = graph.param "a" : {P4}\n'
        f'  %b = graph.param "b" : {P4}\n'
        f'  %c = graph.param "c" : {P4}\n'
        f'  %i = graph.param "i" : {P4}\n'
        f'  %w = graph.param "conv.weight" : {ttype((4, 4, 1, 1))}\n'
        f'  %r0 = graph.fused_conv2d %a0, %w scale #derive.param<bn_scale("g", "v") eps 0.001 : [4]> '
        f'shift #derive.param<identity("conv.bias") : [4]> '
        f": ({ttype((Q, 4, 2, 2))}, {ttype((4, 4, 1, 1))}) -> {ttype((Q, 4, 2, 2))}"
    )
    text = forward([(Q, 4, 2, 2)], [(Q, 4, 2, 2)], body)
    weights = {
        "c": np.zeros((2, 2), np.float32),
        "i": np.zeros(4, np.int64),
        "conv.weight": np.zeros((4, 4, 1, 1), np.float32),
        "v": np.ones(5, np.float32),
    }
    with pytest.raises(DiagnosticError) as info:
        run(text, weights, [np.zeros((1, 4, 2, 2), np.float32)])
    messages = [d.message for d in info.value.diagnostics]
    assert messages == [
        "weight 'a' is missing",
        "weight 'b' is missing",
        "weight 'c' has shape [2, 2], expected [4]",
        "weight 'i' has dtype int64, expected float32",
        "weight 'g' is missing",
        "weight 'conv.bias' is missing",
    ]
    assert all(d.location is not None for d in info.value.diagnostics)
    assert info.value.diagnostics[0].location.line == 2  # type: ignore[union-attr]


def test_misshaped_derivation_source_is_reported() -> None:
    body = (
        f'  %w = graph.param "conv.weight" : {ttype((4, 4, 1, 1))}\n'
        f'  %r0 = graph.fused_conv2d %a0, %w scale #derive.param<bn_scale("g", "v") eps 0.001 : [4]> '
        f"shift #derive.param<fill(0.0) : [4]> "
        f": ({ttype((Q, 4, 2, 2))}, {ttype((4, 4, 1, 1))}) -> {ttype((Q, 4, 2, 2))}"
    )
    weights = {
        "conv.weight": np.zeros((4, 4, 1, 1), np.float32),
        "g": np.ones(4, np.float32),
        "v": np.ones(5, np.float32),
    }
    with pytest.raises(DiagnosticError, match=re.escape("weight 'v' has shape [5], expected [4]")):
        run(
            forward([(Q, 4, 2, 2)], [(Q, 4, 2, 2)], body),
            weights,
            [np.zeros((1, 4, 2, 2), np.float32)],
        )


TWO_INPUTS = forward(
    [(Q, 4), (Q, 1), (3,)],
    [(Q, 4)],
    f"  %r0 = graph.add %a0, %a1 : ({ttype((Q, 4))}, {ttype((Q, 1))}) -> {ttype((Q, 4))}",
)
F32 = np.float32
INPUT_ERRORS = {
    "count": ([np.zeros((1, 4), F32)], "@forward takes 3 inputs, got 1"),
    "dtype": (
        [np.zeros((1, 4)), np.zeros((1, 1), F32), np.zeros(3, F32)],
        "input 0 has dtype float64, expected float32",
    ),
    "shape": (
        [np.zeros((1, 5), F32), np.zeros((1, 1), F32), np.zeros(3, F32)],
        "input 0 has shape [1, 5], expected [?, 4]",
    ),
    "rank": (
        [np.zeros((1, 4), F32), np.zeros((1, 1), F32), np.zeros((1, 3), F32)],
        "input 2 has shape [1, 3], expected [3]",
    ),
    "batch": (
        [np.zeros((2, 4), F32), np.zeros((3, 1), F32), np.zeros(3, F32)],
        "inputs disagree on the batch size (input 0: 2, input 1: 3)",
    ),
    "empty_batch": (
        [np.zeros((0, 4), F32), np.zeros((0, 1), F32), np.zeros(3, F32)],
        "input 0 has batch size 0, expected >= 1",
    ),
    "not_array": (
        [[[0.0] * 4], np.zeros((1, 1), F32), np.zeros(3, F32)],
        "input 0 is a list, not a numpy array",
    ),
}


@pytest.mark.parametrize("case", INPUT_ERRORS.values(), ids=INPUT_ERRORS.keys())
def test_inputs_are_validated(case: tuple[list[Any], str]) -> None:
    inputs, message = case
    with pytest.raises(DiagnosticError, match=re.escape(message)):
        run(TWO_INPUTS, {}, inputs)


def test_input_problems_are_reported_together() -> None:
    inputs = [np.zeros((1, 4)), np.zeros((1, 2), F32), np.zeros(3, F32)]
    with pytest.raises(DiagnosticError) as info:
        run(TWO_INPUTS, {}, inputs)
    assert len(info.value.diagnostics) == 2


def test_module_without_forward_is_rejected() -> None:
    text = f"func.func @main(%x: {P4}) -> {P4} {{\n  func.return %x : {P4}\n}}\n"
    with pytest.raises(DiagnosticError, match=re.escape("no func.func @forward to run")):
        run(text, {}, [np.zeros(4, F32)])


def test_unknown_op_is_named_with_its_location() -> None:
    text = (
        f"func.func @forward(%x: {P4}) -> {P4} {{\n"
        f"  %y = func.call @helper(%x) : ({P4}) -> {P4}\n"
        f"  func.return %y : {P4}\n}}\n"
        f"func.func @helper(%x: {P4}) -> {P4} {{\n  func.return %x : {P4}\n}}\n"
    )
    with pytest.raises(DiagnosticError) as info:
        run(text, {}, [np.zeros(4, F32)])
    (diagnostic,) = info.value.diagnostics
    assert diagnostic.message == "the reference interpreter has no semantics for 'func.call'"
    assert diagnostic.location is not None and diagnostic.location.line == 2


def test_invalid_module_is_rejected_before_running() -> None:
    body = f'  %r0 = "graph.relu"(%a0) : ({ttype((Q, 4))}) -> {ttype((Q, 5))}'
    module = teeny_ir.parse_module(forward([(Q, 4)], [(Q, 5)], body), verify=False)
    with pytest.raises(DiagnosticError, match="expected result type"):
        reference.run(module, {}, [np.zeros((1, 4), F32)])


# The slice example


def load_make_slice() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_slice", SLICE / "make_slice.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_slice_files_are_what_make_slice_writes() -> None:
    from safetensors.numpy import load_file

    make_slice = load_make_slice()
    assert (SLICE / "slice.mlir").read_text() == make_slice.make_mlir()
    stored = load_file(str(SLICE / "slice.safetensors"))
    made = make_slice.make_weights()
    assert stored.keys() == made.keys()
    for name, value in made.items():
        assert stored[name].dtype == value.dtype and np.array_equal(stored[name], value), name


def test_slice_weights_look_like_a_real_state_dict() -> None:
    from safetensors.numpy import load_file

    weights = load_file(str(SLICE / "slice.safetensors"))
    model = torch_slice()
    model.load_state_dict(torch_tensors(weights), strict=True)
    assert weights["model.0.bn.num_batches_tracked"].dtype == np.int64
    assert weights["model.0.bn.num_batches_tracked"].shape == ()
    bound = 1 / np.sqrt(37)
    for name in ("model.0.conv.weight", "model.1.conv.weight", "model.1.conv.bias"):
        assert np.abs(weights[name]).max() <= bound
    for name in ("model.0.bn.weight", "model.0.bn.running_var"):
        assert weights[name].min() >= 0.5 and weights[name].max() <= 1.5


def torch_slice() -> Any:
    """The slice model in PyTorch, with the state-dict layout of the example's weights."""
    import torch
    from torch import nn

    class ConvBn(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(37, 37, 1, bias=False)
            self.bn = nn.BatchNorm2d(37, eps=1e-3, momentum=0.03)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return nn.functional.silu(nn.functional.silu(self.bn(self.conv(x))) + x)

    class ConvBias(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(37, 37, 1, bias=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return nn.functional.silu(nn.functional.silu(self.conv(x)) + x)

    class Slice(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = nn.ModuleList([ConvBn(), ConvBias()])

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return self.model[0](x), self.model[1](x)

    return Slice().eval()


@pytest.mark.parametrize("batch", BATCHES)
def test_slice_reference_matches_torch(batch: int) -> None:
    import torch
    from safetensors.numpy import load_file

    module = teeny_ir.parse_module((SLICE / "slice.mlir").read_text(), "slice.mlir")
    weights = load_file(str(SLICE / "slice.safetensors"))
    x = np.random.default_rng(batch).standard_normal((batch, 37, 7, 9)).astype(np.float32)
    got = reference.run(module, weights, [x])
    model = torch_slice()
    model.load_state_dict(torch_tensors(weights), strict=True)
    with torch.no_grad():
        want = [y.numpy() for y in model(torch.from_numpy(x))]
    assert_close(got, want, REDUCTION_TOL, dtype=np.float32)
