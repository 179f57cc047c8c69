"""``teeny-opt --verify-numerics-each`` (`teeny_ir.driver.numerics_check`): every
pass that changed the IR is run in the reference interpreter and compared with
the IR before it; the first pass whose outputs move is a located error.

The planted bug is a test-only copy of fuse-epilogues that folds one batch
norm of YOLOv8n with its shift's mean and beta swapped: the check names that
pass and that convolution, and not the passes before it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import FloatAttr, ModuleOp, f64
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker

from dialects.derive import DerivationAttr
from dialects.graph.conv import FusedConv2dOp
from dialects.graph.norm import BatchNormOp
from dialects.graph.param import ParamOp
from passes.fuse_epilogues import FuseConvChain, FuseEpiloguesPass, fuse_epilogue_patterns
from teeny_ir import reference
from teeny_ir.core.derivations import bn_shift
from teeny_ir.core.diagnostics import engine_of
from teeny_ir.driver import pass_registry
from teeny_ir.driver.numerics_check import NumericsChecker, draw
from teeny_ir.driver.pass_manager import ROOT_ANCHOR, Instrumentation, Nest, PassManager
from teeny_ir.ir.context import make_context
from teeny_ir.ir.parsing import parse_module
from teeny_ir.testing import compare

from .conftest import run_opt

ROOT = Path(__file__).resolve().parent.parent
YOLO = "examples/yolov8n/yolov8n.mlir"
LENET = "examples/lenet/lenet.mlir"
BROKEN_CONV = "model.2.cv1.conv.weight"
"""The convolution whose batch-norm fold the planted bug gets wrong."""


def _parse(path: str) -> ModuleOp:
    return parse_module((ROOT / path).read_bytes(), path)


def _line_of(path: str, text: str) -> str:
    """``path:line:col`` of the op on the first line containing ``text``."""
    for number, line in enumerate((ROOT / path).read_text().splitlines(), 1):
        if text in line:
            return f"{path}:{number}:{line.index('graph.') + 1}"
    raise AssertionError(f"{text!r} is not in {path}")


def _graph_passes() -> str:
    """teeny-inference up to (not including) lower-graph-to-kernel, as a pipeline."""
    passes = PassManager.parse("teeny-inference").root.children
    names = [p.name for p in passes if not isinstance(p, Nest)]
    cut = names.index("lower-graph-to-kernel")
    assert cut >= 4, names  # split-bias ... select-conv-algorithm
    return PassManager(Nest(ROOT_ANCHOR, passes[:cut])).pipeline_string()


def _count_reference_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one at each `teeny_ir.reference.run` call from now on."""
    calls: list[int] = []
    real = reference.run

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(reference, "run", counted)
    return calls


# --- the planted bug -----------------------------------------------------------------------


class _SwappedShiftChain(FuseConvChain):
    """fuse-epilogues' convolution chain, but the chain of `BROKEN_CONV` folds its
    batch norm as ``mean - scale * beta`` (beta and the running mean swapped)."""

    def _fused_op(self, chain: object) -> FusedConv2dOp:
        fused = super()._fused_op(chain)  # type: ignore[arg-type]
        weight = fused.weight.owner
        if isinstance(weight, ParamOp) and weight.param_name.data == BROKEN_CONV:
            shift = fused.shift.data
            gamma, beta, mean, var = shift.sources[:4]
            wrong = bn_shift(gamma, mean, beta, var, shift.eps, shift.shape[0])
            fused.properties["shift"] = DerivationAttr(wrong)
        return fused


@dataclass(frozen=True)
class SwappedShiftPass(FuseEpiloguesPass):
    """fuse-epilogues with one batch-norm fold wrong (test only)."""

    name = "test-swapped-bn-shift"

    def apply(self, ctx: Context, op: Operation) -> None:
        real = fuse_epilogue_patterns(self.mode, engine_of(ctx))
        patterns = [_SwappedShiftChain(self.mode, engine_of(ctx)), *real[1:]]
        walker = PatternRewriteWalker(
            GreedyRewritePatternApplier(patterns, dce_enabled=False), apply_recursively=False
        )
        for region in op.regions:
            walker.rewrite_region(region)


@dataclass(frozen=True)
class ToggleEpsPass(ModulePass):
    """Sets every batch norm's eps to 2e-3 if it is 1e-3, else to 1e-3 (test only)."""

    name = "test-toggle-eps"

    def apply(self, ctx: Context, op: Operation) -> None:
        for inner in op.walk():
            if isinstance(inner, BatchNormOp):
                inner.properties["eps"] = FloatAttr(2e-3 if inner.eps == 1e-3 else 1e-3, f64)


@dataclass(frozen=True)
class NudgeEpsPass(ModulePass):
    """Adds 2e-3 to every batch norm's eps: a small change each time (test only)."""

    name = "test-nudge-eps"

    def apply(self, ctx: Context, op: Operation) -> None:
        for inner in op.walk():
            if isinstance(inner, BatchNormOp):
                inner.properties["eps"] = FloatAttr(inner.eps + 2e-3, f64)


TEST_PASSES: tuple[type[ModulePass], ...] = (SwappedShiftPass, ToggleEpsPass, NudgeEpsPass)


@pytest.fixture
def planted() -> Iterator[None]:
    for cls in TEST_PASSES:
        pass_registry.register(pass_registry.PassEntry(cls.name, lambda cls=cls: cls))
    try:
        yield
    finally:
        for cls in TEST_PASSES:
            pass_registry.unregister(cls.name)


CONV_BN_SILU = """\
func.func @forward(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  %w = graph.param "m.conv.weight" : tensor<16x8x1x1xf32>
  %g = graph.param "m.bn.weight" : tensor<16xf32>
  %b = graph.param "m.bn.bias" : tensor<16xf32>
  %m = graph.param "m.bn.running_mean" : tensor<16xf32>
  %v = graph.param "m.bn.running_var" : tensor<16xf32>
  %c = graph.conv2d %x, %w : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  %n = graph.batch_norm %c, %g, %b, %m, %v eps 1.0e-3 : (tensor<?x16x4x4xf32>, tensor<16xf32>, \
tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x16x4x4xf32>
  %y = graph.silu %n : tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}
"""

PLANTED_PIPELINE = "split-bias,fuse-attention,test-swapped-bn-shift,fuse-pointwise"


# --- (a) the real graph passes keep YOLOv8n's numbers ----------------------------------------


def test_yolov8n_graph_passes_keep_the_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_reference_runs(monkeypatch)
    pipeline = _graph_passes()
    result = run_opt([YOLO, "--pass-pipeline", pipeline, "--verify-numerics-each", "-o", "-"])
    assert result.code == 0, result.stderr
    assert "error" not in result.stderr and "remark" not in result.stderr
    assert "graph.fused_conv2d" in result.stdout
    # The baseline, then split-bias (YOLOv8n's head convolutions have biases),
    # fuse-epilogues and select-conv-algorithm; fuse-attention and fuse-pointwise
    # change nothing in YOLOv8n and are not run.
    assert len(calls) == 4


# --- (b) the planted bug is named, with the op it broke --------------------------------------


@pytest.mark.usefixtures("planted")
def test_planted_bug_names_the_pass_and_the_op(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_reference_runs(monkeypatch)
    result = run_opt([YOLO, "-p", PLANTED_PIPELINE, "--verify-numerics-each"])
    assert result.code == 1, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    where = _line_of(YOLO, f"graph.conv2d %5, %{BROKEN_CONV}")
    assert lines[0].startswith(
        f"{where}: error: numerics changed by pass 'test-swapped-bn-shift': max |diff| "
    ), result.stderr
    assert " at output " in lines[0]
    assert sum(": error:" in line for line in lines) == 1
    assert "split-bias" not in result.stderr and "fuse-attention" not in result.stderr
    first = [line for line in lines if "first value to move" in line]
    assert len(first) == 1
    assert first[0].startswith(
        f"{where}: note: the pass created 'graph.fused_conv2d' "
        "(from graph.conv2d, graph.batch_norm, graph.silu): its result 0 is the first value"
    ), first
    assert "more ops it changed" in result.stderr
    # The baseline, split-bias (compared, and passed), the planted pass, then
    # the traces of the IR before and after it that find the first value to move.
    assert len(calls) == 5


@pytest.mark.usefixtures("planted")
def test_drift_over_passes_is_caught_against_the_input() -> None:
    """Each nudge stays inside the tolerance of the IR before it; two together
    leave it around the pipeline's input."""
    weights, inputs = draw(parse_module(CONV_BN_SILU), seed=0)
    outs = []
    for step in range(3):
        module = parse_module(CONV_BN_SILU)
        for _ in range(step):
            NudgeEpsPass().apply(make_context(), module)
        outs.append(reference.run(module, weights, inputs))

    def moved(got: list[np.ndarray], want: list[np.ndarray]) -> float:
        c = compare(got, want, 1.0)
        return c.max_error / c.bound  # max|diff| / max(1, max|ref|)

    tol = 1.5 * moved(outs[1], outs[0])
    assert moved(outs[2], outs[1]) < tol < moved(outs[2], outs[0])
    result = run_opt(
        ["-", "-p", "test-nudge-eps,test-nudge-eps", "--verify-numerics-each",
         f"--verify-numerics-tol={tol!r}"],
        CONV_BN_SILU,
    )  # fmt: skip
    assert result.code == 1, result.stderr
    assert "numerics changed by pass 'test-nudge-eps'" in result.stderr
    assert "note: compared with the pipeline's input" in result.stderr
    assert "the pass modified 'graph.batch_norm'" in result.stderr


# --- (c) a pass that changes nothing is not interpreted -------------------------------------


def test_unchanged_passes_are_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_reference_runs(monkeypatch)
    checker = NumericsChecker()
    manager = PassManager.parse("fuse-attention,split-bias,cse", Instrumentation(extra=[checker]))
    manager.run(_parse(LENET), make_context())
    assert checker.unchanged == ["fuse-attention", "cse"]  # LeNet: no attention, nothing twice
    assert checker.compared == ["split-bias"]
    assert len(calls) == checker.interpretations == 2  # the baseline and split-bias


@pytest.mark.usefixtures("planted")
def test_ir_seen_before_is_not_run_again() -> None:
    checker = NumericsChecker(tol=0.5)
    pipeline = "test-toggle-eps,test-toggle-eps,test-toggle-eps"
    PassManager.parse(pipeline, Instrumentation(extra=[checker])).run(
        parse_module(CONV_BN_SILU), make_context()
    )
    assert checker.compared == ["test-toggle-eps"] * 3
    assert checker.interpretations == 2  # eps 1e-3 (the input), then 2e-3; both cached


# --- (d) the seed --------------------------------------------------------------------------


def test_seed_is_reproducible_and_draws_sane_values() -> None:
    module = _parse(YOLO)
    weights, inputs = draw(module, seed=0)
    again, inputs_again = draw(_parse(YOLO), seed=0)
    other, other_inputs = draw(module, seed=1)
    assert weights.keys() == again.keys() == other.keys()
    assert all(np.array_equal(weights[n], again[n]) for n in weights)
    assert all(np.array_equal(a, b) for a, b in zip(inputs, inputs_again, strict=True))
    assert not np.array_equal(inputs[0], other_inputs[0])
    assert not np.array_equal(weights[f"{BROKEN_CONV}"], other[f"{BROKEN_CONV}"])
    assert inputs[0].shape == (2, 3, 64, 64) and inputs[0].dtype == np.float32  # batch 2
    variances = [n for n in weights if n.endswith("running_var")]
    assert len(variances) == 57 and all(weights[n].min() > 0 for n in variances)


def test_integer_inputs_are_class_indices() -> None:
    source = """\
func.func @forward(%x: tensor<?x5xf32>, %t: tensor<?xi64>) -> tensor<f32> {
  %l = graph.cross_entropy %x, %t : (tensor<?x5xf32>, tensor<?xi64>) -> tensor<f32>
  func.return %l : tensor<f32>
}
"""
    _, (x, targets) = draw(parse_module(source), seed=4)
    assert x.shape == (2, 5) and targets.dtype == np.int64
    assert targets.shape == (2,) and targets.min() >= 0 and targets.max() < 5


@pytest.mark.usefixtures("planted")
def test_same_seed_same_report() -> None:
    argv = ["-", "-p", "test-nudge-eps", "--verify-numerics-each", "--verify-numerics-tol=1e-7"]
    first = run_opt([*argv, "--verify-numerics-seed=7"], CONV_BN_SILU)
    assert first.code == 1
    assert "numerics changed by pass 'test-nudge-eps'" in first.stderr
    assert "drawn from seed 7" in first.stderr
    assert run_opt([*argv, "--verify-numerics-seed", "7"], CONV_BN_SILU).stderr == first.stderr
    other = run_opt([*argv, "--verify-numerics-seed=8"], CONV_BN_SILU)
    assert other.code == 1
    assert other.stderr.splitlines()[0] != first.stderr.splitlines()[0]  # other numbers


# --- what the reference cannot run ---------------------------------------------------------


def test_check_stops_with_a_remark_where_the_reference_cannot_follow() -> None:
    result = run_opt([LENET, "-p", "teeny-inference", "--verify-numerics-each"])
    assert result.code == 0, result.stderr
    remarks = [line for line in result.stderr.splitlines() if ": remark: numerics" in line]
    assert len(remarks) == 1, result.stderr
    assert "numerics not checked after pass 'lower-graph-to-kernel'" in remarks[0]
    assert "no semantics for 'kernel." in remarks[0]
    assert "error" not in result.stderr


def test_input_the_reference_cannot_run_is_one_error(tmp_path: Path) -> None:
    kernels = run_opt([LENET, "-p", "teeny-inference"])
    assert kernels.code == 0
    result = run_opt(["-", "-p", "canonicalize", "--verify-numerics-each"], kernels.stdout)
    assert result.code == 1
    assert result.stderr.splitlines()[0].startswith("-:")
    assert (
        "error: cannot check numerics of the input: the reference interpreter has no "
        "semantics for 'kernel." in result.stderr.splitlines()[0]
    )
    assert sum(": error:" in line for line in result.stderr.splitlines()) == 1

    no_forward = (
        "func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n  func.return %x : tensor<4xf32>\n}\n"
    )
    result = run_opt(["-", "-p", "canonicalize", "--verify-numerics-each"], no_forward)
    assert result.code == 1
    assert sum(": error:" in line for line in result.stderr.splitlines()) == 1
    assert result.stderr.startswith(
        "-:1:1: error: cannot check numerics of the input: the module has no func.func @forward"
    )
    assert "Traceback" not in result.stderr


# --- flags ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--verify-numerics-seed=1"], "need --verify-numerics-each"),
        (["--verify-numerics-tol=1e-3"], "need --verify-numerics-each"),
        (["--verify-numerics-each", "--verify-numerics-seed=-1"], "expected an integer >= 0"),
        (["--verify-numerics-each", "--verify-numerics-seed=x"], "expected an integer >= 0"),
        (["--verify-numerics-each", "--verify-numerics-tol=0"], "expected a positive number"),
        (["--verify-numerics-each", "--verify-numerics-tol=nan"], "expected a positive number"),
    ],
)
def test_bad_flags_are_one_line(flags: list[str], message: str) -> None:
    result = run_opt([LENET, "-p", "split-bias", *flags])
    assert result.code == 1
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr


def test_timing_has_a_numerics_row_and_the_pass_is_not_charged() -> None:
    result = run_opt([LENET, "-p", "split-bias", "--verify-numerics-each", "--mlir-timing"])
    assert result.code == 0, result.stderr
    assert "(numerics check)" in result.stderr


def test_checker_rejects_bad_settings() -> None:
    for kwargs in ({"seed": -1}, {"tol": 0.0}, {"tol": float("inf")}, {"batch": 0}):
        with pytest.raises(ValueError):
            NumericsChecker(**kwargs)


def test_help_lists_the_flags() -> None:
    result = run_opt(["--help"])
    assert result.code == 0
    for flag in ("--verify-numerics-each", "--verify-numerics-seed N", "--verify-numerics-tol TOL"):
        assert flag in result.stdout, flag
