"""A pointwise chain and its trailing sum or mean as one launch: fuse-pointwise
absorbing a `graph.reduce_sum` / `graph.reduce_mean`, `graph.fused_pointwise`'s
``reduce`` option, and the ``fused_reduce`` kernel family.

The kernel is checked through Triton's interpreter against the reference
interpreter on small odd shapes: every kind of input (the operand's shape,
without a batch of its own, one value per image, a scalar, a split's part read
in place), the reductions the row view takes (a run inside the image, the batch,
both), keepdims, a dynamic batch at 1 and more, rows longer than a chunk with a
masked tail, six inputs, NaN and infinities; three mutants show the checks catch
a broken kernel. The pass is checked on what it fuses, what it leaves and the
remark it gives, and on the fused module computing what the unfused one does.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

import teeny_ir
from teeny_ir import reference
from teeny_ir.kernels import validator
from teeny_ir.testing import ELEMENTWISE_TOL
from teeny_ir.testing.aot_probe import probe
from teeny_ir.testing.kernels import Case, Results, launch_case, lowered, problems

RNG = np.random.default_rng(2026)


def _t(shape: Sequence[int | str]) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}f32>"


@dataclasses.dataclass(frozen=True)
class Spec:
    program: str
    shapes: tuple[tuple[int | str, ...], ...]
    reduce: str
    axes: tuple[int, ...]
    out: tuple[int | str, ...]
    batch: int = 1
    keepdims: bool = False
    special: bool = False
    """Plant NaN, +inf and -inf in the first input."""
    views: tuple[tuple[str, tuple[int, int]], ...] = ()
    """Pointer -> (channels of the buffer, first channel): a batch-strided view."""
    block_r: int | None = None
    """A smaller chunk than the lowering's, so that rows loop over chunks."""

    def text(self) -> str:
        args = ", ".join(f"%a{k}: {_t(s)}" for k, s in enumerate(self.shapes))
        names = ", ".join(f"%a{k}" for k in range(len(self.shapes)))
        types = ", ".join(_t(s) for s in self.shapes)
        keep = " keepdims" if self.keepdims else ""
        return (
            f"func.func @forward({args}) -> {_t(self.out)} {{\n"
            f'  %y = graph.fused_pointwise {names} program "{self.program}" '
            f"reduce {self.reduce} axes {list(self.axes)}{keep} : ({types}) -> {_t(self.out)}\n"
            f"  func.return %y : {_t(self.out)}\n}}\n"
        )


def _concrete(shape: Sequence[int | str], batch: int) -> tuple[int, ...]:
    return tuple(batch if d == "?" else int(d) for d in shape)


SPECS = [
    # A mean squared error over everything: the batch and the whole image.
    Spec("sub %0 %1; mul $0 $0", (("?", 3, 5, 7), ("?", 3, 5, 7)), "mean", (0, 1, 2, 3), (), 3),
    # Per-channel sums over H x W, with a weight without a batch of its own.
    Spec(
        "sub %0 %1; mul $0 $0; mul $1 %2",
        (("?", 3, 5, 7), ("?", 3, 5, 7), (3, 5, 7)),
        "sum",
        (2, 3),
        ("?", 3),
        2,
    ),
    # A scalar and one value per image, reduced over the image (keepdims).
    Spec(
        "mul %0 %1; add $0 %2; tanh $1",
        (("?", 4, 33), (), ("?", 1, 1)),
        "sum",
        (1, 2),
        ("?", 1, 1),
        3,
        keepdims=True,
    ),
    # The batch alone, keepdims; a dynamic batch at 1.
    Spec("exp %0; mul $0 %1", (("?", 37), ("?", 37)), "mean", (0,), (1, 37), 1, keepdims=True),
    Spec("exp %0; mul $0 %1", (("?", 37), ("?", 37)), "mean", (0,), (1, 37), 5, keepdims=True),
    # A run with axes after it (INNER > 1), and rows longer than a chunk.
    Spec("abs %0; sqrt $0", (("?", 6, 11, 3),), "sum", (1, 2), ("?", 3), 2, block_r=16),
    # A split's part read in place.
    Spec(
        "sub %0 %1; abs $0",
        (("?", 3, 5, 7), ("?", 3, 5, 7)),
        "sum",
        (2, 3),
        ("?", 3),
        3,
        views=(("in0", (8, 2)),),
    ),
    # Six inputs; rows of 1031 elements in chunks with a masked tail.
    Spec(
        "add %0 %1; mul $0 %2; sub $1 %3; maximum $2 %4; mul $3 %5",
        ((2, 1031), (2, 1031), (), (1, 1031), (2, 1), (2, 1031)),
        "mean",
        (1,),
        (2,),
        block_r=256,
    ),
    # NaN and the infinities: sums as numpy's (a row with both infinities is NaN).
    Spec("mul %0 %1", ((4, 9), (4, 9)), "sum", (1,), (4,), special=True),
]
"""Reductions covering the module docstring's list."""


def _draw(shape: Sequence[int], special: bool = False) -> np.ndarray:
    x = np.asarray(RNG.standard_normal(shape), np.float32)
    if special:
        flat = x.reshape(-1)
        row = x.shape[-1]
        flat[0] = np.nan  # row 0: NaN
        flat[row] = np.inf  # row 1: +inf
        flat[2 * row] = np.inf  # row 2: both infinities
        flat[2 * row + 1] = -np.inf
        flat[3 * row] = -np.inf  # row 3: -inf
    return x


def _case(index: int, spec: Spec) -> Case:
    text = spec.text()
    _, launch = lowered(text, profile="interpreter")
    assert launch.family == "fused_reduce"
    inputs = [
        _draw(_concrete(s, spec.batch), spec.special and k == 0) for k, s in enumerate(spec.shapes)
    ]
    if spec.special:
        inputs[1] = np.abs(inputs[1]) + np.float32(0.5)  # no inf * 0
    (want,) = reference.run(teeny_ir.parse_module(text), {}, inputs)
    return launch_case(
        f"fused_reduce{index}",
        launch,
        spec.batch,
        inputs,
        [np.asarray(want, np.float32)],
        pad=64,
        tol=ELEMENTWISE_TOL,
        views=dict(spec.views) or None,
        constexprs={"BLOCK_R": spec.block_r} if spec.block_r else None,
        extra_programs=1,
        spec=spec,
    )


def _cases() -> list[Case]:
    cases = [_case(index, spec) for index, spec in enumerate(SPECS)]
    mutants = [
        # The weight without a batch read as if it had one.
        dataclasses.replace(
            cases[1],
            id="fused-reduce-mutant-per-image",
            mutation=("images * (in2_batch_stride * in2_per_image)", "images * in2_batch_stride"),
        ),
        # Masked-off lanes (read as 1.0) kept in the sum.
        dataclasses.replace(
            cases[7],
            id="fused-reduce-mutant-mask",
            mutation=(
                "v = tl.where(mask, program(a0, a1, a2, a3, a4, a5), 0.0)",
                "v = program(a0, a1, a2, a3, a4, a5)",
            ),
        ),
        # The split's part read as if contiguous.
        dataclasses.replace(
            cases[6],
            id="fused-reduce-mutant-view",
            mutation=("images * (in0_batch_stride * in0_per_image)", "images * 105"),
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


def test_the_validator_refuses_bad_bindings() -> None:
    case = HARNESS_CASES[1]
    validator.validate(case.contract())
    wrong = [
        {"in2_per_image": "1"},  # the weight read past its one image
        {"in0_per_element": "0"},  # the operand read as one value per image
        {"in1_batch_stride": "50"},  # below one image
        {"R": "36"},  # past the image
        {"y_batch_stride": "2"},  # results overlapping
    ]
    for bindings in wrong:
        with pytest.raises(validator.ContractError):
            validator.validate(case.contract(**bindings))


# --------------------------------------------------------------------- the pass


def _opt(text: str, pipeline: str = "fuse-pointwise") -> tuple[str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "teeny_ir.driver.opt", "-", "-p", pipeline],
        input=text,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


_CHAINS = textwrap.dedent(
    """
    func.func @forward(%a: tensor<?x3x5x7xf32>, %b: tensor<?x3x5x7xf32>, %w: tensor<3x1x1xf32>)
        -> (tensor<?x3xf32>, tensor<f32>, tensor<?x3xf32>) {
      %d = graph.sub %a, %b : (tensor<?x3x5x7xf32>, tensor<?x3x5x7xf32>) -> tensor<?x3x5x7xf32>
      %e = graph.mul %d, %d : (tensor<?x3x5x7xf32>, tensor<?x3x5x7xf32>) -> tensor<?x3x5x7xf32>
      %s = graph.reduce_sum %e axes [2, 3] : (tensor<?x3x5x7xf32>) -> tensor<?x3xf32>
      %m = graph.reduce_mean %e axes [0, 1, 2, 3] : (tensor<?x3x5x7xf32>) -> tensor<f32>
      %h = graph.mul %a, %w : (tensor<?x3x5x7xf32>, tensor<3x1x1xf32>) -> tensor<?x3x5x7xf32>
      %n = graph.reduce_sum %h axes [2, 3] : (tensor<?x3x5x7xf32>) -> tensor<?x3xf32>
      func.return %s, %m, %n : tensor<?x3xf32>, tensor<f32>, tensor<?x3xf32>
    }
    """
)


def test_the_pass_fuses_trailing_reductions_and_says_where_it_cannot() -> None:
    out, err = _opt(_CHAINS, "fuse-pointwise,lower-graph-to-kernel")
    # The squared difference is recomputed in both reductions; never stored.
    assert out.count('kernel.launch "fused_reduce"') == 2
    assert '"sub %0 %1; mul $0 $0", INPUTS = 2, MEAN = 0' in out
    assert '"sub %0 %1; mul $0 $0", INPUTS = 2, MEAN = 1' in out
    # [3, 1, 1] broadcasts inside an image: the reduction is its own launch after
    # its (lone) pointwise op, and a remark at the reduction says why.
    assert out.count('kernel.launch "reduce"') == 1
    assert out.count('kernel.launch "elementwise"') == 1
    assert err.count("remark") == 1, err
    assert (
        ":9:8: remark: pointwise chain cut: graph.reduce_sum is not fused into the chain: "
        "input 1 of shape [3, 1, 1] broadcasts inside an image of the reduced operand "
        "[?, 3, 5, 7]"
    ) in err


def test_a_reduction_the_row_view_cannot_take_is_left_with_a_remark() -> None:
    text = textwrap.dedent(
        """
        func.func @main(%a: tensor<?x3x5x7xf32>) -> tensor<?x5xf32> {
          %g = graph.exp %a : tensor<?x3x5x7xf32>
          %k = graph.reduce_sum %g axes [1, 3] : (tensor<?x3x5x7xf32>) -> tensor<?x5xf32>
          func.return %k : tensor<?x5xf32>
        }
        """
    )
    out, err = _opt(text)
    assert "graph.reduce_sum %g axes [1, 3]" in out and "fused_pointwise" not in out
    assert "graph.reduce_sum is not fused into the chain: the reduce family reduces" in err
    assert "keep axis 2 of size 5" in err


def test_the_fused_module_computes_what_the_unfused_one_does() -> None:
    fused, _ = _opt(_CHAINS)
    assert fused.count("reduce sum axes [2, 3]") == 1
    assert "reduce mean axes [0, 1, 2, 3]" in fused
    inputs = [
        np.asarray(RNG.standard_normal(shape), np.float32)
        for shape in [(2, 3, 5, 7), (2, 3, 5, 7), (3, 1, 1)]
    ]
    want = reference.run(teeny_ir.parse_module(_CHAINS), {}, inputs)
    got = reference.run(teeny_ir.parse_module(fused), {}, inputs)
    # The reference rounds every op's value to float32: the unfused module rounds
    # the squared differences before summing them, the fused one does not.
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=0)


def test_the_op_round_trips_and_verifies() -> None:
    text = SPECS[2].text()
    module = teeny_ir.parse_module(text)
    printed = str(module)
    assert "reduce sum axes [1, 2] keepdims" in printed
    assert str(teeny_ir.parse_module(printed)) == printed
    for bad, message in [
        (dataclasses.replace(SPECS[2], out=("?", 4)).text(), "result"),
        (text.replace("reduce sum axes [1, 2] keepdims", "axes [1, 2]"), "need a reduction"),
        (text.replace("axes [1, 2]", "axes [1, 5]"), r"axes in \[0, 3\)"),
    ]:
        with pytest.raises(Exception, match=message):
            teeny_ir.parse_module(bad)


# --------------------------------------------------------------------- AOT


def test_compiles_ahead_of_time(tmp_path: Path, triton_cache: None) -> None:
    """Two inputs and six, sum and mean, for sm_80 and sm_90: a cubin each."""
    variants = [
        (
            {"PROGRAM": program, "INPUTS": inputs, "MEAN": mean, "BLOCK_ROWS": 2, "BLOCK_R": 1024},
            4,
            1,
            arch,
        )
        for program, inputs, mean in [(SPECS[0].program, 2, 1), (SPECS[7].program, 6, 0)]
        for arch in (80, 90)
    ]
    compiled = probe("fused_reduce", variants, tmp_path)
    assert [c["elf"] for c in compiled] == [True] * 4
    # The ABI's 7 pointers and 25 dims, plus Triton's scratch pointers.
    assert all(c["params"] >= 32 for c in compiled), compiled
