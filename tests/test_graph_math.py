"""The math ops of the graph dialect (tanh, gelu, leaky_relu, sub, div, linear,
matmul, constant): parsing, printing (custom and generic), verification, builders,
shape rules, and the reference interpreter against PyTorch at batch 1 and 3.

Tolerance (docs/architecture.md): outputs finite, same shapes, and
``max|got - ref| <= tol * max(1, max|ref|)``, tol 1e-5 for elementwise ops and
1e-4 for anything with a reduction (linear, matmul).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import DYNAMIC_INDEX, DenseIntOrFPElementsAttr, ModuleOp, TensorType, f32
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

import teeny_ir
from dialects.graph.constant import MAX_CONSTANT_ELEMENTS, ConstantOp
from dialects.graph.elementwise import DivOp, GeluOp, LeakyReluOp, SubOp, TanhOp
from dialects.graph.linear import LinearOp, MatmulOp, infer_linear_shape, infer_matmul_shape
from dialects.graph.param import ParamOp
from teeny_ir import reference
from teeny_ir.core.diagnostics import DiagnosticError
from teeny_ir.testing import ELEMENTWISE_TOL, REDUCTION_TOL, assert_close, assert_round_trips

Q = DYNAMIC_INDEX
BATCHES = (1, 3)


def tensor(*shape: int) -> TensorType:
    return TensorType(f32, shape)


def ttype(shape: Sequence[int]) -> str:
    return str(tensor(*shape))


Make = Callable[[list[SSAValue], dict[str, SSAValue]], Operation]


def forward_module(
    input_shapes: Sequence[Sequence[int]], params: Mapping[str, Sequence[int]], make: Make
) -> ModuleOp:
    """``func.func @forward`` over inputs of ``input_shapes`` and `graph.param`s
    named by ``params``, returning the single result of the op ``make`` builds."""
    block = Block(arg_types=[tensor(*shape) for shape in input_shapes])
    values: dict[str, SSAValue] = {}
    for name, shape in params.items():
        param = ParamOp(name, tensor(*shape))
        block.add_op(param)
        values[name] = param.result
    op = make(list(block.args), values)
    block.add_ops([op, ReturnOp(op.results[0])])
    signature = ([arg.type for arg in block.args], [op.results[0].type])
    module = ModuleOp([FuncOp("forward", signature, Region(block))])
    module.verify()
    return module


def concrete(shape: Sequence[int], batch: int) -> tuple[int, ...]:
    return tuple(batch if d == Q else d for d in shape)


def rand(rng: np.random.Generator, shape: Sequence[int], scale: float = 1.0) -> np.ndarray:
    return (scale * rng.standard_normal(tuple(shape))).astype(np.float32)


def torch_of(array: np.ndarray) -> Any:
    import torch

    return torch.from_numpy(array.copy())


# Round trips of hand-written text.

ROUND_TRIP_BODIES = {
    "tanh": "%y = graph.tanh %x : tensor<?x4xf32>",
    "gelu_exact": "%y = graph.gelu %x : tensor<?x4xf32>",
    "gelu_tanh": '%y = graph.gelu %x approximate tanh {note = "kept"} : tensor<?x4xf32>',
    "gelu_quoted": '%y = graph.gelu %x approximate "tanh" : tensor<?x4xf32>',
    "leaky_relu_default": "%y = graph.leaky_relu %x : tensor<?x4xf32>",
    "leaky_relu_slope": "%y = graph.leaky_relu %x negative_slope -0.125 : tensor<?x4xf32>",
    "leaky_relu_precise": "%y = graph.leaky_relu %x negative_slope 0.123456789 : tensor<?x4xf32>",
    "sub": "%y = graph.sub %x, %x : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>",
    "div_broadcast": (
        '%c = graph.param "c" : tensor<1xf32>\n'
        "%y = graph.div %x, %c : (tensor<?x4xf32>, tensor<1xf32>) -> tensor<?x4xf32>"
    ),
    "linear_bias": (
        '%w = graph.param "w" : tensor<3x4xf32>\n%b = graph.param "b" : tensor<3xf32>\n'
        "%y = graph.linear %x, %w, %b : (tensor<?x4xf32>, tensor<3x4xf32>, tensor<3xf32>)"
        " -> tensor<?x3xf32>"
    ),
    "linear_no_bias": (
        '%w = graph.param "w" : tensor<3x4xf32>\n'
        "%y = graph.linear %x, %w : (tensor<?x4xf32>, tensor<3x4xf32>) -> tensor<?x3xf32>"
    ),
    "matmul": (
        '%w = graph.param "w" : tensor<4x5xf32>\n'
        "%y = graph.matmul %x, %w : (tensor<?x4xf32>, tensor<4x5xf32>) -> tensor<?x5xf32>"
    ),
    "matmul_batched": (
        '%w = graph.param "w" : tensor<3x4x2xf32>\n%a = graph.param "a" : tensor<5x4xf32>\n'
        "%y = graph.matmul %a, %w : (tensor<5x4xf32>, tensor<3x4x2xf32>) -> tensor<3x5x2xf32>"
    ),
    "constant": "%c = graph.constant dense<[[1.5, -2.0], [0.25, 3.0]]> : tensor<2x2xf32>",
    "constant_splat_attrs": "%c = graph.constant {note} dense<0.5> : tensor<3xf32>",
    "constant_scalar": "%c = graph.constant dense<2.0> : tensor<f32>",
}


@pytest.mark.parametrize("body", ROUND_TRIP_BODIES.values(), ids=ROUND_TRIP_BODIES.keys())
def test_valid_ops_round_trip(body: str) -> None:
    text = f"func.func @f(%x: tensor<?x4xf32>) {{\n{body}\nfunc.return\n}}\n"
    assert_round_trips(teeny_ir.parse_module(text))


def test_defaults_are_absent_and_options_read_back() -> None:
    text = (
        "func.func @f(%x: tensor<?x4xf32>) {\n"
        "%a = graph.gelu %x : tensor<?x4xf32>\n"
        "%b = graph.gelu %x approximate tanh : tensor<?x4xf32>\n"
        "%c = graph.leaky_relu %x : tensor<?x4xf32>\n"
        "%d = graph.leaky_relu %x negative_slope 0.2 : tensor<?x4xf32>\n"
        "func.return\n}\n"
    )
    module = teeny_ir.parse_module(text)
    a, b, c, d = (op for op in module.walk() if isinstance(op, GeluOp | LeakyReluOp))
    assert isinstance(a, GeluOp) and isinstance(b, GeluOp)
    assert isinstance(c, LeakyReluOp) and isinstance(d, LeakyReluOp)
    assert (a.approximate, b.approximate) == ("none", "tanh")
    assert "approximate" not in a.properties
    assert (c.negative_slope, d.negative_slope) == (0.01, 0.2)
    assert "negative_slope" not in c.properties


# Builders: inferred result types, defaults left absent.


def test_builders_infer_types_and_round_trip() -> None:
    def make(args: list[SSAValue], params: dict[str, SSAValue]) -> Operation:
        return LinearOp(args[0], params["w"], params["b"])

    module = forward_module([(Q, 3, 7)], {"w": (5, 7), "b": (5,)}, make)
    linear = next(op for op in module.walk() if isinstance(op, LinearOp))
    assert linear.result.type == tensor(Q, 3, 5)
    assert_round_trips(module)

    block = Block(arg_types=[tensor(Q, 1, 8, 6), tensor(4, 6, 5), tensor(Q, 4)])
    lhs, rhs, x = block.args
    matmul = MatmulOp(lhs, rhs)
    assert matmul.result.type == tensor(Q, 4, 8, 5)
    assert LinearOp(x, ParamOp("w", tensor(2, 4))).result.type == tensor(Q, 2)
    assert SubOp(x, ConstantOp.from_values([1.0, 2.0, 3.0, 4.0])).result.type == tensor(Q, 4)
    assert DivOp(lhs, ParamOp("s", tensor(6))).result.type == lhs.type
    assert TanhOp(x).result.type == x.type
    assert "approximate" not in GeluOp(x).properties
    assert "approximate" not in GeluOp(x, approximate="none").properties
    assert GeluOp(x, approximate="tanh").approximate == "tanh"
    assert "negative_slope" not in LeakyReluOp(x).properties
    assert LeakyReluOp(x, negative_slope=0.3).negative_slope == 0.3


def test_builders_raise_on_operands_that_do_not_fit() -> None:
    block = Block(arg_types=[tensor(Q, 4), tensor(Q, 5)])
    x, z = block.args
    with pytest.raises(VerifyException, match="weight dim 1"):
        LinearOp(x, ParamOp("w", tensor(2, 5)))
    with pytest.raises(VerifyException, match="differ"):
        MatmulOp(x, ParamOp("w", tensor(5, 2)))
    with pytest.raises(VerifyException, match="cannot broadcast"):
        SubOp(x, z)


def test_constant_from_values() -> None:
    op = ConstantOp.from_values([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3])
    op.verify()
    assert op.result.type == tensor(2, 3)
    assert op.value.get_values() == (1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
    assert ConstantOp.from_values([0.5], [2, 2]).value.get_values() == (0.5,) * 4
    with pytest.raises(ValueError, match="expected 1 or 6 values for shape \\[2, 3\\], got 4"):
        ConstantOp.from_values([1.0] * 4, [2, 3])


# Shape rules as pure functions.


@pytest.mark.parametrize(
    ("lhs", "rhs", "want"),
    [
        ((Q, 8, 16), (16, 5), (Q, 8, 5)),
        ((Q, 1, 8, 16), (4, 16, 5), (Q, 4, 8, 5)),
        ((Q, 8, 16), (Q, 16, 5), (Q, 8, 5)),
        ((Q, 16), (16, 5), (Q, 5)),
        ((2, 3), (3, 4), (2, 4)),
        ((3, 1, 2, 3), (5, 3, 4), (3, 5, 2, 4)),
    ],
)
def test_infer_matmul_shape(
    lhs: tuple[int, ...], rhs: tuple[int, ...], want: tuple[int, ...]
) -> None:
    assert infer_matmul_shape(lhs, rhs) == want


def test_infer_linear_shape() -> None:
    assert infer_linear_shape((Q, 400), (120, 400)) == (Q, 120)
    assert infer_linear_shape((Q, 2, 3, 7), (5, 7)) == (Q, 2, 3, 5)


# Every verifier and parse error of these ops.

INVALID = {
    "tanh_dtype": (
        "%y = graph.tanh %h : tensor<?x4xf16>",
        "unsupported dtype f16 for input: graph ops take f32 tensors",
    ),
    "tanh_result": (
        '%y = "graph.tanh"(%x) : (tensor<?x4xf32>) -> tensor<?x5xf32>',
        "expected result type tensor<?x4xf32>, got tensor<?x5xf32>",
    ),
    "gelu_keyword": (
        "%y = graph.gelu %x approximate none : tensor<?x4xf32>",
        "expected approximate to be one of tanh",
    ),
    "gelu_generic_value": (
        '%y = "graph.gelu"(%x) <{approximate = "none"}> : (tensor<?x4xf32>) -> tensor<?x4xf32>',
        "expected approximate to be one of tanh (absent: exact), got 'none'",
    ),
    "leaky_relu_not_finite": (
        '%y = "graph.leaky_relu"(%x) <{negative_slope = 0x7FF0000000000000 : f64}>'
        " : (tensor<?x4xf32>) -> tensor<?x4xf32>",
        "expected negative_slope to be finite, got inf",
    ),
    "leaky_relu_twice": (
        "%y = graph.leaky_relu %x negative_slope 0.1 negative_slope 0.2 : tensor<?x4xf32>",
        "'negative_slope' is given more than once",
    ),
    "sub_broadcast": (
        "%y = graph.sub %x, %z : (tensor<?x4xf32>, tensor<?x5xf32>) -> tensor<?x4xf32>",
        "cannot broadcast shapes [?, 4] and [?, 5]: sizes 4 and 5 differ at result dimension 1",
    ),
    "div_result": (
        "%y = graph.div %x, %x : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x5xf32>",
        "expected result type tensor<?x4xf32>, got tensor<?x5xf32>",
    ),
    "linear_input_rank": (
        '%w = graph.param "w" : tensor<3x4xf32>\n'
        "%y = graph.linear %v, %w : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<3xf32>",
        "expected input of rank >= 2 [N, ..., in], got rank 1",
    ),
    "linear_weight_rank": (
        '%w = graph.param "w" : tensor<3x4x1xf32>\n'
        "%y = graph.linear %x, %w : (tensor<?x4xf32>, tensor<3x4x1xf32>) -> tensor<?x3xf32>",
        "expected weight of rank 2 [out, in], got rank 3",
    ),
    "linear_weight_dynamic": (
        "%y = graph.linear %x, %z : (tensor<?x4xf32>, tensor<?x5xf32>) -> tensor<?x3xf32>",
        "expected weight to be fully static, got shape [?, 5]",
    ),
    "linear_features": (
        '%w = graph.param "w" : tensor<3x5xf32>\n'
        "%y = graph.linear %x, %w : (tensor<?x4xf32>, tensor<3x5xf32>) -> tensor<?x3xf32>",
        "expected input features (last dimension) 4 to equal weight dim 1 (in) 5",
    ),
    "linear_bias": (
        '%w = graph.param "w" : tensor<3x4xf32>\n%b = graph.param "b" : tensor<4xf32>\n'
        "%y = graph.linear %x, %w, %b : (tensor<?x4xf32>, tensor<3x4xf32>, tensor<4xf32>)"
        " -> tensor<?x3xf32>",
        "expected bias shape [3], got [4]",
    ),
    "linear_result": (
        '%w = graph.param "w" : tensor<3x4xf32>\n'
        "%y = graph.linear %x, %w : (tensor<?x4xf32>, tensor<3x4xf32>) -> tensor<?x4xf32>",
        "expected result type tensor<?x3xf32>, got tensor<?x4xf32>",
    ),
    "matmul_rank": (
        '%w = graph.param "w" : tensor<4xf32>\n'
        "%y = graph.matmul %x, %w : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?xf32>",
        "expected rhs of rank >= 2 [..., rows, columns], got rank 1",
    ),
    "matmul_inner": (
        '%w = graph.param "w" : tensor<5x2xf32>\n'
        "%y = graph.matmul %x, %w : (tensor<?x4xf32>, tensor<5x2xf32>) -> tensor<?x2xf32>",
        "cannot multiply [?, 4] by [5, 2]: lhs dimension -1 (4) and rhs dimension -2 (5) differ",
    ),
    "matmul_dynamic_inner": (
        '%w = graph.param "w" : tensor<5x4xf32>\n'
        "%y = graph.matmul %w, %x : (tensor<5x4xf32>, tensor<?x4xf32>) -> tensor<5x4xf32>",
        "cannot multiply [5, 4] by [?, 4]: lhs dimension -1 (4) and rhs dimension -2 (?) differ",
    ),
    "matmul_batch": (
        '%a = graph.param "a" : tensor<3x2x4xf32>\n%b = graph.param "b" : tensor<5x4x2xf32>\n'
        "%y = graph.matmul %a, %b : (tensor<3x2x4xf32>, tensor<5x4x2xf32>) -> tensor<3x2x2xf32>",
        "matmul batch dimensions: cannot broadcast shapes [3] and [5]",
    ),
    "matmul_dynamic_lands_inside": (
        '%w = graph.param "w" : tensor<3x4x2xf32>\n'
        "%y = graph.matmul %x, %w : (tensor<?x4xf32>, tensor<3x4x2xf32>) -> tensor<3x?x2xf32>",
        "cannot multiply [?, 4] by [3, 4, 2]: the dynamic batch dimension would land at "
        "result dimension 1",
    ),
    "matmul_result": (
        '%w = graph.param "w" : tensor<4x2xf32>\n'
        "%y = graph.matmul %x, %w : (tensor<?x4xf32>, tensor<4x2xf32>) -> tensor<?x3xf32>",
        "expected result type tensor<?x2xf32>, got tensor<?x3xf32>",
    ),
    "constant_dtype": (
        "%c = graph.constant dense<[1, 2]> : tensor<2xi32>",
        "unsupported dtype i32 for constant: graph ops take f32 tensors",
    ),
    "constant_empty": (
        "%c = graph.constant dense<> : tensor<0xf32>",
        "constant has dimension 0 of size 0: sizes must be >= 1",
    ),
    "constant_too_large": (
        f"%c = graph.constant dense<0.0> : tensor<{MAX_CONSTANT_ELEMENTS + 1}xf32>",
        f"constant has {MAX_CONSTANT_ELEMENTS + 1} elements, more than the "
        f"{MAX_CONSTANT_ELEMENTS} allowed: pass a large tensor as a weight (graph.param)",
    ),
    "constant_result": (
        '%c = "graph.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>',
        "expected result type tensor<2xf32>, got tensor<3xf32>",
    ),
    "constant_not_dense": (
        "%c = graph.constant 1.0 : f32",
        "expected a dense<...> literal of tensor type",
    ),
    "constant_vector": (
        "%c = graph.constant dense<1.0> : vector<2xf32>",
        "expected the literal's type to be a tensor type, got vector<2xf32>",
    ),
}


@pytest.mark.parametrize(("body", "message"), INVALID.values(), ids=INVALID.keys())
def test_invalid_ops_are_located_errors(body: str, message: str) -> None:
    text = (
        "func.func @f(%x: tensor<?x4xf32>, %z: tensor<?x5xf32>, %h: tensor<?x4xf16>, "
        f"%v: tensor<4xf32>) {{\n{body}\nfunc.return\n}}\n"
    )
    with pytest.raises(DiagnosticError) as error:
        teeny_ir.parse_module(text)
    assert message in str(error.value)
    assert str(error.value).startswith("<string>:")


# The reference interpreter against PyTorch.


def check_against_torch(
    module: ModuleOp,
    input_shapes: Sequence[Sequence[int]],
    params: Mapping[str, Sequence[int]],
    torch_fn: Callable[..., Any],
    tol: float,
    *,
    seed: int,
    batch: int,
    scale: float = 1.0,
) -> None:
    """Run ``module`` in the reference and ``torch_fn(*inputs, **weights)`` in
    PyTorch on the same random data; compare with the tolerance rule of docs/architecture.md."""
    rng = np.random.default_rng(seed)
    inputs = [rand(rng, concrete(shape, batch), scale) for shape in input_shapes]
    weights = {name: rand(rng, shape) for name, shape in params.items()}
    got = reference.run(module, weights, inputs)
    import torch

    with torch.no_grad():
        want = torch_fn(
            *(torch_of(x) for x in inputs), **{k: torch_of(v) for k, v in weights.items()}
        )
    assert_close(got, [want.numpy()], tol, dtype=np.float32)


UNARY_CASES = {
    # op builder, torch function, input shape
    "tanh_4d": (TanhOp, "tanh", (Q, 3, 5, 7)),
    "tanh_2d": (TanhOp, "tanh", (Q, 33)),
    "tanh_3d": (TanhOp, "tanh", (Q, 1, 9)),
    "gelu_exact": (GeluOp, "gelu", (Q, 17)),
    "gelu_tanh": (lambda x: GeluOp(x, approximate="tanh"), "gelu_tanh", (Q, 2, 9)),
    "gelu_exact_4d": (GeluOp, "gelu", (Q, 3, 4, 5)),
    "leaky_relu_default": (LeakyReluOp, "leaky_relu", (Q, 6, 5)),
    "leaky_relu_0.2": (lambda x: LeakyReluOp(x, 0.2), "leaky_relu_0.2", (Q, 4, 3, 3)),
    "leaky_relu_negative_slope": (lambda x: LeakyReluOp(x, -1.5), "leaky_relu_-1.5", (Q, 11)),
}


def torch_unary(name: str) -> Callable[[Any], Any]:
    import torch
    import torch.nn.functional as F

    functions: dict[str, Callable[[Any], Any]] = {
        "tanh": torch.tanh,
        "gelu": F.gelu,
        "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
        "leaky_relu": F.leaky_relu,
        "leaky_relu_0.2": lambda x: F.leaky_relu(x, 0.2),
        "leaky_relu_-1.5": lambda x: F.leaky_relu(x, -1.5),
    }
    return functions[name]


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("case", UNARY_CASES.values(), ids=UNARY_CASES.keys())
def test_activations_match_torch(case: tuple[Any, str, tuple[int, ...]], batch: int) -> None:
    build, torch_name, shape = case
    module = forward_module([shape], {}, lambda args, params: build(args[0]))
    assert_round_trips(module)
    check_against_torch(
        module,
        [shape],
        {},
        torch_unary(torch_name),
        ELEMENTWISE_TOL,
        seed=1,
        batch=batch,
        scale=3.0,
    )


BINARY_CASES = {
    # lhs shape, rhs shape (a param when static)
    "same_shape": ((Q, 3, 4, 5), (Q, 3, 4, 5)),
    "per_channel_param": ((Q, 16, 3, 3), (16, 1, 1)),
    "batch_vector_rhs": ((Q, 5), (Q, 1)),
    "lhs_broadcasts": ((1, 7), (Q, 3, 7)),
}


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("case", BINARY_CASES.values(), ids=BINARY_CASES.keys())
@pytest.mark.parametrize("op", ["sub", "div"])
def test_sub_and_div_broadcast_like_torch(
    op: str, case: tuple[tuple[int, ...], tuple[int, ...]], batch: int
) -> None:
    import torch

    lhs_shape, rhs_shape = case
    # Dynamic operands are inputs; a static one is a weight.
    inputs = [s for s in (lhs_shape, rhs_shape) if Q in s]
    params = {name: s for name, s in (("lhs", lhs_shape), ("rhs", rhs_shape)) if Q not in s}
    op_type = SubOp if op == "sub" else DivOp

    def make(args: list[SSAValue], values: dict[str, SSAValue]) -> Operation:
        operands = iter(args)
        lhs = values["lhs"] if "lhs" in params else next(operands)
        rhs = values["rhs"] if "rhs" in params else next(operands)
        return op_type(lhs, rhs)

    module = forward_module(inputs, params, make)
    assert_round_trips(module)
    rng = np.random.default_rng(7)
    arrays = {}
    for name, shape in (("lhs", lhs_shape), ("rhs", rhs_shape)):
        value = rand(rng, concrete(shape, batch))
        if name == "rhs" and op == "div":  # keep the divisor away from 0
            value = np.where(value < 0, value - 0.5, value + 0.5).astype(np.float32)
        arrays[name] = value
    got = reference.run(
        module,
        {name: arrays[name] for name in params},
        [arrays[name] for name, s in (("lhs", lhs_shape), ("rhs", rhs_shape)) if Q in s],
    )
    function = torch.sub if op == "sub" else torch.div
    want = function(torch_of(arrays["lhs"]), torch_of(arrays["rhs"]))
    assert_close(got, [want.numpy()], ELEMENTWISE_TOL, dtype=np.float32)


def test_div_by_zero_is_ieee() -> None:
    module = forward_module([(Q, 3), (Q, 3)], {}, lambda args, params: DivOp(args[0], args[1]))
    lhs = np.array([[1.0, -1.0, 0.0]], np.float32)
    (got,) = reference.run(module, {}, [lhs, np.zeros_like(lhs)])
    assert got[0, 0] == np.inf and got[0, 1] == -np.inf and np.isnan(got[0, 2])


LINEAR_CASES = {
    # input shape, out features, bias
    "lenet_fc1": ((Q, 400), 120, True),
    "no_bias_odd": ((Q, 37), 11, False),
    "rank4_bias": ((Q, 2, 3, 9), 5, True),
}


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("case", LINEAR_CASES.values(), ids=LINEAR_CASES.keys())
def test_linear_matches_torch(case: tuple[tuple[int, ...], int, bool], batch: int) -> None:
    import torch.nn.functional as F

    shape, out_features, bias = case
    params: dict[str, tuple[int, ...]] = {"fc.weight": (out_features, shape[-1])}
    if bias:
        params["fc.bias"] = (out_features,)

    def make(args: list[SSAValue], values: dict[str, SSAValue]) -> Operation:
        return LinearOp(args[0], values["fc.weight"], values.get("fc.bias"))

    module = forward_module([shape], params, make)
    assert_round_trips(module)

    def torch_fn(x: Any, **weights: Any) -> Any:
        return F.linear(x, weights["fc.weight"], weights.get("fc.bias"))

    check_against_torch(module, [shape], params, torch_fn, REDUCTION_TOL, seed=3, batch=batch)


MATMUL_CASES = {
    # lhs shape, rhs shape (a param when static)
    "batched_by_matrix": ((Q, 8, 16), (16, 5)),
    "broadcast_batch": ((Q, 1, 8, 6), (4, 6, 5)),
    "both_dynamic": ((Q, 7, 3), (Q, 3, 9)),
    "rank2_dynamic_rows": ((Q, 13), (13, 4)),
}


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("case", MATMUL_CASES.values(), ids=MATMUL_CASES.keys())
def test_matmul_matches_torch(case: tuple[tuple[int, ...], tuple[int, ...]], batch: int) -> None:
    import torch

    lhs_shape, rhs_shape = case
    dynamic_rhs = Q in rhs_shape
    inputs = [lhs_shape, rhs_shape] if dynamic_rhs else [lhs_shape]
    params = {} if dynamic_rhs else {"rhs": rhs_shape}

    def make(args: list[SSAValue], values: dict[str, SSAValue]) -> Operation:
        return MatmulOp(args[0], args[1] if dynamic_rhs else values["rhs"])

    module = forward_module(inputs, params, make)
    assert_round_trips(module)

    def torch_fn(lhs: Any, rhs: Any = None, **weights: Any) -> Any:
        return torch.matmul(lhs, weights["rhs"] if rhs is None else rhs)

    check_against_torch(module, inputs, params, torch_fn, REDUCTION_TOL, seed=5, batch=batch)


CONSTANT_CASES = {
    # constant literal, its shape, the input shape it is subtracted from
    "vector": ("dense<[1.5, -2.0, 0.25]>", (3,), (Q, 3)),
    "splat": ("dense<0.75>", (2, 3), (Q, 2, 3)),
    "matrix": ("dense<[[1.0], [2.0], [-3.5], [4.0]]>", (4, 1), (Q, 4, 5)),
}


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("case", CONSTANT_CASES.values(), ids=CONSTANT_CASES.keys())
def test_constant_matches_torch(
    case: tuple[str, tuple[int, ...], tuple[int, ...]], batch: int
) -> None:
    import torch

    literal, shape, input_shape = case
    text = (
        f"func.func @forward(%x: {ttype(input_shape)}) -> {ttype(input_shape)} {{\n"
        f"  %c = graph.constant {literal} : {ttype(shape)}\n"
        f"  %y = graph.sub %x, %c : ({ttype(input_shape)}, {ttype(shape)}) -> {ttype(input_shape)}\n"
        f"  func.return %y : {ttype(input_shape)}\n}}\n"
    )
    module = teeny_ir.parse_module(text)
    assert_round_trips(module)
    constant = next(op for op in module.walk() if isinstance(op, ConstantOp))
    assert isinstance(constant.value, DenseIntOrFPElementsAttr)
    values = torch.tensor(constant.value.get_values(), dtype=torch.float64).reshape(shape)
    check_against_torch(
        module,
        [input_shape],
        {},
        lambda x: x.double() - values,
        ELEMENTWISE_TOL,
        seed=9,
        batch=batch,
    )
