"""The pass manager and driver around passes: anchors, options, failures, instrumentation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import teeny_ir
from teeny_ir.driver.pass_manager import PassManager

from .conftest import FunctionOnlyPass, OptionsPass, run_opt

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


def test_crashing_pass_is_internal_error_exit_2(test_passes: None) -> None:
    result = run_opt(["-", "-p", "test-crash"], TWO_FUNCS)
    assert result.code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "test-crash" in lines[0] and "ZeroDivisionError" in lines[0]
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_invalid_ir_left_by_pass_names_the_pass(test_passes: None) -> None:
    result = run_opt(["-", "-p", "cse,test-break-ir,dce"], TWO_FUNCS)
    assert result.code == 2
    assert "test-break-ir" in result.stderr and "left invalid IR" in result.stderr
    assert "Traceback" not in result.stderr


def test_verify_each_false_skips_verification(test_passes: None) -> None:
    result = run_opt(["-", "-p", "test-break-ir", "--verify-each=false"], TWO_FUNCS)
    assert result.code == 0


def test_test_passes_never_listed(test_passes: None) -> None:
    listing = run_opt(["--list-passes"]).stdout
    assert "cse" in listing and "canonicalize" in listing and "dce" in listing
    # Registered here, so they are listed now; the real check is the next test.
    assert "test-crash" in listing


def test_list_passes_without_test_registrations() -> None:
    listing = run_opt(["--list-passes"]).stdout
    assert "test-" not in listing
    assert "cleanup" in listing
    help_text = run_opt(["--help"]).stdout
    assert "canonicalize" in help_text and "--pass-pipeline" in help_text


def test_pass_errors_with_notes_exit_1(test_passes: None) -> None:
    result = run_opt(["-", "-p", "test-diagnose{severity=error}"], TWO_FUNCS)
    assert result.code == 1
    assert "-:1:1: error: visited this function" in result.stderr
    assert "-:7:1: error: visited this function" in result.stderr
    assert "-:1:1: note: a note from the pass" in result.stderr
    assert result.stdout == ""


def test_pass_warnings_and_remarks_do_not_fail(test_passes: None) -> None:
    result = run_opt(["-", "-p", "test-diagnose{severity=warning}"], TWO_FUNCS)
    assert result.code == 0
    assert "-:1:1: warning: visited this function" in result.stderr
    assert "builtin.module" in result.stdout


def test_pass_failed_exception_is_exit_1(test_passes: None) -> None:
    result = run_opt(["-", "-p", "test-diagnose{fail=true}"], TWO_FUNCS)
    assert result.code == 1
    assert "pass 'test-diagnose' failed: gave up" in result.stderr


def test_verify_diagnostics_checks_pass_remarks(test_passes: None) -> None:
    annotated = (
        "// expected-remark@+2 {{visited this function}}\n"
        "// expected-note@+1 {{a note from the pass}}\n"
        "func.func @g() {\n  func.return\n}\n"
    )
    ok = run_opt(["-", "--verify-diagnostics", "-p", "test-diagnose"], annotated)
    assert ok.code == 0, ok.stderr
    missing = run_opt(["-", "--verify-diagnostics"], annotated)
    assert missing.code == 1
    assert 'expected remark "visited this function" was not produced' in missing.stderr


def test_options_are_typed(test_passes: None) -> None:
    module = teeny_ir.parse_module("func.func @g() {\n  func.return\n}\n")
    PassManager.parse(
        'test-options{count=3 ratio=1.5e-3 flag label="a b" sizes=1,2,3 mode=training out-dir=/tmp/x.y}'
    ).run(module)
    recorded = module.attributes["test.options"]
    assert "count=3" in str(recorded) and "sizes=(1, 2, 3)" in str(recorded)
    assert "flag=True" in str(recorded) and "out_dir='/tmp/x.y'" in str(recorded)
    assert "ratio=0.0015" in str(recorded) and "label='a b'" in str(recorded)


@pytest.mark.parametrize(
    ("pipeline", "message"),
    [
        ("test-options{cout=1}", "has no option 'cout'"),
        ("test-options{cout=1}", "did you mean 'count'?"),
        ("test-options{count=x}", "bad value 'x' for option 'count'"),
        ("test-options{flag=maybe}", "expected true or false"),
        ("test-options{mode=trainign}", "did you mean 'training'?"),
        ("test-options{count=1,2}", "expected a single int"),
        ("test-options{sizes=1,a}", "expected an integer"),
        ("test-options{count=\u0663}", "expected an integer"),  # ARABIC-INDIC DIGIT THREE
        ("test-options{ratio=\u0663}", "bad value '\u0663' for option 'ratio' of pass"),
        ("test-options{ratio=\uff11.5}", "expected a number"),  # FULLWIDTH DIGIT ONE
        ("func.func(test-options)", "cannot run on 'func.func'"),
        ("test-function-only", "cannot run on 'builtin.module'"),
        ("func.func(func.func(cse))", "'func.func' cannot be nested in 'func.func'"),
        ("fnuc.func(cse)", "did you mean 'func.func'?"),
        ("cleanup{x=1}", "takes no options"),
        ("func.func(cleanup)", "must be used at the top level"),
        ("cse{", "<pipeline>:1:"),
    ],
)
def test_pipeline_errors_are_one_line(test_passes: None, pipeline: str, message: str) -> None:
    result = run_opt(["-", "-p", pipeline], TWO_FUNCS)
    assert result.code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert message in lines[0]


def test_nested_pass_runs_once_per_function(test_passes: None) -> None:
    result = run_opt(["-", "-p", "func.func(test-function-only)"], TWO_FUNCS)
    assert result.code == 0, result.stderr
    assert FunctionOnlyPass.visited == ["func.func", "func.func"]


def test_nested_cse_only_touches_functions() -> None:
    result = run_opt(["-", "--pass-pipeline=builtin.module(func.func(cse))"], TWO_FUNCS)
    assert result.code == 0
    assert result.stdout.count("arith.addi") == 1


def test_dump_pass_pipeline_round_trips(test_passes: None) -> None:
    text = 'test-options{sizes=1,2 out-dir=/tmp/a.b label="x y"},cleanup,func.func(cse)'
    first = PassManager.parse(text).pipeline_string()
    assert first == (
        'builtin.module(test-options{label="x y" sizes=1,2 out-dir=/tmp/a.b},'
        "func.func(canonicalize,cse),dce,func.func(cse))"
    )
    assert PassManager.parse(first).pipeline_string() == first
    result = run_opt(["-", "-p", text, "--dump-pass-pipeline"], TWO_FUNCS)
    assert result.stderr.splitlines()[0] == first


@given(
    count=st.integers(-(10**12), 10**12),
    # float options hold what float32 can (the precision programs compute in); beyond, a
    # located error (tests/test_faults_files.py)
    ratio=st.floats(allow_nan=False, allow_infinity=False, width=32),
    flag=st.booleans(),
    label=st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12),
    sizes=st.lists(st.integers(-99, 99), max_size=4).map(tuple),
    mode=st.sampled_from(["inference", "training"]),
)
def test_option_values_round_trip(
    count: int, ratio: float, flag: bool, label: str, sizes: tuple[int, ...], mode: str
) -> None:
    from teeny_ir.driver import pass_registry

    pass_registry.register(pass_registry.PassEntry(OptionsPass.name, lambda: OptionsPass))
    try:
        original = OptionsPass(count, ratio, flag, label, sizes, mode)  # type: ignore[arg-type]
        manager = PassManager(PassManager.parse("").root)
        manager.root.children.append(original)
        text = manager.pipeline_string()
        reparsed = PassManager.parse(text)
        assert reparsed.root.children == [original], text
        assert reparsed.pipeline_string() == text
    finally:
        pass_registry.unregister(OptionsPass.name)


def test_timing_and_ir_dumps_go_to_stderr() -> None:
    result = run_opt(
        [
            "-",
            "-p",
            "func.func(cse),dce",
            "--mlir-timing",
            "--mlir-print-ir-before-all",
            "--mlir-print-ir-after-all",
        ],
        TWO_FUNCS,
    )
    assert result.code == 0
    err = result.stderr
    assert "// -----// IR Dump Before cse ('func.func' operation: @f) //----- //" in err
    assert "// -----// IR Dump After cse ('func.func' operation: @g) //----- //" in err
    assert "// -----// IR Dump After dce //----- //" in err
    assert "Execution time report" in err
    for row in ("Parser", "Verifier", "'func.func' Pipeline", "cse", "dce", "Output", "Total"):
        assert row in err
    assert "IR Dump" not in result.stdout


# Pass aliases: an old pass name keeps working after a rename.

CONV_SILU = """\
func.func @f(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  %w = graph.param "w" : tensor<16x8x1x1xf32>
  %c = graph.conv2d %x, %w : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  %y = graph.silu %c : tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}
"""


def test_an_alias_builds_the_pass_it_names() -> None:
    from teeny_ir.driver import pass_registry

    assert pass_registry.lookup("fuse-conv-bn-act") is pass_registry.lookup("fuse-epilogues")
    assert "fuse-conv-bn-act" not in pass_registry.names()
    manager = PassManager.parse("fuse-conv-bn-act{mode=training},func.func(fuse-conv-bn-act)")
    assert manager.pipeline_string() == (
        "builtin.module(fuse-epilogues{mode=training},func.func(fuse-epilogues))"
    )


def test_an_alias_and_its_pass_give_the_same_output() -> None:
    old = run_opt(["-", "-p", "fuse-conv-bn-act"], CONV_SILU)
    new = run_opt(["-", "-p", "fuse-epilogues"], CONV_SILU)
    assert old.code == new.code == 0
    assert "graph.fused_conv2d" in new.stdout and old.stdout == new.stdout


def test_print_ir_after_an_alias_prints_after_its_pass() -> None:
    result = run_opt(
        ["-", "-p", "fuse-epilogues", "--mlir-print-ir-after=fuse-conv-bn-act"], CONV_SILU
    )
    assert result.code == 0
    assert "// -----// IR Dump After fuse-epilogues //----- //" in result.stderr


def test_list_passes_and_help_show_aliases_under_their_pass() -> None:
    for flag in ("--list-passes", "--help"):
        lines = run_opt([flag]).stdout.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("  fuse-epilogues "))
        entry = lines[
            start + 1 : next(i for i in range(start + 1, len(lines)) if lines[i][2] != " ")
        ]
        assert any("alias: fuse-conv-bn-act" in line for line in entry), (flag, entry)
        assert not any(line.startswith("  fuse-conv-bn-act ") for line in lines), flag


def test_an_alias_cannot_be_registered_as_a_pass() -> None:
    from teeny_ir.driver import pass_registry

    entry = pass_registry.PassEntry("fuse-conv-bn-act", lambda: OptionsPass)
    with pytest.raises(ValueError, match="'fuse-conv-bn-act' is an alias of pass 'fuse-epilogues'"):
        pass_registry.register(entry)
    assert pass_registry.lookup("fuse-conv-bn-act") is pass_registry.lookup("fuse-epilogues")
