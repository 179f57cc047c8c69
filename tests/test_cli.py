"""teeny-opt as a user runs it: the console script, files, output rules, usage errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .conftest import run_opt

SMALL = "func.func @f() {\n  func.return\n}\n"
TEENY_OPT = str(Path(sys.executable).parent / "teeny-opt")


def test_console_script_smoke(tmp_path: Path) -> None:
    source = tmp_path / "in.mlir"
    source.write_text(SMALL)
    done = subprocess.run(
        [TEENY_OPT, str(source), "-p", "cse"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "func.func @f()" in done.stdout
    bad = subprocess.run(
        [TEENY_OPT, "-"], input="func.func @f( {", capture_output=True, text=True, check=False
    )
    assert bad.returncode == 1
    assert bad.stderr.startswith("-:1:")
    assert "Traceback" not in bad.stderr


def test_output_file_is_written_atomically(tmp_path: Path) -> None:
    source = tmp_path / "in.mlir"
    source.write_text(SMALL)
    out = tmp_path / "out.mlir"
    out.write_text("old contents\n")
    os.chmod(out, 0o640)
    assert run_opt([str(source), "-o", str(out)]).code == 0
    assert "func.func @f()" in out.read_text()
    assert (out.stat().st_mode & 0o777) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.mlir", "out.mlir"]


def test_failed_run_leaves_output_untouched(tmp_path: Path) -> None:
    source = tmp_path / "in.mlir"
    source.write_text("func.func @f( {\n")
    out = tmp_path / "out.mlir"
    out.write_text("precious\n")
    result = run_opt([str(source), "-o", str(out)])
    assert result.code == 1
    assert out.read_text() == "precious\n"


def test_output_equal_to_input_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "in.mlir"
    source.write_text(SMALL)
    link = tmp_path / "alias.mlir"
    link.symlink_to(source)
    for target in (str(source), str(link), str(tmp_path / "." / "in.mlir")):
        result = run_opt([str(source), "-o", target])
        assert result.code == 1
        assert "refusing to overwrite the input file" in result.stderr
    assert source.read_text() == SMALL


def test_device_output_is_written_directly(tmp_path: Path) -> None:
    source = tmp_path / "in.mlir"
    source.write_text(SMALL)
    assert run_opt([str(source), "-o", os.devnull]).code == 0
    assert Path(os.devnull).exists() and not Path(os.devnull).is_file()


def test_unwritable_output_is_a_clear_error(tmp_path: Path) -> None:
    source = tmp_path / "in.mlir"
    source.write_text(SMALL)
    result = run_opt([str(source), "-o", str(tmp_path / "missing" / "out.mlir")])
    assert result.code == 1
    assert "cannot write" in result.stderr
    result = run_opt([str(source), "-o", str(tmp_path)])
    assert result.code == 1 and "is a directory" in result.stderr


def test_missing_input_and_bad_flags_exit_1(tmp_path: Path) -> None:
    result = run_opt([str(tmp_path / "nope.mlir")])
    assert result.code == 1 and "cannot read" in result.stderr
    result = run_opt(["--no-such-flag"])
    assert result.code == 1 and "unrecognized arguments" in result.stderr
    result = run_opt(["-", "--pass-pipeline=builtin.module(cse)", "-p", "cse"], SMALL)
    assert result.code == 1 and "not both" in result.stderr
    result = run_opt(["-", "--verify-each=maybe"], SMALL)
    assert result.code == 1


def test_split_input_file_keeps_absolute_lines_and_reports_all_chunks() -> None:
    text = (
        "func.func @a() {\n  func.return\n}\n"
        "// -----\n"
        "func.func @b() {\n  %0 = arith.addi\n}\n"
        "// -----\n"
        "func.func @c( {\n"
    )
    result = run_opt(["-", "--split-input-file"], text)
    assert result.code == 1
    assert "-:7:1: error:" in result.stderr
    assert "-:9:" in result.stderr
    ok = run_opt(["-", "--split-input-file"], text.split("// -----")[0] + "// -----\n" + SMALL)
    assert ok.code == 0
    assert ok.stdout.count("builtin.module") == 2 and "// -----" in ok.stdout


def test_verifier_error_has_see_current_operation_note_except_under_verify_diagnostics() -> None:
    text = (
        "func.func @f(%x: tensor<2xf32>) {\n"
        '  %y = "graph.silu"(%x) : (tensor<2xf32>) -> tensor<3xf32>\n'
        "  func.return\n}\n"
    )
    result = run_opt(["-"], text)
    assert result.code == 1
    assert "-:2:8: error: 'graph.silu' op" in result.stderr
    assert "note: see current operation:" in result.stderr
    annotated = text.replace("  %y", "  // expected-error@+1 {{'graph.silu' op}}\n  %y")
    checked = run_opt(["-", "--verify-diagnostics"], annotated)
    assert checked.code == 0, checked.stderr
    assert checked.stderr == ""


def test_new_output_file_gets_the_usual_mode(tmp_path: Path) -> None:
    source = tmp_path / "in.mlir"
    source.write_text(SMALL)
    out = tmp_path / "new.mlir"
    umask = os.umask(0o022)
    try:
        assert run_opt([str(source), "-o", str(out)]).code == 0
    finally:
        os.umask(umask)
    assert (out.stat().st_mode & 0o777) == 0o644  # not mkstemp's 0600
