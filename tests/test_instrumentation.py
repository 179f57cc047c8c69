"""Pass instrumentation: the hooks, and the teeny-opt flags built on them (IR printing,
statistics, timing, crash reproducers), exact flag names and --version."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import ClassVar

import pytest
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.ir import Operation
from xdsl.passes import ModulePass

import teeny_ir
from teeny_ir.core.diagnostics import DiagnosticError
from teeny_ir.driver import pass_registry
from teeny_ir.driver.instrumentation import (
    STATISTICS_ATTR,
    PassInstrumentation,
    PassRun,
    PassStatistics,
    PipelineRun,
    Timing,
    statistics,
)
from teeny_ir.driver.pass_manager import Instrumentation, PassInternalError, PassManager

from .conftest import run_opt

TWO_FUNCS = """\
func.func @f(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  %1 = arith.addi %a, %a : i32
  %2 = arith.muli %0, %1 : i32
  func.return %2 : i32
}
func.func @g() {
  func.return
}
"""

CONV_BN_SILU = """\
func.func @conv_bn_silu(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  %w = graph.param "m.conv.weight" : tensor<16x8x1x1xf32>
  %g = graph.param "m.bn.weight" : tensor<16xf32>
  %b = graph.param "m.bn.bias" : tensor<16xf32>
  %m = graph.param "m.bn.running_mean" : tensor<16xf32>
  %v = graph.param "m.bn.running_var" : tensor<16xf32>
  %c = graph.conv2d %x, %w : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  %n = graph.batch_norm %c, %g, %b, %m, %v eps 1.0e-3 : (tensor<?x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x16x4x4xf32>
  %y = graph.silu %n : tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}
"""


# --- passes registered for these tests only --------------------------------------------------


@dataclass(frozen=True)
class MarkFunctionsPass(ModulePass):
    """Marks each function it runs on with a unit attribute; fails on @g
    (``fail_on``) after marking it, and can crash instead."""

    name = "test-mark"
    anchors: ClassVar[tuple[str, ...]] = ("func.func",)
    fail_on: str = "none"
    crash: bool = False
    note: str = ""

    def apply(self, ctx: Context, op: Operation) -> None:  # type: ignore[override]
        op.attributes["test.marked"] = builtin.UnitAttr()
        sink = statistics(ctx)
        if sink is not None:
            sink.add("marked", 1, "Number of functions marked")
        symbol = op.properties.get("sym_name")
        if isinstance(symbol, builtin.StringAttr) and symbol.data == self.fail_on:
            if self.crash:
                for inner in list(op.walk()):
                    if inner.name == "func.return":
                        inner.detach()
                        inner.erase()
                raise RuntimeError("crashed on purpose")
            from xdsl.utils.exceptions import PassFailedException

            raise PassFailedException(f"refusing @{symbol.data}")


@dataclass(frozen=True)
class ReportPass(ModulePass):
    """Adds a statistic several times; counts through the context attribute."""

    name = "test-report"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        sink = getattr(ctx, STATISTICS_ATTR, None)
        if sink is not None:
            sink.add("visits", 2, "Number of visits")
            sink.add("visits", 3)
            sink.add("a-very-long-statistic-name", 1234, "Aligned with the others")


LOCAL_PASSES: tuple[type[ModulePass], ...] = (MarkFunctionsPass, ReportPass)


@pytest.fixture
def local_passes(test_passes: None) -> Iterator[None]:
    for cls in LOCAL_PASSES:
        pass_registry.register(pass_registry.PassEntry(cls.name, lambda cls=cls: cls))
    try:
        yield
    finally:
        for cls in LOCAL_PASSES:
            pass_registry.unregister(cls.name)


# --- the hooks -------------------------------------------------------------------------------


class Recorder(PassInstrumentation):
    def __init__(self, label: str, events: list[str]) -> None:
        self.label = label
        self.events = events

    def _op(self, op: Operation) -> str:
        symbol = op.properties.get("sym_name")
        return f"@{symbol.data}" if isinstance(symbol, builtin.StringAttr) else op.name

    def run_before_pipeline(self, run: PipelineRun) -> None:
        self.events.append(f"{self.label} before-pipeline {'/'.join(run.path) or 'root'}")

    def run_after_pipeline(self, run: PipelineRun) -> None:
        self.events.append(f"{self.label} after-pipeline {'/'.join(run.path) or 'root'}")

    def run_before_pass(self, run: PassRun) -> None:
        self.events.append(f"{self.label} before {run.name} {self._op(run.op)}")

    def run_after_pass(self, run: PassRun) -> None:
        assert run.seconds >= 0.0
        self.events.append(f"{self.label} after {run.name} {self._op(run.op)}")

    def run_after_pass_failed(
        self, run: PassRun, error: DiagnosticError | PassInternalError
    ) -> None:
        self.events.append(f"{self.label} failed {run.name} {type(error).__name__}")


def _run_recorded(pipeline: str, text: str = TWO_FUNCS, **options: object) -> list[str]:
    events: list[str] = []
    extra: list[PassInstrumentation] = [Recorder("A", events), Recorder("B", events)]
    manager = PassManager.parse(pipeline, Instrumentation(extra=extra, **options))  # type: ignore[arg-type]
    module = teeny_ir.parse_module(text)
    try:
        manager.run(module)
    except (DiagnosticError, PassInternalError) as err:
        events.append(f"raised {type(err).__name__}")
    return events


def test_hooks_run_in_order_after_hooks_in_reverse() -> None:
    assert _run_recorded("func.func(cse),dce") == [
        "A before-pipeline root",
        "B before-pipeline root",
        "A before-pipeline 'func.func' Pipeline",
        "B before-pipeline 'func.func' Pipeline",
        "A before cse @f",
        "B before cse @f",
        "B after cse @f",
        "A after cse @f",
        "A before cse @g",
        "B before cse @g",
        "B after cse @g",
        "A after cse @g",
        "B after-pipeline 'func.func' Pipeline",
        "A after-pipeline 'func.func' Pipeline",
        "A before dce builtin.module",
        "B before dce builtin.module",
        "B after dce builtin.module",
        "A after dce builtin.module",
        "B after-pipeline root",
        "A after-pipeline root",
    ]


def test_failed_pass_gets_only_the_failure_hook(local_passes: None) -> None:
    events = _run_recorded("func.func(test-mark{fail-on=g}),dce")
    assert events[-4:] == [
        "B before test-mark @g",
        "B failed test-mark DiagnosticError",
        "A failed test-mark DiagnosticError",
        "raised DiagnosticError",
    ]
    assert not any("after" in e and "@g" in e for e in events)
    assert not any("dce" in e for e in events)


def test_crash_and_invalid_ir_are_failures_for_every_hook(local_passes: None) -> None:
    crashed = _run_recorded("test-crash")
    assert crashed[-3:] == [
        "B failed test-crash PassInternalError",
        "A failed test-crash PassInternalError",
        "raised PassInternalError",
    ]
    # The verifier is innermost: the other hooks never see the invalid IR as a success.
    broken = _run_recorded("test-break-ir")
    assert broken[-3:] == [
        "B failed test-break-ir PassInternalError",
        "A failed test-break-ir PassInternalError",
        "raised PassInternalError",
    ]
    unchecked = _run_recorded("test-break-ir", verify_each=False)
    assert unchecked[-1] == "A after-pipeline root"


def test_add_instrumentation_on_a_parsed_manager() -> None:
    events: list[str] = []
    manager = PassManager.parse("dce")
    manager.add_instrumentation(Recorder("C", events))
    manager.run(teeny_ir.parse_module(TWO_FUNCS))
    assert events == [
        "C before-pipeline root",
        "C before dce builtin.module",
        "C after dce builtin.module",
        "C after-pipeline root",
    ]


def test_crash_keeps_its_cause(test_passes: None) -> None:
    manager = PassManager.parse("test-crash")
    with pytest.raises(PassInternalError) as info:
        manager.run(teeny_ir.parse_module(TWO_FUNCS))
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_statistics_accessor_is_none_without_collection(local_passes: None) -> None:
    manager = PassManager.parse("test-report")
    module = teeny_ir.parse_module(TWO_FUNCS)
    ctx = Context()
    manager.run(module, ctx)
    assert statistics(ctx) is None
    collected = PassStatistics()
    PassManager.parse("test-report", Instrumentation(statistics=collected)).run(module, ctx)
    assert statistics(ctx) is None  # removed after the pass
    assert collected.counters[(0,)]["visits"] == [5, "Number of visits"]


# --- statistics ------------------------------------------------------------------------------


def _stat_lines(report: str, pass_name: str) -> dict[str, int]:
    """Statistic name -> value, for the entry of ``pass_name`` in a report."""
    lines = report.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == pass_name)
    found: dict[str, int] = {}
    for line in lines[start + 1 :]:
        match = re.fullmatch(r"\s*\(S\)\s+(\d+) (\S+)\s+- .*", line)
        if match is None:
            break
        found[match[2]] = int(match[1])
    return found


def test_statistics_of_fuse_epilogues() -> None:
    result = run_opt(["-", "-p", "fuse-epilogues", "--mlir-pass-statistics"], CONV_BN_SILU)
    assert result.code == 0, result.stderr
    # conv, batch_norm, silu and the four batch-norm params go; func.return now uses the fused op.
    assert _stat_lines(result.stderr, "fuse-epilogues") == {
        "fusions": 1,
        "not-fused": 0,
        "ops-created": 1,
        "ops-erased": 7,
        "ops-modified": 1,
    }
    assert "fused_conv2d" in result.stdout


def test_statistics_count_blocked_fusions() -> None:
    blocked = CONV_BN_SILU.replace(
        "  func.return %y : tensor<?x16x4x4xf32>",
        "  %z = graph.relu %c : tensor<?x16x4x4xf32>\n  func.return %y : tensor<?x16x4x4xf32>",
    )
    result = run_opt(["-", "-p", "fuse-epilogues", "--mlir-pass-statistics"], blocked)
    assert result.code == 0, result.stderr
    stats = _stat_lines(result.stderr, "fuse-epilogues")
    # The conv chain is blocked (two remarks: at the batch norm and the relu); the
    # batch norm, now standalone, takes its silu (one fusion: batch_norm and silu
    # erased, the fused batch_norm created, func.return modified).
    assert stats["fusions"] == 1 and stats["not-fused"] == 2, result.stderr
    assert (stats["ops-created"], stats["ops-erased"], stats["ops-modified"]) == (1, 2, 1)


def test_statistics_report_matches_mlir_layout(local_passes: None) -> None:
    result = run_opt(
        ["-", "-p", "func.func(cse,test-mark),test-report", "--mlir-pass-statistics"], TWO_FUNCS
    )
    assert result.code == 0, result.stderr
    bar = "===" + "-" * 73 + "==="
    assert result.stderr == (
        f"{bar}\n"
        "                         ... Pass statistics report ...\n"
        f"{bar}\n"
        "'func.func' Pipeline\n"
        "  cse\n"
        "    (S) 0 ops-created  - Number of operations created\n"
        "    (S) 1 ops-erased   - Number of operations erased\n"
        "    (S) 1 ops-modified - Number of operations modified in place\n"
        "  test-mark\n"
        "    (S) 2 marked       - Number of functions marked\n"
        "    (S) 0 ops-created  - Number of operations created\n"
        "    (S) 0 ops-erased   - Number of operations erased\n"
        "    (S) 2 ops-modified - Number of operations modified in place\n"
        "test-report\n"
        "  (S) 1234 a-very-long-statistic-name - Aligned with the others\n"
        "  (S)    0 ops-created                - Number of operations created\n"
        "  (S)    0 ops-erased                 - Number of operations erased\n"
        "  (S)    0 ops-modified               - Number of operations modified in place\n"
        "  (S)    5 visits                     - Number of visits\n"
        "\n"
    )


def test_statistics_list_display_merges_by_name() -> None:
    result = run_opt(
        [
            "-",
            "-p",
            "func.func(cse),cse",
            "--mlir-pass-statistics",
            "--mlir-pass-statistics-display=list",
        ],
        TWO_FUNCS,
    )
    assert result.code == 0, result.stderr
    assert "Pipeline" not in result.stderr
    assert result.stderr.count("  cse\n") == 1
    assert _stat_lines(result.stderr, "cse") == {
        "ops-created": 0,
        "ops-erased": 1,
        "ops-modified": 1,
    }


def test_statistics_without_pipeline_is_the_bare_header() -> None:
    result = run_opt(["-", "--mlir-pass-statistics"], TWO_FUNCS)
    assert result.code == 0
    assert result.stderr.splitlines()[1].strip() == "... Pass statistics report ..."
    assert len(result.stderr.splitlines()) == 4


def test_statistics_are_printed_after_a_pass_error_not_an_internal_error(
    local_passes: None,
) -> None:
    failed = run_opt(
        ["-", "-p", "func.func(test-mark{fail-on=g})", "--mlir-pass-statistics"], TWO_FUNCS
    )
    assert failed.code == 1
    assert "refusing @g" in failed.stderr and "Pass statistics report" in failed.stderr
    crashed = run_opt(["-", "-p", "test-crash", "--mlir-pass-statistics"], TWO_FUNCS)
    assert crashed.code == 2
    assert len(crashed.stderr.splitlines()) == 1


# --- timing ----------------------------------------------------------------------------------


def test_json_timing_parses_and_nests() -> None:
    result = run_opt(
        ["-", "-p", "func.func(cse),dce", "--mlir-timing", "--mlir-output-format=json"],
        TWO_FUNCS,
    )
    assert result.code == 0, result.stderr
    report = json.loads(result.stderr)
    names = [row["name"] for row in report]
    assert names == [
        "Parser",
        "Verifier",
        "'func.func' Pipeline",
        "dce",
        "(verifier)",
        "Output",
        "Rest",
        "Total",
    ]
    nested = report[2]["passes"]
    assert [row.get("name") for row in nested] == ["cse", "(verifier)", None]
    assert nested[-1] == {}
    assert report[-1]["wall"]["percentage"] == 100.0
    for row in report:
        assert set(row["wall"]) == {"duration", "percentage"}
        assert row["wall"]["duration"] >= 0.0
    assert "Execution time report" not in result.stderr


def test_json_timing_layout_is_mlir_opts() -> None:
    timing = Timing({("Parser",): 0.25, ("'func.func' Pipeline",): 0.5})
    timing.add(("'func.func' Pipeline", "cse"), 0.25)
    timing.add(("Output",), 0.25)
    assert timing.report("json") == (
        "[\n"
        '{"wall": {"duration":   0.2500, "percentage":  25.0}, "name": "Parser", "passes": [\n'
        "{}]},\n"
        '{"wall": {"duration":   0.5000, "percentage":  50.0}, "name": "\'func.func\' Pipeline", "passes": [\n'
        '  {"wall": {"duration":   0.2500, "percentage":  25.0}, "name": "cse", "passes": [\n'
        "  {}]},\n"
        "{}]},\n"
        '{"wall": {"duration":   0.2500, "percentage":  25.0}, "name": "Output", "passes": [\n'
        "{}]},\n"
        '{"wall": {"duration":   0.0000, "percentage":   0.0}, "name": "Rest"},\n'
        '{"wall": {"duration":   1.0000, "percentage": 100.0}, "name": "Total"}\n'
        "]\n"
    )


def test_text_timing_is_the_default_format() -> None:
    text = run_opt(["-", "--mlir-timing", "--mlir-output-format=text"], TWO_FUNCS)
    default = run_opt(["-", "--mlir-timing"], TWO_FUNCS)
    for result in (text, default):
        assert result.code == 0
        assert "Execution time report" in result.stderr


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("--mlir-output-format=xml", "argument --mlir-output-format: invalid choice: 'xml'"),
        (
            "--mlir-pass-statistics-display=tree",
            "argument --mlir-pass-statistics-display: invalid choice: 'tree'",
        ),
    ],
)
def test_bad_choices_are_usage_errors(flag: str, message: str) -> None:
    result = run_opt(["-", flag], TWO_FUNCS)
    assert result.code == 1
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"teeny-opt: error: {message}")


# --- IR printing -----------------------------------------------------------------------------


def _banners(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("// -----// IR Dump")]


def test_print_before_and_after_named_passes() -> None:
    pipeline = "func.func(cse,canonicalize),dce"
    repeated = run_opt(
        ["-", "-p", pipeline, "--mlir-print-ir-after=cse", "--mlir-print-ir-after=dce", "-o", "-"],
        TWO_FUNCS,
    )
    listed = run_opt(["-", "-p", pipeline, "--mlir-print-ir-after=cse,dce"], TWO_FUNCS)
    for result in (repeated, listed):
        assert result.code == 0, result.stderr
        assert _banners(result.stderr) == [
            "// -----// IR Dump After cse ('func.func' operation: @f) //----- //",
            "// -----// IR Dump After cse ('func.func' operation: @g) //----- //",
            "// -----// IR Dump After dce //----- //",
        ]
    before = run_opt(["-", "-p", pipeline, "--mlir-print-ir-before=canonicalize"], TWO_FUNCS)
    assert _banners(before.stderr) == [
        "// -----// IR Dump Before canonicalize ('func.func' operation: @f) //----- //",
        "// -----// IR Dump Before canonicalize ('func.func' operation: @g) //----- //",
    ]


def test_print_after_is_no_longer_an_abbreviation_of_after_all() -> None:
    result = run_opt(["-", "-p", "cse,dce", "--mlir-print-ir-after=dce"], TWO_FUNCS)
    assert _banners(result.stderr) == ["// -----// IR Dump After dce //----- //"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("cs", "--mlir-print-ir-after: unknown pass 'cs' (valid: "),
        ("cse,cs", "; did you mean 'cse'?"),
        ("cleanup", "unknown pass 'cleanup'"),
        ("", "unknown pass ''"),
    ],
)
def test_print_after_unknown_pass_is_a_usage_error(value: str, message: str) -> None:
    result = run_opt(["-", f"--mlir-print-ir-after={value}"], TWO_FUNCS)
    assert result.code == 1
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("teeny-opt: error: --mlir-print-ir-after: unknown pass")
    assert message in result.stderr
    before = run_opt(["-", f"--mlir-print-ir-before={value}"], TWO_FUNCS)
    assert before.code == 1
    assert before.stderr.startswith("teeny-opt: error: --mlir-print-ir-before: unknown pass")


def test_print_after_change_skips_passes_that_change_nothing() -> None:
    result = run_opt(
        [
            "-",
            "-p",
            "func.func(cse),dce",
            "--mlir-print-ir-after-all",
            "--mlir-print-ir-after-change",
        ],
        TWO_FUNCS,
    )
    assert result.code == 0
    # cse changes @f only; dce has nothing left to remove.
    assert _banners(result.stderr) == [
        "// -----// IR Dump After cse ('func.func' operation: @f) //----- //"
    ]
    named = run_opt(
        [
            "-",
            "-p",
            "func.func(cse),dce",
            "--mlir-print-ir-after=dce",
            "--mlir-print-ir-after-change",
        ],
        TWO_FUNCS,
    )
    assert _banners(named.stderr) == []
    alone = run_opt(["-", "-p", "func.func(cse)", "--mlir-print-ir-after-change"], TWO_FUNCS)
    assert _banners(alone.stderr) == []  # a modifier, as in mlir-opt


def test_print_after_failure_prints_only_the_failed_pass(local_passes: None) -> None:
    result = run_opt(
        ["-", "-p", "func.func(cse,test-mark{fail-on=g})", "--mlir-print-ir-after-failure"],
        TWO_FUNCS,
    )
    assert result.code == 1
    assert _banners(result.stderr) == [
        "// -----// IR Dump After test-mark Failed ('func.func' operation: @g) //----- //"
    ]
    # The IR as the failed pass left it.
    assert "func.func @g() attributes {test.marked}" in result.stderr
    assert "-:7:1: error: pass 'test-mark' failed: refusing @g" in result.stderr


def test_print_after_all_also_dumps_a_failed_pass(local_passes: None) -> None:
    result = run_opt(["-", "-p", "test-crash", "--mlir-print-ir-after-all"], TWO_FUNCS)
    assert result.code == 2
    assert _banners(result.stderr) == ["// -----// IR Dump After test-crash Failed //----- //"]
    assert result.stderr.splitlines()[-1].startswith("teeny-opt: error: internal error")


def test_dumps_follow_the_printing_flags() -> None:
    result = run_opt(
        ["-", "-p", "dce", "--mlir-print-ir-after-all", "--mlir-print-op-generic"], TWO_FUNCS
    )
    assert '"func.func"() <{sym_name = "f"' in result.stderr
    located = run_opt(
        ["-", "-p", "dce", "--mlir-print-ir-after-all", "--mlir-print-debuginfo"], TWO_FUNCS
    )
    assert 'loc("-":2:8)' in located.stderr


# --- crash reproducers -----------------------------------------------------------------------

TRAILER = re.compile(
    r"\n\{-#\n  external_resources: \{\n    mlir_reproducer: \{\n"
    r'      pipeline: "(?P<pipeline>.*)",\n      disable_threading: true,\n'
    r"      verify_each: (?P<verify>true|false)\n    \}\n  \}\n#-\}\n\Z"
)


def _reproduce(tmp_path: Path, pipeline: str, *flags: str) -> tuple[int, str, Path]:
    source = tmp_path / "in.mlir"
    source.write_text(TWO_FUNCS)
    repro = tmp_path / "repro.mlir"
    result = run_opt(
        [
            str(source),
            "-p",
            pipeline,
            f"--mlir-pass-pipeline-crash-reproducer={repro}",
            *flags,
        ]
    )
    return result.code, result.stderr, repro


def test_reproducer_on_a_pass_error(tmp_path: Path, local_passes: None) -> None:
    code, stderr, repro = _reproduce(tmp_path, "func.func(cse),test-diagnose{severity=error},dce")
    assert code == 1
    assert stderr.splitlines()[-1] == f"teeny-opt: note: reproducer generated at '{repro}'"
    text = repro.read_text()
    match = TRAILER.search(text)
    assert match is not None, text
    assert match["pipeline"] == "builtin.module(test-diagnose{severity=error})"
    assert match["verify"] == "true"
    # The IR before the failing pass: cse has run.
    module = teeny_ir.parse_module(text, filename=str(repro))
    assert teeny_ir.print_module(module).count("arith.addi") == 1

    replay = run_opt([str(repro), "--run-reproducer"])
    assert replay.code == 1
    assert f"{repro}:2:3: error: visited this function" in replay.stderr
    assert "reproducer generated" not in replay.stderr


def test_reproducer_of_a_nested_pass_holds_the_whole_module(
    tmp_path: Path, local_passes: None
) -> None:
    code, _, repro = _reproduce(tmp_path, "func.func(test-mark{fail-on=g})")
    assert code == 1
    text = repro.read_text()
    match = TRAILER.search(text)
    assert match is not None
    assert match["pipeline"] == "builtin.module(func.func(test-mark{fail-on=g}))"
    # @f was marked before @g failed; @g is as it was before the pass ran on it.
    lines = text.splitlines()
    assert "test.marked" in next(line for line in lines if "@f(" in line)
    assert "test.marked" not in next(line for line in lines if "@g(" in line)
    replay = run_opt([str(repro), "--run-reproducer"])
    assert replay.code == 1
    assert "pass 'test-mark' failed: refusing @g" in replay.stderr


def test_reproducer_on_a_crash(tmp_path: Path, local_passes: None) -> None:
    code, stderr, repro = _reproduce(tmp_path, "cse,test-crash")
    assert code == 2
    assert stderr.splitlines() == [
        "teeny-opt: error: internal error in pass 'test-crash': ZeroDivisionError: boom",
        f"teeny-opt: note: reproducer generated at '{repro}'",
    ]
    match = TRAILER.search(repro.read_text())
    assert match is not None and match["pipeline"] == "builtin.module(test-crash)"
    replay = run_opt([str(repro), "--run-reproducer"])
    assert replay.code == 2
    assert replay.stderr.splitlines() == [stderr.splitlines()[0]]


def test_reproducer_of_a_crash_that_broke_the_function(tmp_path: Path, local_passes: None) -> None:
    code, stderr, repro = _reproduce(tmp_path, "func.func(test-mark{fail-on=g crash=true})")
    assert code == 2
    assert "RuntimeError: crashed on purpose" in stderr
    text = repro.read_text()
    # @g as it was before the crash, terminator included.
    assert "func.func @g() {\n    func.return\n  }" in text
    replay = run_opt([str(repro), "--run-reproducer"])
    assert replay.code == 2 and "crashed on purpose" in replay.stderr


def test_reproducer_on_invalid_ir_records_verify_each(tmp_path: Path, local_passes: None) -> None:
    code, stderr, repro = _reproduce(tmp_path, "test-break-ir")
    assert code == 2 and "left invalid IR" in stderr
    match = TRAILER.search(repro.read_text())
    assert match is not None and match["verify"] == "true"
    assert run_opt([str(repro), "--run-reproducer"]).code == 2
    # The trailer's verify_each wins over the command line.
    unverified = repro.read_text().replace("verify_each: true", "verify_each: false")
    repro.write_text(unverified)
    assert run_opt([str(repro), "--run-reproducer"]).code == 0
    code, _, repro = _reproduce(tmp_path, "test-crash", "--verify-each=false")
    match = TRAILER.search(repro.read_text())
    assert code == 2 and match is not None and match["verify"] == "false"


def test_no_reproducer_without_a_pass_failure(tmp_path: Path, local_passes: None) -> None:
    code, stderr, repro = _reproduce(tmp_path, "func.func(cse)")
    assert code == 0 and not repro.exists() and stderr == ""
    (tmp_path / "bad.mlir").write_text("func.func @f( {\n")
    result = run_opt(
        [str(tmp_path / "bad.mlir"), "-p", "cse", f"--mlir-pass-pipeline-crash-reproducer={repro}"]
    )
    assert result.code == 1 and not repro.exists()


def test_reproducer_quotes_option_strings(tmp_path: Path, local_passes: None) -> None:
    code, _, repro = _reproduce(tmp_path, 'func.func(test-mark{fail-on=g note="a b"})')
    assert code == 1
    canonical = 'builtin.module(func.func(test-mark{fail-on=g note="a b"}))'
    assert f"pipeline: {json.dumps(canonical)}," in repro.read_text()
    replay = run_opt([str(repro), "--run-reproducer", "--dump-pass-pipeline"])
    assert replay.code == 1
    assert replay.stderr.splitlines()[0] == canonical
    assert "refusing @g" in replay.stderr


def test_reproducer_never_overwrites_the_input(tmp_path: Path) -> None:
    source = tmp_path / "in.mlir"
    source.write_text(TWO_FUNCS)
    result = run_opt([str(source), "-p", "cse", f"--mlir-pass-pipeline-crash-reproducer={source}"])
    assert result.code == 1
    assert result.stderr == (
        f"teeny-opt: error: refusing to overwrite the input file '{source}' with the crash "
        "reproducer\n"
    )
    assert source.read_text() == TWO_FUNCS


def test_reproducer_write_failure_is_reported(tmp_path: Path, test_passes: None) -> None:
    source = tmp_path / "in.mlir"
    source.write_text(TWO_FUNCS)
    missing = tmp_path / "missing" / "repro.mlir"
    result = run_opt(
        [str(source), "-p", "test-crash", f"--mlir-pass-pipeline-crash-reproducer={missing}"]
    )
    assert result.code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 2 and "internal error in pass 'test-crash'" in lines[0]
    assert lines[1].startswith(f"teeny-opt: error: crash reproducer: cannot write '{missing}'")


def test_reproducer_to_stdout_and_written_atomically(tmp_path: Path, test_passes: None) -> None:
    result = run_opt(
        ["-", "-p", "test-crash", "--mlir-pass-pipeline-crash-reproducer=-"], TWO_FUNCS
    )
    assert result.code == 2
    assert result.stdout.startswith("builtin.module {") and TRAILER.search(result.stdout)
    source = tmp_path / "in.mlir"
    source.write_text(TWO_FUNCS)
    repro = tmp_path / "repro.mlir"
    repro.write_text("old\n")
    run_opt([str(source), "-p", "test-crash", f"--mlir-pass-pipeline-crash-reproducer={repro}"])
    assert TRAILER.search(repro.read_text())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.mlir", "repro.mlir"]


def test_reproducer_flag_only_once() -> None:
    result = run_opt(
        [
            "-",
            "--mlir-pass-pipeline-crash-reproducer=a",
            "--mlir-pass-pipeline-crash-reproducer=b",
        ],
        TWO_FUNCS,
    )
    assert result.code == 1
    assert result.stderr == (
        "teeny-opt: error: --mlir-pass-pipeline-crash-reproducer may only occur once\n"
    )


# --- --run-reproducer --------------------------------------------------------------------------

GOOD_TRAILER = (
    '{-# external_resources: { mlir_reproducer: { pipeline: "builtin.module(func.func(cse))", '
    "disable_threading: true, verify_each: true } } #-}\n"
)


def test_run_reproducer_runs_the_trailer_pipeline() -> None:
    result = run_opt(["-", "--run-reproducer"], TWO_FUNCS + GOOD_TRAILER + "// a last comment\n")
    assert result.code == 0, result.stderr
    assert result.stdout.count("arith.addi") == 1
    plain = run_opt(["-"], TWO_FUNCS + GOOD_TRAILER)  # read and ignored without the flag
    assert plain.code == 0 and plain.stdout.count("arith.addi") == 2


def test_run_reproducer_with_split_input_file_runs_every_chunk() -> None:
    text = TWO_FUNCS + "// -----\n" + TWO_FUNCS + GOOD_TRAILER
    result = run_opt(["-", "--run-reproducer", "--split-input-file"], text)
    assert result.code == 0, result.stderr
    assert result.stdout.count("arith.addi") == 2


def test_run_reproducer_refuses_a_command_line_pipeline() -> None:
    for flags in (["-p", "cse"], ["--pass-pipeline=builtin.module(cse)"]):
        result = run_opt(["-", "--run-reproducer", *flags], TWO_FUNCS + GOOD_TRAILER)
        assert result.code == 1
        assert result.stderr == (
            "teeny-opt: error: --run-reproducer runs the reproducer's own pipeline: "
            "give no --pass-pipeline or -p\n"
        )


LINE = len(TWO_FUNCS.splitlines()) + 1
"""The line the trailer starts on, after TWO_FUNCS."""


@pytest.mark.parametrize(
    ("trailer", "column", "message"),
    [
        ("", None, "expected the input to end with a reproducer trailer"),
        ("// {-# a comment #-}", None, "expected the input to end with a reproducer trailer"),
        ("{-# external_resources: {} ", 1, "unterminated reproducer trailer: expected '#-}'"),
        ("{-#-}", 1, "unterminated reproducer trailer"),
        ("{-##-}", 4, "expected a key in the reproducer trailer"),
        ("{-# #-}", 5, "expected a key in the reproducer trailer"),
        (
            "{-# dialect_resources: {} #-}",
            1,
            "the reproducer trailer has no 'external_resources' entry",
        ),
        (
            "{-# external_resources: 1 #-}",
            25,
            "'external_resources' in the reproducer trailer must be a dictionary",
        ),
        ("{-# external_resources: {} #-}", 25, "has no 'mlir_reproducer' entry"),
        ("{-# external_resources: { mlir_reproducer: {} } #-}", 44, "has no 'pipeline' entry"),
        (
            "{-# external_resources: { mlir_reproducer: { pipeline: 1 } } #-}",
            56,
            "'pipeline' in the reproducer trailer must be a string",
        ),
        (
            '{-# external_resources: { mlir_reproducer: { pipeline: "x", verify_each: yes } } #-}',
            74,
            "'verify_each' in the reproducer trailer must be true or false",
        ),
        (
            '{-# external_resources: { mlir_reproducer: { pipeline: "x", threads: 4 } } #-}',
            61,
            "unknown key 'threads' in 'mlir_reproducer' (valid: pipeline, disable_threading, verify_each)",
        ),
        (
            '{-# external_resources: { mlir_reproducer: { pipeline: "x", pipeline: "y" } } #-}',
            61,
            "duplicate key 'pipeline' in the reproducer trailer",
        ),
        (
            '{-# external_resources: { mlir_reproducer: { pipeline "x" } } #-}',
            55,
            "expected ':' after 'pipeline' in the reproducer trailer",
        ),
        (
            "{-# external_resources: { mlir_reproducer: { pipeline: } } #-}",
            56,
            "expected a value in the reproducer trailer",
        ),
        (
            '{-# external_resources: { mlir_reproducer: { pipeline: "x" ] } #-}',
            60,
            "unexpected character ']' in the reproducer trailer",
        ),
        (
            '{-# external_resources: { mlir_reproducer: { pipeline: "x" "y" } } #-}',
            60,
            "expected ',' or '}' in the reproducer trailer",
        ),
        (
            '{-# external_resources: { mlir_reproducer: { pipeline: "x" } } } #-}',
            64,
            "expected ',' or '#-}' in the reproducer trailer",
        ),
        (
            '{-# external_resources: { mlir_reproducer: { pipeline: "x\\q" } } #-}',
            58,
            "invalid escape in a string",
        ),
        (
            '{-# external_resources: { mlir_reproducer: { pipeline: "x } } #-}',
            56,
            "unterminated string in the reproducer trailer",
        ),
        (
            '{-# external_resources: { mlir_reproducer: { pipeline: "builtin.module(cs)" } } #-}',
            72,
            "unknown pass or pipeline 'cs'",
        ),
        (
            '{-# external_resources: { mlir_reproducer: { pipeline: "func.func(cse)" } } #-}',
            57,
            "a pipeline must be anchored on 'builtin.module', not 'func.func'",
        ),
        (
            '{-# external_resources: { mlir_reproducer: { pipeline: "cse" } } #-}',
            60,
            "expected '(' after op anchor 'cse'",
        ),
    ],
)
def test_malformed_reproducer_trailer_is_a_located_error(
    trailer: str, column: int | None, message: str
) -> None:
    result = run_opt(["-", "--run-reproducer"], TWO_FUNCS + trailer + "\n")
    assert result.code == 1
    assert "Traceback" not in result.stderr
    header = result.stderr.splitlines()[0]
    match = re.fullmatch(r"-:(\d+):(\d+): error: (.*)", header)
    assert match is not None, result.stderr
    assert message in match[3]
    if column is None:
        assert (int(match[1]), int(match[2])) == (LINE - 1, 2)  # the end of the input
    else:
        assert (int(match[1]), int(match[2])) == (LINE, column), header
    assert result.stdout == ""


def test_run_reproducer_reports_bad_utf8_and_bad_ir() -> None:
    bad = run_opt(["-", "--run-reproducer"], b"func.func @f() {\xff}\n" + GOOD_TRAILER.encode())
    assert bad.code == 1 and "-:1:17: error: invalid UTF-8 byte 0xff" in bad.stderr
    broken = run_opt(["-", "--run-reproducer"], "func.func @f( {\n" + GOOD_TRAILER)
    assert broken.code == 1 and broken.stderr.startswith("-:1:")


# --- exact flag names, --help, --version -------------------------------------------------------


@pytest.mark.parametrize(
    "flag",
    ["--list", "--mlir-print-ir-aft", "--pass-pipe=builtin.module(cse)", "--verify", "--mlir-tim"],
)
def test_abbreviated_flags_are_refused(flag: str) -> None:
    result = run_opt(["-", flag], TWO_FUNCS)
    assert result.code == 1
    assert result.stderr == f"teeny-opt: error: unrecognized arguments: {flag}\n"


def test_help_lists_the_new_flags() -> None:
    result = run_opt(["--help"])
    assert result.code == 0
    for flag in (
        "--mlir-print-ir-before PASS",
        "--mlir-print-ir-after PASS",
        "--mlir-print-ir-after-change",
        "--mlir-print-ir-after-failure",
        "--mlir-pass-statistics",
        "--mlir-pass-statistics-display",
        "--mlir-output-format",
        "--mlir-pass-pipeline-crash-reproducer FILE",
        "--run-reproducer",
        "--version",
    ):
        assert flag in result.stdout, flag
    assert "fuse-epilogues" in result.stdout
    assert run_opt(["--list-passes"]).code == 0


def test_version() -> None:
    result = run_opt(["--version"])
    assert result.code == 0 and result.stderr == ""
    assert result.stdout == (
        f"teeny-opt (teeny_ir) {metadata.version('teeny-ir')}\n  xDSL {metadata.version('xdsl')}\n"
    )
