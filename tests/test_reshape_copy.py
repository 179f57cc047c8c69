"""The ``reshape_copy`` family: a static reshape that changes dimension 0 is one
copy launch, not a refusal (issue 23), while every other reshape stays a view.

The kernel runs in Triton's interpreter on odd sizes (masked tails, one program
past the grid) and on a batch-strided source, bit for bit against the
reference, with a mutant that ignores the batch stride caught; static ONNX
``Flatten(axis=2)`` and ``[4] -> [1, 4, 1]`` graphs compile and run end to end,
a split's parts are read in place, and a dynamic batch still cannot be folded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import DYNAMIC_INDEX as DYNAMIC
from xdsl.dialects.builtin import ModuleOp, TensorType, f32

import teeny_ir
from dialects.graph.structure import ReshapeOp as GraphReshapeOp
from dialects.kernel import LaunchOp, ReshapeOp
from teeny_ir import reference, runtime
from teeny_ir.kernels import validator
from teeny_ir.kernels.lowering import Unlowerable
from teeny_ir.testing.kernels import Case, Results, launch_case, lower_op, lowered, problems

RNG = np.random.default_rng(23)


def _t(*shape: int | str) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}f32>"


def _reshape(source: Sequence[int | str], result: Sequence[int | str], target: str = "") -> str:
    """A one-op module reshaping ``source`` to ``result`` (shape ``target``,
    default ``result`` itself)."""
    x, y = _t(*source), _t(*result)
    shape = target or ", ".join(str(d) for d in result)
    return (
        f"func.func @forward(%x: {x}) -> {y} {{\n"
        f"  %y = graph.reshape %x shape [{shape}] : ({x}) -> {y}\n  func.return %y : {y}\n}}\n"
    )


def _kernel_ops(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("kernel.")]


def _compile(text: str, out_dir: Path) -> ModuleOp:
    module = teeny_ir.parse_module(text)
    pipeline = f"teeny-inference{{profile=interpreter}},emit-triton{{out-dir={out_dir}}}"
    teeny_ir.PassManager.parse(pipeline).run(module)
    return module


# --------------------------------------------------------------------- kernel

KERNEL_CASES: list[tuple[list[int], list[int], tuple[int, int] | None]] = [
    ([3, 5, 7], [7, 15], None),  # 105 elements: one program, a masked tail
    ([2, 3, 4, 5], [6, 20], None),  # ONNX Flatten(axis=2)
    ([4], [1, 4, 1], None),  # a rank-1 source: images of one element
    ([1, 12], [3, 4], None),
    ([3, 17, 41], [51, 41], None),  # 2091 elements: three programs
    ([2, 3, 4, 5], [6, 20], (7, 2)),  # channels 2..4 of a 7-channel buffer
    ([3, 5, 9, 23], [15, 207], (8, 3)),  # strided, three programs
]
"""(source, result, the source's channel-slice view or None)."""


def _kernel_cases() -> list[Case]:
    cases = []
    for index, (source, result, view) in enumerate(KERNEL_CASES):
        text = _reshape(source, result)
        _, launch = lowered(text, profile="interpreter")
        assert launch.family == "reshape_copy"
        x = RNG.standard_normal(source).astype(np.float32)
        (y,) = reference.run(teeny_ir.parse_module(text), {}, [x])
        cases.append(
            launch_case(
                f"reshape{index}",
                launch,
                source[0],
                [x],
                [y],
                pad=64,
                tol=0.0,
                views=None if view is None else {"x": view},
                extra_programs=1,
            )
        )
    # The strided case with the batch stride ignored: its checks must catch it.
    mutant = dataclasses.replace(
        cases[5],
        id="reshape5-mutant",
        mutation=("(tl.int64) * x_batch_stride", "(tl.int64) * X_IMAGE"),
    )
    return [*cases, mutant]


HARNESS_CASES = _kernel_cases()
"""What the `results` fixture (tests/conftest.py) runs, in one interpreter process."""


def test_the_kernel_copies_bit_for_bit(results: Results) -> None:
    """Canaries intact, every output element written and the reference's,
    strided sources read through their batch stride."""
    cases = [case for case in HARNESS_CASES if case.mutation is None]
    assert len(cases) == len(KERNEL_CASES)
    for case in cases:
        validator.validate(case.contract())  # the footprints fit, strided or not
        assert problems(case, results) == [], case.id


def test_a_kernel_ignoring_the_batch_stride_is_caught(results: Results) -> None:
    (mutant,) = [case for case in HARNESS_CASES if case.mutation is not None]
    assert mutant.arg("x_batch_stride") == 7 * 20 and mutant.arg("X_IMAGE") == 60
    assert problems(mutant, results) != []


# --------------------------------------------------------------------- lowering


def test_only_static_reshapes_changing_dimension_0_copy() -> None:
    """The copy takes exactly what the view refuses; the view keeps the rest."""
    copies = [_reshape([2, 3, 4, 5], [6, 20]), _reshape([4], [1, 4, 1]), _reshape([1, 12], [3, 4])]
    views = [
        _reshape([2, 3, 4, 5], [2, 60]),
        _reshape([4], [4, 1]),
        _reshape(["?", 3, 4], ["?", 12], "0, -1"),
    ]
    for text in copies:
        module = teeny_ir.parse_module(text)
        teeny_ir.PassManager.parse("lower-graph-to-kernel").run(module)
        assert _kernel_ops(module) == ["kernel.launch"], text
        (launch,) = [op for op in module.walk() if isinstance(op, LaunchOp)]
        assert launch.family == "reshape_copy"
    for text in views:
        module = teeny_ir.parse_module(text)
        teeny_ir.PassManager.parse("lower-graph-to-kernel").run(module)
        assert _kernel_ops(module) == ["kernel.reshape"], text
        assert all(not isinstance(op, LaunchOp) for op in module.walk())


def test_a_static_flatten_of_the_batch_copies() -> None:
    x, y = _t(2, 3, 4, 5), _t(6, 4, 5)
    text = (
        f"func.func @forward(%x: {x}) -> {y} {{\n"
        f"  %y = graph.flatten %x start_dim 0 end_dim 1 : ({x}) -> {y}\n"
        f"  func.return %y : {y}\n}}\n"
    )
    _, launch = lowered(text)
    assert launch.family == "reshape_copy"
    assert dict(launch.arg_bindings) == {
        "x": "in0",
        "y": "out0",
        "numel": "120",
        "X_IMAGE": "60",
        "x_batch_stride": "60",
    }


def test_a_dynamic_batch_still_cannot_be_folded() -> None:
    x, y = _t("?", 3, 4), _t("?", 4)
    text = (
        f"func.func @forward(%x: {x}) -> {y} {{\n"
        f"  %y = graph.reshape %x shape [-1, 4] : ({x}) -> {y}\n  func.return %y : {y}\n}}\n"
    )
    with pytest.raises(
        teeny_ir.DiagnosticError, match=r"2:8: .*folding the batch into another dimension"
    ):
        teeny_ir.PassManager.parse("lower-graph-to-kernel").run(teeny_ir.parse_module(text))


def test_a_dynamic_reshape_moving_dimension_0_reaches_the_views_refusal() -> None:
    """Unverified (the graph verifier refuses it first): the copy's condition
    never takes a dynamic shape, so the view's rule refuses it, as before."""
    module = teeny_ir.parse_module(_reshape([2, 3, 4], [6, 4]))
    static = next(o for o in module.walk() if isinstance(o, GraphReshapeOp))
    op = GraphReshapeOp(static.input, [-1, 4], TensorType(f32, [DYNAMIC, 4]))
    with pytest.raises(Unlowerable, match="moves the batch out of dimension 0 has no kernel"):
        lower_op(op)


def test_more_elements_than_an_i32_are_refused() -> None:
    text = _reshape([65536, 32768], [32768, 65536])
    module = teeny_ir.parse_module(text)
    op = next(o for o in module.walk() if o.name == "graph.reshape")
    with pytest.raises(Unlowerable, match="2147483648 elements exceeds the reshape_copy family"):
        lower_op(op)


# --------------------------------------------------------------------- end to end

END_TO_END = """
func.func @forward(%x: tensor<2x3x4x5xf32>, %s: tensor<4xf32>, %z: tensor<2x6x4x5xf32>)
    -> (tensor<6x20xf32>, tensor<1x4x1xf32>, tensor<6x20xf32>, tensor<3x40xf32>) {
  %f = graph.reshape %x shape [6, 20] : (tensor<2x3x4x5xf32>) -> tensor<6x20xf32>
  %r = graph.reshape %s shape [1, 4, 1] : (tensor<4xf32>) -> tensor<1x4x1xf32>
  %a, %b = graph.split %z axis 1 sizes [3, 3] : (tensor<2x6x4x5xf32>) -> (tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>)
  %g = graph.reshape %a shape [6, 20] : (tensor<2x3x4x5xf32>) -> tensor<6x20xf32>
  %h = graph.reshape %b shape [3, 40] : (tensor<2x3x4x5xf32>) -> tensor<3x40xf32>
  func.return %f, %r, %g, %h : tensor<6x20xf32>, tensor<1x4x1xf32>, tensor<6x20xf32>, tensor<3x40xf32>
}
"""
"""ONNX Flatten(axis=2) of a static batch, LayerNorm's [4] -> [1, 4, 1] scale,
and a split whose parts are copied out of its source in place."""


def test_compiles_and_runs_like_the_reference(tmp_path: Path) -> None:
    module = _compile(END_TO_END, tmp_path / "plan")
    launches = [op for op in module.walk() if isinstance(op, LaunchOp)]
    assert [op.family for op in launches] == ["reshape_copy"] * 4
    # The split is two views: the copies of its parts read them at its batch stride.
    assert [op.name for op in module.walk() if op.name == "kernel.slice"] == ["kernel.slice"] * 2
    strides = [dict(op.arg_bindings)["x_batch_stride"] for op in launches]
    assert strides == ["60", "1", "120", "120"], strides
    inputs = [
        RNG.standard_normal(shape).astype(np.float32)
        for shape in ((2, 3, 4, 5), (4,), (2, 6, 4, 5))
    ]
    got = runtime.load(tmp_path / "plan").run(inputs, {})
    want = reference.run(teeny_ir.parse_module(END_TO_END), {}, inputs)
    assert len(got) == len(want) == 4
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_a_reshape_keeping_a_static_dimension_0_is_still_a_view(tmp_path: Path) -> None:
    module = _compile(_reshape([2, 3, 4, 5], [2, 60]), tmp_path / "plan")
    assert not [op for op in module.walk() if isinstance(op, LaunchOp)]
    assert [op for op in module.walk() if isinstance(op, ReshapeOp)]
