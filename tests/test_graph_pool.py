"""The pooling ops (`graph.max_pool2d`, `graph.avg_pool2d`, `graph.global_avg_pool2d`,
`graph.upsample_nearest2d`): parsing, printing, builders, every verifier message,
the shape rule, and the reference interpreter against PyTorch at batch 1 and 3.

Tolerance (docs/architecture.md): outputs finite, same shapes, and
``max|got - ref| <= tol * max(1, max|ref|)``, tol 1e-4 for the pools (reductions)
and 1e-5 for upsampling.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, TensorType, f32
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

import teeny_ir
from dialects.graph.pool import (
    AvgPool2dOp,
    GlobalAvgPool2dOp,
    MaxPool2dOp,
    UpsampleNearest2dOp,
    infer_pool2d_shape,
)
from teeny_ir import reference
from teeny_ir.core.diagnostics import DiagnosticError
from teeny_ir.testing import ELEMENTWISE_TOL, REDUCTION_TOL, assert_close, assert_round_trips

Q = DYNAMIC_INDEX
BATCHES = (1, 3)
POOL_OPS = (MaxPool2dOp, AvgPool2dOp, GlobalAvgPool2dOp, UpsampleNearest2dOp)


def tensor(*shape: int) -> TensorType:
    return TensorType(f32, shape)


def ttype(shape: Sequence[int]) -> str:
    return "tensor<" + "".join(("?" if d == Q else str(d)) + "x" for d in shape) + "f32>"


def forward_module(input_shape: Sequence[int], build: Callable[[SSAValue], Operation]) -> ModuleOp:
    """``func.func @forward(%x)`` returning the result of the one op ``build`` makes."""
    block = Block(arg_types=[tensor(*input_shape)])
    op = build(block.args[0])
    block.add_ops([op, ReturnOp(op.results[0])])
    function = FuncOp("forward", ([tensor(*input_shape)], [op.results[0].type]), Region(block))
    return ModuleOp([function])


def op_text(op: str, x: Sequence[int], options: str, result: str) -> str:
    return (
        f"func.func @f(%x: {ttype(x)}) {{\n"
        f"  %y = graph.{op} %x{options} : ({ttype(x)}) -> {result}\n"
        "  func.return\n}\n"
    )


# Parsing, printing and builders


VALID = [
    op_text("max_pool2d", (Q, 16, 8, 8), " kernel [2, 2]", ttype((Q, 16, 4, 4))),
    op_text(
        "max_pool2d",
        (Q, 16, 8, 8),
        " kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] dilation [1, 2] ceil_mode",
        ttype((Q, 16, 5, 4)),
    ),
    op_text(
        "avg_pool2d",
        (2, 3, 8, 7),
        " kernel [3, 2] strides [2, 2] padding [1, 0, 1, 0] ceil_mode exclude_pad",
        ttype((2, 3, 5, 4)),
    ),
    op_text("avg_pool2d", (Q, 16, 10, 10), ' kernel [2, 2] {note = "x"}', ttype((Q, 16, 5, 5))),
    op_text("global_avg_pool2d", (Q, 16, 8, 8), "", ttype((Q, 16, 1, 1))),
    op_text("upsample_nearest2d", (Q, 64, 4, 4), " scales [2, 3]", ttype((Q, 64, 8, 12))),
]


@pytest.mark.parametrize("text", VALID)
def test_valid_ops_round_trip(text: str) -> None:
    assert_round_trips(teeny_ir.parse_module(text))


def test_options_print_in_a_fixed_order() -> None:
    text = op_text(
        "max_pool2d",
        (Q, 16, 8, 8),
        " ceil_mode dilation [1, 1] padding [1, 1, 1, 1] strides [2, 2] kernel [3, 3]",
        ttype((Q, 16, 5, 5)),
    )
    printed = teeny_ir.print_module(teeny_ir.parse_module(text))
    expected = "kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] dilation [1, 1] ceil_mode : ("
    assert expected in printed
    text = op_text(
        "avg_pool2d", (Q, 16, 8, 8), " exclude_pad ceil_mode kernel [2, 2]", ttype((Q, 16, 4, 4))
    )
    assert "kernel [2, 2] ceil_mode exclude_pad : (" in teeny_ir.print_module(
        teeny_ir.parse_module(text)
    )


def test_ops_are_pure() -> None:
    for op_type in POOL_OPS:
        assert op_type.has_trait(Pure), op_type.name


def test_builders_infer_types_leave_defaults_absent_and_round_trip() -> None:
    block = Block(arg_types=[tensor(Q, 16, 8, 8)])
    (x,) = block.args
    plain = MaxPool2dOp(x, kernel=[2, 2])
    sppf = MaxPool2dOp(x, kernel=[5, 5], strides=[1, 1], padding=[2, 2, 2, 2])
    dilated = MaxPool2dOp(x, kernel=[3, 3], padding=[1, 1, 1, 1], dilation=[2, 2], ceil_mode=True)
    average = AvgPool2dOp(x, kernel=[2, 2])
    exclusive = AvgPool2dOp(
        x, kernel=[3, 3], strides=[2, 2], padding=[1] * 4, ceil_mode=True, count_include_pad=False
    )
    global_ = GlobalAvgPool2dOp(x)
    upsample = UpsampleNearest2dOp(x, scales=[2, 3])
    ops: list[Operation] = [plain, sppf, dilated, average, exclusive, global_, upsample]
    block.add_ops([*ops, ReturnOp()])
    module = ModuleOp([FuncOp("f", ([tensor(Q, 16, 8, 8)], []), Region(block))])

    assert plain.result.type == tensor(Q, 16, 4, 4)
    assert sppf.result.type == tensor(Q, 16, 8, 8)
    assert dilated.result.type == tensor(Q, 16, 3, 3)
    assert average.result.type == tensor(Q, 16, 4, 4)
    assert exclusive.result.type == tensor(Q, 16, 5, 5)
    assert global_.result.type == tensor(Q, 16, 1, 1)
    assert upsample.result.type == tensor(Q, 16, 16, 24)

    assert set(plain.properties) == {"kernel"}
    assert (plain.kernel, plain.strides, plain.padding, plain.dilation) == (
        (2, 2),
        (2, 2),
        (0, 0, 0, 0),
        (1, 1),
    )
    assert not plain.ceil_mode
    assert set(dilated.properties) == {"kernel", "padding", "dilation", "ceil_mode"}
    assert (dilated.strides, dilated.dilation, dilated.ceil_mode) == ((3, 3), (2, 2), True)
    assert set(average.properties) == {"kernel"}
    assert (average.count_include_pad, average.dilation) == (True, (1, 1))
    assert set(exclusive.properties) == {"kernel", "strides", "padding", "ceil_mode", "exclude_pad"}
    assert not exclusive.count_include_pad
    assert not global_.properties
    assert upsample.scales == (2, 3)
    assert_round_trips(module)

    printed = teeny_ir.print_module(module)
    assert "graph.max_pool2d %0 kernel [2, 2] : (tensor<?x16x8x8xf32>) -> tensor<?x16x4x4xf32>" in (
        printed
    )
    assert "kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] ceil_mode exclude_pad : (" in printed
    assert "graph.global_avg_pool2d %0 : (tensor<?x16x8x8xf32>) -> tensor<?x16x1x1xf32>" in printed
    assert "graph.upsample_nearest2d %0 scales [2, 3] : (" in printed


def test_builders_keep_explicit_defaults() -> None:
    """A default given explicitly (strides equal to the kernel too) is kept and printed."""
    module = forward_module(
        (2, 4, 6, 6),
        lambda x: MaxPool2dOp(
            x, kernel=[2, 2], strides=[2, 2], padding=[0, 0, 0, 0], dilation=[1, 1]
        ),
    )
    text = teeny_ir.print_module(module)
    assert "kernel [2, 2] strides [2, 2] padding [0, 0, 0, 0] dilation [1, 1] : (" in text
    assert_round_trips(module)


BUILDER_FAILURES: list[tuple[Callable[[SSAValue], Operation], str]] = [
    (lambda x: MaxPool2dOp(x, kernel=[9, 2]), "kernel height 9 exceeds padded input height 8"),
    (
        lambda x: AvgPool2dOp(x, kernel=[2, 2], padding=[0, 0, 2, 0]),
        "padding bottom 2 exceeds half the kernel height 2",
    ),
    (lambda x: MaxPool2dOp(x, kernel=[2, 2], strides=[0, 1]), "expected strides >= 1"),
    (lambda x: MaxPool2dOp(x, kernel=[2]), "expected 2 values for kernel, got 1"),
    (lambda x: UpsampleNearest2dOp(x, scales=[0, 1]), "expected scales >= 1, got [0, 1]"),
]


@pytest.mark.parametrize(("build", "message"), BUILDER_FAILURES)
def test_builders_raise_on_options_that_do_not_fit(
    build: Callable[[SSAValue], Operation], message: str
) -> None:
    block = Block(arg_types=[tensor(Q, 16, 8, 8)])
    with pytest.raises(VerifyException, match=re.escape(message)):
        build(block.args[0])


def test_global_pool_builder_rejects_rank_3() -> None:
    block = Block(arg_types=[tensor(Q, 16, 8)])
    with pytest.raises(VerifyException, match=re.escape("expected input of rank 4 [N, C, H, W]")):
        GlobalAvgPool2dOp(block.args[0])


def test_builder_with_wrong_result_type_fails_at_verify() -> None:
    block = Block(arg_types=[tensor(Q, 16, 8, 8)])
    pool = AvgPool2dOp(block.args[0], kernel=[2, 2], result_type=tensor(Q, 16, 8, 8))
    with pytest.raises(VerifyException, match=re.escape("expected result type tensor<?x16x4x4x")):
        pool.verify()


# Every verifier and parse message, located at the op


X8 = (Q, 16, 8, 8)
R4 = ttype((Q, 16, 4, 4))


def generic(op: str, properties: str, x: Sequence[int] = X8, result: str = R4) -> str:
    return (
        f"func.func @f(%x: {ttype(x)}) {{\n"
        f'  %y = "graph.{op}"(%x) <{{{properties}}}> : ({ttype(x)}) -> {result}\n'
        "  func.return\n}\n"
    )


MESSAGES = [
    (
        op_text("max_pool2d", (Q, 16, 8), " kernel [2, 2]", R4),
        "expected input of rank 4 [N, C, H, W], got rank 3",
    ),
    (
        op_text("avg_pool2d", (Q, 16, Q, 8), " kernel [2, 2]", R4),
        "input has a dynamic dimension 2: only the batch dimension (0) may be dynamic",
    ),
    (
        op_text("max_pool2d", X8, " kernel [2, 2]", R4).replace("8x8xf32>)", "8x8xf16>)"),
        "unsupported dtype f16 for input: graph ops take f32 tensors",
    ),
    (
        op_text("max_pool2d", X8, " strides [2, 2]", R4),
        "expected the 'kernel' option of graph.max_pool2d",
    ),
    (op_text("max_pool2d", X8, " kernel [2, 2, 2]", R4), "expected 2 values for kernel, got 3"),
    (
        op_text("avg_pool2d", X8, " kernel [2, 2] kernel [2, 2]", R4),
        "'kernel' is given more than once",
    ),
    (op_text("avg_pool2d", X8, " kernel [2, 2] dilation [2, 2]", R4), "Expected ':'"),
    (
        generic("avg_pool2d", "kernel = array<i64: 2, 2>, dilation = array<i64: 2, 2>"),
        "property 'dilation' is not defined by the operation 'graph.avg_pool2d'",
    ),
    (generic("max_pool2d", "kernel = array<i64: 2>"), "expected 2 values for kernel, got 1"),
    (
        generic("avg_pool2d", "kernel = array<i64: 2, 2>, strides = array<i64: 2, 2, 2>"),
        "expected 2 values for strides, got 3",
    ),
    (
        generic("max_pool2d", "kernel = array<i64: 2, 2>, padding = array<i64: 1, 1>"),
        "expected 4 values for padding [top, left, bottom, right], got 2",
    ),
    (
        generic("max_pool2d", "kernel = array<i64: 2, 2>, dilation = array<i64: 1>"),
        "expected 2 values for dilation, got 1",
    ),
    (op_text("max_pool2d", X8, " kernel [0, 2]", R4), "expected kernel >= 1, got [0, 2]"),
    (
        op_text("max_pool2d", X8, " kernel [2, 2] strides [1, 0]", R4),
        "expected strides >= 1, got [1, 0]",
    ),
    (
        op_text("max_pool2d", X8, " kernel [2, 2] dilation [0, 1]", R4),
        "expected dilation >= 1, got [0, 1]",
    ),
    (
        op_text("avg_pool2d", X8, " kernel [2, 2] padding [0, -1, 0, 0]", R4),
        "expected padding >= 0, got [0, -1, 0, 0]",
    ),
    (
        op_text("max_pool2d", X8, " kernel [3, 3] padding [2, 1, 1, 1]", R4),
        "padding top 2 exceeds half the kernel height 3 "
        "(PyTorch requires padding <= kernel // 2, whatever the dilation)",
    ),
    (
        op_text("max_pool2d", X8, " kernel [3, 3] padding [0, 0, 0, 2] dilation [1, 2]", R4),
        "padding right 2 exceeds half the kernel width 3",
    ),
    (
        op_text("max_pool2d", (Q, 16, 3, 8), " kernel [5, 2] padding [1, 0, 0, 0]", R4),
        "kernel height 5 exceeds padded input height 4",
    ),
    (
        op_text("avg_pool2d", (Q, 16, 8, 3), " kernel [2, 4] ceil_mode", R4),
        "kernel width 4 exceeds padded input width 3",
    ),
    (
        op_text(
            "max_pool2d", (Q, 16, 8, 4), " kernel [2, 3] padding [0, 1, 0, 1] dilation [1, 3]", R4
        ),
        "dilated kernel width 7 exceeds padded input width 6",
    ),
    (
        op_text("avg_pool2d", (Q, 16, 7, 7), " kernel [2, 2]", ttype((Q, 16, 4, 4))),
        "expected result type tensor<?x16x3x3xf32>, got tensor<?x16x4x4xf32>",
    ),
    (
        op_text("avg_pool2d", X8, " kernel [2, 2]", "tensor<?x16x4x4xf16>"),
        "unsupported dtype f16 for result: graph ops take f32 tensors",
    ),
    (
        op_text("global_avg_pool2d", (Q, 16), "", ttype((Q, 16, 1, 1))),
        "expected input of rank 4 [N, C, H, W], got rank 2",
    ),
    (
        op_text("global_avg_pool2d", X8, "", ttype((Q, 16))),
        "expected result type tensor<?x16x1x1xf32>, got tensor<?x16xf32>",
    ),
    (
        op_text("upsample_nearest2d", X8, "", R4),
        "expected the 'scales' option of graph.upsample_nearest2d",
    ),
    (op_text("upsample_nearest2d", X8, " scales [2]", R4), "expected 2 values for scales, got 1"),
    (
        generic("upsample_nearest2d", "scales = array<i64: 2, 2, 2>"),
        "expected 2 values for scales, got 3",
    ),
    (
        op_text("upsample_nearest2d", X8, " scales [0, 2]", R4),
        "expected scales >= 1, got [0, 2]",
    ),
    (
        op_text("upsample_nearest2d", X8, " scales [2, 3]", ttype((Q, 16, 16, 16))),
        "expected result type tensor<?x16x16x24xf32>, got tensor<?x16x16x16xf32>",
    ),
]


@pytest.mark.parametrize(("text", "message"), MESSAGES)
def test_messages_are_located_at_the_op(text: str, message: str) -> None:
    with pytest.raises(DiagnosticError) as info:
        teeny_ir.parse_module(text)
    (diagnostic,) = info.value.diagnostics
    assert message in diagnostic.message
    assert diagnostic.location is not None
    assert diagnostic.location.line == 2


# The shape rule agrees with PyTorch wherever PyTorch accepts the options


def pool_configs() -> list[tuple[int, int, int, int, int, bool]]:
    """(size, kernel, stride, pad, dilation, ceil_mode) with pad <= kernel // 2."""
    configs = []
    for size in range(1, 9):
        for kernel in range(1, 5):
            for dilation in (1, 2):
                for pad in range(kernel // 2 + 1):
                    for stride in (1, 2, 3):
                        for ceil_mode in (False, True):
                            configs.append((size, kernel, stride, pad, dilation, ceil_mode))
    return configs


def test_infer_pool2d_shape_matches_pytorch() -> None:
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    checked = 0
    for size, kernel, stride, pad, dilation, ceil_mode in pool_configs():
        args = ((Q, 2, size, size + 1), (kernel, kernel), (stride, stride), (pad,) * 4)
        if dilation * (kernel - 1) + 1 > size + 2 * pad:
            with pytest.raises(VerifyException, match="exceeds padded input"):
                infer_pool2d_shape(*args, (dilation, dilation), ceil_mode)
            continue
        shape = infer_pool2d_shape(*args, (dilation, dilation), ceil_mode)
        x = torch.zeros(1, 2, size, size + 1)
        want = functional.max_pool2d(x, kernel, stride, pad, dilation, ceil_mode).shape
        assert shape == (Q, *want[1:]), (size, kernel, stride, pad, dilation, ceil_mode)
        if dilation == 1:
            want = functional.avg_pool2d(x, kernel, stride, pad, ceil_mode).shape
            assert shape == (Q, *want[1:])
        checked += 1
    assert checked > 500


def test_padding_limit_is_pytorchs() -> None:
    """At most half the kernel, whatever the dilation (PyTorch's CPU check)."""
    torch = pytest.importorskip("torch")
    for dilation in (1, 2):
        with pytest.raises(RuntimeError, match="pad should be"):
            torch.nn.functional.max_pool2d(torch.zeros(1, 1, 8, 8), 3, 1, 2, dilation)
        with pytest.raises(VerifyException, match="padding top 2 exceeds half the kernel height 3"):
            infer_pool2d_shape((1, 1, 8, 8), (3, 3), (1, 1), (2,) * 4, (dilation,) * 2, False)
    with pytest.raises(RuntimeError, match="pad should be"):
        torch.nn.functional.avg_pool2d(torch.zeros(1, 1, 8, 8), 2, 1, 2)


# Numerics against PyTorch through the reference interpreter


def run_one(
    input_shape: Sequence[int], build: Callable[[SSAValue], Operation], x: np.ndarray
) -> np.ndarray:
    """Build ``@forward`` around one op over a ``?``-batch input, print and reparse
    it, and run the reference interpreter on ``x``."""
    module = forward_module(input_shape, build)
    module = teeny_ir.parse_module(teeny_ir.print_module(module))
    (y,) = reference.run(module, {}, [x])
    return y


def inputs(shape: Sequence[int], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((batch, *shape)).astype(np.float32) for batch in BATCHES]


# (C, H, W, kernel, stride, padding (h, w), dilation, ceil_mode)
MAX_POOLS = [
    (6, 12, 12, (2, 2), (2, 2), (0, 0), (1, 1), False),  # LeNet
    (4, 6, 6, (5, 5), (1, 1), (2, 2), (1, 1), False),  # SPPF
    (3, 8, 7, (3, 3), (2, 2), (1, 1), (1, 1), True),
    (2, 9, 10, (2, 3), (1, 2), (1, 1), (2, 1), False),
    (2, 7, 8, (3, 3), (2, 2), (1, 1), (2, 2), True),
    (3, 5, 6, (3, 2), (3, 3), (0, 1), (1, 1), True),
]


@pytest.mark.parametrize("case", MAX_POOLS)
def test_max_pool2d_matches_pytorch(case: tuple[Any, ...]) -> None:
    torch = pytest.importorskip("torch")
    channels, height, width, kernel, stride, (ph, pw), dilation, ceil_mode = case
    for x in inputs((channels, height, width), seed=height * width):
        got = run_one(
            (Q, channels, height, width),
            lambda v: MaxPool2dOp(
                v,
                kernel=kernel,
                strides=stride,
                padding=[ph, pw, ph, pw],
                dilation=dilation,
                ceil_mode=ceil_mode,
            ),
            x,
        )
        want = torch.nn.functional.max_pool2d(
            torch.from_numpy(x), kernel, stride, (ph, pw), dilation, ceil_mode
        )
        assert_close(got, want.numpy(), REDUCTION_TOL, dtype=np.float32)


# (C, H, W, kernel, stride, padding (h, w), ceil_mode, count_include_pad)
AVG_POOLS = [
    (16, 10, 10, (2, 2), (2, 2), (0, 0), False, True),  # LeNet
    # Ceil-mode windows hang off the bottom/right edge: PyTorch's divisor counts
    # the window only up to the end of the padding (include) or of the input.
    (3, 6, 7, (3, 3), (2, 2), (1, 1), True, True),
    (3, 6, 7, (3, 3), (2, 2), (1, 1), True, False),
    (2, 6, 6, (3, 3), (2, 2), (0, 0), True, True),
    (2, 8, 5, (3, 2), (2, 1), (1, 1), True, True),
    (4, 5, 5, (2, 2), (1, 1), (1, 1), False, False),
    (2, 9, 9, (4, 4), (3, 3), (2, 2), True, True),
]


@pytest.mark.parametrize("case", AVG_POOLS)
def test_avg_pool2d_matches_pytorch(case: tuple[Any, ...]) -> None:
    torch = pytest.importorskip("torch")
    channels, height, width, kernel, stride, (ph, pw), ceil_mode, include = case
    for x in inputs((channels, height, width), seed=height * width):
        got = run_one(
            (Q, channels, height, width),
            lambda v: AvgPool2dOp(
                v,
                kernel=kernel,
                strides=stride,
                padding=[ph, pw, ph, pw],
                ceil_mode=ceil_mode,
                count_include_pad=include,
            ),
            x,
        )
        want = torch.nn.functional.avg_pool2d(
            torch.from_numpy(x), kernel, stride, (ph, pw), ceil_mode, include
        )
        assert_close(got, want.numpy(), REDUCTION_TOL, dtype=np.float32)


def test_ceil_mode_edge_divisor_is_pytorchs() -> None:
    """Kernel 3, stride 2, pad 1 over 6 rows and columns in ceil mode: the last
    window covers input row 5, the bottom padding row and one row past it, so
    over ones it sums to 1 and PyTorch divides by 2 * 2 there, not 3 * 3."""
    torch = pytest.importorskip("torch")
    x = np.ones((1, 1, 6, 6), np.float32)
    got = run_one(
        (Q, 1, 6, 6),
        lambda v: AvgPool2dOp(v, kernel=[3, 3], strides=[2, 2], padding=[1] * 4, ceil_mode=True),
        x,
    )
    want = torch.nn.functional.avg_pool2d(torch.from_numpy(x), 3, 2, 1, ceil_mode=True).numpy()
    assert got.shape == (1, 1, 4, 4)
    assert got[0, 0, 3, 3] == want[0, 0, 3, 3] == 0.25
    assert_close(got, want, REDUCTION_TOL, dtype=np.float32)


# Asymmetric padding [top, left, bottom, right] (PyTorch pools pad symmetrically):
# F.pad with -inf (max) or zeros (avg, count_include_pad) and pool without padding.
# (C, H, W, kernel, stride, padding, ceil_mode); ceil-mode cases pad nothing at the
# bottom/right, where both rules for the last window agree.
ASYMMETRIC = [
    (3, 7, 8, (2, 2), (2, 2), (0, 1, 1, 0), False),
    (2, 8, 8, (3, 3), (1, 2), (1, 0, 0, 1), False),
    (2, 6, 7, (3, 3), (2, 2), (1, 1, 0, 0), True),
    (4, 9, 6, (4, 3), (3, 2), (2, 0, 1, 1), False),
]


def torch_pad(x: Any, padding: Sequence[int], value: float) -> Any:
    import torch

    top, left, bottom, right = padding
    return torch.nn.functional.pad(x, (left, right, top, bottom), value=value)


@pytest.mark.parametrize("case", ASYMMETRIC)
def test_asymmetric_padding_matches_pytorch(case: tuple[Any, ...]) -> None:
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    channels, height, width, kernel, stride, padding, ceil_mode = case
    shape = (Q, channels, height, width)
    for x in inputs((channels, height, width), seed=sum(padding) + height):
        t = torch.from_numpy(x)
        got = run_one(
            shape,
            lambda v: MaxPool2dOp(
                v, kernel=kernel, strides=stride, padding=padding, ceil_mode=ceil_mode
            ),
            x,
        )
        padded = torch_pad(t, padding, float("-inf"))
        want = functional.max_pool2d(padded, kernel, stride, 0, ceil_mode=ceil_mode)
        assert_close(got, want.numpy(), REDUCTION_TOL, dtype=np.float32)

        got = run_one(
            shape,
            lambda v: AvgPool2dOp(
                v, kernel=kernel, strides=stride, padding=padding, ceil_mode=ceil_mode
            ),
            x,
        )
        zero_padded = torch_pad(t, padding, 0.0)
        want = functional.avg_pool2d(zero_padded, kernel, stride, 0, ceil_mode)
        assert_close(got, want.numpy(), REDUCTION_TOL, dtype=np.float32)

        # count_include_pad=False: the zero-padded window sum over the number of
        # input elements in the window, both from the same PyTorch pool.
        got = run_one(
            shape,
            lambda v: AvgPool2dOp(
                v,
                kernel=kernel,
                strides=stride,
                padding=padding,
                ceil_mode=ceil_mode,
                count_include_pad=False,
            ),
            x,
        )
        counts = functional.avg_pool2d(
            torch_pad(torch.ones_like(t), padding, 0.0), kernel, stride, 0, ceil_mode
        )
        assert_close(got, (want / counts).numpy(), REDUCTION_TOL, dtype=np.float32)


def test_window_over_padding_only_is_minus_inf_as_in_pytorch() -> None:
    torch = pytest.importorskip("torch")
    x = np.full((1, 1, 1, 1), 5.0, np.float32)
    got = run_one(
        (Q, 1, 1, 1), lambda v: MaxPool2dOp(v, kernel=[2, 2], padding=[1] * 4, dilation=[2, 2]), x
    )
    want = torch.nn.functional.max_pool2d(torch.from_numpy(x), 2, 2, 1, 2).numpy()
    assert got.shape == want.shape == (1, 1, 1, 1)
    assert got[0, 0, 0, 0] == want[0, 0, 0, 0] == -np.inf


@pytest.mark.parametrize("shape", [(16, 8, 8), (3, 5, 7), (2, 1, 1), (1, 13, 2)])
def test_global_avg_pool2d_matches_pytorch(shape: tuple[int, int, int]) -> None:
    torch = pytest.importorskip("torch")
    for x in inputs(shape, seed=sum(shape)):
        got = run_one((Q, *shape), GlobalAvgPool2dOp, x)
        want = torch.nn.functional.adaptive_avg_pool2d(torch.from_numpy(x), 1)
        assert_close(got, want.numpy(), REDUCTION_TOL, dtype=np.float32)


@pytest.mark.parametrize(
    ("shape", "scales"),
    [((8, 4, 4), (2, 2)), ((3, 5, 7), (1, 3)), ((2, 3, 2), (3, 2)), ((4, 2, 3), (1, 1))],
)
def test_upsample_nearest2d_matches_pytorch(
    shape: tuple[int, int, int], scales: tuple[int, int]
) -> None:
    torch = pytest.importorskip("torch")
    for x in inputs(shape, seed=sum(shape) + scales[1]):
        got = run_one((Q, *shape), lambda v: UpsampleNearest2dOp(v, scales=scales), x)
        want = torch.nn.functional.interpolate(
            torch.from_numpy(x), scale_factor=scales, mode="nearest"
        )
        assert_close(got, want.numpy(), ELEMENTWISE_TOL, dtype=np.float32)
