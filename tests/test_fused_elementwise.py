"""The ``fused_elementwise`` family and fuse-pointwise (issue 26).

The kernel runs in Triton's interpreter on odd shapes (masked tails, a program
past the grid), broadcasts of every kind, six inputs, rank 6, every entry of the
pointwise table, batch-strided inputs and outputs, against the reference
interpreter's float64 program, with mutants that ignore a batch stride caught.
The validator refuses bad bindings; the rendered source holds no text of the
program; the pass fuses chains (and recomputes shared producers) so that an
imported detection head's decoding compiles to four launches and its splits and
concats become views, with the same outputs as the unfused ops.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

import teeny_ir
from dialects.kernel import LaunchOp
from teeny_ir import reference, runtime
from teeny_ir.core import pointwise_program
from teeny_ir.kernels import validator
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.render import RenderError, render
from teeny_ir.testing import ELEMENTWISE_TOL
from teeny_ir.testing.aot_probe import probe
from teeny_ir.testing.kernels import Case, Results, launch_case, lowered, problems
from teeny_ir.testing.variants import variants

RNG = np.random.default_rng(26)
FAMILY = FAMILIES["fused_elementwise"]


def _t(shape: Sequence[int | str]) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}f32>"


def _fused(program: str, shapes: Sequence[Sequence[int | str]], out: Sequence[int | str]) -> str:
    """A one-op module: ``program`` over arguments of ``shapes``."""
    args = ", ".join(f"%a{k}: {_t(s)}" for k, s in enumerate(shapes))
    names = ", ".join(f"%a{k}" for k in range(len(shapes)))
    types = ", ".join(_t(s) for s in shapes)
    return (
        f"func.func @forward({args}) -> {_t(out)} {{\n"
        f'  %y = graph.fused_pointwise {names} program "{program}" : ({types}) -> {_t(out)}\n'
        f"  func.return %y : {_t(out)}\n}}\n"
    )


def _draw(shape: Sequence[int], positive: bool = False) -> np.ndarray:
    x = np.asarray(RNG.standard_normal(shape), np.float32)
    return np.abs(x) + np.float32(0.1) if positive else x


@dataclasses.dataclass(frozen=True)
class Spec:
    program: str
    shapes: tuple[tuple[int | str, ...], ...]
    out: tuple[int | str, ...]
    batch: int = 1
    positive: bool = False
    views: tuple[tuple[str, tuple[int, int]], ...] = ()
    """Pointer -> (channels of the buffer, first channel): a batch-strided view."""


def _concrete(shape: Sequence[int | str], batch: int) -> tuple[int, ...]:
    return tuple(batch if d == "?" else int(d) for d in shape)


SPECS = [
    # YOLOv8's box decoding: a batch against [1, 2, 37] anchors and a [1, 37] stride.
    Spec("sub %0 %1; mul $0 %2; silu $1", (("?", 2, 37), (1, 2, 37), (1, 37)), ("?", 2, 37), 3),
    Spec("sub %0 %1; mul $0 %2; silu $1", (("?", 2, 37), (1, 2, 37), (1, 37)), ("?", 2, 37), 1),
    # Six inputs, every broadcast: per channel, per column, scalar, per row.
    Spec(
        "add %0 %1; mul $0 %2; sub $1 %3; div $2 %4; maximum $3 %5; tanh $4",
        (("?", 5, 7, 9), (5, 1, 1), (1, 1, 9), ("?", 5, 7, 9), (1,), (7, 1)),
        ("?", 5, 7, 9),
        2,
    ),
    # Unary only, options; 1031 elements per row: two programs, a masked tail.
    Spec(
        "leaky_relu(negative_slope=0.2) %0; hardtanh(min_val=-1.0, max_val=6.0) $0; neg $1",
        ((3, 1031),),
        (3, 1031),
    ),
    # A value read twice: decomposed SiLU; the output bigger than every input.
    Spec("sigmoid %0; mul %0 $0; add $1 %1", ((4, 1, 6), (5, 1)), (4, 5, 6)),
    # Rank 6.
    Spec("mul %0 %1; exp $0", ((2, 3, 1, 2, 3, 5), (3, 4, 1, 1, 5)), (2, 3, 4, 2, 3, 5)),
    # A split's part read in place and a concat's operand written in place.
    Spec(
        "sub %0 %1; abs $0",
        (("?", 3, 5, 7), (3, 1, 1)),
        ("?", 3, 5, 7),
        3,
        views=(("in0", (8, 2)), ("out", (6, 3))),
    ),
    # A rank-0 input broadcast to a vector.
    Spec("exp %0; add $0 %1", ((), (5,)), (5,)),
    # The positive-domain entries.
    Spec("log %0; sqrt %1; add $0 $1; reciprocal $2", ((6, 11), (6, 11)), (6, 11), positive=True),
]
"""Programs and shapes covering the brief (see the module docstring)."""


def _every_entry() -> list[Spec]:
    """Each pointwise-table variant as a step after an input, then once more
    through a binary step (so every entry sits inside a chain)."""
    found = []
    for variant in variants():
        entry = variant.entry
        operands = "%0" if entry.arity == 1 else "%0 %1"
        program = f"{variant.spelling} {operands}; add $0 %{entry.arity}"
        shapes = tuple((3, 37) for _ in range(entry.arity + 1))
        found.append(Spec(program, shapes, (3, 37), positive=entry.positive_domain))
    return found


ALL_SPECS = SPECS + _every_entry()


def _case(index: int, spec: Spec) -> Case:
    text = _fused(spec.program, spec.shapes, spec.out)
    _, launch = lowered(text, profile="interpreter")
    assert launch.family == "fused_elementwise"
    inputs = [_draw(_concrete(s, spec.batch), spec.positive) for s in spec.shapes]
    (want,) = reference.run(teeny_ir.parse_module(text), {}, inputs)
    return launch_case(
        f"fused{index}",
        launch,
        spec.batch,
        inputs,
        [want],
        pad=64,
        tol=ELEMENTWISE_TOL,
        views=dict(spec.views) or None,
        extra_programs=1,
        spec=spec,
    )


def _cases() -> list[Case]:
    cases = [_case(index, spec) for index, spec in enumerate(ALL_SPECS)]
    strided = cases[6]
    assert strided.spec.views
    mutants = [
        # An input read as if contiguous.
        dataclasses.replace(
            strided,
            id="fused-mutant-input",
            mutation=(
                "return (logical // image) * batch_stride + logical % image",
                "return logical",
            ),
        ),
        # The output written as if contiguous.
        dataclasses.replace(
            strided,
            id="fused-mutant-output",
            mutation=("(index // out_image) * out_batch_stride + index % out_image", "index"),
        ),
        # Broadcast inputs read without their strides' zeros (the channel vector as a row).
        dataclasses.replace(
            cases[2], id="fused-mutant-broadcast", mutation=("if INPUTS > 1:", "if INPUTS > 9:")
        ),
    ]
    return [*cases, *mutants]


HARNESS_CASES = _cases()
"""What the `results` fixture (tests/conftest.py) runs, in one interpreter process."""


@pytest.mark.parametrize(
    "case", [c for c in HARNESS_CASES if c.mutation is None], ids=lambda c: c.id
)
def test_kernel_matches_the_reference(case: Case, results: Results) -> None:
    """Canaries intact, views' gaps untouched, every element the reference's."""
    validator.validate(case.contract())
    assert problems(case, results) == [], case.spec


def test_the_checks_catch_mutated_kernels(results: Results) -> None:
    mutants = [case for case in HARNESS_CASES if case.mutation is not None]
    assert len(mutants) == 3
    for mutant in mutants:
        assert problems(mutant, results) != [], mutant.id


def test_every_table_entry_is_covered() -> None:
    programs = " ".join(spec.program for spec in ALL_SPECS)
    for variant in variants():
        assert f"{variant.spelling} %0" in programs, variant.spelling


# --------------------------------------------------------------------- the contract


def _launch(spec: Spec) -> LaunchOp:
    return lowered(_fused(spec.program, spec.shapes, spec.out), profile="interpreter")[1]


def test_unused_pointers_are_bound_to_the_first_input() -> None:
    launch = _launch(SPECS[0])
    bindings = dict(launch.arg_bindings)
    assert [bindings[f"in{k}"] for k in range(6)] == ["in0", "in1", "in2", "in0", "in0", "in0"]
    assert bindings["in3_stride5"] == bindings["in0_stride5"] == "1"
    assert bindings["in1_stride3"] == "0"  # the anchors broadcast over the batch
    assert bindings["in2_stride4"] == "0"  # the stride over the two coordinates
    assert launch.constexpr_values["INPUTS"] == 3


def test_the_validator_refuses_bad_bindings() -> None:
    case = HARNESS_CASES[2]
    validator.validate(case.contract())
    wrong = [
        {"in1_stride5": "1"},  # a per-channel vector read along the columns
        {"in0_batch_stride": "10"},  # below one image
        {"in3_image": "1"},
        {"size5": "10"},  # past the output's last column
        {"out_batch_stride": "314"},  # images overlapping
    ]
    for bindings in wrong:
        with pytest.raises(validator.ContractError):
            validator.validate(case.contract(**bindings))


def test_constexprs_are_checked() -> None:
    case = HARNESS_CASES[0]
    bad_values: list[tuple[str, int | str]] = [
        ("PROGRAM", "frobnicate %0"),
        ("PROGRAM", "exp %0; neg %0"),
        ("INPUTS", 7),
        ("PROGRAM", 3),
    ]
    for name, value in bad_values:
        bad = dataclasses.replace(case, constexprs={**case.constexprs, name: value})
        with pytest.raises(validator.ContractError):
            validator.validate(bad.contract())


def test_the_rendered_source_holds_only_the_table_text() -> None:
    """A program is re-spelled from the table; text that is not a program never
    reaches the source (it is refused)."""
    from teeny_ir.core import pointwise

    source = render(FAMILY, "k", {"PROGRAM": "exp %0; neg $0", "INPUTS": 1, "BLOCK": 64})
    exp = pointwise.BY_NAME["exp"].expression({})
    assert f"def program_step0(x):\n    return {exp}\n" in source
    assert "def program_step1(x):\n    return -x\n" in source
    assert "    t0 = program_step0(x0)\n    t1 = program_step1(t0)\n    return t1\n" in source
    for bad in ('exp %0; __import__("os") $0', "exp %0\nimport os", "exp(x) %0"):
        with pytest.raises(RenderError):
            render(FAMILY, "k", {"PROGRAM": bad, "INPUTS": 1, "BLOCK": 64})


def test_program_parsing() -> None:
    program = pointwise_program.parse("sub %0 %1; mul $0 %2; silu $1", 3)
    assert program.ops() == ["graph.sub", "graph.mul", "graph.silu"]
    assert program.text() == "sub %0 %1; mul $0 %2; silu $1"
    x, y, z = (RNG.standard_normal(4) for _ in range(3))
    want = (x - y) * z / (1 + np.exp(-(x - y) * z))
    np.testing.assert_allclose(program.evaluate(np, [x, y, z]), want, rtol=1e-12)
    for bad, message in [
        ("", "no steps"),
        ("exp %1", "input %0 is never read"),
        ("exp $0", "not an earlier step"),
        ("add %0", "takes 2 operand"),
        ("exp %6", "at most 6 inputs"),
        ("exp %0;neg $0", "not an entry"),
        ("; ".join(["exp %0"] + [f"neg ${k}" for k in range(40)]), "more than 32"),
    ]:
        with pytest.raises(ValueError, match=message):
            pointwise_program.parse(bad)


# --------------------------------------------------------------------- AOT


def test_compiles_ahead_of_time(tmp_path: Path, triton_cache: None) -> None:
    """One input and six, for sm_80 and sm_90: the ABI's parameters, a cubin."""
    variants = [
        ({"PROGRAM": program, "INPUTS": inputs, "BLOCK": 1024}, 4, 1, arch)
        for program, inputs in [("silu %0", 1), (SPECS[2].program, 6)]
        for arch in (80, 90)
    ]
    compiled = probe("fused_elementwise", variants, tmp_path)
    assert len(compiled) == 4
    for result in compiled:
        assert result["elf"], result
        assert result["params"] == len(FAMILY.args) + 2, result  # + global and profile scratch


# --------------------------------------------------------------------- the pass, end to end

DECODE = """
func.func @forward(%d: tensor<?x4x84xf32>, %c: tensor<?x80x84xf32>) -> tensor<?x84x84xf32> {
  %l, %u = graph.split %d axis 1 sizes [2, 2] : (tensor<?x4x84xf32>) -> (tensor<?x2x84xf32>, tensor<?x2x84xf32>)
  %l2, %r = graph.split %d axis 1 sizes [2, 2] : (tensor<?x4x84xf32>) -> (tensor<?x2x84xf32>, tensor<?x2x84xf32>)
  %a = graph.param "anchors" : tensor<1x2x84xf32>
  %x1 = graph.sub %a, %l : (tensor<1x2x84xf32>, tensor<?x2x84xf32>) -> tensor<?x2x84xf32>
  %x2 = graph.add %a, %r : (tensor<1x2x84xf32>, tensor<?x2x84xf32>) -> tensor<?x2x84xf32>
  %s = graph.add %x1, %x2 : (tensor<?x2x84xf32>, tensor<?x2x84xf32>) -> tensor<?x2x84xf32>
  %two = graph.constant dense<2.0> : tensor<1xf32>
  %xy = graph.div %s, %two : (tensor<?x2x84xf32>, tensor<1xf32>) -> tensor<?x2x84xf32>
  %wh = graph.sub %x2, %x1 : (tensor<?x2x84xf32>, tensor<?x2x84xf32>) -> tensor<?x2x84xf32>
  %box = graph.concat %xy, %wh axis 1 : (tensor<?x2x84xf32>, tensor<?x2x84xf32>) -> tensor<?x4x84xf32>
  %stride = graph.param "stride" : tensor<1x84xf32>
  %scaled = graph.mul %box, %stride : (tensor<?x4x84xf32>, tensor<1x84xf32>) -> tensor<?x4x84xf32>
  %p = graph.sigmoid %c : tensor<?x80x84xf32>
  %y = graph.concat %scaled, %p axis 1 : (tensor<?x4x84xf32>, tensor<?x80x84xf32>) -> tensor<?x84x84xf32>
  func.return %y : tensor<?x84x84xf32>
}
"""
"""YOLOv8's Detect head after the DFL, as the ONNX exporter writes it."""


def _families(module: teeny_ir.ModuleOp) -> list[str]:
    return [op.family for op in module.walk() if isinstance(op, LaunchOp)]


def test_the_decode_head_is_four_launches_and_matches_the_reference(tmp_path: Path) -> None:
    weights = {
        "anchors": RNG.uniform(0, 8, (1, 2, 84)).astype(np.float32),
        "stride": RNG.choice([8.0, 16.0, 32.0], (1, 84)).astype(np.float32),
    }
    unfused = teeny_ir.parse_module(DECODE)
    pipeline = "split-bias,fuse-epilogues,select-conv-algorithm,lower-graph-to-kernel"
    teeny_ir.PassManager.parse(pipeline).run(unfused)
    assert len(_families(unfused)) == 11  # 2 splits, 7 pointwise ops, 2 concats

    module = teeny_ir.parse_module(DECODE)
    teeny_ir.PassManager.parse("teeny-inference{profile=interpreter}").run(module)
    assert _families(module) == ["fused_elementwise"] * 4
    assert sum(op.name == "kernel.concat" for op in module.walk()) == 2
    assert sum(op.name == "kernel.slice" for op in module.walk()) >= 2
    launches = [op for op in module.walk() if isinstance(op, LaunchOp)]
    provenance = [sorted(str(loc) for loc in [launch.location]) for launch in launches]
    assert "graph.div" in str(provenance[0]) and "graph.sub" in str(provenance[0])
    teeny_ir.PassManager.parse(f"emit-triton{{out-dir={tmp_path / 'plan'}}}").run(module)
    plan = json.loads((tmp_path / "plan" / "plan.json").read_text())
    assert [s["op"] for s in plan["launches"][0]["sources"]] == [
        "graph.sub",
        "graph.add",
        "graph.add",
        "graph.div",
    ]
    executable = runtime.load(tmp_path / "plan")
    for batch in (1, 3):
        inputs = [
            RNG.standard_normal((batch, 4, 84)).astype(np.float32),
            RNG.standard_normal((batch, 80, 84)).astype(np.float32),
        ]
        (want,) = reference.run(teeny_ir.parse_module(DECODE), weights, inputs)
        (got,) = executable.run(inputs, weights)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_plans_are_byte_identical(tmp_path: Path) -> None:
    texts = []
    for run in ("a", "b"):
        module = teeny_ir.parse_module(DECODE)
        out = tmp_path / run
        pipeline = f"teeny-inference{{profile=interpreter}},emit-triton{{out-dir={out}}}"
        teeny_ir.PassManager.parse(pipeline).run(module)
        texts.append((out / "plan.json").read_bytes())
    assert texts[0] == texts[1]


def test_training_refuses_a_fused_chain_with_its_location() -> None:
    text = (
        "func.func @forward(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {\n"
        '  %w = graph.param "w" : tensor<2x3xf32>\n'
        '  %y = graph.fused_pointwise %x, %w program "mul %0 %1; exp $0" '
        ": (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>\n"
        "  func.return %y : tensor<2x3xf32>\n}\n"
    )
    module = teeny_ir.parse_module(text)
    from teeny_ir.frontend.losses import add_weighted_sum_loss

    add_weighted_sum_loss(module)
    with pytest.raises(teeny_ir.DiagnosticError, match=r"3:8: .*differentiated as its unfused ops"):
        teeny_ir.PassManager.parse("insert-backward").run(module)
