"""The ONNX frontend (`teeny_ir.frontend.onnx`) and ``teeny-import``.

Small models built with ``onnx.helper``, one or more per handler (odd shapes),
are imported and run in the reference interpreter against onnxruntime; two
torch exports (a LeNet and a conv + batch norm + ``x * sigmoid(x)`` block,
static and with a dynamic batch) against PyTorch; each refusal's message; each
exit path of ``teeny-import``; and one imported model compiled with
``teeny-inference,emit-triton`` and run in the interpreter backend.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from xdsl.dialects.builtin import ModuleOp

import teeny_ir
from dialects.graph.elementwise import SigmoidOp, SiluOp
from dialects.graph.param import ParamOp
from teeny_ir import reference, runtime
from teeny_ir.core.diagnostics import DiagnosticError
from teeny_ir.driver.import_model import main
from teeny_ir.frontend.graph_builder import GraphBuilder
from teeny_ir.frontend.onnx import ONNX_RULES, import_onnx
from teeny_ir.frontend.onnx.context import Node, node_loc
from teeny_ir.frontend.onnx.versions import first_change, schema_version
from teeny_ir.testing import ELEMENTWISE_TOL, REDUCTION_TOL, assert_close

RNG = np.random.default_rng(23)


def _model(
    nodes: Sequence[onnx.NodeProto],
    inputs: dict[str, Sequence[int | str]],
    outputs: Sequence[str],
    initializers: dict[str, np.ndarray] | None = None,
    opset: int = 17,
) -> onnx.ModelProto:
    graph = helper.make_graph(
        list(nodes),
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(a, n) for n, a in (initializers or {}).items()],
    )
    # ir_version 10: what onnxruntime 1.31 reads.
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    # The outputs' shapes, which the checker wants, from onnx's own inference.
    return onnx.shape_inference.infer_shapes(model)


def _ort(model: onnx.ModelProto, feeds: list[np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return [np.asarray(o) for o in session.run(None, dict(zip(names, feeds, strict=True)))]


def _check(
    model: onnx.ModelProto, shapes: Sequence[Sequence[int]], tol: float = ELEMENTWISE_TOL
) -> ModuleOp:
    imported = import_onnx(model)
    feeds = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    got = reference.run(imported.module, imported.weights, feeds)
    assert_close(got, _ort(model, feeds), tol)
    return imported.module


def _ops(module: Any) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("graph.")]


def _w(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# One model per handler, against onnxruntime.


@pytest.mark.parametrize(
    ("attrs", "groups", "bias"),
    [
        ({"pads": [1, 0, 2, 1], "strides": [2, 1]}, 1, True),
        ({"dilations": [2, 1], "pads": [2, 1, 2, 1]}, 1, False),
        ({"group": 3, "pads": [1, 1, 1, 1]}, 3, True),
        ({"auto_pad": "VALID", "kernel_shape": [3, 3]}, 1, False),
    ],
)
def test_conv(attrs: dict[str, Any], groups: int, bias: bool) -> None:
    inits = {"w": _w(6, 6 // groups, 3, 3)} | ({"b": _w(6)} if bias else {})
    node = helper.make_node("Conv", ["x", "w", *(["b"] if bias else [])], ["y"], **attrs)
    module = _check(_model([node], {"x": ["N", 6, 7, 9]}, ["y"], inits), [(2, 6, 7, 9)], 1e-4)
    assert "graph.conv2d" in _ops(module)


def test_batch_norm_and_activations() -> None:
    c = 5
    inits = {"s": _w(c), "b": _w(c), "m": _w(c), "v": np.abs(_w(c)) + 0.5}
    nodes = [
        helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["n"], epsilon=1e-3),
        helper.make_node("Relu", ["n"], ["r"]),
        helper.make_node("Tanh", ["n"], ["t"]),
        helper.make_node("LeakyRelu", ["n"], ["l"], alpha=0.2),
        helper.make_node("HardSigmoid", ["n"], ["h"], alpha=0.3, beta=0.4),
        helper.make_node("Sigmoid", ["n"], ["s1"]),
        helper.make_node("HardSwish", ["n"], ["hs"]),
    ]
    model = _model(nodes, {"x": [2, c, 3, 7]}, ["r", "t", "l", "h", "s1", "hs"], inits)
    _check(model, [(2, c, 3, 7)], REDUCTION_TOL)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_opset_20(approximate: str) -> None:
    node = helper.make_node("Gelu", ["x"], ["y"], approximate=approximate)
    _check(_model([node], {"x": [3, 11]}, ["y"], opset=20), [(3, 11)])


def test_clip_and_dropout() -> None:
    nodes = [
        helper.make_node("Clip", ["x", "lo", "hi"], ["c"]),
        helper.make_node("Clip", ["x", "zero"], ["r"]),
        helper.make_node("Dropout", ["x"], ["d"], seed=3),
    ]
    inits = {
        "lo": np.array(-0.5, np.float32),
        "hi": np.array(0.7, np.float32),
        "zero": np.array(0.0, np.float32),
    }
    module = _check(_model(nodes, {"x": ["N", 3, 5]}, ["c", "r", "d"], inits), [(2, 3, 5)])
    assert _ops(module) == ["graph.hardtanh", "graph.relu"]


def test_binary_broadcasting_and_silu() -> None:
    nodes = [
        helper.make_node("Add", ["x", "c"], ["a"]),
        helper.make_node("Sub", ["a", "y"], ["s"]),
        helper.make_node("Div", ["s", "d"], ["q"]),
        helper.make_node("Sigmoid", ["q"], ["g"]),
        helper.make_node("Mul", ["g", "q"], ["o"]),
    ]
    inits = {"c": _w(1, 5, 1), "d": np.abs(_w(5, 1)) + 1}
    model = _model(nodes, {"x": [2, 3, 5, 4], "y": [5, 4]}, ["o"], inits)
    module = _check(model, [(2, 3, 5, 4), (5, 4)])
    ops = _ops(module)
    assert "graph.silu" in ops and "graph.sigmoid" not in ops  # x * sigmoid(x) is SiLU


def test_pools() -> None:
    nodes = [
        helper.make_node(
            "MaxPool", ["x"], ["m"], kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 1, 1]
        ),
        helper.make_node("MaxPool", ["x"], ["c"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
        helper.make_node(
            "AveragePool", ["x"], ["a"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]
        ),
        helper.make_node(
            "AveragePool",
            ["x"],
            ["p"],
            kernel_shape=[3, 3],
            pads=[1, 1, 1, 1],
            count_include_pad=1,
        ),
        helper.make_node("GlobalAveragePool", ["x"], ["g"]),
    ]
    model = _model(nodes, {"x": ["B", 3, 7, 9]}, ["m", "c", "a", "p", "g"])
    _check(model, [(2, 3, 7, 9)], REDUCTION_TOL)


@pytest.mark.parametrize(
    ("opset", "make"),
    [
        (11, lambda: [helper.make_node("Split", ["x"], ["a", "b"], axis=1, split=[2, 5])]),
        (13, lambda: [helper.make_node("Split", ["x", "sp"], ["a", "b"], axis=1)]),
        (18, lambda: [helper.make_node("Split", ["x"], ["a", "b"], axis=-1, num_outputs=2)]),
    ],
)
def test_split_forms(opset: int, make: Any) -> None:
    inits = {"sp": np.array([3, 4], np.int64)} if opset == 13 else {}
    model = _model(make(), {"x": ["N", 7, 3]}, ["a", "b"], inits, opset=opset)
    _check(model, [(2, 7, 3)])


def test_structure_ops() -> None:
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 3, 1]),
        helper.make_node("Concat", ["t", "t"], ["c"], axis=-1),
        helper.make_node("Flatten", ["c"], ["f"], axis=1),
        helper.make_node("Identity", ["f"], ["i"]),
        helper.make_node("Unsqueeze", ["i", "ax"], ["u"]),
        helper.make_node("Squeeze", ["u", "ax"], ["s"]),
    ]
    inits = {"ax": np.array([2], np.int64)}
    _check(_model(nodes, {"x": ["N", 2, 3, 5]}, ["s"], inits), [(3, 2, 3, 5)])


def test_gemm_and_matmul() -> None:
    nodes = [
        helper.make_node("Gemm", ["x", "w", "b"], ["l"], transB=1),
        helper.make_node("Gemm", ["x", "wt", "b2"], ["g"]),
        helper.make_node("MatMul", ["y", "m"], ["mm"]),
    ]
    inits = {"w": _w(6, 5), "b": _w(6), "wt": _w(5, 4), "b2": _w(1, 4), "m": _w(2, 3, 4)}
    model = _model(nodes, {"x": ["N", 5], "y": [2, 1, 5, 3]}, ["l", "g", "mm"], inits)
    module = _check(model, [(3, 5), (2, 1, 5, 3)], REDUCTION_TOL)
    assert {"graph.linear", "graph.matmul"} <= set(_ops(module))


def test_softmax_and_reductions() -> None:
    nodes = [
        helper.make_node("Softmax", ["x"], ["s"], axis=1),
        helper.make_node("ReduceMean", ["x"], ["m"], axes=[1, 3], keepdims=1),
        helper.make_node("ReduceSum", ["x", "ax"], ["r"], keepdims=0),
    ]
    inits = {"ax": np.array([-1], np.int64)}
    model = _model(nodes, {"x": ["N", 4, 3, 5]}, ["s", "m", "r"], inits, opset=13)
    _check(model, [(2, 4, 3, 5)], REDUCTION_TOL)


def test_reductions_axes_input_opset_18_and_old_softmax() -> None:
    nodes = [
        helper.make_node("ReduceMean", ["x", "ax"], ["m"], keepdims=0),
        helper.make_node("Softmax", ["x"], ["s"], axis=3),
    ]
    inits = {"ax": np.array([2], np.int64)}
    _check(_model(nodes, {"x": [2, 4, 3, 5]}, ["m"], inits, opset=18), [(2, 4, 3, 5)], 1e-4)
    old = _model([nodes[1]], {"x": [2, 4, 3, 5]}, ["s"], opset=11)
    _check(old, [(2, 4, 3, 5)], REDUCTION_TOL)


@pytest.mark.parametrize(
    ("mode", "nearest"), [("asymmetric", "floor"), ("half_pixel", "round_prefer_floor")]
)
def test_resize_nearest(mode: str, nearest: str) -> None:
    node = helper.make_node(
        "Resize",
        ["x", "", "sc"],
        ["y"],
        mode="nearest",
        coordinate_transformation_mode=mode,
        nearest_mode=nearest,
    )
    inits = {"sc": np.array([1, 1, 2, 3], np.float32)}
    module = _check(_model([node], {"x": ["N", 2, 3, 5]}, ["y"], inits), [(2, 2, 3, 5)])
    assert _ops(module) == ["graph.upsample_nearest2d"]


def test_shape_subgraph_folds_to_the_dynamic_batch() -> None:
    # What torch exports for x.view(x.size(0), -1): Shape, Gather, Unsqueeze, Concat.
    nodes = [
        helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.array(0))),
        helper.make_node("Shape", ["x"], ["sh"]),
        helper.make_node("Gather", ["sh", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "ax"], ["n1"]),
        helper.make_node("Slice", ["sh", "one", "big"], ["rest"]),
        helper.make_node("Cast", ["rest"], ["rest64"], to=TensorProto.INT64),
        helper.make_node(
            "ConstantOfShape",
            ["one"],
            ["ones"],
            value=numpy_helper.from_array(np.array([1], np.int64)),
        ),
        helper.make_node("Range", ["zero", "three", "onescalar"], ["r"]),
        helper.make_node("Mul", ["ones", "m1"], ["m0"]),
        helper.make_node("Expand", ["m0", "one"], ["me"]),
        helper.make_node("Equal", ["me", "m1"], ["eq"]),
        helper.make_node("Where", ["eq", "me", "one"], ["m"]),
        helper.make_node("Concat", ["n1", "m"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"]),
    ]
    inits = {
        "ax": np.array([0], np.int64),
        "one": np.array([1], np.int64),
        "big": np.array([2**62], np.int64),
        "three": np.array(3, np.int64),
        "onescalar": np.array(1, np.int64),
        "m1": np.array([-1], np.int64),
    }
    model = _model(nodes, {"x": ["batch", 3, 4, 5]}, ["y"], inits)
    module = _check(model, [(3, 3, 4, 5)])
    assert _ops(module) == ["graph.reshape"]
    forward = teeny_ir.print_module(module)
    assert "tensor<?x60xf32>" in forward


def test_initializers_become_params_named_exactly() -> None:
    name = "model/conv.weight:0"  # not a valid SSA name: the param's name stays exact
    node = helper.make_node("Conv", ["x", name], ["y"])
    imported = import_onnx(_model([node], {"x": [1, 2, 4, 4]}, ["y"], {name: _w(3, 2, 1, 1)}))
    params = [op for op in imported.module.walk() if isinstance(op, ParamOp)]
    assert [p.param_name.data for p in params] == [name] and list(imported.weights) == [name]


def test_an_identity_of_a_weight_is_that_weight() -> None:
    nodes = [
        helper.make_node("Identity", ["w"], ["w2"]),
        helper.make_node("Add", ["x", "w2"], ["y"]),
    ]
    model = _model(nodes, {"x": [2, 3]}, ["y"], {"w": _w(3)})
    module = _check(model, [(2, 3)])
    params = [op.param_name.data for op in module.walk() if isinstance(op, ParamOp)]
    assert params == ["w"]


def test_slice_of_a_tensor_on_two_axes_is_one_graph_slice() -> None:
    nodes = [helper.make_node("Slice", ["x", "s", "e", "a"], ["y"])]
    inits = {
        k: np.array(v, np.int64) for k, v in {"s": [1, -3], "e": [4, 99], "a": [1, -1]}.items()
    }
    module = _check(_model(nodes, {"x": ["N", 6, 5]}, ["y"], inits), [(2, 6, 5)])
    assert set(_ops(module)) == {"graph.slice"}  # one axis: a graph.split piece (test_slice_pad)


def test_every_rule_is_reachable_by_lookup() -> None:
    for op_type in ("Conv", "Split", "ReduceSum", "Resize", "Softmax", "Shape"):
        assert callable(ONNX_RULES.lookup(op_type, version=17)), op_type
    assert ONNX_RULES.lookup("Split", version=11) is not ONNX_RULES.lookup("Split", version=13)


# Refusals: one located line naming the node, the op type and what is unsupported.


def _refusal(model: onnx.ModelProto) -> str:
    with pytest.raises(DiagnosticError) as info:
        import_onnx(model)
    assert len(info.value.diagnostics) == 1
    return info.value.diagnostics[0].header()


@pytest.mark.parametrize(
    ("node", "inits", "expected"),
    [
        (
            helper.make_node("Relu", ["x"], ["y"], name="act", bogus=1),
            {},
            # onnx.checker refuses attributes outside the op's schema.
            "<model>: error: not a valid ONNX model: Unrecognized attribute: bogus for operator Relu",
        ),
        (
            helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2]),
            {},
            "<model>:node 0: error: MaxPool: the Indices output is not supported",
        ),
        (
            helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=1),
            {},
            "<model>:node 0 'sm': error: Softmax: axis=1 of the coerced-2-D form (opset < 13)",
        ),
        (
            helper.make_node(
                "Resize", ["x", "", "sc"], ["y"], coordinate_transformation_mode="sideways"
            ),
            {"sc": np.array([1, 1, 2, 2], np.float32)},
            "<model>:node 0: error: Resize: unsupported attribute "
            "coordinate_transformation_mode=sideways",
        ),
        (
            helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], dilations=[2, 2]),
            {},
            "<model>:node 0: error: AveragePool: unsupported attribute dilations=[2, 2]",
        ),
        (
            helper.make_node("Einsum", ["x"], ["y"], name="e", equation="ijkl->ijkl"),
            {},
            "<model>:node 0 'e': error: Einsum: unsupported op",
        ),
        (
            helper.make_node("Reshape", ["x", "t"], ["y"]),
            {"t": np.array([6, -1], np.int64)},
            "<model>:node 0: error: Reshape: target shape [6, -1] does not keep the dynamic batch",
        ),
    ],
)
def test_refusals(node: onnx.NodeProto, inits: dict[str, np.ndarray], expected: str) -> None:
    inputs: dict[str, Sequence[int | str]] = (
        {"x2": ["N", 5]} if "x2" in node.input else {"x": ["N", 3, 4, 4]}
    )
    opset = {"Softmax": 11, "AveragePool": 19}.get(node.op_type, 17)
    assert _refusal(_model([node], inputs, ["y"], inits, opset=opset)).startswith(expected)


def test_an_attribute_the_handler_does_not_read_is_refused() -> None:
    # Past the checker, a handler refuses every attribute it does not name (never
    # ignores one): here a Relu given LeakyRelu's alpha directly.
    proto = helper.make_node("Relu", ["x"], ["y"], name="act", alpha=1.0)
    builder = GraphBuilder()
    x = builder.input([2, 3])
    node = Node(proto, node_loc("m.onnx", 4, proto), 17, [x], builder, lambda *_: None)
    rule = ONNX_RULES.lookup("Relu", version=17)
    assert callable(rule)
    with pytest.raises(DiagnosticError) as info:
        rule(node)
    assert info.value.diagnostics[0].header() == (
        "m.onnx:node 4 'act': error: Relu: unsupported attribute 'alpha'"
    )


def test_refusal_of_a_fold_that_needs_the_batch_value() -> None:
    nodes = [
        helper.make_node("Shape", ["x"], ["sh"]),
        helper.make_node("Mul", ["sh", "two"], ["d"], name="double"),
        helper.make_node("Reshape", ["x", "d"], ["y"]),
    ]
    model = _model(nodes, {"x": ["N", 4]}, ["y"], {"two": np.array([2, 1], np.int64)})
    message = _refusal(model)
    assert message.startswith("<model>:node 1 'double': error: Mul: arithmetic on a shape")


def test_refusal_of_an_opset_and_a_symbolic_inner_dim() -> None:
    relu = helper.make_node("Relu", ["x"], ["y"])
    old = _model([relu], {"x": [2, 3]}, ["y"], opset=6)
    assert _refusal(old) == (
        "<model>:node 0: error: Relu: default-domain opset 6 is not supported: the importer "
        "knows opsets 7 to 28"
    )
    # An op version older than every handler is refused by name (Upsample 7's
    # scales attribute; the handler is for version 9's scales input).
    upsample = helper.make_node("Upsample", ["x"], ["y"], scales=[1.0, 1.0, 2.0, 2.0])
    assert _refusal(_model([upsample], {"x": [1, 2, 3, 3]}, ["y"], opset=8)) == (
        "<model>:node 0: error: Upsample: unsupported at opset 8 (version 7 of the op)"
    )
    inner = _model([relu], {"x": [2, "C"]}, ["y"])
    assert _refusal(inner) == (
        "<model>:input 'x' of Relu: error: dimension 1 is symbolic: only dimension 0 (the batch) "
        "may be"
    )


def test_a_handler_serves_the_versions_that_only_widen_types() -> None:
    # Relu 13 and 14 only added element types: its version-6 handler serves them;
    # Softmax 13 re-defaulted axis, ReduceSum 13 made axes an input, Split 18 added
    # num_outputs: a handler written before them does not describe them.
    assert first_change("Relu", "", 6, 14) is None
    assert first_change("Conv", "", 11, 22) is None
    assert first_change("Softmax", "", 1, 13) == 13
    assert first_change("ReduceSum", "", 1, 13) == 13
    assert first_change("Split", "", 13, 18) == 18
    assert schema_version("Relu", "", 21) == 14
    assert schema_version("Gelu", "", 17) is None  # Gelu appeared in opset 20
    # Opset 22 models (Conv, MaxPool and the activations got bfloat16) import.
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("HardSwish", ["p"], ["y"]),
    ]
    model = _model(nodes, {"x": ["N", 3, 6, 6]}, ["y"], {"w": _w(4, 3, 3, 3)}, opset=22)
    assert "graph.hardswish" in _ops(import_onnx(model).module)


# Torch exports (opset 17, the TorchScript exporter), static and dynamic batch.


def _lenet() -> Any:
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5),
        nn.ReLU(),
        nn.AvgPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 5 * 5, 32),
        nn.ReLU(),
        nn.Linear(32, 10),
    )


class _ConvBnSilu(torch.nn.Module):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(8)
        self.up = torch.nn.Upsample(scale_factor=2, mode="nearest")

    def forward(self, x: Any) -> Any:
        y = self.bn(self.conv(x))
        y = y * torch.sigmoid(y)  # SiLU, decomposed
        return self.up(y).reshape(x.shape[0], -1)


class _Residual(torch.nn.Module):  # type: ignore[misc]
    """A depthwise conv + BN + SiLU residual block; chunk (Slice), ReLU6 (Clip), mean."""

    def __init__(self) -> None:
        super().__init__()
        self.dw = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.bn = torch.nn.BatchNorm2d(8)
        self.pw = torch.nn.Conv2d(8, 8, 1)

    def forward(self, x: Any) -> Any:
        y = self.pw(torch.nn.functional.silu(self.bn(self.dw(x)))) + x
        a, b = torch.cat([y, torch.nn.functional.relu6(y)], 1).chunk(2, dim=1)
        z = (a * b).mean(dim=(2, 3))
        return torch.softmax(z.view(z.shape[0], -1), dim=1)


def _export(model: Any, shape: tuple[int, ...], path: Path, dynamic: bool) -> None:
    model.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            (torch.zeros(shape),),
            str(path),
            input_names=["x"],
            output_names=["y"],
            opset_version=17,
            dynamo=False,
            dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}} if dynamic else None,
        )


def _trained_bn(block: Any) -> Any:
    channels = block.bn.num_features
    with torch.no_grad():
        block.bn.running_mean.copy_(torch.randn(channels))
        block.bn.running_var.copy_(torch.rand(channels) + 0.5)
        block.bn.weight.copy_(torch.randn(channels))
        block.bn.bias.copy_(torch.randn(channels))
    return block


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("which", ["lenet", "conv_bn_silu", "residual"])
def test_torch_exports_equal_pytorch(tmp_path: Path, which: str, dynamic: bool) -> None:
    torch.manual_seed(0)
    model = {"lenet": _lenet, "conv_bn_silu": _ConvBnSilu, "residual": _Residual}[which]()
    if which != "lenet":
        model = _trained_bn(model)
    sample = {"lenet": (1, 28, 28), "conv_bn_silu": (3, 10, 14), "residual": (8, 6, 6)}[which]
    path = tmp_path / "m.onnx"
    _export(model, (1, *sample), path, dynamic)
    imported = import_onnx(path)
    text = teeny_ir.print_module(imported.module)
    assert ("tensor<?x" in text) == dynamic
    if which != "lenet":
        assert any(isinstance(op, SiluOp) for op in imported.module.walk())
        assert not any(isinstance(op, SigmoidOp) for op in imported.module.walk())
    for batch in (1, 3) if dynamic else (1,):
        x = torch.randn(batch, *sample)
        with torch.no_grad():
            want = model(x).numpy()
        got = reference.run(imported.module, imported.weights, [x.numpy()])
        assert_close(got, [want], REDUCTION_TOL)


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("which", ["lenet", "residual"])
def test_torch_exports_compile_and_equal_pytorch(tmp_path: Path, which: str, dynamic: bool) -> None:
    # Compiled (teeny-inference, emit-triton) and run in Triton's interpreter,
    # against PyTorch itself: batch 1, and 3 for the dynamic-batch export.
    torch.manual_seed(2)
    model = _lenet() if which == "lenet" else _trained_bn(_Residual())
    sample = (1, 28, 28) if which == "lenet" else (8, 6, 6)
    path = tmp_path / "m.onnx"
    _export(model, (1, *sample), path, dynamic)
    imported = import_onnx(path)
    kernels = teeny_ir.parse_module(teeny_ir.print_module(imported.module), filename="m.mlir")
    out = tmp_path / "out"
    teeny_ir.PassManager.parse(
        f"teeny-inference{{profile=interpreter}},emit-triton{{out-dir={out}}}"
    ).run(kernels)
    executable = runtime.load(out)
    for batch in (1, 3) if dynamic else (1,):
        x = torch.randn(batch, *sample)
        with torch.no_grad():
            want = model(x).numpy()
        assert_close(executable.run([x.numpy()], imported.weights), [want], REDUCTION_TOL)


def test_imported_model_compiles_and_runs(tmp_path: Path) -> None:
    torch.manual_seed(1)
    block = _trained_bn(_ConvBnSilu())
    path = tmp_path / "block.onnx"
    _export(block, (1, 3, 10, 14), path, dynamic=True)
    imported = import_onnx(path)
    text = teeny_ir.print_module(imported.module)
    kernels = teeny_ir.parse_module(text, filename="block.mlir")
    out = tmp_path / "out"
    teeny_ir.PassManager.parse(f"teeny-inference,emit-triton{{out-dir={out}}}").run(kernels)
    executable = runtime.load(out)
    for batch in (1, 3):
        x = RNG.standard_normal((batch, 3, 10, 14)).astype(np.float32)
        want = reference.run(imported.module, imported.weights, [x])
        assert_close(executable.run([x], imported.weights), want, REDUCTION_TOL)


# teeny-import: one test per exit path.


def _cli(*argv: str) -> tuple[int, str]:
    stderr = io.StringIO()
    import contextlib

    with contextlib.redirect_stderr(stderr):
        code = main(list(argv))
    return code, stderr.getvalue()


@pytest.fixture
def onnx_file(tmp_path: Path) -> Path:
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])
    path = tmp_path / "m.onnx"
    onnx.save(_model([node], {"x": ["N", 2, 5, 5]}, ["y"], {"w": _w(3, 2, 3, 3)}), str(path))
    return path


def test_cli_writes_the_module_and_weights(onnx_file: Path, tmp_path: Path) -> None:
    from safetensors.numpy import load_file

    code, err = _cli(str(onnx_file), "-o", str(tmp_path / "out.mlir"))
    assert (code, err) == (0, "")
    module = teeny_ir.parse_module((tmp_path / "out.mlir").read_text(), filename="out.mlir")
    weights = load_file(str(tmp_path / "out.safetensors"))
    assert list(weights) == ["w"]
    x = RNG.standard_normal((2, 2, 5, 5)).astype(np.float32)
    model = onnx.load(str(onnx_file))
    assert_close(reference.run(module, weights, [x]), _ort(model, [x]), REDUCTION_TOL)


def test_cli_writes_empty_weights(tmp_path: Path) -> None:
    from safetensors.numpy import load_file

    path = tmp_path / "relu.onnx"
    onnx.save(_model([helper.make_node("Relu", ["x"], ["y"])], {"x": [2, 3]}, ["y"]), str(path))
    assert _cli(str(path), "-o", str(tmp_path / "r.mlir")) == (0, "")
    assert load_file(str(tmp_path / "r.safetensors")) == {}


def test_cli_refuses_a_model_it_cannot_import(tmp_path: Path) -> None:
    path = tmp_path / "hardmax.onnx"
    hardmax = helper.make_node("Hardmax", ["x"], ["y"], name="Hardmax_0")
    onnx.save(_model([hardmax], {"x": [2, 3]}, ["y"]), str(path))
    code, err = _cli(str(path), "-o", str(tmp_path / "o.mlir"))
    assert (code, err) == (1, f"{path}:node 0 'Hardmax_0': error: Hardmax: unsupported op\n")
    assert not (tmp_path / "o.mlir").exists()


def test_cli_missing_file(tmp_path: Path) -> None:
    code, err = _cli(str(tmp_path / "nope.onnx"), "-o", str(tmp_path / "o.mlir"))
    assert (code, err) == (
        1,
        f"teeny-import: error: cannot read '{tmp_path / 'nope.onnx'}': no such file\n",
    )


def test_cli_not_an_onnx_file(tmp_path: Path) -> None:
    path = tmp_path / "junk.onnx"
    path.write_bytes(b"\xff\xfe not a protobuf \x00\x01")
    code, err = _cli(str(path), "-o", str(tmp_path / "o.mlir"))
    assert code == 1 and err.startswith(f"{path}: error: not an ONNX model")
    assert err.count("\n") == 1


def test_cli_refuses_a_pt2_that_is_no_exported_program(tmp_path: Path) -> None:
    path = tmp_path / "m.pt2"
    path.write_bytes(b"PK")
    code, err = _cli(str(path), "-o", str(tmp_path / "o.mlir"))
    assert code == 1 and "not a torch.export program" in err


def test_cli_refuses_output_equal_to_input(onnx_file: Path) -> None:
    code, err = _cli(str(onnx_file), "-o", str(onnx_file))
    assert code == 1 and "refusing to overwrite the input file" in err


def test_cli_refuses_a_device_as_output(onnx_file: Path) -> None:
    code, err = _cli(str(onnx_file), "-o", "/dev/null")
    assert code == 1 and "'/dev/null' is not a regular file" in err
    assert not Path("/dev/null.safetensors").exists()


def test_cli_usage_error() -> None:
    code, err = _cli("m.onnx")
    assert code == 1 and err.startswith("teeny-import: error:")


# Decompositions exporters produce (`teeny_ir.frontend.onnx.patterns`).


class _ConvThen(torch.nn.Module):  # type: ignore[misc]
    """A conv and then ``act``: what fusion wants the activation to follow."""

    def __init__(self, act: Any) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.act = act

    def forward(self, x: Any) -> Any:
        return self.act(self.conv(x))


_F = torch.nn.functional
_PATTERNS: dict[str, tuple[Any, str]] = {
    "clip": (lambda x: x * torch.clamp(x + 3, 0, 6) / 6, "graph.hardswish"),
    "relu6": (lambda x: x * _F.relu6(x + 3) / 6, "graph.hardswish"),
    "hardswish_op": (_F.hardswish, "graph.hardswish"),
    "hardsigmoid": (lambda x: x * _F.hardsigmoid(x), "graph.hardswish"),
    "gelu_erf": (_F.gelu, "graph.gelu"),
    "gelu_tanh": (lambda x: _F.gelu(x, approximate="tanh"), "graph.gelu"),
    "gelu_erf_reordered": (lambda x: (1 + torch.erf(x * 0.5**0.5)) * (x * 0.5), "graph.gelu"),
}
_DECOMPOSED = {"graph.add", "graph.mul", "graph.div", "graph.hardtanh", "graph.tanh"}


def _import_export(act: Any, tmp_path: Path) -> tuple[Any, Any]:
    torch.manual_seed(2)
    model = _ConvThen(act)
    path = tmp_path / "m.onnx"
    _export(model, (1, 3, 6, 5), path, dynamic=True)
    return model, import_onnx(path)


@pytest.mark.parametrize("which", list(_PATTERNS))
def test_exported_decompositions_are_one_graph_op(tmp_path: Path, which: str) -> None:
    act, op = _PATTERNS[which]
    model, imported = _import_export(act, tmp_path)
    ops = _ops(imported.module)
    assert op in ops and not _DECOMPOSED & set(ops), ops
    if which == "gelu_tanh":
        assert "approximate tanh" in teeny_ir.print_module(imported.module)
    for batch in (1, 3):
        x = torch.randn(batch, 3, 6, 5)
        with torch.no_grad():
            want = model(x).numpy()
        got = reference.run(imported.module, imported.weights, [x.numpy()])
        assert_close(got, [want], REDUCTION_TOL)


def test_imported_hardswish_fuses_into_the_conv(tmp_path: Path) -> None:
    _, imported = _import_export(_PATTERNS["clip"][0], tmp_path)
    module = teeny_ir.parse_module(teeny_ir.print_module(imported.module), filename="m.mlir")
    teeny_ir.PassManager.parse("teeny-inference").run(module)
    launches = [op for op in module.walk() if op.name == "kernel.launch"]
    assert len(launches) == 1 and 'ACTIVATION = "hardswish"' in teeny_ir.print_module(module)


def test_a_near_miss_is_not_a_pattern(tmp_path: Path) -> None:
    # sqrt(2) off by 5e-5 (relative): the nodes import one by one, Erf as graph.erf.
    model, imported = _import_export(lambda x: 0.5 * x * (1 + torch.erf(x / 1.4143)), tmp_path)
    ops = _ops(imported.module)
    assert "graph.gelu" not in ops and "graph.erf" in ops
    x = torch.randn(2, 3, 6, 5)
    with torch.no_grad():
        want = model(x).numpy()
    assert_close(
        reference.run(imported.module, imported.weights, [x.numpy()]), [want], REDUCTION_TOL
    )
    model, imported = _import_export(lambda x: x * torch.clamp(x + 3, 0, 6) / 6.001, tmp_path)
    ops = _ops(imported.module)
    assert "graph.hardswish" not in ops and "graph.hardtanh" in ops
    x = torch.randn(2, 3, 6, 5)
    with torch.no_grad():
        want = model(x).numpy()
    assert_close(
        reference.run(imported.module, imported.weights, [x.numpy()]), [want], REDUCTION_TOL
    )


def test_a_pattern_whose_inner_value_is_used_elsewhere_is_kept() -> None:
    nodes = [
        helper.make_node("Add", ["x", "three"], ["a"]),
        helper.make_node("Clip", ["a", "zero", "six"], ["c"]),
        helper.make_node("Mul", ["x", "c"], ["m"]),
        helper.make_node("Div", ["m", "six"], ["y"]),
    ]
    inits = {k: np.array(v, np.float32) for k, v in (("three", 3), ("zero", 0), ("six", 6))}
    module = _check(_model(nodes, {"x": [2, 7]}, ["y", "c"], inits), [(2, 7)])
    assert "graph.hardswish" not in _ops(module)
    module = _check(_model(nodes, {"x": [2, 7]}, ["y"], inits), [(2, 7)])
    assert _ops(module) == ["graph.hardswish"]


def test_gemm_alpha_beta_transposes_and_matmul_vectors() -> None:
    nodes = [
        helper.make_node("Gemm", ["a", "w", "c"], ["g"], alpha=0.5, beta=-2.0, transA=1),
        helper.make_node("Gemm", ["x", "wt", "bias"], ["l"], alpha=3.0, transB=1),
        helper.make_node("MatMul", ["v", "m"], ["vm"]),
        helper.make_node("MatMul", ["m3", "u"], ["mu"]),
    ]
    inits = {"w": _w(3, 5), "c": _w(1, 5), "wt": _w(4, 3), "bias": _w(4)}
    inputs: dict[str, Sequence[int | str]] = {
        "a": [3, 2],
        "x": [2, 3],
        "v": [4],
        "m": [2, 4, 6],
        "m3": [2, 5, 4],
        "u": [4],
    }
    model = _model(nodes, inputs, ["g", "l", "vm", "mu"], inits)
    _check(model, [(3, 2), (2, 3), (4,), (2, 4, 6), (2, 5, 4), (4,)], REDUCTION_TOL)


def test_log_softmax_and_a_clip_with_min_above_max() -> None:
    nodes = [
        helper.make_node("LogSoftmax", ["x"], ["l"], axis=1),
        helper.make_node("Clip", ["x", "hi", "lo"], ["c"]),
    ]
    inits = {"lo": np.array(-0.5, np.float32), "hi": np.array(0.7, np.float32)}
    _check(_model(nodes, {"x": [2, 6, 3]}, ["l", "c"], inits), [(2, 6, 3)], REDUCTION_TOL)


def test_elementwise_math_and_variadics_against_onnxruntime() -> None:
    unary = ["Neg", "Exp", "Erf", "Softplus", "Softsign", "Sin", "Cos", "Reciprocal"]
    nodes = [helper.make_node(op, ["x"], [op.lower()]) for op in unary]
    nodes += [
        helper.make_node("Abs", ["x"], ["abs"]),
        helper.make_node("Log", ["abs"], ["log"]),
        helper.make_node("Sqrt", ["abs"], ["sqrt"]),
        helper.make_node("Pow", ["abs", "y"], ["pow"]),
        helper.make_node("Pow", ["x", "two"], ["square"]),  # an int64 exponent (Pow 12)
        helper.make_node("Elu", ["x"], ["elu"], alpha=0.5),
        helper.make_node("Selu", ["x"], ["selu"], alpha=2.0, gamma=3.0),
        helper.make_node("Celu", ["x"], ["celu"], alpha=2.0),
        helper.make_node("PRelu", ["x", "slopes"], ["prelu"]),
        helper.make_node("PRelu", ["x", "slope"], ["leaky"]),
        helper.make_node("Max", ["x", "y", "c"], ["max"]),
        helper.make_node("Min", ["x", "c"], ["min"]),
        helper.make_node("Sum", ["x", "y", "c"], ["sum"]),
        helper.make_node("Mean", ["x", "y"], ["mean"]),
        helper.make_node("Max", ["x"], ["max1"]),
    ]
    inits = {"c": _w(4, 1), "slopes": _w(4, 1), "slope": np.array([0.3], np.float32)}
    inits["two"] = np.array(2, np.int64)
    outputs = [n.output[0] for n in nodes]
    module = _check(_model(nodes, {"x": [2, 4, 5], "y": [5]}, outputs, inits), [(2, 4, 5), (5,)])
    assert "graph.leaky_relu" in _ops(module) and "graph.maximum" in _ops(module)


def test_integer_max_neg_abs_fold_in_a_shape_subgraph() -> None:
    nodes = [
        helper.make_node("Shape", ["x"], ["sh"]),
        helper.make_node("Slice", ["sh", "zero", "one"], ["n"]),
        helper.make_node("Abs", ["m5"], ["five"]),
        helper.make_node("Neg", ["five"], ["m5again"]),
        helper.make_node("Max", ["m5again", "m1"], ["rest"]),
        helper.make_node("Concat", ["n", "rest"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"]),
    ]
    inits = {k: np.array([v], np.int64) for k, v in (("zero", 0), ("one", 1), ("m5", -5))}
    inits["m1"] = np.array([-1], np.int64)
    module = _check(_model(nodes, {"x": ["batch", 3, 4]}, ["y"], inits), [(2, 3, 4)])
    assert _ops(module) == ["graph.reshape"]


def test_celu_with_a_negative_alpha_is_refused_at_the_node() -> None:
    node = helper.make_node("Celu", ["x"], ["y"], name="c", alpha=-1.0)
    message = _refusal(_model([node], {"x": [2, 3]}, ["y"]))
    assert "node 0 'c'" in message and "Celu: alpha=-1.0" in message, message


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize(
    "coordinates",
    ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "half_pixel_symmetric"],
)
def test_resize_every_mode_against_onnxruntime(mode: str, coordinates: str) -> None:
    # Up along H, down along W (sizes), and by scales; the nearest rounding varies.
    nearest = {"half_pixel": "round_prefer_ceil", "asymmetric": "floor"}.get(coordinates, "ceil")
    attrs = {"mode": mode, "coordinate_transformation_mode": coordinates, "nearest_mode": nearest}
    # The sizes as an exporter writes them for a dynamic batch: the input's own
    # batch and channels (Shape, Slice), then the new H and W.
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Slice", ["s", "zero", "two"], ["nc"]),
        helper.make_node("Concat", ["nc", "hw"], ["sz"], axis=0),
        helper.make_node("Resize", ["x", "", "", "sz"], ["y"], **attrs),
    ]
    inits = {"zero": np.array([0]), "two": np.array([2]), "hw": np.array([9, 4])}
    by_sizes = _model(nodes, {"x": ["N", 3, 5, 7]}, ["y"], inits, 19)
    module = _check(by_sizes, [(2, 3, 5, 7)], REDUCTION_TOL)
    assert "graph.matmul" in _ops(module)
    # Scales whose products are whole: onnxruntime and onnx's reference disagree
    # on align_corners when they are not (the reference, which writes the node
    # tests' expected outputs and which the importer follows, divides by the
    # unrounded output length).
    scales = helper.make_node("Resize", ["x", "", "sc"], ["y"], **attrs)
    factors = np.array([1, 1, 1.6, 0.5], np.float32)
    _check(_model([scales], {"x": ["N", 3, 5, 8]}, ["y"], {"sc": factors}, 19), [(2, 3, 5, 8)])


def test_resize_crop_extrapolates_and_upsample_is_resize() -> None:
    crop = helper.make_node(
        "Resize",
        ["x", "roi", "", "sz"],
        ["y"],
        mode="linear",
        coordinate_transformation_mode="tf_crop_and_resize",
        extrapolation_value=-2.5,
    )
    inits = {
        "roi": np.array([0, 0, -0.2, 0.3, 1, 1, 0.8, 1.4], np.float32),
        "sz": np.array([1, 2, 6, 5]),
    }
    # Against onnx's reference (onnxruntime reads this roi otherwise; the node
    # tests' expected outputs are the reference's).
    model = _model([crop], {"x": [1, 2, 4, 5]}, ["y"], inits, 13)
    imported = import_onnx(model)
    x = RNG.standard_normal((1, 2, 4, 5)).astype(np.float32)
    want = ReferenceEvaluator(model).run(None, {"x": x})
    assert_close(reference.run(imported.module, imported.weights, [x]), want, ELEMENTWISE_TOL)
    assert "graph.add" in _ops(imported.module)  # the extrapolated value
    # Upsample 9 is Resize's asymmetric, floor-rounding form; integer nearest
    # factors of H and W stay graph.upsample_nearest2d.
    up = helper.make_node("Upsample", ["x", "sc"], ["y"], mode="linear")
    scales = {"sc": np.array([1, 1, 2, 1.5], np.float32)}
    _check(_model([up], {"x": ["N", 2, 3, 4]}, ["y"], scales, 9), [(2, 2, 3, 4)])
    nearest = helper.make_node(
        "Resize",
        ["x", "", "sc"],
        ["y"],
        nearest_mode="floor",
        coordinate_transformation_mode="asymmetric",
    )
    integer = {"sc": np.array([1, 1, 2, 3], np.float32)}
    module = _check(_model([nearest], {"x": ["N", 2, 3, 4]}, ["y"], integer, 13), [(2, 2, 3, 4)])
    assert _ops(module) == ["graph.upsample_nearest2d"]


@pytest.mark.parametrize(
    "op",
    ["ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2", "ReduceLogSumExp", "ReduceSumSquare"],
)
@pytest.mark.parametrize(("axes", "keepdims"), [([1], 1), ([2, 3], 0), ([0, 1, 2, 3], 0)])
def test_reductions_against_onnxruntime(op: str, axes: list[int], keepdims: int) -> None:
    node = helper.make_node(op, ["x", "axes"], ["y"], keepdims=keepdims)
    inits = {"axes": np.array(axes, np.int64)}
    module = _check(_model([node], {"x": [2, 3, 4, 5]}, ["y"], inits, 18), [(2, 3, 4, 5)])
    if op in ("ReduceMax", "ReduceMin"):
        assert _ops(module) == [f"graph.reduce_{op[6:].lower()}"]


def test_empty_axes_noop_and_ties() -> None:
    for op, elementwise in (("ReduceMax", []), ("ReduceL2", ["graph.abs"])):
        node = helper.make_node(op, ["x"], ["y"], noop_with_empty_axes=1)
        module = _check(_model([node], {"x": ["N", 3]}, ["y"], opset=18), [(2, 3)])
        assert _ops(module) == elementwise
    # Ties: the maximum is the tied value (its gradient is shared; test_vjp_*).
    node = helper.make_node("ReduceMax", ["x"], ["y"], axes=[1], keepdims=0)
    imported = import_onnx(_model([node], {"x": [2, 4]}, ["y"], opset=13))
    x = np.array([[1, 3, 3, -1], [np.nan, 0, 5, 5]], np.float32)
    (got,) = reference.run(imported.module, imported.weights, [x])
    np.testing.assert_array_equal(got, [3, np.nan])


def test_batch_norm_training_mode_against_onnxruntime() -> None:
    node = helper.make_node(
        "BatchNormalization",
        ["x", "s", "b", "m", "v"],
        ["y", "rm", "rv"],
        training_mode=1,
        momentum=0.8,
        epsilon=1e-3,
    )
    inits = {"s": _w(3), "b": _w(3), "m": _w(3), "v": np.abs(_w(3)) + 0.5}
    model = _model([node], {"x": [4, 3, 5, 2]}, ["y", "rm", "rv"], inits, 15)
    module = _check(model, [(4, 3, 5, 2)], REDUCTION_TOL)
    assert "graph.batch_norm" in _ops(module)


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
def test_same_padding_and_1d_windows(auto_pad: str) -> None:
    conv = helper.make_node("Conv", ["x", "w"], ["y"], auto_pad=auto_pad, strides=[2, 1])
    _check(_model([conv], {"x": ["N", 3, 7, 6]}, ["y"], {"w": _w(4, 3, 4, 3)}), [(2, 3, 7, 6)])
    pool = helper.make_node("MaxPool", ["x"], ["y"], auto_pad=auto_pad, kernel_shape=[2, 3])
    _check(_model([pool], {"x": ["N", 3, 7, 6]}, ["y"]), [(2, 3, 7, 6)])
    # 1-D: (N, C, L) seen as (N, C, 1, L).
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 2], dilations=[2]),
        helper.make_node("AveragePool", ["c"], ["p"], kernel_shape=[3], strides=[2]),
        helper.make_node("GlobalMaxPool", ["p"], ["y"]),
    ]
    _check(_model(nodes, {"x": ["N", 3, 11]}, ["y"], {"w": _w(4, 3, 3)}), [(3, 3, 11)])


def test_expand_size_castlike_and_a_dot_product() -> None:
    nodes = [
        helper.make_node("Expand", ["x", "to"], ["e"]),
        helper.make_node("CastLike", ["e", "x"], ["y"]),
    ]
    inits = {"to": np.array([2, 1, 3], np.int64)}
    model = _model(nodes, {"x": [4, 1]}, ["y"], inits)
    module = _check(model, [(4, 1)])
    assert _ops(module) == ["graph.broadcast"]
    dynamic = _model(nodes, {"x": ["N", 4, 1]}, ["y"], {"to": np.array([1, 1, 3])})
    _check(dynamic, [(2, 4, 1)])
    dot = helper.make_node("MatMul", ["a", "b"], ["y"])
    _check(_model([dot], {"a": [5], "b": [5]}, ["y"]), [(5,), (5,)], REDUCTION_TOL)
    scaled = [
        helper.make_node("Size", ["x"], ["n"]),
        helper.make_node("Cast", ["n"], ["f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["x", "f"], ["y"]),
    ]
    module = _check(_model(scaled, {"x": [2, 3]}, ["y"]), [(2, 3)])
    assert _ops(module) == ["graph.constant", "graph.mul"]
    assert "Size: the size of a tensor with the dynamic batch" in _refusal(
        _model(scaled, {"x": ["N", 3]}, ["y"])
    )


def test_a_1d_convolution_compiles_with_its_weight_a_param(tmp_path: Path) -> None:
    # The [O, C, k] initializer is the param of the (N, C, 1, L) convolution, as
    # [O, C, 1, k] under its own name: kernels read weights through params.
    conv = helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 2], strides=[2])
    inits = {"w": _w(4, 3, 3), "b": _w(4)}
    model = _model([conv], {"x": ["N", 3, 11]}, ["y"], inits)
    imported = import_onnx(model)
    assert imported.weights["w"].shape == (4, 3, 1, 3) and set(imported.weights) == {"w", "b"}
    kernels = teeny_ir.parse_module(teeny_ir.print_module(imported.module), filename="m.mlir")
    out = tmp_path / "out"
    teeny_ir.PassManager.parse(
        f"teeny-inference{{profile=interpreter}},emit-triton{{out-dir={out}}}"
    ).run(kernels)
    x = RNG.standard_normal((3, 3, 11)).astype(np.float32)
    assert_close(runtime.load(out).run([x], imported.weights), _ort(model, [x]), REDUCTION_TOL)
