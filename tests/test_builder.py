"""`teeny_ir.GraphBuilder`: scopes and parameter names, inferred types, errors
raised as the ops are added, the built module, and the example scripts that use it."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, TensorType, f32, i64
from xdsl.dialects.func import FuncOp

import teeny_ir
from dialects.graph import Graph
from dialects.graph.conv import Conv2dOp, FusedConv2dOp
from dialects.graph.norm import BatchNormOp
from dialects.graph.param import ParamOp
from dialects.graph.pool import MaxPool2dOp
from teeny_ir import DiagnosticError, GraphBuilder
from teeny_ir.core import pointwise
from teeny_ir.frontend.graph_builder import Value

REPO = Path(__file__).resolve().parent.parent
Q = DYNAMIC_INDEX
BN_STATS = ("weight", "bias", "running_mean", "running_var")


def shape_of(value: Value) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return value.type.get_shape()


def forward(module: ModuleOp) -> FuncOp:
    (func,) = module.ops
    assert isinstance(func, FuncOp) and func.sym_name.data == "forward"
    return func


def param_names(module: ModuleOp) -> list[str]:
    return [op.param_name.data for op in module.walk() if isinstance(op, ParamOp)]


def assert_round_trips(module: ModuleOp) -> None:
    for generic in (False, True):
        text = teeny_ir.print_module(module, generic=generic)
        assert teeny_ir.parse_module(text).is_structurally_equivalent(module), text


def conv_bn_silu(b: GraphBuilder, x: Value, c_in: int, c_out: int) -> Value:
    y = b.conv2d(x, b.param("conv.weight", [c_out, c_in, 3, 3]), padding=[1, 1, 1, 1])
    stats = [b.param(f"bn.{name}", [c_out]) for name in BN_STATS]
    return b.silu(b.batch_norm(y, *stats, eps=1e-3, momentum=0.03))


def test_is_a_lazy_export() -> None:
    assert teeny_ir.GraphBuilder is GraphBuilder
    assert "GraphBuilder" in teeny_ir.__all__


def test_scopes_make_dotted_parameter_names() -> None:
    b = GraphBuilder()
    x = b.input([None, 3, 8, 8])
    with b.scope("model.0"):
        y = conv_bn_silu(b, x, 3, 4)
        with b.scope("m"), b.scope("1"):
            y = b.add(y, b.param("scale", [4, 1, 1]))
    y = b.mul(y, b.param("top", [1]))
    with b.scope("model.1"):
        b.output(b.bias_add(y, b.param("bias", [4])))
    assert param_names(b.build()) == [
        "model.0.conv.weight",
        *(f"model.0.bn.{name}" for name in BN_STATS),
        "model.0.m.1.scale",
        "top",
        "model.1.bias",
    ]


def test_parameter_values_are_named_after_the_parameter() -> None:
    b = GraphBuilder()
    x = b.input([None, 4], name="x")
    with b.scope("fc"):
        b.output(b.linear(x, b.param("weight", [2, 4])))
    text = teeny_ir.print_module(b.build())
    assert '%fc.weight = graph.param "fc.weight"' in text
    assert "graph.linear %x, %fc.weight" in text


def test_a_repeated_parameter_name_reuses_the_value() -> None:
    b = GraphBuilder()
    x = b.input([None, 4])
    with b.scope("shared"):
        first = b.param("weight", [4, 4])
    with b.scope("shared"):
        second = b.param("weight", (4, 4))
    assert first is second
    b.output(b.linear(b.linear(x, first), second))
    assert param_names(b.build()) == ["shared.weight"]


def test_a_repeated_parameter_name_with_another_shape_is_an_error() -> None:
    b = GraphBuilder()
    with b.scope("fc"):
        b.param("weight", [4, 4])
        with pytest.raises(
            DiagnosticError, match=r"parameter 'fc.weight' is already declared"
        ) as info:
            b.param("weight", [4, 5])
    assert "with shape [4, 4], not [4, 5] (in scope 'fc')" in str(info.value)


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ([Q, 3], "expected parameter 'w' to be fully static"),
        ([-1, 3], "parameter 'w' has dimension 0 of size -1"),
        ([3, 0], "parameter 'w' has dimension 1 of size 0"),
    ],
)
def test_parameter_shapes_are_checked(shape: list[int], message: str) -> None:
    b = GraphBuilder()
    with pytest.raises(DiagnosticError, match=message):
        b.param("w", shape)


@pytest.mark.parametrize("name", ["", ".a", "a."])
def test_bad_scope_names_are_refused(name: str) -> None:
    with pytest.raises(DiagnosticError, match="invalid scope name"):
        GraphBuilder().scope(name)


def test_inputs_take_a_dynamic_batch_and_a_dtype() -> None:
    b = GraphBuilder()
    x = b.input([None, 3, 8, 8], name="images")
    y = b.input([-1, 10])
    targets = b.input([None], dtype="i64")
    assert x.type == TensorType(f32, [Q, 3, 8, 8])
    assert y.type == TensorType(f32, [Q, 10])
    assert targets.type == TensorType(i64, [Q])
    b.output(b.cross_entropy(y, targets), b.global_avg_pool2d(x))
    func = forward(b.build())
    assert list(func.function_type.inputs) == [x.type, y.type, targets.type]
    assert [str(t) for t in func.function_type.outputs] == [
        "tensor<f32>",
        "tensor<?x3x1x1xf32>",
    ]


@pytest.mark.parametrize(
    ("shape", "dtype", "message"),
    [
        ([3, None], "f32", "input 0 has a dynamic dimension 1"),
        ([3, 0], "f32", "input 0 has dimension 1 of size 0"),
        ([3], "f16", "unsupported dtype 'f16' for an input"),
        ([3], "f32", "invalid input name '0x'"),
    ],
)
def test_bad_inputs_are_refused(shape: list[int | None], dtype: str, message: str) -> None:
    with pytest.raises(DiagnosticError, match=message):
        GraphBuilder().input(shape, dtype, name="0x" if "name" in message else None)


def test_result_types_are_inferred() -> None:
    b = GraphBuilder()
    x = b.input([None, 8, 16, 16])
    y = b.conv2d(x, b.param("w", [16, 8, 3, 3]), strides=[2, 2], padding=[1, 1, 1, 1])
    assert shape_of(y) == (Q, 16, 8, 8)
    halves = b.split(y, [4, 12], 1)
    assert [shape_of(h) for h in halves] == [(Q, 4, 8, 8), (Q, 12, 8, 8)]
    assert shape_of(b.concat([*halves, y], 1)) == (Q, 32, 8, 8)
    assert shape_of(b.max_pool2d(y, [3, 3], strides=[2, 2], padding=[1, 1, 1, 1])) == (
        Q,
        16,
        4,
        4,
    )
    assert shape_of(b.avg_pool2d(y, [2, 2])) == (Q, 16, 4, 4)
    assert shape_of(b.upsample_nearest2d(y, [2, 3])) == (Q, 16, 16, 24)
    flat = b.flatten(y)
    assert shape_of(flat) == (Q, 1024)
    assert shape_of(b.reshape(y, [0, 16, 64])) == (Q, 16, 64)
    assert shape_of(b.transpose(y, [0, 2, 3, 1])) == (Q, 8, 8, 16)
    assert shape_of(b.linear(flat, b.param("fc", [10, 1024]))) == (Q, 10)
    assert shape_of(b.matmul(flat, b.param("m", [1024, 7]))) == (Q, 7)
    assert shape_of(b.reduce_sum(y, [2, 3])) == (Q, 16)
    assert shape_of(b.reduce_mean(y, [1], keepdims=True)) == (Q, 1, 8, 8)
    assert shape_of(b.add(y, b.constant([1.0], [16, 1, 1]))) == (Q, 16, 8, 8)


def test_defaults_are_left_unset() -> None:
    b = GraphBuilder()
    x = b.input([None, 3, 8, 8])
    w = b.param("w", [3, 3, 1, 1])
    conv = b.conv2d(x, w, strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1)
    pool = b.max_pool2d(conv, [2, 2], strides=[2, 2], padding=[0, 0, 0, 0], dilation=[1, 1])
    stats = [b.param(name, [3]) for name in BN_STATS]
    norm = b.batch_norm(pool, *stats, eps=1e-5, momentum=0.1)
    b.output(b.avg_pool2d(norm, [2, 2], strides=[2, 2]))
    module = b.build()
    for op in module.walk():
        if isinstance(op, Conv2dOp | MaxPool2dOp | BatchNormOp):
            assert set(op.properties) <= {"kernel"}, op
    assert_round_trips(module)


def test_training_batch_norm_returns_the_updated_statistics() -> None:
    b = GraphBuilder()
    x = b.input([None, 4, 2, 2])
    stats = [b.param(name, [4]) for name in BN_STATS]
    y, mean, var = b.batch_norm(x, *stats, momentum=0.03, training=True)
    assert (shape_of(y), shape_of(mean), shape_of(var)) == ((Q, 4, 2, 2), (4,), (4,))
    b.output(y, mean, var)
    assert_round_trips(b.build())


def made_by_training_passes(name: str) -> bool:
    """The backward ops insert-backward makes and the updates apply-optimizer makes
    (each tested in its own files; a model never writes them)."""
    return name.endswith(
        ("_backward", "_backward_data", "_backward_weight", "_grad", "_update")
    ) or (name == "graph.broadcast")


def test_every_graph_op_has_a_builder_method() -> None:
    """A named method, or (a pointwise op, whose method is optional) the generic `op`."""
    made_elsewhere = {ParamOp: "param", FusedConv2dOp: "made by fuse-conv-bn-act"}
    for op_class in Graph.operations:
        if op_class in made_elsewhere or pointwise.lookup(op_class.name) is not None:
            continue
        if made_by_training_passes(op_class.name):
            continue
        method = op_class.name.removeprefix("graph.")
        assert callable(getattr(GraphBuilder, method, None)), op_class.name


def test_generic_op_builds_any_pointwise_op() -> None:
    for op_class in Graph.operations:
        entry = pointwise.lookup(op_class.name)
        if entry is None:
            continue
        b = GraphBuilder()
        x = b.input([None, 4, 3, 3])
        operands = [x] if entry.arity == 1 else [x, b.param("y", [4, 1, 1])]
        b.output(b.op(op_class, *operands))
        assert_round_trips(b.build())


def test_a_module_of_every_op_verifies_and_round_trips() -> None:
    b = GraphBuilder()
    x = b.input([None, 4, 6, 6], name="x")
    targets = b.input([None], dtype="i64", name="targets")
    with b.scope("block"):
        y = conv_bn_silu(b, x, 4, 4)
        y = b.conv2d(y, b.param("dw.weight", [4, 1, 3, 3]), b.param("dw.bias", [4]), groups=4)
        y = b.add(b.mul(y, y), b.bias_add(y, b.param("shift", [4])))
    y = b.relu(b.sigmoid(b.tanh(b.gelu(b.hardtanh(b.leaky_relu(y, 0.2), -0.5, 2.0), "tanh"))))
    y = b.div(b.sub(y, b.constant([0.5])), b.constant([2.0], [4, 1, 1]))
    y = b.fused_pointwise([y, b.constant([3.0])], "mul %0 %1; tanh $0")
    y = b.add(y, b.fused_pointwise([y], "abs %0", "mean", [2, 3], keepdims=True))
    y = b.pow(b.maximum(b.minimum(b.elu(b.celu(y, 2.0), 0.5), y), y), b.constant([2.0]))
    y = b.upsample_nearest2d(b.avg_pool2d(y, [2, 2], count_include_pad=False), [2, 2])
    y = b.max_pool2d(y, [3, 3], strides=[1, 1], padding=[1, 1, 1, 1], ceil_mode=True)
    pieces = b.split(y, [1, 3], 1)
    y = b.concat(pieces[::-1], 1)
    y = b.slice(b.pad(y, [0, 0, 1, 0, 0, 0, 0, 1], "reflect"), [6, 1], [0, 7], [2, 3], [-1, 1])
    pooled = b.reshape(b.global_avg_pool2d(y), [0, 4])
    heads = b.reshape(pooled, [0, 2, 2])
    attended, _ = b.attention(heads, heads, heads, 0.5, [0, 1, 0, 1])
    pooled = b.reshape(attended, [0, 4])
    logits = b.matmul(pooled, b.transpose(b.param("proj", [5, 4]), [1, 0]))
    logits = b.linear(b.flatten(b.reshape(logits, [0, 5, 1])), b.param("fc.weight", [3, 5]))
    loss = b.mul(b.cross_entropy(logits, targets), b.all_reduce(b.constant([1.0], []), "mean", 1))
    total = b.reduce_sum(b.log_softmax(logits, -1), [1])
    wide = b.broadcast(b.reshape(total, [0, 1]), [-1, 2])
    total = b.sub(b.reduce_max(wide, [1]), b.reduce_min(logits, [1]))
    for op_class in Graph.operations:  # pointwise ops without a named method
        entry = pointwise.lookup(op_class.name)
        if entry is not None and entry.arity == 1 and not entry.options:
            total = b.op(op_class, total)
    b.output(b.softmax(logits, 1), loss, b.reduce_mean(total, [0]))
    module = b.build()
    used = {op.name for op in module.walk()}
    forward_ops = {op.name for op in Graph.operations if not made_by_training_passes(op.name)}
    assert used >= forward_ops - {"graph.fused_conv2d"}
    assert_round_trips(module)


def test_a_shape_error_names_the_op_and_scope_at_the_calling_line() -> None:
    b = GraphBuilder()
    x = b.input([None, 3, 8, 8])
    with b.scope("model.3"), b.scope("cv1"):
        w = b.param("conv.weight", [16, 4, 3, 3])
        with pytest.raises(DiagnosticError) as info:
            b.conv2d(x, w)  # the reported line
    (diagnostic,) = info.value.diagnostics
    assert diagnostic.message == (
        "'graph.conv2d' op expected weight dim 1 to be C_in / groups = 3, got 4 "
        "(in scope 'model.3.cv1')"
    )
    assert diagnostic.location is not None
    assert diagnostic.location.filename == __file__
    lines = Path(__file__).read_text().splitlines()
    assert lines[diagnostic.location.line - 1].strip() == "b.conv2d(x, w)  # the reported line"


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda b, x: b.batch_norm(x, *[b.param(n, [4]) for n in BN_STATS]),
            "'graph.batch_norm' op expected gamma shape [3], got [4] (at the top level)",
        ),
        (
            lambda b, x: b.bias_add(x, b.param("bias", [4])),
            "'graph.bias_add' op expected bias shape [3], got [4]",
        ),
        (
            lambda b, x: b.conv2d(x, b.param("w", [2, 3, 1, 1]), b.param("b", [3])),
            "'graph.conv2d' op expected bias shape [2], got [3]",
        ),
        (
            lambda b, x: b.concat([x, b.max_pool2d(x, [2, 2])], 1),
            "'graph.concat' op ",
        ),
        (
            lambda b, x: b.max_pool2d(x, [9, 9]),
            "'graph.max_pool2d' op ",
        ),
        (
            lambda b, x: b.add(x, b.param("p", [2, 1, 1])),
            "'graph.add' op cannot broadcast shapes",
        ),
        (
            lambda b, x: b.constant([1.0, 2.0], [3]),
            "'graph.constant' op expected 1 or 3 values for shape [3], got 2",
        ),
        (
            lambda b, x: b.fused_pointwise([x], "exp %0; add $0 %1"),
            "'graph.fused_pointwise' op the program reads 2 input(s), expected 1",
        ),
        (
            lambda b, x: b.fused_pointwise([x, b.param("p", [2, 1, 1])], "add %0 %1"),
            "'graph.fused_pointwise' op step 0 (add): cannot broadcast shapes",
        ),
        (
            lambda b, x: b.fused_pointwise([x], "exp %0", "sum", [4]),
            "'graph.fused_pointwise' op axis 4 is out of range [-4, 4) for rank 4",
        ),
    ],
)
def test_errors_are_raised_as_the_op_is_added(build: object, message: str) -> None:
    b = GraphBuilder()
    x = b.input([None, 3, 8, 8])
    with pytest.raises(DiagnosticError) as info:
        build(b, x)  # type: ignore[operator]
    assert message in str(info.value)


def test_build_sets_the_signature_and_verifies() -> None:
    b = GraphBuilder()
    a = b.input([None, 4])
    c = b.input([2, 4])
    b.output(b.relu(c), a)
    func = forward(b.build())
    assert [str(t) for t in func.function_type.inputs] == ["tensor<?x4xf32>", "tensor<2x4xf32>"]
    assert [str(t) for t in func.function_type.outputs] == ["tensor<2x4xf32>", "tensor<?x4xf32>"]


def test_build_lists_every_verifier_error() -> None:
    b = GraphBuilder()
    targets = b.input([None, 4], dtype="i64")
    b.output(b.relu(targets), b.silu(targets))
    with pytest.raises(DiagnosticError) as info:
        b.build()
    messages = [d.message for d in info.value.diagnostics]
    assert len(messages) == 2
    assert all("unsupported dtype i64 for input" in m for m in messages), messages
    assert messages[0].startswith("'graph.relu' op") and messages[1].startswith("'graph.silu' op")


def test_a_value_of_another_builder_fails_verification() -> None:
    other = GraphBuilder()
    foreign = other.input([None, 4])
    b = GraphBuilder()
    b.input([None, 4])
    b.output(b.relu(foreign))
    with pytest.raises(DiagnosticError, match="using value defined out of its IsolatedFromAbove"):
        b.build()


def test_outputs_are_required_and_set_once() -> None:
    b = GraphBuilder()
    x = b.input([None, 4])
    with pytest.raises(DiagnosticError, match=r"no outputs: call output\(...\) before build\(\)"):
        b.build()
    with pytest.raises(DiagnosticError, match="expected at least one output value"):
        b.output()
    b.output(x)
    with pytest.raises(DiagnosticError, match="the outputs are already set"):
        b.output(x)


def test_a_built_builder_refuses_changes() -> None:
    b = GraphBuilder()
    x = b.input([None, 4])
    b.output(x)
    b.build()
    for change in (
        lambda: b.relu(x),
        lambda: b.param("w", [1]),
        lambda: b.input([1]),
        lambda: b.scope("s"),
        b.build,
    ):
        with pytest.raises(DiagnosticError, match="already built its module"):
            change()


def _script(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_example_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["yolov8n", "lenet"])
def test_example_scripts_reproduce_the_committed_files(name: str) -> None:
    folder = REPO / "examples" / name
    text, weights = _script(folder / f"make_{name}.py").make_files()
    assert text == (folder / f"{name}.mlir").read_text()
    assert weights == (folder / f"{name}.safetensors").read_bytes()
    assert_round_trips(teeny_ir.parse_module(text))
