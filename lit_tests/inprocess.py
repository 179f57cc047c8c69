"""A lit test format that runs RUN lines inside the lit worker process.

Starting a ``teeny-opt`` process costs about 0.25 s, most of it importing
xDSL; running it in-process costs about 10 ms. Each lit worker imports
`teeny_ir.driver.opt` and `filecheck` once and then calls them directly.

RUN lines are read and substituted by lit itself (``%s``, ``%t``, ``%{name}``,
``\\`` continuations, ``REQUIRES:``/``UNSUPPORTED:``), then parsed with lit's
shell parser. Handled in-process:

- ``teeny-opt ARGS``: `teeny_ir.driver.opt.run`;
- ``filecheck ARGS`` / ``FileCheck ARGS``: the `filecheck` package's matcher;
- ``not CMD``: exit status inverted (non-zero -> 0, zero -> 1); a crash (an
  exception escaping the tool) stays a failure, as with LLVM's ``not``;
- ``CMD 2>&1``: stderr merged into the command's piped stdout;
- pipelines ``a | b`` (with ``pipefail``, lit's default: any failing command
  fails the line) and sequences ``a && b``, ``a || b``, ``a ; b``.

Any other command, redirect or glob sends the whole RUN line to ``bash``
(``set -o pipefail``; ``not`` and ``FileCheck`` defined as shell functions;
the tool directory first on PATH), so nothing is skipped silently.

``XFAIL:`` lines are rejected (UNRESOLVED): an expected failure would hide
whatever goes wrong in the test.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import lit.formats
import lit.Test
import lit.TestRunner
from lit.ShCommands import Command, GlobItem, Pipeline, Seq
from lit.ShUtil import ShParser

IN_PROCESS_TOOLS = ("teeny-opt", "filecheck", "FileCheck")
MERGE_STDERR = ((">&", 2), "1")
"""lit's parse of ``2>&1``: the only redirect run in-process."""

_SHELL_PRELUDE = (
    "set -o pipefail\n"
    'not() { if "$@"; then return 1; else return 0; fi; }\n'
    'FileCheck() { filecheck "$@"; }\n'
)


@dataclass
class CommandResult:
    """What one command (or a fallback shell run) did."""

    args: list[str]
    exit_code: int
    stdout: str = ""
    stderr: str = ""
    crashed: bool = False
    how: str = "in-process"
    piped: bool = False
    """Whether stdout went into the next command of a pipeline (and is not logged)."""


@dataclass
class LineResult:
    """The outcome of one RUN line: its exit status and every command run."""

    exit_code: int
    commands: list[CommandResult] = field(default_factory=list[CommandResult])

    def log(self) -> str:
        """lit-style report of each command: arguments, output, exit status."""
        lines: list[str] = []
        for result in self.commands:
            shown = result.args[0] if result.how == "bash" else shlex.join(result.args)
            lines.append(f"# executed command ({result.how}): {shown}")
            for name, text in (("stdout", result.stdout), ("stderr", result.stderr)):
                if text and not (name == "stdout" and result.piped):
                    lines.append(f"# .---command {name}------------")
                    lines.extend(f"# | {line}" for line in text.rstrip("\n").split("\n"))
                    lines.append("# `-----------------------------")
            if result.crashed:
                lines.append("# error: command crashed")
            elif result.exit_code != 0:
                lines.append(f"# error: command failed with exit status: {result.exit_code}")
        return "\n".join(lines)


# --- in-process tools -------------------------------------------------------


def _run_teeny_opt(args: list[str], stdin: bytes, stdout: io.StringIO, stderr: io.StringIO) -> int:
    from teeny_ir.driver import opt

    return opt.run(args, io.BytesIO(stdin), stdout, stderr)


def _run_filecheck(args: list[str], stdin: bytes, stdout: io.StringIO, stderr: io.StringIO) -> int:
    import filecheck.colors
    from filecheck.finput import FInput
    from filecheck.matcher import Matcher
    from filecheck.options import parse_argv_options
    from filecheck.parser import Parser

    # Decided at import from the worker's own stdout; a piped filecheck
    # process never colours its output, and neither do we.
    filecheck.colors.COLOR_SUPPORT = False
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            opts = parse_argv_options(["filecheck", *args])
        except RuntimeError as err:
            print(f"filecheck: {err}", file=stderr)
            return 2
        try:
            if opts.input_file == "-":
                content = stdin.decode("utf-8")
            else:
                content = Path(opts.input_file).read_text(encoding="utf-8")
            checks = Parser.from_opts(opts)
        except OSError as err:
            print(f"filecheck: {err}", file=stderr)
            return 2
        # Matcher captures sys.stderr when it is built: build it inside the redirect.
        matcher = Matcher(
            opts, FInput(opts.input_file, FInput.canonicalize_line_ends(content)), checks
        )
        return matcher.run()


Tool = Callable[[list[str], bytes, io.StringIO, io.StringIO], int]
TOOLS: dict[str, Tool] = {
    "teeny-opt": _run_teeny_opt,
    "filecheck": _run_filecheck,
    "FileCheck": _run_filecheck,
}


def _strip_not(args: list[str]) -> tuple[int, list[str]]:
    """Count leading ``not``s; returns (count, remaining arguments)."""
    count = 0
    while count < len(args) and args[count] == "not":
        count += 1
    return count, args[count:]


def _run_command(command: Command, stdin: bytes) -> CommandResult:
    args = [str(arg) for arg in command.args]
    negations, tool_args = _strip_not(args)
    stdout = io.StringIO()
    stderr = stdout if command.redirects else io.StringIO()  # only 2>&1 gets here
    tool = TOOLS[tool_args[0]]
    crashed = False
    try:
        exit_code = tool(tool_args[1:], stdin, stdout, stderr)
    except (Exception, SystemExit):  # noqa: BLE001 - a tool crash is a test failure, shown in full
        stderr.write(traceback.format_exc())
        exit_code, crashed = 2, True
    for _ in range(negations):
        if not crashed:
            exit_code = 0 if exit_code != 0 else 1
    merged = stderr is stdout
    return CommandResult(
        args, exit_code, stdout.getvalue(), "" if merged else stderr.getvalue(), crashed
    )


# --- shell structure ----------------------------------------------------------


def _runs_in_process(node: Seq | Pipeline | Command) -> bool:
    """Whether every command, redirect and argument is one we handle."""
    if isinstance(node, Seq):
        return (
            node.op in ("&&", "||", ";")
            and _runs_in_process(node.lhs)
            and _runs_in_process(node.rhs)
        )
    if isinstance(node, Pipeline):
        return not node.negate and all(_runs_in_process(c) for c in node.commands)
    if any(isinstance(arg, GlobItem) for arg in node.args):
        return False
    if any(redirect != MERGE_STDERR for redirect in node.redirects):
        return False
    _, tool_args = _strip_not([str(arg) for arg in node.args])
    return bool(tool_args) and tool_args[0] in TOOLS


def _run_pipeline(pipeline: Pipeline, pipefail: bool) -> LineResult:
    results: list[CommandResult] = []
    data = b""
    for command in pipeline.commands:
        if results:
            results[-1].piped = True
        result = _run_command(command, data)
        results.append(result)
        data = result.stdout.encode("utf-8")
    exit_code = results[-1].exit_code
    if pipefail:
        failed = [r.exit_code for r in results if r.exit_code != 0]
        exit_code = failed[-1] if failed else 0
    return LineResult(exit_code, results)


def _run_node(node: Seq | Pipeline, pipefail: bool) -> LineResult:
    if isinstance(node, Pipeline):
        return _run_pipeline(node, pipefail)
    left = _run_node(node.lhs, pipefail)
    run_right = (
        node.op == ";"
        or (node.op == "&&" and left.exit_code == 0)
        or (node.op == "||" and left.exit_code != 0)
    )
    if not run_right:
        return left
    right = _run_node(node.rhs, pipefail)
    return LineResult(right.exit_code, left.commands + right.commands)


def _run_in_shell(command: str, cwd: str, env: dict[str, str], timeout: float | None) -> LineResult:
    bash = shutil.which("bash", path=env.get("PATH"))
    if bash is None:
        result = CommandResult([command], 127, stderr="bash not found: cannot run this RUN line")
        return LineResult(127, [result])
    try:
        done = subprocess.run(
            [bash, "-c", _SHELL_PRELUDE + command],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        result = CommandResult([command], 124, stderr=f"timed out after {timeout} s", how="bash")
        return LineResult(124, [result])
    result = CommandResult(
        [command],
        done.returncode,
        done.stdout.decode("utf-8", errors="replace"),
        done.stderr.decode("utf-8", errors="replace"),
        how="bash",
    )
    return LineResult(done.returncode, [result])


@contextlib.contextmanager
def _working_directory(path: str) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def run_command_line(
    command: str,
    cwd: str,
    env: dict[str, str],
    *,
    pipefail: bool = True,
    timeout: float | None = None,
) -> LineResult:
    """Run one substituted RUN line: in-process when every command is ours,
    otherwise through bash."""
    try:
        node = ShParser(command, False, pipefail).parse()
    except ValueError:
        node = None  # bash gives the real syntax error
    if node is None or not _runs_in_process(node):
        return _run_in_shell(command, cwd, env, timeout)
    with _working_directory(cwd):
        return _run_node(node, pipefail)


# --- the lit format ---------------------------------------------------------


class InProcessShTest(lit.formats.FileBasedTest):
    """lit's ShTest with teeny-opt and filecheck run in the worker process."""

    def __init__(self, tool_dirs: Sequence[str] = ()) -> None:
        self.tool_dirs = list(tool_dirs)
        """Directories put first on PATH for RUN lines run through bash."""

    def execute(self, test: lit.Test.Test, lit_config: object) -> lit.Test.Result:
        if test.config.unsupported:
            return lit.Test.Result(lit.Test.UNSUPPORTED, "Test is unsupported")
        parsed = lit.TestRunner.parseIntegratedTestScript(test)
        if isinstance(parsed, lit.Test.Result):
            return parsed
        if test.xfails:
            test.xfails = []  # so lit does not turn UNRESOLVED into anything else
            return lit.Test.Result(
                lit.Test.UNRESOLVED,
                "XFAIL not supported by the in-process runner: an expected failure "
                "hides what fails; fix the test or the code instead",
            )
        if getattr(lit_config, "noExecute", False):
            return lit.Test.Result(lit.Test.PASS)

        tmp_dir, tmp_base = lit.TestRunner.getTempPaths(test)
        substitutions = lit.TestRunner.getDefaultSubstitutions(test, tmp_dir, tmp_base)
        conditions = {feature: True for feature in test.config.available_features}
        script = lit.TestRunner.applySubstitutions(
            parsed, substitutions, conditions, recursion_limit=test.config.recursiveExpansionLimit
        )
        if any(tmp_dir in line for line in script):
            Path(tmp_dir).mkdir(parents=True, exist_ok=True)

        cwd = os.path.dirname(test.getExecPath())
        env = self._environment(test)
        timeout = getattr(lit_config, "maxIndividualTestTime", 0) or None
        log: list[str] = []
        for line in script:
            where, command = _split_debug_prefix(line)
            if not command.strip():
                continue
            log.append(f"# {where}\n{command}")
            result = run_command_line(
                command, cwd, env, pipefail=test.config.pipefail, timeout=timeout
            )
            log.append(result.log())
            if result.exit_code != 0:
                log.append(f"# error: RUN line failed with exit status: {result.exit_code}")
                return lit.Test.Result(lit.Test.FAIL, "\n".join(log) + "\n")
        return lit.Test.Result(lit.Test.PASS, "\n".join(log) + "\n")

    def _environment(self, test: lit.Test.Test) -> dict[str, str]:
        env = dict(os.environ)
        env.update(test.config.environment)
        env["PATH"] = os.pathsep.join([*self.tool_dirs, env.get("PATH", "")])
        return env


def _split_debug_prefix(line: str) -> tuple[str, str]:
    """``%dbg(RUN: at line 3) cmd`` -> ("RUN: at line 3", "cmd")."""
    match = re.fullmatch(lit.TestRunner.kPdbgRegex, line)
    if match is None:
        return "command line", line
    return match.group(1), match.group(2).strip()
