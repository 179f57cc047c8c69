"""The in-process lit runner (lit_tests/inprocess.py): RUN-line semantics and
lit integration.

Direct tests call `run_command_line` on substituted RUN lines; one lit run
over a small generated suite checks what lit reports for each kind of test.
"""

from __future__ import annotations

import importlib.util
import io
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIT_TESTS = ROOT / "lit_tests"
TOOL_DIR = Path(sys.executable).parent


def _load_runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lit_inprocess", LIT_TESTS / "inprocess.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


runner = _load_runner()

GOOD_IR = textwrap.dedent(
    """\
    func.func @f(%a: i32) -> i32 {
      %0 = arith.addi %a, %a : i32
      %1 = arith.addi %a, %a : i32
      %2 = arith.muli %0, %1 : i32
      func.return %2 : i32
    }
    """
)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """An IR file and check files for it."""
    paths = {
        "ir": tmp_path / "input.mlir",
        "cse": tmp_path / "cse.check",
        "absent": tmp_path / "absent.check",
        "unknown-pass": tmp_path / "unknown-pass.check",
        "hello": tmp_path / "hello.check",
    }
    paths["ir"].write_text(GOOD_IR)
    paths["cse"].write_text(
        "CHECK: %[[X:.*]] = arith.addi\nCHECK-NEXT: arith.muli %[[X]], %[[X]]\n"
    )
    paths["absent"].write_text("CHECK: arith.subi\n")
    paths["unknown-pass"].write_text("CHECK: error: unknown pass or pipeline 'bogus'\n")
    paths["hello"].write_text("CHECK: hello\n")
    return paths


def _run(command: str, tmp_path: Path, **kwargs: object) -> object:
    env = dict(os.environ, PATH=f"{TOOL_DIR}{os.pathsep}{os.environ.get('PATH', '')}")
    return runner.run_command_line(command, str(tmp_path), env, **kwargs)


def test_passing_pipeline_runs_in_process(files: dict[str, Path], tmp_path: Path) -> None:
    result = _run(f"teeny-opt {files['ir']} -p cse | filecheck {files['cse']}", tmp_path)
    assert result.exit_code == 0, result.log()
    assert [c.args[0] for c in result.commands] == ["teeny-opt", "filecheck"]
    assert {c.how for c in result.commands} == {"in-process"}


def test_quoted_pipeline_argument(files: dict[str, Path], tmp_path: Path) -> None:
    command = (
        f"teeny-opt {files['ir']} --pass-pipeline='builtin.module(func.func(cse))' "
        f"| FileCheck {files['cse']}"
    )
    result = _run(command, tmp_path)
    assert result.exit_code == 0, result.log()
    assert result.commands[0].args[1:] == [
        str(files["ir"]),
        "--pass-pipeline=builtin.module(func.func(cse))",
    ]


def test_failing_filecheck_fails_the_line_with_its_message(
    files: dict[str, Path], tmp_path: Path
) -> None:
    result = _run(f"teeny-opt {files['ir']} | filecheck {files['absent']}", tmp_path)
    assert result.exit_code == 1
    assert "Couldn't match" in result.commands[-1].stderr
    log = result.log()
    assert f"filecheck {files['absent']}" in log
    assert "command failed with exit status: 1" in log


def test_filecheck_on_empty_input_fails(files: dict[str, Path], tmp_path: Path) -> None:
    # Without 2>&1 the error goes to stderr and filecheck reads nothing.
    result = _run(
        f"not teeny-opt {files['ir']} -p bogus | filecheck {files['unknown-pass']}", tmp_path
    )
    assert result.exit_code == 1
    assert "is empty" in result.commands[-1].stderr


def test_merged_stderr_reaches_the_next_command(files: dict[str, Path], tmp_path: Path) -> None:
    result = _run(
        f"not teeny-opt {files['ir']} -p bogus 2>&1 | filecheck {files['unknown-pass']}", tmp_path
    )
    assert result.exit_code == 0, result.log()
    assert result.commands[0].stderr == ""  # merged into stdout


@pytest.mark.parametrize(
    ("command", "exit_code"),
    [
        ("teeny-opt {ir} -p bogus", 1),
        ("not teeny-opt {ir} -p bogus", 0),
        ("not teeny-opt {ir}", 1),
        ("not not teeny-opt {ir}", 0),
    ],
)
def test_not_inverts_the_exit_status(
    files: dict[str, Path], tmp_path: Path, command: str, exit_code: int
) -> None:
    result = _run(command.format(ir=files["ir"]), tmp_path)
    assert result.exit_code == exit_code, result.log()


def test_not_does_not_turn_a_crash_into_success(
    files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(args: list[str], stdin: bytes, stdout: io.StringIO, stderr: io.StringIO) -> int:
        raise RuntimeError("boom")

    monkeypatch.setitem(runner.TOOLS, "teeny-opt", crash)
    result = _run(f"not teeny-opt {files['ir']}", tmp_path)
    assert result.exit_code != 0
    assert result.commands[0].crashed
    assert "RuntimeError: boom" in result.commands[0].stderr
    assert "command crashed" in result.log()


def test_pipefail_fails_on_an_earlier_command(files: dict[str, Path], tmp_path: Path) -> None:
    # The last command succeeds on the first one's error message; the first failed.
    command = f"teeny-opt {files['ir']} -p bogus 2>&1 | filecheck {files['unknown-pass']}"
    assert _run(command, tmp_path).exit_code == 1
    assert _run(command, tmp_path, pipefail=False).exit_code == 0


def test_sequences_run_in_process(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out.mlir"
    result = _run(
        f"teeny-opt {files['ir']} -p cse -o {out} && filecheck {files['cse']} --input-file {out}",
        tmp_path,
    )
    assert result.exit_code == 0, result.log()
    assert {c.how for c in result.commands} == {"in-process"}
    skipped = _run(f"teeny-opt {files['ir']} -p bogus && teeny-opt {files['ir']}", tmp_path)
    assert skipped.exit_code == 1
    assert len(skipped.commands) == 1
    rescued = _run(f"teeny-opt {files['ir']} -p bogus || teeny-opt {files['ir']}", tmp_path)
    assert rescued.exit_code == 0
    assert len(rescued.commands) == 2


@pytest.mark.parametrize(
    ("command", "exit_code"),
    [
        ("echo hello | filecheck {hello}", 0),
        ("echo goodbye | filecheck {hello}", 1),
        ("false", 1),
        ("not false", 0),
        ("teeny-opt {ir} > /dev/null", 0),
        ("false | true", 1),  # pipefail holds in the shell too
    ],
)
def test_other_commands_fall_back_to_the_shell(
    files: dict[str, Path], tmp_path: Path, command: str, exit_code: int
) -> None:
    result = _run(command.format(ir=files["ir"], hello=files["hello"]), tmp_path)
    assert result.exit_code == exit_code, result.log()
    assert [c.how for c in result.commands] == ["bash"]


# --- through lit ---------------------------------------------------------------

SUITE_CONFIG = f"""\
import os
import sys
sys.path.insert(0, {str(LIT_TESTS)!r})
import inprocess
config.name = "runner-check"
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.test_format = inprocess.InProcessShTest([{str(TOOL_DIR)!r}])
"""

SUITE = {
    "pass.mlir": """\
        // RUN: teeny-opt %s -p cse | filecheck %s
        // CHECK: arith.muli %[[X:.*]], %[[X]]
        """
    + GOOD_IR,
    "fail.mlir": """\
        // RUN: teeny-opt %s | filecheck %s
        // CHECK: arith.subi
        """
    + GOOD_IR,
    "continuation.mlir": """\
        // RUN: teeny-opt %s \\
        // RUN:   -p cse \\
        // RUN: | filecheck %s
        // CHECK: arith.muli %[[X:.*]], %[[X]]
        """
    + GOOD_IR,
    "temp-file.mlir": """\
        // RUN: teeny-opt %s -p cse -o %t && filecheck %s --input-file %t
        // CHECK: arith.muli %[[X:.*]], %[[X]]
        """
    + GOOD_IR,
    "fallback.mlir": """\
        // RUN: echo 'made by echo' | filecheck %s
        // CHECK: made by echo
        """,
    "xfail.mlir": """\
        // XFAIL: *
        // RUN: teeny-opt %s | filecheck %s
        // CHECK: never there
        """,
}


@pytest.fixture(scope="module")
def lit_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    """Run lit once over the generated suite: test name -> (status, output)."""
    suite = tmp_path_factory.mktemp("suite")
    (suite / "lit.cfg.py").write_text(SUITE_CONFIG)
    for name, text in SUITE.items():
        (suite / name).write_text(textwrap.dedent(text))
    lit = TOOL_DIR / "lit"
    done = subprocess.run(
        [str(lit), "-a", "--no-progress-bar", "-j", "2", str(suite)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    # With -a, each result line is followed by that test's output.
    headers = list(
        re.finditer(r"^([A-Z]+): runner-check :: (\S+) \(\d+ of \d+\)$", done.stdout, re.MULTILINE)
    )
    report: dict[str, tuple[str, str]] = {}
    for header, following in zip(headers, [*headers[1:], None], strict=True):
        end = following.start() if following is not None else len(done.stdout)
        report[header.group(2)] = (header.group(1), done.stdout[header.end() : end])
    assert set(report) == set(SUITE), done.stdout + done.stderr
    return report


@pytest.mark.parametrize("name", ["pass.mlir", "continuation.mlir", "temp-file.mlir"])
def test_lit_passes(lit_report: dict[str, tuple[str, str]], name: str) -> None:
    status, output = lit_report[name]
    assert status == "PASS", output
    assert "(in-process)" in output
    assert "(bash)" not in output


def test_lit_failure_shows_command_status_and_stderr(
    lit_report: dict[str, tuple[str, str]],
) -> None:
    status, output = lit_report["fail.mlir"]
    assert status == "FAIL"
    assert "# RUN: at line 1" in output
    assert "executed command (in-process): filecheck" in output
    assert "Couldn't match" in output
    assert "RUN line failed with exit status: 1" in output


def test_lit_fallback_runs_through_bash(lit_report: dict[str, tuple[str, str]]) -> None:
    status, output = lit_report["fallback.mlir"]
    assert status == "PASS", output
    assert "executed command (bash): echo 'made by echo' | filecheck" in output


def test_lit_rejects_xfail(lit_report: dict[str, tuple[str, str]]) -> None:
    status, output = lit_report["xfail.mlir"]
    assert status == "UNRESOLVED"
    assert "XFAIL not supported" in output
