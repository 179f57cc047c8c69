"""The data-movement ops (`graph.concat`, `graph.split`, `graph.reshape`,
`graph.flatten`, `graph.transpose`): parsing and printing (custom and generic),
builders with inferred types, every verifier message, and the reference
interpreter against PyTorch at batch 1 and 3.

Tolerance (docs/architecture.md): outputs finite, same shapes, and
``max|got - ref| <= tol * max(1, max|ref|)`` with tol 1e-5 (structural ops).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, TensorType, f32, i32
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

import teeny_ir
from dialects.graph.shapes import (
    infer_concat_shape,
    infer_flatten_shape,
    infer_reshape_shape,
    infer_split_shapes,
    infer_transpose_shape,
)
from dialects.graph.structure import ConcatOp, FlattenOp, ReshapeOp, SplitOp, TransposeOp
from teeny_ir import reference
from teeny_ir.testing import ELEMENTWISE_TOL, assert_close, assert_round_trips

Q = DYNAMIC_INDEX
BATCHES = (1, 3)


def tensor(*shape: int) -> TensorType:
    return TensorType(f32, shape)


def to_text(op: Operation, *, generic: bool = False) -> str:
    stream = io.StringIO()
    Printer(stream=stream, print_generic_format=generic).print_op(op)
    return stream.getvalue()


Build = Callable[[Sequence[SSAValue]], Sequence[Operation]]


def build_forward(arg_types: Sequence[TensorType], build: Build) -> ModuleOp:
    """``@forward`` over ``arg_types`` whose body is ``build(args)``; it returns
    every result of the last op."""
    block = Block(arg_types=arg_types)
    ops = list(build(block.args))
    block.add_ops(ops)
    results = ops[-1].results
    block.add_op(ReturnOp(*results))
    forward = FuncOp("forward", (arg_types, [r.type for r in results]), Region(block))
    module = ModuleOp([forward])
    module.verify()
    return module


def concrete(shape: Sequence[int], batch: int) -> tuple[int, ...]:
    return tuple(batch if d == Q else d for d in shape)


# Custom format: parse, print, generic form.

X = "tensor<?x32x8x8xf32>"
H = "tensor<?x16x8x8xf32>"
R = "tensor<?x16x5x5xf32>"

VALID_BODIES = [
    f"%y = graph.concat %x, %x axis 1 : ({X}, {X}) -> tensor<?x64x8x8xf32>",
    f"%y = graph.concat %x axis 3 {{note = 1 : i64}} : ({X}) -> {X}",
    f"%a, %b = graph.split %x axis 1 sizes [16, 16] : ({X}) -> ({H}, {H})",
    f"%s:3 = graph.split %x sizes [1, 6, 1] axis 3 : ({X}) -> (tensor<?x32x8x1xf32>, "
    "tensor<?x32x8x6xf32>, tensor<?x32x8x1xf32>)",
    f"%y = graph.reshape %r shape [0, -1] : ({R}) -> tensor<?x400xf32>",
    f"%y = graph.reshape %r shape [0, 4, 0, -1] : ({R}) -> tensor<?x4x5x20xf32>",
    f"%y = graph.flatten %r : ({R}) -> tensor<?x400xf32>",
    f"%y = graph.flatten %r start_dim 2 end_dim 3 : ({R}) -> tensor<?x16x25xf32>",
    f"%y = graph.flatten %r end_dim 2 : ({R}) -> tensor<?x80x5xf32>",
    f"%y = graph.transpose %x perm [0, 2, 3, 1] : ({X}) -> tensor<?x8x8x32xf32>",
]


@pytest.mark.parametrize("body", VALID_BODIES)
def test_valid_ops_round_trip(body: str) -> None:
    text = f"func.func @f(%x: {X}, %r: {R}) {{\n  {body}\n  func.return\n}}\n"
    assert_round_trips(teeny_ir.parse_module(text))


def test_options_print_in_a_fixed_order() -> None:
    text = (
        f"func.func @f(%x: {X}) {{\n"
        f"  %a, %b = graph.split %x sizes [16, 16] axis 1 : ({X}) -> ({H}, {H})\n"
        f"  %y = graph.flatten %x end_dim 3 start_dim 2 : ({X}) -> tensor<?x32x64xf32>\n"
        "  func.return\n}\n"
    )
    printed = to_text(teeny_ir.parse_module(text))
    assert "graph.split %x axis 1 sizes [16, 16] :" in printed
    assert "graph.flatten %x start_dim 2 end_dim 3 :" in printed


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (f"%y = graph.concat %x : ({X}) -> {X}", "expected the 'axis' option of graph.concat"),
        (f"%y = graph.split %x axis 1 : ({X}) -> {X}", "expected the 'sizes' option of graph.split"),
        (f"%y = graph.reshape %x : ({X}) -> {X}", "expected the 'shape' option of graph.reshape"),
        (f"%y = graph.transpose %x : ({X}) -> {X}", "expected the 'perm' option of graph.transpose"),
        (f"%y = graph.concat %x axis 1 axis 1 : ({X}) -> {X}", "'axis' is given more than once"),
    ],
)
def test_required_options_are_parse_errors(body: str, message: str) -> None:
    text = f"func.func @f(%x: {X}) {{\n  {body}\n  func.return\n}}\n"
    with pytest.raises(teeny_ir.DiagnosticError, match=re.escape(message)) as caught:
        teeny_ir.parse_module(text)
    assert ":2:" in str(caught.value)  # located on the op's line


# Builders: inferred types, normalised axes, defaults left absent.


def test_builders_infer_types_and_round_trip() -> None:
    def build(args: Sequence[SSAValue]) -> list[Operation]:
        x, r = args
        concat = ConcatOp([x, x], axis=-3)
        split = SplitOp(concat, [20, 44], axis=1)
        reshape = ReshapeOp(r, [0, -1])
        flatten = FlattenOp(r, start_dim=-2)
        transpose = TransposeOp(x, [0, -2, -1, 1])
        return [concat, split, reshape, flatten, transpose]

    module = build_forward([tensor(Q, 32, 8, 8), tensor(Q, 16, 5, 5)], build)
    concat, split, reshape, flatten, transpose = list(module.walk())[2:7]
    assert isinstance(concat, ConcatOp) and concat.axis == 1
    assert concat.result.type == tensor(Q, 64, 8, 8)
    assert isinstance(split, SplitOp) and split.axis == 1 and split.sizes == (20, 44)
    assert [r.type for r in split.results] == [tensor(Q, 20, 8, 8), tensor(Q, 44, 8, 8)]
    assert isinstance(reshape, ReshapeOp) and reshape.shape == (0, -1)
    assert reshape.result.type == tensor(Q, 400)
    assert isinstance(flatten, FlattenOp)
    assert (flatten.start_dim, flatten.end_dim) == (2, 3)
    assert "end_dim" not in flatten.properties  # the default: the last dimension
    assert flatten.result.type == tensor(Q, 16, 25)
    assert isinstance(transpose, TransposeOp) and transpose.perm == (0, 2, 3, 1)
    assert transpose.result.type == tensor(Q, 8, 8, 32)
    assert_round_trips(module)


def test_flatten_builder_leaves_defaults_absent() -> None:
    block = Block(arg_types=[tensor(Q, 2, 3, 4)])
    (x,) = block.args
    default = FlattenOp(x, start_dim=1, end_dim=-1)
    explicit = FlattenOp(x, start_dim=1, end_dim=3)
    assert default.properties == {} and explicit.properties == {}
    assert default.start_dim == 1 and default.end_dim == 3
    assert FlattenOp(x, end_dim=2).properties.keys() == {"end_dim"}


def test_builders_accept_a_given_result_type() -> None:
    block = Block(arg_types=[tensor(Q, 4, 6)])
    (x,) = block.args
    assert ReshapeOp(x, [0, 24], result_type=tensor(Q, 24)).result.type == tensor(Q, 24)
    wrong = ConcatOp([x], axis=1, result_type=tensor(Q, 5, 6))
    with pytest.raises(VerifyException, match=re.escape("expected result type")):
        wrong.verify()


def test_shape_rules() -> None:
    assert infer_concat_shape([(Q, 2, 3), (Q, 5, 3)], 1) == (Q, 7, 3)
    assert infer_concat_shape([(2, 3), (4, 3)], 0) == (6, 3)
    assert infer_split_shapes((Q, 6), 1, [1, 2, 3]) == [(Q, 1), (Q, 2), (Q, 3)]
    assert infer_reshape_shape((Q, 2, 3, 4), [0, -1, 2]) == (Q, 12, 2)
    assert infer_reshape_shape((2, 3, 4), [-1]) == (24,)
    assert infer_reshape_shape((2, 3, 4), [0, 0, 2, 2]) == (2, 3, 2, 2)
    assert infer_flatten_shape((Q, 2, 3, 4), 1, 2) == (Q, 6, 4)
    assert infer_flatten_shape((Q, 2), 0, 0) == (Q, 2)  # a no-op keeps the batch
    assert infer_transpose_shape((Q, 2, 3), (0, 2, 1)) == (Q, 3, 2)
    assert infer_transpose_shape((2, 3), (1, 0)) == (3, 2)


# Every verifier message, through the builders' inference.

VERIFIER_ERRORS: list[
    tuple[Sequence[TensorType], Callable[[Sequence[SSAValue]], Operation], str]
] = [
    ([], lambda a: ConcatOp([], axis=0), "expected at least 1 input"),
    ([TensorType(f32, [])], lambda a: ConcatOp(a, 0), "expected input 0 of rank >= 1, got rank 0"),
    (
        [tensor(Q, 4), TensorType(i32, [Q, 4])],
        lambda a: ConcatOp(a, 1),
        "unsupported dtype i32 for input 1",
    ),
    (
        [tensor(Q, 4), tensor(Q, 4, 1)],
        lambda a: ConcatOp(a, 1),
        "expected every input to have rank 2 (input 0's), input 1 has rank 3",
    ),
    ([tensor(Q, 4)], lambda a: ConcatOp(a, 2), "expected axis in [0, 2), got 2"),
    ([tensor(Q, 4)], lambda a: ConcatOp(a, -3), "expected axis in [0, 2), got -3"),
    (
        [tensor(Q, 4), tensor(Q, 4)],
        lambda a: ConcatOp(a, 0),
        "cannot concatenate along the dynamic batch dimension 0",
    ),
    (
        [tensor(Q, 4, 3), tensor(2, 4, 3)],
        lambda a: ConcatOp(a, 1),
        "input 1 has shape [2, 4, 3], input 0 [?, 4, 3]: dimensions other than the axis (1) "
        "must agree, and dimension 0 does not",
    ),
    (
        [tensor(Q, 6)],
        lambda a: SplitOp(a[0], [2, 3], 1),
        "expected sizes to sum to 6 (dimension 1 of the input [?, 6]), got [2, 3] summing to 5",
    ),
    ([tensor(Q, 6)], lambda a: SplitOp(a[0], [6, 0], 1), "expected sizes >= 1, got [6, 0]"),
    ([tensor(Q, 6)], lambda a: SplitOp(a[0], [], 1), "expected at least 1 size"),
    ([tensor(Q, 6)], lambda a: SplitOp(a[0], [1], 0), "cannot split along the dynamic batch"),
    ([tensor(Q, 6)], lambda a: SplitOp(a[0], [6], 5), "expected axis in [0, 2), got 5"),
    (
        [TensorType(f32, [])],
        lambda a: SplitOp(a[0], [1], 0),
        "expected input of rank >= 1, got rank 0",
    ),
    (
        [tensor(Q, 4, 4)],
        lambda a: ReshapeOp(a[0], [0, -1, -1]),
        "expected at most one -1 (inferred) in shape [0, -1, -1]",
    ),
    (
        [tensor(Q, 16)],
        lambda a: ReshapeOp(a[0], [0, -2]),
        "invalid shape entry -2 at index 1: expected a size >= 1, 0 (copy the input's size) "
        "or -1 (inferred)",
    ),
    (
        [tensor(Q, 16)],
        lambda a: ReshapeOp(a[0], [0, 4, 0]),
        "shape entry 0 at index 2 copies input dimension 2, but the input has rank 2",
    ),
    (
        [tensor(Q, 4, 4)],
        lambda a: ReshapeOp(a[0], [-1, 4]),
        "expected shape entry 0 to be 0 (keep the dynamic batch), got -1: folding the batch "
        "into another dimension is not supported yet",
    ),
    (
        [tensor(Q, 4, 4)],
        lambda a: ReshapeOp(a[0], [0, 15]),
        "element count mismatch: the input [?, 4, 4] has 16 elements per sample, "
        "shape [0, 15] has 15",
    ),
    (
        [tensor(2, 3)],
        lambda a: ReshapeOp(a[0], [7]),
        "element count mismatch: the input [2, 3] has 6 elements, shape [7] has 7",
    ),
    (
        [tensor(Q, 4, 4)],
        lambda a: ReshapeOp(a[0], [0, -1, 3]),
        "cannot infer the -1 in shape [0, -1, 3]: the input [?, 4, 4] has 16 elements per "
        "sample, not a multiple of 3",
    ),
    ([tensor(Q, 4)], lambda a: ReshapeOp(a[0], []), "expected a non-empty shape"),
    (
        [tensor(Q, 2, 3, 4)],
        lambda a: FlattenOp(a[0], 3, 2),
        "expected start_dim <= end_dim, got 3 > 2",
    ),
    ([tensor(Q, 2)], lambda a: FlattenOp(a[0], 2), "expected start_dim in [0, 2), got 2"),
    ([tensor(Q, 2)], lambda a: FlattenOp(a[0], 0, 4), "expected end_dim in [0, 2), got 4"),
    (
        [tensor(Q, 2)],
        lambda a: FlattenOp(a[0], 0),
        "cannot flatten the dynamic batch dimension 0 (start_dim 0): folding the batch into "
        "another dimension is not supported yet",
    ),
    (
        [tensor(Q, 2, 3)],
        lambda a: TransposeOp(a[0], [0, 1, 1]),
        "expected perm to be a permutation of [0, 3) (the input's rank), got [0, 1, 1]",
    ),
    (
        [tensor(Q, 2, 3)],
        lambda a: TransposeOp(a[0], [0, 1]),
        "expected perm to be a permutation of [0, 3) (the input's rank), got [0, 1]",
    ),
    (
        [tensor(Q, 2, 3)],
        lambda a: TransposeOp(a[0], [1, 0, 2]),
        "cannot move the dynamic batch dimension: expected perm[0] = 0, got 1",
    ),
    (
        [tensor(4, Q)],
        lambda a: TransposeOp(a[0], [1, 0]),
        "input has a dynamic dimension 1: only the batch dimension (0) may be dynamic",
    ),
]


@pytest.mark.parametrize(("arg_types", "make", "message"), VERIFIER_ERRORS)
def test_builder_errors(
    arg_types: Sequence[TensorType],
    make: Callable[[Sequence[SSAValue]], Operation],
    message: str,
) -> None:
    block = Block(arg_types=arg_types)
    with pytest.raises(VerifyException, match=re.escape(message)):
        make(block.args)


def test_result_type_and_count_are_verified() -> None:
    block = Block(arg_types=[tensor(Q, 6)])
    (x,) = block.args
    cases: list[tuple[Operation, str]] = [
        (
            SplitOp(x, [3, 3], 1, result_types=[tensor(Q, 3)]),
            "expected 2 results (one per size), got 1",
        ),
        (
            SplitOp(x, [3, 3], 1, result_types=[tensor(Q, 3), tensor(Q, 4)]),
            "expected result type tensor<?x3xf32>, got tensor<?x4xf32>",
        ),
        (ReshapeOp(x, [0, 6], result_type=tensor(Q, 5)), "expected result type"),
        (FlattenOp(x, result_type=tensor(Q, 5)), "expected result type"),
        (TransposeOp(x, [0, 1], result_type=tensor(Q, 5)), "expected result type"),
    ]
    for op, message in cases:
        with pytest.raises(VerifyException, match=re.escape(message)):
            op.verify()


# The reference interpreter against PyTorch.

Case = tuple[Sequence[Sequence[int]], Build, Callable[..., Any]]
"""Argument shapes, the graph body, and the PyTorch function of the same inputs."""

TORCH_CASES: dict[str, Case] = {
    "concat_channels": (
        [(Q, 3, 4, 5), (Q, 2, 4, 5), (Q, 1, 4, 5)],
        lambda a: [ConcatOp(a, 1)],
        lambda torch, *x: [torch.cat(x, 1)],
    ),
    "concat_last_axis": (
        [(Q, 3, 4, 5), (Q, 3, 4, 2)],
        lambda a: [ConcatOp(a, -1)],
        lambda torch, *x: [torch.cat(x, -1)],
    ),
    "concat_one_input": (
        [(Q, 7)],
        lambda a: [ConcatOp(a, 1)],
        lambda torch, x: [torch.cat([x], 1)],
    ),
    "concat_static_axis0": (
        [(2, 3), (4, 3)],
        lambda a: [ConcatOp(a, 0)],
        lambda torch, *x: [torch.cat(x, 0)],
    ),
    "split_halves": (
        [(Q, 8, 3, 3)],
        lambda a: [SplitOp(a[0], [4, 4], 1)],
        lambda torch, x: list(x.chunk(2, 1)),
    ),
    "split_uneven": (
        [(Q, 3, 7)],
        lambda a: [SplitOp(a[0], [1, 4, 2], -1)],
        lambda torch, x: list(torch.split(x, [1, 4, 2], -1)),
    ),
    "split_middle_axis": (
        [(Q, 2, 5, 3)],
        lambda a: [SplitOp(a[0], [3, 2], 2)],
        lambda torch, x: list(torch.split(x, [3, 2], 2)),
    ),
    "reshape_flat": (
        [(Q, 4, 3, 2)],
        lambda a: [ReshapeOp(a[0], [0, -1])],
        lambda torch, x: [torch.reshape(x, (x.shape[0], -1))],
    ),
    "reshape_copy_and_infer": (
        [(Q, 3, 12)],
        lambda a: [ReshapeOp(a[0], [0, 0, 2, -1, 3])],
        lambda torch, x: [torch.reshape(x, (x.shape[0], 3, 2, -1, 3))],
    ),
    "reshape_regroup": (
        [(Q, 6, 4)],
        lambda a: [ReshapeOp(a[0], [0, 4, 3, 2])],
        lambda torch, x: [torch.reshape(x, (x.shape[0], 4, 3, 2))],
    ),
    "reshape_static": (
        [(2, 3, 4)],
        lambda a: [ReshapeOp(a[0], [4, -1])],
        lambda torch, x: [torch.reshape(x, (4, -1))],
    ),
    "flatten_default": (
        [(Q, 16, 5, 5)],
        lambda a: [FlattenOp(a[0])],
        lambda torch, x: [torch.flatten(x, 1)],
    ),
    "flatten_spatial": (
        [(Q, 3, 4, 5)],
        lambda a: [FlattenOp(a[0], 2, 3)],
        lambda torch, x: [torch.flatten(x, 2, 3)],
    ),
    "flatten_middle": (
        [(Q, 2, 3, 4, 5)],
        lambda a: [FlattenOp(a[0], 1, -2)],
        lambda torch, x: [torch.flatten(x, 1, -2)],
    ),
    "transpose_nhwc": (
        [(Q, 3, 4, 5)],
        lambda a: [TransposeOp(a[0], [0, 2, 3, 1])],
        lambda torch, x: [torch.permute(x, (0, 2, 3, 1))],
    ),
    "transpose_swap_last": (
        [(Q, 6, 7)],
        lambda a: [TransposeOp(a[0], [0, -1, -2])],
        lambda torch, x: [torch.permute(x, (0, -1, -2))],
    ),
    "transpose_static_batch": (
        [(2, 3, 4)],
        lambda a: [TransposeOp(a[0], [2, 0, 1])],
        lambda torch, x: [torch.permute(x, (2, 0, 1))],
    ),
    "c2f_split_concat": (  # YOLOv8's C2f: chunk(2, 1), then concat the pieces again
        [(Q, 8, 3, 3)],
        lambda a: [split := SplitOp(a[0], [4, 4], 1), ConcatOp([*split.results, a[0]], 1)],
        lambda torch, x: [torch.cat([*x.chunk(2, 1), x], 1)],
    ),
}


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("name", TORCH_CASES)
def test_matches_pytorch(name: str, batch: int) -> None:
    torch = pytest.importorskip("torch")
    shapes, build, torch_fn = TORCH_CASES[name]
    module = build_forward([tensor(*shape) for shape in shapes], build)
    rng = np.random.default_rng(len(name) + batch)
    inputs = [rng.standard_normal(concrete(s, batch)).astype(np.float32) for s in shapes]
    got = reference.run(teeny_ir.parse_module(to_text(module)), {}, inputs)
    want = torch_fn(torch, *(torch.from_numpy(x) for x in inputs))
    assert_close(got, [w.numpy() for w in want], ELEMENTWISE_TOL, dtype=np.float32)
