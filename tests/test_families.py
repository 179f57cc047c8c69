"""Every kernel family, generically: a representative launch of each, taken from
lowering a small graph that uses it (`SAMPLES`), is one the contract validator
accepts, and it renders and runs in Triton's interpreter at every ``num_warps``
the validator allows (`WARPS`) with its canary padding intact, every output
element written and the reference's values (the tolerance rule); a status
output reports no error.

The families come from `teeny_ir.kernels.families.FAMILIES`, never a copy: a
family without a sample is a named failure. The graphs are lowered by the
public pipeline (``select-conv-algorithm``, ``lower-graph-to-kernel`` with the
interpreter's tiles and no views), not by calling lowering rules. Inputs and
weights are drawn from [0.5, 1.5] (a variance, a square root or a logarithm of
any of them is finite), class indices are 0. All cases run in one harness
process (`teeny_ir.testing.kernels.run_cases`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import IntegerType, TensorType
from xdsl.ir import BlockArgument

import teeny_ir
from dialects.kernel import LaunchOp, WeightOp
from dialects.kernel import ParamOp as KernelParamOp
from teeny_ir import reference
from teeny_ir.core import derivations
from teeny_ir.kernels import validator
from teeny_ir.kernels.contract import MAX_NUM_WARPS
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.testing import REDUCTION_TOL
from teeny_ir.testing.kernels import I64_CANARY, I64_UNWRITTEN, Case, Results, launch_case, problems

PIPELINE = (
    "select-conv-algorithm{profile=interpreter},"
    "lower-graph-to-kernel{profile=interpreter views=false}"
)
BATCH = 2


def _warps() -> list[int]:
    """Every num_warps the validator accepts (no family declares a narrower set)."""
    allowed = []
    for warps in range(1, MAX_NUM_WARPS + 1):
        try:
            validator.check_launch_config(warps, 1)
        except validator.ContractError:
            continue
        allowed.append(warps)
    return allowed


WARPS = _warps()


def _t(*shape: int | str, element: str = "f32") -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}{element}>"


def _one_op(op: str, operands: list[str], results: list[str], options: str = "") -> str:
    """``func.func @forward`` of one graph op over its arguments, returning its results."""
    args = ", ".join(f"%a{k}: {t}" for k, t in enumerate(operands))
    names = ", ".join(f"%a{k}" for k in range(len(operands)))
    outs = ", ".join(f"%r{k}" for k in range(len(results)))
    types = f"({', '.join(operands)}) -> ({', '.join(results)})"
    return (
        f"func.func @forward({args}) -> ({', '.join(results)}) {{\n"
        f"  {outs} = {op} {names}{' ' + options if options else ''} : {types}\n"
        f"  func.return {outs} : {', '.join(results)}\n}}\n"
    )


def _with_params(text: str, params: dict[str, str]) -> str:
    """``text`` with ``graph.param`` ops (name -> type) in place of the arguments
    ``%p_<name>`` it uses."""
    lines = [f'  %p_{name} = graph.param "{name}" : {t}' for name, t in params.items()]
    head, _, body = text.partition("\n")
    return head + "\n" + "\n".join(lines) + "\n" + body


def _fused_conv(channels: int, out: int, kernel: int, groups: int) -> str:
    x, y = _t("?", channels, 7, 6), _t("?", out, 7, 6)
    w = _t(out, channels // groups, kernel, kernel)
    pad = kernel // 2
    return _with_params(
        f"func.func @forward(%x: {x}) -> {y} {{\n"
        f"  %y = graph.fused_conv2d %x, %p_w padding [{pad}, {pad}, {pad}, {pad}] groups {groups}"
        f' scale #derive.param<fill(1.0) : [{out}]> shift #derive.param<identity("b") : [{out}]>'
        f" activation silu : ({x}, {w}) -> {y}\n"
        f"  func.return %y : {y}\n}}\n",
        {"w": w},
    )


X4 = _t("?", 3, 7, 6)
POOLED = _t("?", 3, 3, 3)
ROWS = _t("?", 10)
V3 = _t(3)
GRAD_X, GRAD_W, GRAD_Y = _t("?", 3, 7, 6), _t(4, 3, 3, 3), _t("?", 4, 5, 4)

SAMPLES: dict[str, str] = {
    "elementwise": _one_op("graph.add", [X4, _t(3, 1, 6)], [X4]),
    "fused_elementwise": _one_op(
        "graph.fused_pointwise",
        [X4, _t(3, 1, 6), _t(6)],
        [X4],
        'program "sub %0 %1; mul $0 %2; silu $1"',
    ),
    "fused_reduce": _one_op(
        "graph.fused_pointwise",
        [X4, _t(3, 7, 6), _t()],
        [_t("?", 3)],
        'program "sub %0 %1; mul $0 $0; mul $1 %2" reduce mean axes [2, 3]',
    ),
    "conv1x1_gemm": _fused_conv(3, 5, 1, 1),
    "implicit_gemm_conv": _fused_conv(3, 5, 3, 1),
    "depthwise_conv": _fused_conv(4, 4, 3, 4),
    "pool2d": _one_op("graph.max_pool2d", [X4], [POOLED], "kernel [2, 2] strides [2, 2]"),
    "upsample_nearest2d": _one_op(
        "graph.upsample_nearest2d", [X4], [_t("?", 3, 14, 12)], "scales [2, 2]"
    ),
    "concat": _one_op("graph.concat", [X4, _t("?", 2, 7, 6)], [_t("?", 5, 7, 6)], "axis 1"),
    "split": _one_op(
        "graph.split", [X4], [_t("?", 1, 7, 6), _t("?", 2, 7, 6)], "axis 1 sizes [1, 2]"
    ),
    "channel_affine": _with_params(
        f"func.func @forward(%x: {X4}) -> {X4} {{\n"
        f"  %y = graph.batch_norm %x, %p_g, %p_b, %p_m, %p_v eps 1.0e-3 : ({X4}, {V3}, {V3}, {V3}, {V3}) -> {X4}\n"
        f"  func.return %y : {X4}\n}}\n",
        {name: V3 for name in "gbmv"},
    ),
    "transpose": _one_op("graph.transpose", [X4], [_t("?", 6, 3, 7)], "perm [0, 3, 1, 2]"),
    "linear": _with_params(
        f"func.func @forward(%x: {ROWS}) -> {_t('?', 5)} {{\n"
        f"  %y = graph.linear %x, %p_w : ({ROWS}, {_t(5, 10)}) -> {_t('?', 5)}\n"
        f"  func.return %y : {_t('?', 5)}\n}}\n",
        {"w": _t(5, 10)},
    ),
    "matmul": _one_op("graph.matmul", [_t("?", 3, 10), _t(10, 4)], [_t("?", 3, 4)]),
    "softmax": _one_op("graph.softmax", [ROWS], [ROWS], "axis 1"),
    "reduce": _one_op("graph.reduce_sum", [X4], [_t("?", 3, 1, 1)], "axes [2, 3] keepdims"),
    "reduce_extremum": _one_op("graph.reduce_max", [X4], [_t("?", 3)], "axes [2, 3]"),
    "cross_entropy": _one_op("graph.cross_entropy", [ROWS, _t("?", element="i64")], [_t()]),
    "max_pool2d_backward": _one_op(
        "graph.max_pool2d_backward", [X4, POOLED], [X4], "kernel [2, 2] strides [2, 2]"
    ),
    "avg_pool2d_backward": _one_op(
        "graph.avg_pool2d_backward", [POOLED], [X4], "kernel [2, 2] strides [2, 2]"
    ),
    "sgd_update": _one_op(
        "graph.sgd_update", [_t(7), _t(7), _t(7)], [_t(7), _t(7)], "lr 5.0e-02 momentum 9.0e-01"
    ),
    "adamw_update": _one_op(
        "graph.adamw_update",
        [_t(7), _t(7), _t(7), _t(7), _t()],
        [_t(7), _t(7), _t(7), _t()],
        "lr 1.0e-01 weight_decay 1.0e-01",
    ),
    "conv2d_backward_data": _one_op(
        "graph.conv2d_backward_data",
        [GRAD_Y, GRAD_W],
        [GRAD_X],
        "strides [1, 1] padding [0, 0, 0, 0] dilation [1, 1] groups 1",
    ),
    "conv2d_backward_weight": _one_op(
        "graph.conv2d_backward_weight",
        [GRAD_X, GRAD_Y],
        [GRAD_W],
        "strides [1, 1] padding [0, 0, 0, 0] dilation [1, 1] groups 1",
    ),
    "depthwise_conv_backward_data": _one_op(
        "graph.conv2d_backward_data",
        [_t("?", 4, 4, 3), _t(4, 1, 3, 3)],
        [_t("?", 4, 7, 6)],
        "strides [2, 2] padding [1, 1, 1, 1] groups 4",
    ),
    "depthwise_conv_backward_weight": _one_op(
        "graph.conv2d_backward_weight",
        [_t("?", 4, 7, 6), _t("?", 4, 4, 3)],
        [_t(4, 1, 3, 3)],
        "strides [2, 2] padding [1, 1, 1, 1] groups 4",
    ),
    "activation_grad": _one_op("graph.activation_grad", [X4, X4], [X4], "activation silu"),
    "softmax_backward": _one_op("graph.softmax_backward", [ROWS, ROWS], [ROWS], "axis 1"),
    "cross_entropy_backward": _one_op(
        "graph.cross_entropy_backward", [ROWS, _t("?", element="i64"), _t()], [ROWS]
    ),
    "broadcast": _one_op("graph.broadcast", [_t(6), X4], [X4]),
    "batch_norm_train": _one_op(
        "graph.batch_norm",
        [X4, V3, V3, V3, V3],
        [X4, V3, V3],
        "eps 1.0e-3 momentum 1.0e-1 training",
    ),
    "batch_norm_backward": _one_op(
        "graph.batch_norm_backward", [X4, V3, X4], [X4, V3, V3], "eps 1.0e-3"
    ),
    "slice": _one_op(
        "graph.slice", [X4], [_t("?", 2, 3, 5)], "starts [0, 2, 1, 5] steps [1, -2, 2, -1]"
    ),
    "pad": _one_op(
        "graph.pad", [X4], [_t("?", 4, 9, 5)], "pads [0, 1, 3, 0, 0, 0, -1, -1] mode reflect"
    ),
    "reshape_copy": _one_op("graph.reshape", [_t(3, 5, 7)], [_t(7, 15)], "shape [7, 15]"),
    "attention": _one_op(
        "graph.attention",
        [_t("?", 2, 3, 5), _t("?", 2, 7, 3), _t("?", 2, 7, 4)],
        [_t("?", 2, 4, 5), _t("?", 2, 5)],
        "scale 0.5 transposed [1, 0, 0, 1]",
    ),
    "attention_backward": _one_op(
        "graph.attention_backward",
        [
            _t("?", 2, 3, 5),
            _t("?", 2, 7, 3),
            _t("?", 2, 7, 4),
            _t("?", 2, 4, 5),
            _t("?", 2, 5),
            _t("?", 2, 4, 5),
        ],
        [_t("?", 2, 3, 5), _t("?", 2, 7, 3), _t("?", 2, 7, 4)],
        "scale 0.5 transposed [1, 0, 0, 1]",
    ),
}
"""A small graph whose lowering launches the family, by family."""


@dataclasses.dataclass
class Sample:
    """A family's representative launch and its cases (one per num_warps)."""

    launch: LaunchOp
    cases: list[Case]
    status: list[str]
    """The family's status outputs (checked apart: they report, no reference has them)."""


def _value(rng: np.random.Generator, value_type: Any) -> np.ndarray:
    assert isinstance(value_type, TensorType)
    shape = tuple(BATCH if d < 0 else d for d in value_type.get_shape())
    if isinstance(value_type.element_type, IntegerType):
        return np.zeros(shape, np.int64)  # class 0: in range whatever the classes
    return rng.uniform(0.5, 1.5, shape).astype(np.float32)


def sample(family: str) -> Sample:
    """Lower ``SAMPLES[family]``, draw its inputs and weights, and bind its one
    launch at every num_warps of `WARPS` against the graph's reference."""
    text = SAMPLES[family]
    graph = teeny_ir.parse_module(text, filename=f"{family}.mlir")
    kernels = teeny_ir.parse_module(text, filename=f"{family}.mlir")
    teeny_ir.PassManager.parse(PIPELINE).run(kernels)
    launches = [op for op in kernels.walk() if isinstance(op, LaunchOp)]
    assert [op.family for op in launches] == [family], [op.family for op in launches]
    (launch,) = launches
    rng = np.random.default_rng(len(family))
    function = next(op for op in graph.walk() if op.name == "func.func")
    inputs = [_value(rng, arg.type) for arg in function.body.blocks[0].args]
    weights = {
        op.weight_name: _value(rng, op.weight_type)
        for op in kernels.walk()
        if isinstance(op, WeightOp)
    }
    with np.errstate(all="raise"):
        outputs = list(reference.run(graph, weights, inputs))
    operands = []
    for value in launch.operands:
        if isinstance(value, BlockArgument):
            operands.append(inputs[value.index])
        else:
            assert isinstance(value.owner, KernelParamOp), value.owner
            operands.append(derivations.evaluate(value.owner.derivation, weights))
    status = list(FAMILIES[family].status_checks)
    placeholders = [
        np.zeros(_value(rng, result.type).shape, np.int64)
        for result in launch.outputs[len(outputs) :]
    ]
    cases = []
    for warps in WARPS:
        case = launch_case(
            f"{family}-warps{warps}",
            launch,
            BATCH,
            operands,
            [*outputs, *placeholders],
            pad=256,
            tol=REDUCTION_TOL,
            weights=weights,
            num_warps=warps,
        )
        for name in status:
            del case.expected[name]
        cases.append(case)
    return Sample(launch, cases, status)


SAMPLED = {family: sample(family) for family in sorted(SAMPLES) if family in FAMILIES}
HARNESS_CASES = [case for found in SAMPLED.values() for case in found.cases]
"""What the `results` fixture (tests/conftest.py) runs, in one interpreter process."""


def test_every_sample_names_a_family() -> None:
    assert sorted(set(SAMPLES) - set(FAMILIES)) == []


def _sampled(family: str) -> Sample:
    if family not in SAMPLED:
        pytest.fail(
            f"kernel family '{family}' has no sample graph: add a small graph whose lowering "
            "launches it to SAMPLES in tests/test_families.py"
        )
    return SAMPLED[family]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_validator_accepts_the_launch_at_every_num_warps(family: str) -> None:
    """The launch as lowered (proved for every batch) and as the harness binds it."""
    found = _sampled(family)
    for case in found.cases:
        validator.validate(dataclasses.replace(found.launch.contract(), num_warps=case.num_warps))
        validator.validate(case.contract(), batches=(BATCH,))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_it_runs_at_every_num_warps(family: str, results: Results) -> None:
    """Canaries intact, every output element written and the reference's, and a
    status output written everywhere, its error count 0."""
    found = _sampled(family)
    assert [case.num_warps for case in found.cases] == WARPS
    for case in found.cases:
        assert problems(case, results) == [], case.id
        for name in found.status:
            buffer = results[f"{case.id}/{name}"]
            padding = np.concatenate([buffer[: case.pad], buffer[len(buffer) - case.pad :]])
            assert (padding == I64_CANARY).all(), (case.id, name)
            got = case.got(results, name)
            assert (got != I64_UNWRITTEN).all() and got[0] == 0, (case.id, name, got.tolist())


def test_warps_are_the_validators() -> None:
    """Powers of two up to `MAX_NUM_WARPS` (no family declares its own set)."""
    assert [2**k for k in range(MAX_NUM_WARPS.bit_length())] == WARPS
    for bad in (0, 3, 2 * MAX_NUM_WARPS):
        with pytest.raises(validator.ContractError, match="num_warps"):
            validator.check_launch_config(bad, 1)
