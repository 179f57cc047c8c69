"""The kernel dialect: builders, accessors, round trips, every verifier rule and
the grid-coverage proof at its edges."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import pytest
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, TensorType, f32
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import VerifyException

from dialects.kernel import LaunchOp, ParamSlot, WeightOp, symbolic_shape
from teeny_ir import parse_module, print_module
from teeny_ir.core import symbols
from teeny_ir.core.derivations import bn_scale, bn_shift, reshape
from teeny_ir.ir.verifier import verify_ops
from teeny_ir.kernels import families
from teeny_ir.kernels.contract import Constexpr

Q = DYNAMIC_INDEX


def tensor(*shape: int) -> TensorType:
    return TensorType(f32, shape)


GEMM_ARGS = [
    ("x", "in0"),
    ("w", "param.w"),
    ("scale", "param.scale"),
    ("shift", "param.shift"),
    ("r", "in0"),  # no residual: bound to the input, never read
    ("y", "out0"),
    ("B", "B"),
    ("C_IN", "8"),
    ("C_OUT", "16"),
    ("M", "16"),
    ("x_batch_stride", "128"),
    ("r_batch_stride", "128"),
    ("y_batch_stride", "256"),
    ("HAS_RESIDUAL", "0"),  # a dim: no residual, so r is never read
]
GEMM_SLOTS = [
    ParamSlot("w", (16, 8), reshape("m.conv.weight", (16, 8))),
    ParamSlot("scale", (16,), bn_scale("m.bn.weight", "m.bn.running_var", 1e-3, 16)),
    ParamSlot(
        "shift",
        (16,),
        bn_shift("m.bn.weight", "m.bn.bias", "m.bn.running_mean", "m.bn.running_var", 1e-3, 16),
    ),
]
GEMM_WEIGHTS = [
    ("m.conv.weight", (16, 8, 1, 1)),
    ("m.bn.weight", (16,)),
    ("m.bn.running_var", (16,)),
    ("m.bn.bias", (16,)),
    ("m.bn.running_mean", (16,)),
]
GEMM_CONSTEXPRS = {
    "BLOCK_M": 64,
    "BLOCK_N": 64,
    "BLOCK_K": 16,
    "GROUP_M": 8,
    "ACTIVATION": "silu",
}


def elementwise_args(
    numel: str = "B * 64", sizes: Sequence[int] = (4, 4, 4), batch: str = "B"
) -> list[tuple[str, str]]:
    """Bindings for a contiguous [batch, *sizes] tensor (``numel`` as given), viewed
    at rank 6 as [1, 1, batch, *sizes]: the two leading strides are its element count."""
    s1, s2, s3 = sizes
    strides = [numel, numel, str(s1 * s2 * s3), str(s2 * s3), str(s3), "1"]
    return [
        ("x", "in0"),
        ("y", "in0"),
        ("out", "out0"),
        ("numel", numel),
        ("size1", "1"),
        ("size2", batch),
        ("size3", str(s1)),
        ("size4", str(s2)),
        ("size5", str(s3)),
        *((f"x_stride{k}", s) for k, s in enumerate(strides)),
        *((f"y_stride{k}", s) for k, s in enumerate(strides)),
    ]


def in_function(
    build: Callable[[Sequence[Block]], LaunchOp],
    arg_types: Sequence[TensorType],
    weights: Sequence[tuple[str, tuple[int, ...]]] = (),
) -> tuple[ModuleOp, LaunchOp]:
    """A module with ``@f(args)`` holding the weight table, the launch and a return."""
    block = Block(arg_types=arg_types)
    for name, shape in weights:
        block.add_op(WeightOp(name, tensor(*shape)))
    launch = build([block])
    block.add_op(launch)
    block.add_op(ReturnOp(*launch.results))
    function = FuncOp("f", (list(arg_types), [r.type for r in launch.results]), Region(block))
    return ModuleOp([function]), launch


def gemm(**changes: object) -> tuple[ModuleOp, LaunchOp]:
    fields: dict[str, object] = {
        "constexprs": GEMM_CONSTEXPRS,
        "params": GEMM_SLOTS,
        "args": GEMM_ARGS,
        "grid": ["B * cdiv(16, 64) * cdiv(16, 64)", "1", "1"],
        "num_warps": 4,
        "num_stages": 2,
        "result_types": [tensor(Q, 16, 4, 4)],
    }
    weights = changes.pop("weights", GEMM_WEIGHTS)
    fields.update(changes)

    def build(blocks: Sequence[Block]) -> LaunchOp:
        return LaunchOp(
            str(fields.get("family", "conv1x1_gemm")),
            blocks[0].args,
            fields["result_types"],  # type: ignore[arg-type]
            fields["constexprs"],  # type: ignore[arg-type]
            fields["params"],  # type: ignore[arg-type]
            fields["args"],  # type: ignore[arg-type]
            fields["grid"],  # type: ignore[arg-type]
            fields["num_warps"],  # type: ignore[arg-type]
            fields["num_stages"],  # type: ignore[arg-type]
        )

    return in_function(build, [tensor(Q, 8, 4, 4)], weights)  # type: ignore[arg-type]


def elementwise(
    numel: str = "B * 64",
    grid: Sequence[str] = ("cdiv(B * 64, 1024)", "1", "1"),
    shape: Sequence[int] = (Q, 4, 4, 4),
    **kw: int,
) -> LaunchOp:
    def build(blocks: Sequence[Block]) -> LaunchOp:
        return LaunchOp(
            "elementwise",
            blocks[0].args,
            [tensor(*shape)],
            {"OP": kw.get("op", "silu"), "BLOCK": kw.get("block", 1024)},
            [],
            elementwise_args(numel, shape[1:], "B" if shape[0] == Q else str(shape[0])),
            grid,
            kw.get("num_warps", 4),
            kw.get("num_stages", 1),
        )

    return in_function(build, [tensor(*shape)])[1]


def message(op: LaunchOp | WeightOp) -> str:
    with pytest.raises(VerifyException) as info:
        op.verify_()
    return str(info.value)


# Builders and accessors


def test_weight_builder_and_accessors() -> None:
    weight = WeightOp("model.0.conv.weight", tensor(16, 8, 1, 1))
    assert weight.weight_name == "model.0.conv.weight"
    assert weight.shape == (16, 8, 1, 1)
    weight.verify()


def test_launch_builder_and_accessors() -> None:
    module, launch = gemm()
    module.verify()
    assert launch.family == "conv1x1_gemm"
    assert launch.constexpr_values == GEMM_CONSTEXPRS
    assert list(launch.constexpr_values) == list(GEMM_CONSTEXPRS)  # order kept
    assert launch.param_slots == GEMM_SLOTS
    assert launch.arg_bindings == GEMM_ARGS
    assert launch.grid == ("B * cdiv(16, 64) * cdiv(16, 64)", "1", "1")
    assert (launch.num_warps, launch.num_stages) == (4, 2)
    assert [r.type for r in launch.results] == [tensor(Q, 16, 4, 4)]
    assert symbolic_shape(tensor(Q, 16, 4, 4)) == ["B", 16, 4, 4]


@pytest.mark.parametrize("generic", [False, True])
def test_built_module_round_trips(generic: bool) -> None:
    module, _ = gemm()
    text = print_module(module, generic=generic) if generic else print_module(module)
    reparsed = parse_module(text)
    assert not verify_ops(reparsed)
    assert reparsed.is_structurally_equivalent(module)
    assert print_module(reparsed, generic=generic) == text


def test_custom_form_reads_like_a_launch_plan() -> None:
    module, _ = gemm()
    text = print_module(module)
    assert (
        'kernel.launch "conv1x1_gemm" (%0) {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 16, '
        'GROUP_M = 8, ACTIVATION = "silu"} params [w : tensor<16x8xf32> = '
        '#derive.param<reshape("m.conv.weight") : [16, 8]>, ' in text
    )
    assert (
        "args [x = in0, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out0, "
        'B = "B", C_IN = "8", C_OUT = "16", M = "16", x_batch_stride = "128", '
        'r_batch_stride = "128", y_batch_stride = "256", HAS_RESIDUAL = "0"] '
        'grid ["B * cdiv(16, 64) * cdiv(16, 64)", "1", "1"] warps 4 stages 2 : ' in text
    )


# Verifier rules (the lit file has one case per message; these cover the builder path)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"family": "no_such_family"}, "unknown kernel family 'no_such_family'"),
        ({"constexprs": {**GEMM_CONSTEXPRS, "X": 1}}, "family 'conv1x1_gemm' has no constexpr 'X'"),
        (
            {"constexprs": {k: v for k, v in GEMM_CONSTEXPRS.items() if k != "GROUP_M"}},
            "missing constexpr 'GROUP_M' of family 'conv1x1_gemm'",
        ),
        (
            {"constexprs": {**GEMM_CONSTEXPRS, "ACTIVATION": "add"}},
            "constexpr 'ACTIVATION' = 'add' is not one of none",
        ),
        (
            {"constexprs": {**GEMM_CONSTEXPRS, "BLOCK_M": 48}},
            "constexpr 'BLOCK_M' = 48 must be a power of two",
        ),
        (
            {"constexprs": {**GEMM_CONSTEXPRS, "BLOCK_N": 8}},
            "constexpr 'BLOCK_N' = 8 is below its minimum 16",
        ),
        (
            {"params": [dataclasses.replace(GEMM_SLOTS[0], shape=(8, 16)), *GEMM_SLOTS[1:]]},
            "parameter slot 'w' has shape [8, 16] but its derivation gives [16, 8]",
        ),
        ({"args": GEMM_ARGS[:-1]}, "family 'conv1x1_gemm' takes 14 arguments"),
        ({"args": [("x", "param.w"), *GEMM_ARGS[1:]]}, "argument 'x' (kind input) must bind"),
        (
            {"args": [*GEMM_ARGS[:5], ("y", "in0"), *GEMM_ARGS[6:]]},
            "must bind to out<N>, got 'in0'",
        ),
        ({"args": [*GEMM_ARGS[:9], ("M", "H"), *GEMM_ARGS[10:]]}, "uses symbol 'H'"),
        (
            {"args": [*GEMM_ARGS[:-2], ("y_batch_stride", "255"), GEMM_ARGS[-1]]},
            "argument 'y_batch_stride' = '255' is 255 at B = 1, but 'out0' (bound to 'y') "
            "has batch stride 256",
        ),
        (
            {"constexprs": {**GEMM_CONSTEXPRS, "HAS_RESIDUAL": 1}},
            "family 'conv1x1_gemm' has no constexpr 'HAS_RESIDUAL'",
        ),
        (  # r bound to the 8-channel input: a 16-channel residual does not fit in it
            {"args": [*GEMM_ARGS[:-1], ("HAS_RESIDUAL", "1")]},
            "argument 'r' may touch 256 elements at B = 1 "
            "(HAS_RESIDUAL * ((B - 1) * r_batch_stride + C_OUT * M)), but 'in0' holds 128",
        ),
        (
            {"args": [*GEMM_ARGS[:-1], ("HAS_RESIDUAL", "B - 2")]},
            "argument 'HAS_RESIDUAL' = 'B - 2' is -1 at B = 1, outside [0, 2147483647]",
        ),
        ({"num_warps": 0}, "num_warps must be a power of two in 1..32, got 0"),
        ({"num_warps": 6}, "num_warps must be a power of two in 1..32, got 6"),
        ({"num_stages": 0}, "num_stages must be >= 1, got 0"),
        ({"grid": ["B", "1"]}, "expected 3 grid expressions (x, y, z), got 2"),
        (
            {"weights": GEMM_WEIGHTS[1:]},
            "parameter slot 'w' reads weight 'm.conv.weight', which no",
        ),
        (
            {"weights": [("m.conv.weight", (16, 8, 3, 3)), *GEMM_WEIGHTS[1:]]},
            "parameter slot 'w': weight 'm.conv.weight' has shape [16, 8, 3, 3]",
        ),
        (
            {"weights": [*GEMM_WEIGHTS[:-1], ("m.bn.running_mean", (15,))]},
            "parameter slot 'shift': weight 'm.bn.running_mean' has shape [15], expected [16]",
        ),
    ],
)
def test_gemm_verifier_rules(changes: dict[str, object], expected: str) -> None:
    _, launch = gemm(**changes)
    assert expected in message(launch)


def test_launch_outside_a_function_has_an_empty_weight_table() -> None:
    _, launch = gemm()
    launch.detach()
    launch.check_plan()  # everything but the weight table holds
    assert "which no kernel.weight of the enclosing function declares" in message(launch)


def test_duplicate_weight_is_reported_on_the_second_declaration() -> None:
    module, _ = gemm(weights=[*GEMM_WEIGHTS, ("m.bn.bias", (16,))])
    errors = verify_ops(module)
    assert [e.message for e in errors] == [
        "'kernel.weight' op weight 'm.bn.bias' is already declared"
    ]


def test_bool_constexprs_take_zero_or_one(monkeypatch: pytest.MonkeyPatch) -> None:
    family = families.FAMILIES["elementwise"]
    flagged = dataclasses.replace(
        family, constexprs=(*family.constexprs, Constexpr("FAST", "bool"))
    )
    monkeypatch.setitem(families.FAMILIES, "elementwise", flagged)

    def build(blocks: Sequence[Block]) -> LaunchOp:
        return LaunchOp(
            "elementwise",
            blocks[0].args,
            [tensor(Q, 4, 4, 4)],
            {"OP": "silu", "BLOCK": 1024, "FAST": 2},
            [],
            elementwise_args(),
            ["cdiv(B * 64, 1024)", "1", "1"],
            4,
            1,
        )

    _, launch = in_function(build, [tensor(Q, 4, 4, 4)])
    assert message(launch) == "constexpr 'FAST' is a bool: expected 0 or 1, got 2"


# The grid-coverage proof


def test_exact_grid_verifies_for_every_batch() -> None:
    elementwise(
        numel="B * 1000", grid=("cdiv(B * 1000, 1024)", "1", "1"), shape=(Q, 10, 10, 10)
    ).verify_()


def test_grid_one_short_at_a_single_batch_fails() -> None:
    # cdiv(1000 B, 1024) - 1 falls short first at B = 41 (41000 needs 41 blocks of 1024).
    launch = elementwise(
        numel="B * 1000",
        grid=("cdiv(B * 1000, 1024) - floordiv(B, 41)", "1", "1"),
        shape=(Q, 10, 10, 10),
    )
    assert message(launch) == (
        "grid[0] = 'cdiv(B * 1000, 1024) - floordiv(B, 41)' is 40 at B = 41, but the tile "
        "model of 'elementwise' needs cdiv(numel, BLOCK) = 41"
    )


def test_gemm_grid_one_short_only_at_the_last_batch_fails() -> None:
    grid = ["B * cdiv(16, 64) * cdiv(16, 64) - floordiv(B, 64)", "1", "1"]
    _, launch = gemm(grid=grid)
    assert message(launch).startswith(f"grid[0] = '{grid[0]}' is 63 at B = 64, but the tile")


def test_grid_above_the_hardware_limit_at_batch_64_fails() -> None:
    shape = (Q, 16, 8, 8)
    launch = elementwise("B * 1024", ("B * 33554432", "1", "1"), shape)  # 2**31 at B = 64
    assert message(launch) == (
        "grid[0] = 'B * 33554432' is 2147483648 at B = 64, above the hardware limit 2147483647"
    )
    elementwise("B * 1024", ("B * 33554431", "1", "1"), shape).verify_()


@pytest.mark.parametrize(
    ("grid", "expected"),
    [
        (("cdiv(B * 64, 1024)", "65536", "1"), "grid[1] = '65536' is 65536 at B = 1, above"),
        (("cdiv(B * 64, 1024)", "1", "0"), "grid[2] = '0' is 0 at B = 1: each grid dimension"),
        (("cdiv(B * 64, 1024)", "1", "B - 32"), "grid[2] = 'B - 32' is -31 at B = 1"),
    ],
)
def test_other_axes_need_at_least_one_program_within_limits(
    grid: tuple[str, str, str], expected: str
) -> None:
    assert message(elementwise(grid=grid)).startswith(expected)


def test_batch_free_launch_is_checked_once() -> None:
    launch = elementwise(numel="64", grid=("1", "1", "1"), shape=(1, 4, 4, 4))
    launch.verify_()
    wide = elementwise(numel="2048", grid=("1", "1", "1"), shape=(2, 16, 8, 8))
    assert "is 1 at B = 1, but" in message(wide)


# The binding grammar (teeny_ir.core.symbols): one parser for the verifier,
# the printer and the emitter.


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("in0", ("in", 0)),
        ("in12", ("in", 12)),
        ("out0", ("out", 0)),
        ("out3", ("out", 3)),
        ("param.w", ("param", "w")),
        ("param._scale1", ("param", "_scale1")),
    ],
)
def test_binding_grammar_reads_references(text: str, parsed: tuple[str, int | str]) -> None:
    assert symbols.parse_binding(text) == parsed
    assert symbols.is_binding(text)
    assert symbols.format_binding(*symbols.parse_binding(text)) == text


@pytest.mark.parametrize(
    "text",
    [
        "in01",
        "out00",
        "in",
        "in-1",
        "in\u0663",  # ARABIC-INDIC DIGIT THREE: only ASCII digits are numbers
        "out\uff11",  # FULLWIDTH DIGIT ONE
        "IN0",
        " in0",
        "in0 ",
        "param.",
        "param.1w",
        "param.w.x",
        "param.w\u00e9",
        "B",
        "B * 4",
    ],
)
def test_binding_grammar_refuses_anything_else(text: str) -> None:
    with pytest.raises(ValueError, match="is not a tensor reference"):
        symbols.parse_binding(text)
    assert not symbols.is_binding(text)


def test_binding_grammar_refuses_an_index_past_the_int_digit_limit() -> None:
    with pytest.raises(ValueError, match="has an index of 5000 digits"):
        symbols.parse_binding("in" + "7" * 5000)


def test_the_symbols_module_agrees_with_xdsl_on_the_dynamic_size() -> None:
    assert symbols.DYNAMIC == DYNAMIC_INDEX
    assert symbols.count_expr([Q, 3, 7]) == "B * 21"
    assert symbols.count_expr([Q]) == "B" and symbols.count_expr([2, 3]) == "6"
    assert symbols.dim_expr(Q) == "B" and symbols.dim_expr(5) == "5"


@pytest.mark.parametrize(
    ("binding", "expected"),
    [
        ("in01", "argument 'x' (kind input) must bind to in<N>, got 'in01'"),
        ("in\u0661", "argument 'x' (kind input) must bind to in<N>, got 'in\u0661'"),
    ],
)
def test_the_verifier_refuses_a_reference_outside_the_grammar(binding: str, expected: str) -> None:
    _, launch = gemm(args=[("x", binding), *GEMM_ARGS[1:]])
    assert message(launch) == expected


def test_the_emitter_refuses_a_reference_outside_the_grammar() -> None:
    # Unverified IR straight to the plan collector: "in01" once bound operand 1.
    from teeny_ir.backend.collect import collect
    from teeny_ir.core.diagnostics import DiagnosticError

    def build(blocks: Sequence[Block]) -> LaunchOp:
        args = [("x", "in0"), ("y", "in01"), *elementwise_args()[2:]]
        return LaunchOp(
            "elementwise",
            blocks[0].args,
            [tensor(Q, 4, 4, 4)],
            {"OP": "add", "BLOCK": 1024},
            [],
            args,
            ["cdiv(B * 64, 1024)", "1", "1"],
            4,
            1,
        )

    _, launch = in_function(build, [tensor(Q, 4, 4, 4), tensor(Q, 4, 4, 4)])
    assert "must bind to in<N>, got 'in01'" in message(launch)
    function = launch.parent_op()
    assert isinstance(function, FuncOp)
    with pytest.raises(DiagnosticError) as info:
        collect(function)
    assert [d.message for d in info.value.diagnostics] == [
        "argument 'y' binds 'in01', not a tensor reference"
    ]
