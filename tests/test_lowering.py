"""lower-graph-to-kernel: its pure decisions, the IR it produces, its refusals,
and the numerics of the lowered program - simulated in numpy with each
family's index arithmetic - against the graph reference interpreter."""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import SSAValue

from dialects.kernel import LaunchOp, WeightOp
from passes.lower_graph_to_kernel import LowerGraphToKernelPass
from teeny_ir import DiagnosticError, PassManager, parse_module, print_module, reference
from teeny_ir.core import pointwise
from teeny_ir.core.derivations import evaluate
from teeny_ir.core.diagnostics import loc_of
from teeny_ir.core.expressions import eval_text
from teeny_ir.kernels.conv1x1_gemm.tiles import launch_config as gemm_launch_config
from teeny_ir.kernels.elementwise.lowering import broadcast_strides
from teeny_ir.kernels.lowering import LOWERINGS, LoweringContext
from teeny_ir.kernels.lowering import lower as lower_op
from teeny_ir.kernels.pool2d.tiles import window_tiles
from teeny_ir.kernels.tiles import TileProfile

Q = DYNAMIC_INDEX
Array = np.ndarray

SLICE = """\
func.func @forward(%x: tensor<?x37x7x9xf32>) -> tensor<?x37x7x9xf32> {
  %w = graph.param "model.0.conv.weight" : tensor<37x37x1x1xf32>
  %g = graph.param "model.0.bn.weight" : tensor<37xf32>
  %b = graph.param "model.0.bn.bias" : tensor<37xf32>
  %m = graph.param "model.0.bn.running_mean" : tensor<37xf32>
  %v = graph.param "model.0.bn.running_var" : tensor<37xf32>
  %c = graph.conv2d %x, %w : (tensor<?x37x7x9xf32>, tensor<37x37x1x1xf32>) -> tensor<?x37x7x9xf32>
  %n = graph.batch_norm %c, %g, %b, %m, %v eps 1.0e-3 : (tensor<?x37x7x9xf32>, tensor<37xf32>, tensor<37xf32>, tensor<37xf32>, tensor<37xf32>) -> tensor<?x37x7x9xf32>
  %y = graph.silu %n : tensor<?x37x7x9xf32>
  %a = graph.add %y, %x : (tensor<?x37x7x9xf32>, tensor<?x37x7x9xf32>) -> tensor<?x37x7x9xf32>
  %s = graph.silu %a : tensor<?x37x7x9xf32>
  func.return %s : tensor<?x37x7x9xf32>
}
"""
GRAPH_PASSES = "split-bias,fuse-conv-bn-act,select-conv-algorithm"


def lower(text: str, passes: str = GRAPH_PASSES) -> tuple[ModuleOp, ModuleOp]:
    """(the graph module after ``passes``, the same after lower-graph-to-kernel)."""
    graph = parse_module(text, "input.mlir")
    if passes:
        PassManager.parse(passes).run(graph)
    lowered = graph.clone()
    PassManager.parse("lower-graph-to-kernel").run(lowered)
    return graph, lowered


def forward(module: ModuleOp) -> FuncOp:
    return next(op for op in module.walk() if isinstance(op, FuncOp))


# The pure decisions


@pytest.mark.parametrize(
    ("tile", "config"),
    [((64, 64), (4, 2)), ((128, 64), (4, 2)), ((64, 256), (8, 2)), ((128, 128), (8, 2))],
)
def test_gemm_launch_config(tile: tuple[int, int], config: tuple[int, int]) -> None:
    assert gemm_launch_config(*tile) == config


@pytest.mark.parametrize(
    ("operand", "output", "strides"),
    [
        # Rank 6: the two leading (padded) strides are the operand's element count.
        ((Q, 4, 3, 3), (Q, 4, 3, 3), ["B * 36", "B * 36", "36", "9", "3", "1"]),
        ((4, 1, 1), (Q, 4, 3, 3), ["4", "4", "0", "1", "0", "0"]),
        ((1, 4, 3, 3), (Q, 4, 3, 3), ["36", "36", "0", "9", "3", "1"]),  # static 1 vs dynamic
        ((1, 4, 3, 3), (1, 4, 3, 3), ["36", "36", "36", "9", "3", "1"]),  # both 1: real stride
        ((3,), (2, 4, 3, 3), ["3", "3", "0", "0", "0", "1"]),
        ((Q, 10), (Q, 10), ["B * 10", "B * 10", "B * 10", "B * 10", "10", "1"]),
        ((), (Q, 2), ["1", "1", "1", "1", "0", "0"]),  # a scalar; padded dims keep real strides
    ],
)
def test_broadcast_strides(
    operand: tuple[int, ...], output: tuple[int, ...], strides: list[str]
) -> None:
    assert broadcast_strides(operand, output) == strides


# The IR it produces


def test_slice_lowers_to_the_launch_plan() -> None:
    _, lowered = lower(SLICE)
    ops = list(forward(lowered).body.block.ops)
    weights = [op for op in ops if isinstance(op, WeightOp)]
    launches = [op for op in ops if isinstance(op, LaunchOp)]
    assert [w.weight_name for w in weights] == [
        "model.0.conv.weight",
        "model.0.bn.weight",
        "model.0.bn.running_var",
        "model.0.bn.bias",
        "model.0.bn.running_mean",
    ]
    assert ops[: len(weights)] == weights and isinstance(ops[-1], ReturnOp)
    # The residual add fuses into the GEMM's epilogue; only the last silu stays.
    assert [launch.family for launch in launches] == ["conv1x1_gemm", "elementwise"]
    gemm, silu = launches
    assert [s.name for s in gemm.param_slots] == ["w", "scale", "shift"]
    assert gemm.param_slots[0].derivation.kind == "reshape"
    assert gemm.constexpr_values["ACTIVATION"] == "silu"  # the first silu fused into the conv
    assert "HAS_RESIDUAL" not in gemm.constexpr_values  # a dim, not a variant's constexpr
    x = forward(lowered).body.block.args[0]
    assert list(gemm.operands) == [x, x]
    bindings = dict(gemm.arg_bindings)
    assert bindings["HAS_RESIDUAL"] == "1"  # then the add of the block's input
    assert (bindings["x"], bindings["r"], bindings["y"]) == ("in0", "in1", "out0")
    assert [bindings[f"{p}_batch_stride"] for p in "xry"] == ["2331"] * 3
    assert gemm.grid == ("B * cdiv(63, 64) * cdiv(37, 64)", "1", "1")
    assert (gemm.num_warps, gemm.num_stages) == (4, 2)
    assert silu.constexpr_values["OP"] == "silu" and dict(silu.arg_bindings)["numel"] == "B * 2331"
    assert silu.operands[0] is gemm.results[0]
    assert not any(op.name.startswith("graph.") for op in lowered.walk())


def test_results_and_locations_are_kept() -> None:
    graph, lowered = lower(SLICE)
    before = [op for op in forward(graph).body.block.ops if op.name != "graph.param"]
    after = [op for op in forward(lowered).body.block.ops if isinstance(op, LaunchOp | ReturnOp)]
    assert [loc_of(op) for op in after] == [loc_of(op) for op in before]
    assert [[r.type for r in op.results] for op in after] == [
        [r.type for r in op.results] for op in before
    ]
    assert str(loc_of(after[1])) == "input.mlir:11:8"  # the last graph.silu's name token
    # The fused GEMM keeps every op it implements, conv first.
    assert str(after[0].location) == (
        'loc(fused["graph.conv2d"("input.mlir":7:8), "graph.batch_norm"("input.mlir":8:8), '
        '"graph.silu"("input.mlir":9:8), "graph.add"("input.mlir":10:8)])'
    )
    weight = next(op for op in forward(lowered).body.block.ops if isinstance(op, WeightOp))
    assert str(loc_of(weight)) == "input.mlir:2:8"  # its graph.param


def test_lowered_module_round_trips() -> None:
    _, lowered = lower(SLICE)
    for generic in (False, True):
        text = print_module(lowered, generic=generic)
        assert parse_module(text).is_structurally_equivalent(lowered)


# Refusals


# A training-form batch norm lowers too (batch_norm_train); only the conv2d is refused.
TRAINING_SLICE = SLICE.replace(
    "%n = graph.batch_norm %c, %g, %b, %m, %v eps 1.0e-3 :",
    "%n:3 = graph.batch_norm %c, %g, %b, %m, %v eps 1.0e-3 training :",
).replace(
    "tensor<37xf32>) -> tensor<?x37x7x9xf32>\n  %y = graph.silu %n :",
    "tensor<37xf32>) -> (tensor<?x37x7x9xf32>, tensor<37xf32>, tensor<37xf32>)\n"
    "  %y = graph.silu %n#0 :",
)


def test_every_unlowerable_op_is_reported_and_nothing_changes() -> None:
    assert "training" in TRAINING_SLICE and "%n#0" in TRAINING_SLICE
    module = parse_module(TRAINING_SLICE, "input.mlir")
    before = print_module(module)
    with pytest.raises(DiagnosticError) as info:
        PassManager.parse("lower-graph-to-kernel").run(module)
    assert [(str(d.location), d.message) for d in info.value.diagnostics] == [
        (
            "input.mlir:7:8",
            "cannot lower 'graph.conv2d' to a kernel: convolutions lower as graph.fused_conv2d "
            "(run fuse-epilogues and select-conv-algorithm first)",
        ),
    ]
    assert print_module(module) == before
    x = forward(module).body.block.args[0]
    assert {use.operation.name for use in x.uses} == {"graph.conv2d", "graph.add"}


# The lowering context: what a rule is given besides its op

POOL = """\
func.func @forward(%x: tensor<?x16x8x8xf32>) -> tensor<?x16x4x4xf32> {
  %y = graph.max_pool2d %x kernel [2, 2] : (tensor<?x16x8x8xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}
"""


@pytest.mark.parametrize("profile", ["gpu", "interpreter"])
def test_the_rule_reads_the_profile_from_its_context(profile: TileProfile) -> None:
    # The pool's tiles do not come from the op: the same op, two contexts, two tiles.
    module = parse_module(POOL)
    pool = next(op for op in forward(module).walk() if op.name == "graph.max_pool2d")
    launch = lower_op(LoweringContext(profile), pool)
    assert isinstance(launch, LaunchOp)
    assert launch.constexpr_values["BLOCK"] == window_tiles(profile)[0]
    lowered = parse_module(POOL)
    PassManager.parse(f"lower-graph-to-kernel{{profile={profile}}}").run(lowered)
    [passed] = [op for op in forward(lowered).walk() if isinstance(op, LaunchOp)]
    assert passed.constexpr_values == launch.constexpr_values
    assert window_tiles("gpu") != window_tiles("interpreter")


def test_the_context_is_frozen_and_checks_its_profile() -> None:
    ctx = LoweringContext(profile="interpreter")
    with pytest.raises(AttributeError):
        ctx.profile = "gpu"  # type: ignore[misc]
    with pytest.raises(
        ValueError, match=r"unknown tile profile 'fast' \(valid: gpu, interpreter\)"
    ):
        LoweringContext(profile="fast")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown tile profile 'fast'"):
        LowerGraphToKernelPass(profile="fast")  # type: ignore[arg-type]


def test_every_rule_takes_the_context_first() -> None:
    silu = next(op for op in parse_module(SLICE).walk() if op.name == "graph.silu")
    rules = [rule for found in LOWERINGS.rules().values() for rule in found]
    rules.append(LOWERINGS.lookup(type(silu)))  # with the pointwise rule
    for rule in rules:
        assert not isinstance(rule, str), rule
        assert list(inspect.signature(rule).parameters) == ["ctx", "op"], rule


# Numerics: the lowered program, simulated, against the graph reference


def _dims(launch: LaunchOp, batch: int) -> dict[str, int | str]:
    return {
        name: binding
        if binding.startswith(("in", "out", "param."))
        else eval_text(binding, {"B": batch})
        for name, binding in launch.arg_bindings
    }


def _elementwise(launch: LaunchOp, inputs: Sequence[Array], batch: int) -> Array:
    """The elementwise template's index arithmetic, over the whole grid."""
    args = _dims(launch, batch)
    block = launch.constexpr_values["BLOCK"]
    programs = eval_text(launch.grid[0], {"B": batch})
    numel = int(args["numel"])
    assert programs * block >= numel
    rest = np.arange(numel)
    index: list[Array] = []  # i5, i4, ..., i1 (innermost first), then i0
    for k in range(5, 0, -1):
        size = int(args[f"size{k}"])
        index.append(rest % size)
        rest = rest // size
    index.append(rest)
    index.reverse()  # i0 .. i5

    def load(name: str) -> Array:
        source = inputs[int(str(args[name])[2:])].ravel()
        strides = [int(args[f"{name}_stride{k}"]) for k in range(6)]
        return source[sum(i * s for i, s in zip(index, strides, strict=True))]

    entry, options = pointwise.parse_spelling(str(launch.constexpr_values["OP"]))
    operands = [load("x")] if entry.arity == 1 else [load("x"), load("y")]
    result: Array = entry.evaluate(np, operands, options)
    return result


def _gemm(
    launch: LaunchOp, inputs: Sequence[Array], params: Mapping[str, Array], batch: int
) -> Array:
    """The conv1x1_gemm template's arithmetic: ``Y_b = act(scale * W @ X_b + shift) (+ R_b)``;
    every tensor here is contiguous, so each batch stride is one image."""
    args = _dims(launch, batch)
    c_in, c_out, m = int(args["C_IN"]), int(args["C_OUT"]), int(args["M"])
    assert int(args["B"]) == batch
    strides = [int(args[f"{p}_batch_stride"]) for p in "xry"]
    assert strides[0] == c_in * m and strides[2] == c_out * m
    assert params["w"].shape == (c_out, c_in)
    x = inputs[int(str(args["x"])[2:])].reshape(batch, c_in, m)
    acc = np.einsum("oc,bcm->bom", params["w"], x)
    v = params["scale"][None, :, None] * acc + params["shift"][None, :, None]
    activation = str(launch.constexpr_values["ACTIVATION"])
    if activation != pointwise.NO_ACTIVATION:
        v = pointwise.BY_NAME[activation].evaluate(np, [v], {})
    if int(args["HAS_RESIDUAL"]):
        assert strides[1] == c_out * m
        v = v + inputs[int(str(args["r"])[2:])].reshape(batch, c_out, m)
    result: Array = v
    return result


def simulate(
    module: ModuleOp, weights: Mapping[str, Array], inputs: Sequence[Array], batch: int
) -> list[Array]:
    """Run the lowered ``@forward`` launch by launch at batch size ``batch``."""
    function = forward(module)
    env: dict[SSAValue, Array] = dict(zip(function.body.block.args, inputs, strict=True))
    for op in function.body.block.ops:
        if isinstance(op, WeightOp):
            assert weights[op.weight_name].shape == op.shape
        elif isinstance(op, LaunchOp):
            args = [env[v].astype(np.float64) for v in op.operands]
            params = {
                s.name: evaluate(s.derivation, weights).astype(np.float64) for s in op.param_slots
            }
            flat = (
                _gemm(op, args, params, batch)
                if op.family == "conv1x1_gemm"
                else _elementwise(op, args, batch)
            )
            result_type = op.results[0].type
            assert isinstance(result_type, TensorType)
            shape = [batch if d == Q else d for d in result_type.get_shape()]
            env[op.results[0]] = np.asarray(flat, dtype=np.float32).reshape(shape)
        elif isinstance(op, ReturnOp):
            return [env[v] for v in op.operands]
    raise AssertionError("no func.return")


def _weights(module: ModuleOp, rng: np.random.Generator) -> dict[str, Array]:
    weights: dict[str, Array] = {}
    for op in module.walk():
        if op.name == "graph.param":
            shape = op.results[0].type.get_shape()  # type: ignore[attr-defined]
            name = op.properties["param_name"].data  # type: ignore[attr-defined]
            low = 0.5 if name.endswith(("running_var", "bn.weight")) else -1.0
            weights[name] = rng.uniform(low, 1.5, shape).astype(np.float32)
    return weights


@pytest.mark.parametrize("batch", [1, 3])
def test_lowered_slice_matches_the_reference(batch: int) -> None:
    rng = np.random.default_rng(batch)
    source = parse_module(SLICE)
    weights = _weights(source, rng)
    graph, lowered = lower(SLICE)
    x = rng.standard_normal((batch, 37, 7, 9)).astype(np.float32)
    (expected,) = reference.run(graph, weights, [x])
    (got,) = simulate(lowered, weights, [x], batch)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-4 * max(1, np.abs(expected).max()))


_DIM = st.sampled_from([1, 2, 3])


@st.composite
def broadcast_pair(draw: st.DrawFn) -> tuple[list[int], list[int]]:
    """An output shape (rank 1..4, dynamic batch) and an operand broadcasting to it."""
    output = [Q, *draw(st.lists(_DIM, min_size=0, max_size=3))]
    rank = draw(st.integers(0, len(output)))
    operand = [draw(st.sampled_from([1, d])) for d in output[len(output) - rank :]]
    if rank == len(output) and operand and operand[0] != 1:
        operand[0] = draw(st.sampled_from([1, Q]))
    return output, operand


def _type(shape: Sequence[int]) -> str:
    return "tensor<" + "".join(("?" if d == Q else str(d)) + "x" for d in shape) + "f32>"


@settings(max_examples=40, deadline=None)
@given(
    pair=broadcast_pair(),
    op=st.sampled_from(["add", "mul"]),
    swap=st.booleans(),
    batch=st.sampled_from([1, 2]),
)
def test_broadcasting_matches_numpy(
    pair: tuple[list[int], list[int]], op: str, swap: bool, batch: int
) -> None:
    output, operand = pair
    lhs, rhs = (operand, output) if swap else (output, operand)
    text = (
        f"func.func @forward(%a: {_type(lhs)}, %b: {_type(rhs)}) -> {_type(output)} {{\n"
        f"  %z = graph.{op} %a, %b : ({_type(lhs)}, {_type(rhs)}) -> {_type(output)}\n"
        f"  func.return %z : {_type(output)}\n}}\n"
    )
    graph, lowered = lower(text, passes="")
    rng = np.random.default_rng(0)
    arrays = [
        rng.standard_normal([batch if d == Q else d for d in shape]).astype(np.float32)
        for shape in (lhs, rhs)
    ]
    (expected,) = reference.run(graph, {}, arrays)
    (got,) = simulate(lowered, {}, arrays, batch)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
