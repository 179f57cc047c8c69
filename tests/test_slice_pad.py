"""`graph.slice` and `graph.pad`: bounds normalisation, reference semantics
against numpy, the VJP rules against the exact transpose (``np.add.at`` over
the ops' index maps) and PyTorch, the ``slice`` and ``pad`` kernels in Triton's
interpreter on views and odd shapes, and the ONNX Slice and Pad handlers
against onnxruntime. Verifier messages are in
``lit_tests/dialects/graph-slice-pad-invalid.mlir``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import SSAValue

import teeny_ir
from dialects.graph.structure import PadOp, SliceOp, slice_bounds
from dialects.kernel import LaunchOp
from teeny_ir import reference
from teeny_ir.autodiff.context import VjpContext
from teeny_ir.autodiff.registry import VJPS
from teeny_ir.core.diagnostics import DiagnosticError
from teeny_ir.frontend.graph_builder import GraphBuilder
from teeny_ir.frontend.onnx import import_onnx
from teeny_ir.reference.structure import pad_indices
from teeny_ir.testing import ELEMENTWISE_TOL, assert_close
from teeny_ir.testing.kernels import Case, Results, launch_case, lowered, problems

RNG = np.random.default_rng(2024)


def _t(*shape: int | str) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}f32>"


def _one(op: str, source: Sequence[int | str], result: Sequence[int | str], options: str) -> str:
    x, y = _t(*source), _t(*result)
    return (
        f"func.func @forward(%x: {x}) -> {y} {{\n"
        f"  %y = {op} %x {options} : ({x}) -> {y}\n  func.return %y : {y}\n}}\n"
    )


def _built(make: object, shape: Sequence[int | None]) -> ModuleOp:
    """A one-op module: ``make(builder, x)`` on an input of ``shape``."""
    b = GraphBuilder()
    x = b.input(list(shape), name="x")
    b.output(make(b, x))  # type: ignore[operator]
    return b.build()


def _slice_index(op: SliceOp, shape: Sequence[int], sizes: Sequence[int]) -> tuple[np.ndarray, ...]:
    return np.ix_(
        *(
            start + step * np.arange(count)
            for start, step, count in zip(op.starts, op.steps, sizes, strict=True)
        )
    )


def _op(module: ModuleOp, kind: type) -> object:
    return next(op for op in module.walk() if isinstance(op, kind))


# --------------------------------------------------------------------- bounds and reference


def test_slice_bounds_are_pythons() -> None:
    for size, start, end, step in itertools.product(
        (1, 2, 5),
        (-9, -5, -1, 0, 1, 4, 9),
        (-9, -1, 0, 2, 5, 9, 2**63 - 1, -(2**63)),
        (-3, -1, 1, 2),
    ):
        first, count = slice_bounds(size, start, end, step)
        want = list(range(size))[start:end:step]
        assert count == len(want)
        if want:
            assert first == want[0]


@pytest.mark.parametrize(
    ("starts", "ends", "axes", "steps"),
    [
        ([1, -2], [4, -9], [1, 2], [1, -1]),
        ([0, 5, -1], [-1, 0, -100], [0, 1, 2], [2, -2, -3]),
        ([2], [2**62], [-1], [3]),
        ([10, -10], [-10, 10], [2, 0], [-1, 1]),
        ([3], [4], None, None),
    ],
)
def test_slice_reference_is_numpys(
    starts: list[int], ends: list[int], axes: list[int] | None, steps: list[int] | None
) -> None:
    x = RNG.standard_normal((4, 5, 6)).astype(np.float32)
    module = _built(lambda b, v: b.slice(v, starts, ends, axes, steps), x.shape)
    index = [slice(None)] * 3
    for k, (start, end) in enumerate(zip(starts, ends, strict=True)):
        axis = list(range(len(starts)))[k] if axes is None else axes[k]
        index[axis] = slice(start, end, 1 if steps is None else steps[k])
    (got,) = reference.run(module, {}, [x])
    np.testing.assert_array_equal(got, x[tuple(index)])


def test_a_slice_keeps_a_whole_dynamic_batch_and_steps_of_one_element_are_1() -> None:
    module = _built(
        lambda b, v: b.slice(v, [0, 2, 1], [2**63 - 1, 3, 0], None, [1, 5, -4]), [None, 4, 3]
    )
    op = _op(module, SliceOp)
    assert isinstance(op, SliceOp)
    assert (op.starts, op.steps, "steps" in op.properties) == ((0, 2, 1), (1, 1, 1), False)
    x = RNG.standard_normal((3, 4, 3)).astype(np.float32)
    np.testing.assert_array_equal(reference.run(module, {}, [x])[0], x[:, 2:3, 1:2])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (([0], [0], [1], [1]), "the slice 0:0:1 of axis 1 \\(size 4\\) is empty"),
        (([0], [2], [3], [1]), "axis 3 is out of range for rank 3"),
        (([0, 0], [2, 2], [1, -2], [1, 1]), "axis 1 is listed twice"),
        (([0], [2], [1], [0]), "step 0 on axis 1"),
        (([1], [3], [0], [1]), "the dynamic batch \\(axis 0\\) cannot be sliced \\(got 1:3:1\\)"),
        (([0, 1], [2], None, None), "starts, ends, axes and steps differ in length"),
    ],
)
def test_builder_slice_errors_are_located(args: tuple[object, ...], message: str) -> None:
    with pytest.raises(DiagnosticError, match=f"'graph.slice' op {message}") as caught:
        _built(lambda b, v: b.slice(v, *args), [None, 4, 3])
    assert "test_slice_pad.py" in str(caught.value)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
@pytest.mark.parametrize("pads", [[0, 1, 2, 0, 3, 1], [0, 7, 9, 0, 8, 11], [0, -1, 2, 0, 1, -2]])
def test_pad_reference_is_numpys_pad_then_crop(mode: str, pads: list[int]) -> None:
    """numpy's pad by the positive parts, then the negative ones cropped, for
    pads up to twice the size (reflect reflects again past the far edge)."""
    x = RNG.standard_normal((2, 4, 5)).astype(np.float32)
    value = 1.5 if mode == "constant" else 0.0
    module = _built(lambda b, v: b.pad(v, pads, mode, value), [None, 4, 5])
    widths = [(max(pads[k], 0), max(pads[3 + k], 0)) for k in range(3)]
    extra = {"constant_values": value} if mode == "constant" else {}
    want = np.pad(x, widths, mode=mode, **extra)  # type: ignore[call-overload]
    crop = tuple(slice(max(-pads[k], 0), want.shape[k] - max(-pads[3 + k], 0)) for k in range(3))
    (got,) = reference.run(module, {}, [x])
    np.testing.assert_array_equal(got, want[crop])


def test_interior_padding_spreads_the_elements() -> None:
    text = _one("graph.pad", ["?", 3], ["?", 8], "pads [0, 1, 0, 0] interior [0, 2] value -2.0")
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    want = np.full((2, 8), -2.0, np.float32)
    want[:, 1::3] = x
    np.testing.assert_array_equal(reference.run(teeny_ir.parse_module(text), {}, [x])[0], want)


def test_pad_defaults_are_left_absent_and_a_negative_zero_value_kept() -> None:
    op = _op(_built(lambda b, v: b.pad(v, [0, 1, 0, 1]), [None, 3]), PadOp)
    assert isinstance(op, PadOp) and set(op.properties) == {"pads"}
    op = _op(_built(lambda b, v: b.pad(v, [0, 1, 0, 1], value=-0.0), [None, 3]), PadOp)
    assert isinstance(op, PadOp) and "value" in op.properties


def test_builder_pad_errors_are_located() -> None:
    with pytest.raises(
        DiagnosticError, match=r"'graph\.pad' op a pad value is only used in constant"
    ):
        _built(lambda b, v: b.pad(v, [0, 1, 0, 1], "edge", 2.0), [None, 3])
    with pytest.raises(
        DiagnosticError, match="the dynamic batch \\(dimension 0\\) cannot be padded"
    ):
        _built(lambda b, v: b.pad(v, [1, 0, 0, 0]), [None, 3])


# --------------------------------------------------------------------- VJPs


def _vjp(text: str) -> tuple[ModuleOp, SSAValue | None]:
    """``text``'s one op with its VJP rule applied to a seed argument; @forward
    returns the input's gradient."""
    module = teeny_ir.parse_module(text)
    function = next(op for op in module.ops if isinstance(op, FuncOp))
    block = function.body.block
    op, ret = block.first_op, block.last_op
    assert op is not None and isinstance(ret, ReturnOp)
    seed = block.insert_arg(op.results[0].type, len(block.args))
    ctx = VjpContext(block, ret)
    ctx.location = op.location
    rule = VJPS.lookup(type(op))
    assert callable(rule), rule
    (grad,) = rule(ctx, op, [seed])
    assert grad is not None and grad.type == op.operands[0].type
    block.insert_op_before(ReturnOp(grad), ret)
    block.erase_op(ret)
    function.function_type = FunctionType.from_lists([arg.type for arg in block.args], [grad.type])
    module.verify()
    return module, grad


def _transpose_of(op: SliceOp | PadOp, x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """The exact VJP of the linear map ``op``: ``g`` scattered back through its
    index map (the reference's), summing where several outputs read one input."""
    dx = np.zeros_like(x, np.float64)
    if isinstance(op, SliceOp):
        np.add.at(dx, _slice_index(op, x.shape, g.shape), g)
        return dx
    found = [
        pad_indices(size, begin, count, op.mode, inner)
        for size, begin, count, inner in zip(x.shape, op.begins, g.shape, op.interior, strict=True)
    ]
    index = np.ix_(*(source for source, _ in found))
    inside = np.ones(g.shape, bool)
    for dim, (_, mask) in enumerate(found):
        inside &= mask.reshape((-1,) + (1,) * (g.ndim - dim - 1))
    np.add.at(dx, index, np.where(inside, g, 0.0))
    return dx


VJP_CASES = [
    ("graph.slice", ["?", 5, 7], ["?", 2, 3], "starts [0, 1, 6] steps [1, 3, -2]"),
    ("graph.slice", [5, 7], [2, 7], "starts [4, 6] steps [-2, -1]"),
    ("graph.slice", ["?", 5, 7], ["?", 3, 1], "starts [0, 1, 2]"),
    ("graph.pad", ["?", 3, 4], ["?", 6, 3], "pads [0, 1, 0, 0, 2, -1] value 3.0"),
    ("graph.pad", ["?", 3, 4], ["?", 1, 2], "pads [0, -1, -2, 0, -1, 0]"),
    ("graph.pad", ["?", 3], ["?", 6], "pads [0, -1, 0, 0] interior [0, 2]"),
    ("graph.pad", ["?", 3, 4], ["?", 8, 13], "pads [0, 2, 5, 0, 3, 4] mode reflect"),
    ("graph.pad", ["?", 3, 4], ["?", 7, 4], "pads [0, 2, -1, 0, 2, 1] mode edge"),
    ("graph.pad", ["?", 1, 4], ["?", 4, 5], "pads [0, 1, 0, 0, 2, 1] mode reflect"),
]


@pytest.mark.parametrize(("op", "source", "result", "options"), VJP_CASES)
def test_vjp_is_the_exact_transpose_and_lowers(
    op: str, source: list[int | str], result: list[int | str], options: str
) -> None:
    text = _one(op, source, result, options)
    forward = next(o for o in teeny_ir.parse_module(text).walk() if o.name == op)
    assert isinstance(forward, SliceOp | PadOp)
    module, _ = _vjp(text)
    for batch in (1, 3):
        x = RNG.standard_normal([batch if d == "?" else d for d in source])
        g = RNG.standard_normal([batch if d == "?" else d for d in result])
        (got,) = reference.run(module, {}, [x.astype(np.float32), g.astype(np.float32)])
        assert_close(got, _transpose_of(forward, x, g).astype(np.float32), ELEMENTWISE_TOL)
    pipeline = "lower-graph-to-kernel{profile=interpreter views=false}"
    teeny_ir.PassManager.parse(pipeline).run(module)
    assert all(o.name.startswith(("kernel.", "func.", "builtin.")) for o in module.walk())


@pytest.mark.parametrize(("mode", "torch_mode"), [("reflect", "reflect"), ("edge", "replicate")])
def test_border_pad_vjp_is_torchs(mode: str, torch_mode: str) -> None:
    text = _one(
        "graph.pad", ["?", 2, 5, 4], ["?", 2, 9, 7], f"pads [0, 0, 3, 1, 0, 0, 1, 2] mode {mode}"
    )
    module, _ = _vjp(text)
    x, g = RNG.standard_normal((2, 2, 5, 4)), RNG.standard_normal((2, 2, 9, 7))
    xt = torch.tensor(x, requires_grad=True)
    yt = torch.nn.functional.pad(xt, (1, 2, 3, 1), mode=torch_mode)
    (want,) = torch.autograd.grad(yt, xt, torch.tensor(g))
    (got,) = reference.run(module, {}, [x.astype(np.float32), g.astype(np.float32)])
    assert_close(got, want.numpy().astype(np.float32), ELEMENTWISE_TOL)


def test_a_pad_cropping_everything_passes_zeros_back() -> None:
    """Interior padding then a crop past every input element."""
    module, _ = _vjp(_one("graph.pad", [4, 3], [4, 2], "pads [0, -5, 0, -2] interior [0, 3]"))
    got = reference.run(module, {}, [np.ones((4, 3), np.float32), np.ones((4, 2), np.float32)])
    np.testing.assert_array_equal(got[0], np.zeros((4, 3), np.float32))


# --------------------------------------------------------------------- kernels


KERNEL_CASES = [
    ("graph.slice", [3, 5, 7], [2, 2, 3], "starts [2, 4, 0] steps [-1, -3, 3]", None),
    (
        "graph.slice",
        ["?", 6, 4, 3],
        ["?", 2, 4, 1],
        "starts [0, 1, 3, 2] steps [1, 3, -1, 1]",
        (9, 2),
    ),
    ("graph.slice", [11], [4], "starts [10] steps [-3]", None),
    (
        "graph.slice",
        [2, 3, 2, 3, 2, 3],
        [1, 2, 2, 1, 2, 3],
        "starts [1, 2, 0, 1, 1, 0] steps [1, -2, 1, 1, -1, 1]",
        None,
    ),
    ("graph.pad", ["?", 3, 5], ["?", 5, 12], "pads [0, 1, 3, 0, 1, 4] value -1.5", (7, 3)),
    ("graph.pad", ["?", 3, 5], ["?", 9, 16], "pads [0, 3, 6, 0, 3, 5] mode reflect", None),
    ("graph.pad", ["?", 3, 5], ["?", 4, 4], "pads [0, 2, -1, 0, -1, 0] mode edge", None),
    ("graph.pad", [4, 3], [5, 8], "pads [1, -1, 0, 0] interior [0, 3] value 2.0", None),
    ("graph.pad", [7], [12], "pads [2, 3] mode reflect", None),
]


def _kernel_cases() -> list[Case]:
    cases = []
    for index, (op, source, result, options, view) in enumerate(KERNEL_CASES):
        _, launch = lowered(_one(op, source, result, options), profile="interpreter")
        assert isinstance(launch, LaunchOp)
        module = teeny_ir.parse_module(_one(op, source, result, options))
        for batch in (1, 3) if "?" in source else (source[0],):
            x = RNG.standard_normal([batch if d == "?" else d for d in source]).astype(np.float32)
            (y,) = reference.run(module, {}, [x])
            cases.append(
                launch_case(
                    f"{op.removeprefix('graph.')}{index}-b{batch}",
                    launch,
                    int(batch),
                    [x],
                    [y],
                    pad=64,
                    tol=0.0,
                    views=None if view is None else {"x": view},
                    extra_programs=1,
                )
            )
    return cases


HARNESS_CASES = _kernel_cases()
"""What the `results` fixture (tests/conftest.py) runs, in one interpreter process."""


def test_the_kernels_run_the_reference_bit_for_bit(results: Results) -> None:
    """Canaries intact, every output element written, equal to the reference;
    inputs in batch-strided views where the case says."""
    assert len(HARNESS_CASES) == 13
    for case in HARNESS_CASES:
        assert problems(case, results) == [], case.id


def test_a_slice_or_pad_of_nothing_is_a_view() -> None:
    for text in (
        _one("graph.slice", ["?", 3, 1], ["?", 3, 1], "starts [0, 0, 0] steps [1, 1, -1]"),
        _one("graph.pad", ["?", 3], ["?", 3], "pads [0, 0, 0, 0] mode edge"),
    ):
        module = teeny_ir.parse_module(text)
        teeny_ir.PassManager.parse("lower-graph-to-kernel").run(module)
        assert [o.name for o in module.walk() if o.name.startswith("kernel.")] == ["kernel.reshape"]


# --------------------------------------------------------------------- ONNX


def _model(node: onnx.NodeProto, inits: dict[str, np.ndarray], opset: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(a, n) for n, a in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    return onnx.shape_inference.infer_shapes(model)


def _against_ort(model: onnx.ModelProto) -> list[str]:
    imported = import_onnx(model)
    x = RNG.standard_normal((3, 4, 6)).astype(np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = session.run(None, {"x": x})
    assert_close(reference.run(imported.module, imported.weights, [x]), [want], 0.0)
    return [op.name for op in imported.module.walk() if op.name.startswith("graph.")]


def _i64(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


@pytest.mark.parametrize(
    ("inputs", "ops"),
    [
        (
            {"s": _i64(1, -1), "e": _i64(-(2**63), 0), "a": _i64(1, 2), "t": _i64(-1, -2)},
            ["graph.slice"],
        ),
        ({"s": _i64(1), "e": _i64(3), "a": _i64(-1), "t": _i64(1)}, ["graph.split"]),
        (
            {"s": _i64(0, 1), "e": _i64(2**63 - 1, 3), "a": _i64(0, 1), "t": _i64(1, 1)},
            ["graph.split"],
        ),
        ({"s": _i64(1, 0), "e": _i64(3, 5), "a": _i64(1, 2), "t": _i64(1, 1)}, ["graph.slice"]),
    ],
)
def test_onnx_slice_of_a_graph_tensor(inputs: dict[str, np.ndarray], ops: list[str]) -> None:
    node = helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])
    assert _against_ort(_model(node, inputs, 13)) == ops


@pytest.mark.parametrize(
    ("mode", "pads", "axes", "opset"),
    [
        ("constant", _i64(0, 1, 2, 0, -1, 3), None, 13),
        ("reflect", _i64(2, 3, 1, 2), _i64(-1, 1), 18),
        ("edge", _i64(1, -2), _i64(2), 19),
    ],
)
def test_onnx_pad(mode: str, pads: np.ndarray, axes: np.ndarray | None, opset: int) -> None:
    inits = {"p": pads, "v": np.array(0.25, np.float32)}
    names = ["x", "p", "v"] if mode == "constant" else ["x", "p", ""]
    if axes is not None:
        inits["a"] = axes
        names.append("a")
    node = helper.make_node("Pad", names, ["y"], mode=mode)
    assert _against_ort(_model(node, inits, opset)) == ["graph.pad"]


def test_onnx_pad_folds_constants_and_refuses_wrap() -> None:
    inits = {"c": np.arange(6, dtype=np.float32).reshape(2, 3), "p": _i64(1, -1, 0, 1)}
    nodes = [
        helper.make_node("Pad", ["c", "p"], ["pc"], mode="reflect"),
        helper.make_node("ReduceSum", ["pc"], ["s"], keepdims=0),
        helper.make_node("Add", ["x", "s"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(a, n) for n, a in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    folded = _against_ort(onnx.shape_inference.infer_shapes(model))
    assert "graph.pad" not in folded
    node = helper.make_node("Pad", ["x", "p"], ["y"], mode="wrap")
    with pytest.raises(DiagnosticError, match="Pad: mode 'wrap' is not supported"):
        import_onnx(_model(node, {"p": _i64(0, 0, 1, 0, 0, 1)}, 19))
