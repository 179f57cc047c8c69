"""Softmax, log-softmax, cross-entropy and the reductions: parsing, printing (custom
and generic), builders, every verifier message, the reference interpreter against
PyTorch at batch 1 and 3, and the reference's int64 targets.

Tolerance (docs/architecture.md): outputs finite, same shapes, and
``max|got - ref| <= tol * max(1, max|ref|)`` with tol 1e-4 (all these ops reduce).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, TensorType, f32, i32, i64
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region
from xdsl.utils.exceptions import VerifyException

import teeny_ir
from dialects.graph.reduce import (
    CrossEntropyOp,
    LogSoftmaxOp,
    ReduceMeanOp,
    ReduceSumOp,
    SoftmaxOp,
    infer_cross_entropy_shape,
    infer_reduce_shape,
    normalize_axis,
)
from teeny_ir import reference
from teeny_ir.core.diagnostics import DiagnosticError
from teeny_ir.testing import REDUCTION_TOL, assert_close, assert_round_trips

Q = DYNAMIC_INDEX
BATCHES = (1, 3)


def tensor(*shape: int, dtype: Attribute = f32) -> TensorType:
    return TensorType(dtype, shape)


def forward(
    arg_types: Sequence[Attribute], make: Callable[[Sequence[BlockArgument]], Operation]
) -> ModuleOp:
    """``func.func @forward`` returning the results of the one op ``make`` builds."""
    block = Block(arg_types=arg_types)
    op = make(block.args)
    block.add_ops([op, ReturnOp(*op.results)])
    function = FuncOp("forward", (arg_types, op.result_types), Region(block))
    module = ModuleOp([function])
    module.verify()
    return module


def concrete(shape: Sequence[int], batch: int) -> tuple[int, ...]:
    return tuple(batch if d == Q else d for d in shape)


# Parsing and printing

CUSTOM_FORMS = {
    "softmax": "graph.softmax %x axis 1 : (tensor<?x10xf32>) -> tensor<?x10xf32>",
    "softmax_batch_axis": "graph.softmax %x axis 0 {note = 1 : i64} : (tensor<?x10xf32>) -> tensor<?x10xf32>",
    "log_softmax": "graph.log_softmax %x axis 1 : (tensor<?x10xf32>) -> tensor<?x10xf32>",
    "cross_entropy": (
        "graph.cross_entropy %x, %t : (tensor<?x10xf32>, tensor<?xi64>) -> tensor<f32>"
    ),
    "reduce_sum": "graph.reduce_sum %x axes [1] : (tensor<?x10xf32>) -> tensor<?xf32>",
    "reduce_sum_batch": "graph.reduce_sum %x axes [1, 0] : (tensor<?x10xf32>) -> tensor<f32>",
    "reduce_mean_keepdims": (
        "graph.reduce_mean %x axes [0] keepdims : (tensor<?x10xf32>) -> tensor<1x10xf32>"
    ),
}


def one_op_module(line: str) -> str:
    return (
        "func.func @f(%x: tensor<?x10xf32>, %t: tensor<?xi64>) {\n"
        f"  %r = {line}\n  func.return\n}}\n"
    )


@pytest.mark.parametrize("line", CUSTOM_FORMS.values(), ids=CUSTOM_FORMS.keys())
def test_custom_forms_verify_and_round_trip(line: str) -> None:
    module = teeny_ir.parse_module(one_op_module(line))
    assert_round_trips(module)
    assert line in teeny_ir.print_module(module)


def test_options_parse_in_any_order_and_print_in_a_fixed_one() -> None:
    text = one_op_module(
        "graph.reduce_sum %x keepdims axes [1] : (tensor<?x10xf32>) -> tensor<?x1xf32>"
    )
    printed = teeny_ir.print_module(teeny_ir.parse_module(text))
    assert "graph.reduce_sum %x axes [1] keepdims : (tensor<?x10xf32>)" in printed


def test_ops_are_pure_so_cse_merges_duplicates() -> None:
    line = "graph.reduce_sum %x axes [1] : (tensor<?x10xf32>) -> tensor<?xf32>"
    text = (
        "func.func @f(%x: tensor<?x10xf32>) -> (tensor<?xf32>, tensor<?xf32>) {\n"
        f"  %a = {line}\n  %b = {line}\n"
        "  func.return %a, %b : tensor<?xf32>, tensor<?xf32>\n}\n"
    )
    module = teeny_ir.parse_module(text)
    teeny_ir.PassManager.parse("builtin.module(func.func(cse))").run(module)
    assert teeny_ir.print_module(module).count("graph.reduce_sum") == 1


# Builders


def test_builders_infer_types_normalise_axes_and_round_trip() -> None:
    block = Block(arg_types=[tensor(Q, 7, 5), tensor(Q, dtype=i64)])
    x, targets = block.args
    softmax = SoftmaxOp(x, -1)
    log_softmax = LogSoftmaxOp(softmax, 0)
    total = ReduceSumOp(log_softmax, [-1, 0], keepdims=True)
    mean = ReduceMeanOp(x, [2])
    loss = CrossEntropyOp(mean, targets)
    block.add_ops([softmax, log_softmax, total, mean, loss, ReturnOp()])
    module = ModuleOp([FuncOp("f", (block.arg_types, ()), Region(block))])
    module.verify()

    assert softmax.axis == 2 and log_softmax.axis == 0
    assert softmax.result.type == log_softmax.result.type == tensor(Q, 7, 5)
    assert total.axes == (2, 0) and total.keepdims
    assert total.result.type == tensor(1, 7, 1)
    assert mean.result.type == tensor(Q, 7) and not mean.keepdims
    assert set(mean.properties) == {"axes"}
    assert loss.result.type == tensor()
    assert_round_trips(module)


def test_builders_take_an_explicit_result_type() -> None:
    block = Block(arg_types=[tensor(Q, 4)])
    (x,) = block.args
    assert SoftmaxOp(x, 1, result_type=tensor(Q, 5)).result.type == tensor(Q, 5)
    assert ReduceSumOp(x, [1], result_type=tensor(Q, 1)).result.type == tensor(Q, 1)
    with pytest.raises(VerifyException, match=re.escape("expected result type tensor<?x4xf32>")):
        SoftmaxOp(x, 1, result_type=tensor(Q, 5)).verify()


BUILDER_ERRORS: dict[str, tuple[Callable[[Sequence[BlockArgument]], Operation], str]] = {
    "softmax_axis": (lambda a: SoftmaxOp(a[0], 2), "axis 2 is out of range [-2, 2) for rank 2"),
    "log_softmax_axis": (
        lambda a: LogSoftmaxOp(a[0], -3),
        "axis -3 is out of range [-2, 2) for rank 2",
    ),
    "softmax_targets": (lambda a: SoftmaxOp(a[1], 0), "unsupported dtype i64 for input"),
    "reduce_duplicate_after_normalising": (
        lambda a: ReduceSumOp(a[0], [1, -1]),
        "expected unique axes, got [1, 1]",
    ),
    "reduce_empty": (lambda a: ReduceMeanOp(a[0], []), "expected at least one axis to reduce"),
    "cross_entropy_float_targets": (
        lambda a: CrossEntropyOp(a[0], a[0]),
        "unsupported dtype f32 for targets: graph.cross_entropy takes i64 class indices",
    ),
    "cross_entropy_scalar_targets": (
        lambda a: CrossEntropyOp(a[0], a[2]),
        "expected targets to be a tensor, got i64",
    ),
    "cross_entropy_batch": (
        lambda a: CrossEntropyOp(a[3], a[1]),
        "expected targets of shape [N] = [3], got [?]",
    ),
}


@pytest.mark.parametrize("case", BUILDER_ERRORS.values(), ids=BUILDER_ERRORS.keys())
def test_builders_raise_on_bad_operands(
    case: tuple[Callable[[Sequence[BlockArgument]], Operation], str],
) -> None:
    make, message = case
    block = Block(arg_types=[tensor(Q, 10), tensor(Q, dtype=i64), i64, tensor(3, 10)])
    with pytest.raises(VerifyException, match=re.escape(message)):
        make(block.args)


def test_shape_functions() -> None:
    assert normalize_axis(-1, 4) == 3 and normalize_axis(0, 1) == 0
    assert infer_reduce_shape((Q, 3, 4), (0, 2), keepdims=False) == (3,)
    assert infer_reduce_shape((Q, 3, 4), (2, 1), keepdims=True) == (Q, 1, 1)
    assert infer_reduce_shape((5,), (0,), keepdims=False) == ()
    assert infer_cross_entropy_shape((Q, 7), (Q,)) == ()
    with pytest.raises(VerifyException, match="a scalar has no axes"):
        normalize_axis(0, 0)


# Verifier and parser messages: every one

L, T = "tensor<?x10xf32>", "tensor<?xi64>"
INVALID = {
    "softmax_axis": (
        f"graph.softmax %x axis 2 : ({L}) -> {L}",
        "expected axis in [0, 2) for input of rank 2, got 2",
    ),
    "softmax_negative_axis": (
        f"graph.log_softmax %x axis -1 : ({L}) -> {L}",
        "expected axis in [0, 2) for input of rank 2, got -1",
    ),
    "softmax_rank_0": (
        "graph.softmax %s axis 0 : (tensor<f32>) -> tensor<f32>",
        "expected input of rank >= 1, got rank 0",
    ),
    "softmax_dtype": (
        f"graph.softmax %t axis 0 : ({T}) -> {T}",
        "unsupported dtype i64 for input: graph ops take f32 tensors",
    ),
    "softmax_result": (
        f"graph.softmax %x axis 1 : ({L}) -> tensor<?x9xf32>",
        "expected result type tensor<?x10xf32>, got tensor<?x9xf32>",
    ),
    "softmax_missing_axis": (
        f"graph.softmax %x : ({L}) -> {L}",
        "expected the 'axis' option of graph.softmax",
    ),
    "softmax_duplicate_axis": (
        f"graph.softmax %x axis 1 axis 1 : ({L}) -> {L}",
        "'axis' is given more than once",
    ),
    "generic_softmax_missing_axis": (
        f'"graph.softmax"(%x) : ({L}) -> {L}',
        "property 'axis' expected",
    ),
    "cross_entropy_logits_rank": (
        f"graph.cross_entropy %y, %t : (tensor<?x10x2xf32>, {T}) -> tensor<f32>",
        "expected logits of rank 2 [N, C], got rank 3",
    ),
    "cross_entropy_logits_dtype": (
        f"graph.cross_entropy %t, %t : ({T}, {T}) -> tensor<f32>",
        "unsupported dtype i64 for logits: graph ops take f32 tensors",
    ),
    "cross_entropy_target_batch": (
        f"graph.cross_entropy %x, %t3 : ({L}, tensor<3xi64>) -> tensor<f32>",
        "expected targets of shape [N] = [?], got [3]",
    ),
    "cross_entropy_target_dtype": (
        f"graph.cross_entropy %x, %i : ({L}, tensor<?xi32>) -> tensor<f32>",
        "unsupported dtype i32 for targets: graph.cross_entropy takes i64 class indices",
    ),
    "cross_entropy_target_encoding": (
        f'graph.cross_entropy %x, %e : ({L}, tensor<?xi64, "layout">) -> tensor<f32>',
        "expected targets to have no tensor encoding",
    ),
    "cross_entropy_target_size": (
        f"graph.cross_entropy %x, %z : ({L}, tensor<0xi64>) -> tensor<f32>",
        "targets has dimension 0 of size 0: sizes must be >= 1",
    ),
    "cross_entropy_result": (
        f"graph.cross_entropy %x, %t : ({L}, {T}) -> tensor<?xf32>",
        "expected result type tensor<f32>, got tensor<?xf32>",
    ),
    "cross_entropy_result_dtype": (
        f"graph.cross_entropy %x, %t : ({L}, {T}) -> tensor<i64>",
        "unsupported dtype i64 for result: graph ops take f32 tensors",
    ),
    "reduce_empty_axes": (
        f"graph.reduce_sum %x axes [] : ({L}) -> {L}",
        "expected at least one axis to reduce",
    ),
    "reduce_axis_range": (
        f"graph.reduce_mean %x axes [1, 2] : ({L}) -> tensor<?xf32>",
        "expected axes in [0, 2) for input of rank 2, got [1, 2]",
    ),
    "reduce_duplicate_axes": (
        f"graph.reduce_sum %x axes [1, 1] : ({L}) -> tensor<?xf32>",
        "expected unique axes, got [1, 1]",
    ),
    "reduce_result": (
        f"graph.reduce_mean %x axes [1] keepdims : ({L}) -> tensor<?xf32>",
        "expected result type tensor<?x1xf32>, got tensor<?xf32>",
    ),
    "reduce_dtype": (
        f"graph.reduce_sum %t axes [0] : ({T}) -> tensor<i64>",
        "unsupported dtype i64 for input: graph ops take f32 tensors",
    ),
    "reduce_missing_axes": (
        f"graph.reduce_mean %x keepdims : ({L}) -> tensor<?x1xf32>",
        "expected the 'axes' option of graph.reduce_mean",
    ),
    "generic_reduce_missing_axes": (
        f'"graph.reduce_sum"(%x) : ({L}) -> tensor<?xf32>',
        "property 'axes' expected",
    ),
}
INVALID_ARGS = (
    f"%x: {L}, %t: {T}, %s: tensor<f32>, %y: tensor<?x10x2xf32>, %t3: tensor<3xi64>, "
    '%i: tensor<?xi32>, %e: tensor<?xi64, "layout">, %z: tensor<0xi64>'
)


@pytest.mark.parametrize("case", INVALID.values(), ids=INVALID.keys())
def test_every_error_message(case: tuple[str, str]) -> None:
    line, message = case
    text = f"func.func @f({INVALID_ARGS}) {{\n  %r = {line}\n  func.return\n}}\n"
    with pytest.raises(DiagnosticError) as info:
        teeny_ir.parse_module(text)
    (diagnostic,) = info.value.diagnostics
    assert message in diagnostic.message
    assert diagnostic.location is not None and diagnostic.location.line == 2


# The reference against PyTorch

SOFTMAX_CASES = {
    # input shape, axis (as given to the builder), input scale
    "classes_10": ((Q, 10), 1, 1.0),
    "classes_7_negative_axis": ((Q, 7), -1, 1.0),
    "classes_1000": ((Q, 1000), 1, 3.0),
    "nchw_channels": ((Q, 3, 5, 6), 1, 1.0),
    "nchw_height_negative": ((Q, 3, 5, 6), -2, 1.0),
    "batch_axis": ((Q, 4, 7), 0, 1.0),
    "large_logits": ((Q, 10), 1, 200.0),
}


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("case", SOFTMAX_CASES.values(), ids=SOFTMAX_CASES.keys())
def test_softmax_matches_torch(case: tuple[Any, ...], log: bool, batch: int) -> None:
    import torch
    import torch.nn.functional as F

    shape, axis, scale = case
    op = LogSoftmaxOp if log else SoftmaxOp
    module = forward([tensor(*shape)], lambda args: op(args[0], axis))
    rng = np.random.default_rng(batch)
    x = (scale * rng.standard_normal(concrete(shape, batch))).astype(np.float32)
    got = reference.run(module, {}, [x])
    function = F.log_softmax if log else F.softmax
    want = function(torch.from_numpy(x).double(), dim=axis).numpy()
    assert_close(got, [want], REDUCTION_TOL, dtype=np.float32)


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("classes", [3, 10, 17])
def test_cross_entropy_matches_torch(classes: int, batch: int) -> None:
    import torch
    import torch.nn.functional as F

    module = forward(
        [tensor(Q, classes), tensor(Q, dtype=i64)],
        lambda args: CrossEntropyOp(args[0], args[1]),
    )
    rng = np.random.default_rng(classes + batch)
    logits = (3 * rng.standard_normal((batch, classes))).astype(np.float32)
    targets = rng.integers(0, classes, batch)
    targets[0] = classes - 1  # the last class is a valid index
    (got,) = reference.run(module, {}, [logits, targets])
    assert got.shape == () and got.dtype == np.float32
    want = F.cross_entropy(torch.from_numpy(logits).double(), torch.from_numpy(targets))
    assert_close([got], [want.numpy()], REDUCTION_TOL, dtype=np.float32)


@pytest.mark.parametrize("bad", [-1, 4])
def test_cross_entropy_target_out_of_range_is_a_located_error(bad: int) -> None:
    text = (
        "func.func @forward(%l: tensor<?x4xf32>, %t: tensor<?xi64>) -> tensor<f32> {\n"
        "  %loss = graph.cross_entropy %l, %t : (tensor<?x4xf32>, tensor<?xi64>) -> tensor<f32>\n"
        "  func.return %loss : tensor<f32>\n}\n"
    )
    module = teeny_ir.parse_module(text)
    logits = np.zeros((3, 4), np.float32)
    with pytest.raises(DiagnosticError) as info:
        reference.run(module, {}, [logits, np.array([0, bad, 3], np.int64)])
    (diagnostic,) = info.value.diagnostics
    assert diagnostic.message == (
        f"cross_entropy target {bad} at index 1 is out of range [0, 4) (1 out of range in all)"
    )
    assert diagnostic.location is not None and diagnostic.location.line == 2


REDUCE_CASES = {
    # input shape, axes (as given to the builder), keepdims
    "spatial": ((Q, 16, 8, 8), [2, 3], False),
    "channels_width_keepdims": ((Q, 5, 6, 7), [1, 3], True),
    "batch_axis": ((Q, 5, 7), [0], False),
    "everything": ((Q, 5, 7), [0, 1, 2], False),
    "negative_unsorted_keepdims": ((Q, 3, 4, 5), [-1, 0], True),
}


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("mean", [False, True], ids=["sum", "mean"])
@pytest.mark.parametrize("case", REDUCE_CASES.values(), ids=REDUCE_CASES.keys())
def test_reductions_match_torch(case: tuple[Any, ...], mean: bool, batch: int) -> None:
    import torch

    shape, axes, keepdims = case
    op = ReduceMeanOp if mean else ReduceSumOp
    module = forward([tensor(*shape)], lambda args: op(args[0], axes, keepdims=keepdims))
    x = np.random.default_rng(batch).standard_normal(concrete(shape, batch)).astype(np.float32)
    got = reference.run(module, {}, [x])
    function = torch.mean if mean else torch.sum
    want = function(torch.from_numpy(x).double(), dim=axes, keepdim=keepdims).numpy()
    assert_close(got, [want], REDUCTION_TOL, dtype=np.float32)


# The reference keeps i64 values as int64


def targets_module() -> ModuleOp:
    """``@forward(logits, targets)`` returning the loss and the targets unchanged."""
    text = (
        "func.func @forward(%l: tensor<?x3xf32>, %t: tensor<?xi64>) -> (tensor<f32>, tensor<?xi64>) {\n"
        "  %loss = graph.cross_entropy %l, %t : (tensor<?x3xf32>, tensor<?xi64>) -> tensor<f32>\n"
        "  func.return %loss, %t : tensor<f32>, tensor<?xi64>\n}\n"
    )
    return teeny_ir.parse_module(text)


def test_i64_arguments_are_int64_in_and_out() -> None:
    targets = np.array([2, 0], np.int64)
    loss, returned = reference.run(targets_module(), {}, [np.zeros((2, 3), np.float32), targets])
    assert returned.dtype == np.int64 and returned.tolist() == [2, 0]
    assert returned is not targets
    assert loss.dtype == np.float32 and loss.shape == ()
    assert float(loss) == pytest.approx(np.log(3.0))


INPUT_DTYPE_ERRORS = {
    "float_targets": (
        [np.zeros((2, 3), np.float32), np.zeros(2, np.float32)],
        "input 1 has dtype float32, expected int64",
    ),
    "int32_targets": (
        [np.zeros((2, 3), np.float32), np.zeros(2, np.int32)],
        "input 1 has dtype int32, expected int64",
    ),
    "integer_logits": (
        [np.zeros((2, 3), np.int64), np.zeros(2, np.int64)],
        "input 0 has dtype int64, expected float32",
    ),
    "batch_mismatch": (
        [np.zeros((2, 3), np.float32), np.zeros(3, np.int64)],
        "inputs disagree on the batch size (input 0: 2, input 1: 3)",
    ),
}


@pytest.mark.parametrize("case", INPUT_DTYPE_ERRORS.values(), ids=INPUT_DTYPE_ERRORS.keys())
def test_input_dtypes_follow_the_declared_element_type(case: tuple[list[Any], str]) -> None:
    inputs, message = case
    with pytest.raises(DiagnosticError, match=re.escape(message)):
        reference.run(targets_module(), {}, inputs)


def test_integer_targets_are_rejected_by_every_other_op() -> None:
    block = Block(arg_types=[tensor(Q, dtype=i32)])
    with pytest.raises(VerifyException, match="unsupported dtype i32 for input"):
        ReduceSumOp(block.args[0], [0])
