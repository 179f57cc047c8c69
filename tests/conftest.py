"""Shared fixtures: in-process teeny-opt runs, passes registered only for tests, and
a Triton cache of each test module's own for its ahead-of-time compilations.

The passes here are never in `teeny_ir.driver.pass_registry` outside a test that asks for
them, so `--list-passes` never shows them. What the tests share beyond glue (kernel-test
cases and their harness, the tolerance rule, a sample plan) is `teeny_ir.testing`.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

import pytest
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from teeny_ir.backend.triton_settings import INTERPRETER_MALLOC
from teeny_ir.core.diagnostics import Severity, engine_of
from teeny_ir.driver import pass_registry

if TYPE_CHECKING:
    from teeny_ir.testing.kernels import Results


HEAVY_FIRST = (
    "test_distributed.py",
    "test_cuda_interpreted.py",
    "test_faults_training.py",
    "test_linear_gemm.py",
    "test_kernel_templates.py",
    "test_implicit_gemm_conv.py",
    "test_pool_backward_kernels.py",
    "test_depthwise_conv.py",
    "test_depthwise_backward_kernels.py",
    "test_teeny_train.py",
    "test_memory_plan.py",
    "test_trainer.py",
    "test_compile_cache.py",
    "test_attention_backward_kernels.py",
)
"""Test files that take longest (measured), run first: ``--dist loadfile`` hands
files to the workers in collection order, so a long file collected last would
keep one worker busy after the other has finished."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    order = {name: rank for rank, name in enumerate(HEAVY_FIRST)}
    keyed = [(order.get(item.path.name, len(order)), index, item) for index, item in enumerate(items)]
    items[:] = [item for _, _, item in sorted(keyed, key=lambda k: (k[0], k[1]))]

# The kernel harness subprocesses interpret kernels as the runtime's worker does:
# with its malloc settings (glibc reads them when a process starts).
for _name, _value in INTERPRETER_MALLOC.items():
    os.environ.setdefault(_name, _value)
# Compiled variants go to a cache of this test session's own, never the user's.
if "TEENY_CACHE_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile

    os.environ["TEENY_CACHE_DIR"] = tempfile.mkdtemp(prefix="teeny-test-cache-")
    atexit.register(shutil.rmtree, os.environ["TEENY_CACHE_DIR"], True)


@dataclass
class OptResult:
    code: int
    stdout: str
    stderr: str


def run_opt(argv: Sequence[str], stdin: str | bytes = b"") -> OptResult:
    """Run teeny-opt in-process and capture its streams."""
    from teeny_ir.driver.opt import run

    data = stdin.encode() if isinstance(stdin, str) else stdin
    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), io.BytesIO(data), out, err)
    return OptResult(code, out.getvalue(), err.getvalue())


@dataclass(frozen=True)
class CrashPass(ModulePass):
    """Raises an exception (a stand-in for a compiler bug)."""

    name = "test-crash"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        raise ZeroDivisionError("boom")


@dataclass(frozen=True)
class BreakIRPass(ModulePass):
    """Leaves invalid IR: removes every function's terminator."""

    name = "test-break-ir"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for func in list(op.walk()):
            if func.name == "func.return":
                func.detach()
                func.erase()


@dataclass(frozen=True)
class DiagnosePass(ModulePass):
    """Emits a diagnostic of the chosen severity on every function, with a note."""

    name = "test-diagnose"
    severity: Literal["error", "warning", "remark"] = "remark"
    fail: bool = False

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        engine = engine_of(ctx)
        for func in op.walk():
            if func.name == "func.func":
                diagnostic = engine.emit(Severity(self.severity), "visited this function", func)
                diagnostic.attach_note("a note from the pass", diagnostic.location)
        if self.fail:
            raise PassFailedException("gave up")


@dataclass(frozen=True)
class OptionsPass(ModulePass):
    """Records its options on the module as an attribute (to check parsing)."""

    name = "test-options"
    count: int = 1
    ratio: float = 0.5
    flag: bool = False
    label: str = ""
    sizes: tuple[int, ...] = ()
    mode: Literal["inference", "training"] = "inference"
    out_dir: str | None = None

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        op.attributes["test.options"] = builtin.StringAttr(repr(self))


@dataclass(frozen=True)
class FunctionOnlyPass(ModulePass):
    """Counts the ops it is run on (anchored on functions only)."""

    name = "test-function-only"
    anchors: ClassVar[tuple[str, ...]] = ("func.func",)
    visited: ClassVar[list[str]] = []

    def apply(self, ctx: Context, op: Operation) -> None:  # type: ignore[override]
        FunctionOnlyPass.visited.append(op.name)


TEST_PASSES: tuple[type[ModulePass], ...] = (
    CrashPass,
    BreakIRPass,
    DiagnosePass,
    OptionsPass,
    FunctionOnlyPass,
)


@pytest.fixture(scope="module")
def results(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Results:
    """The requesting kernel-test module's ``HARNESS_CASES`` (its cases and the
    mutants that show its checks catch something) run in one interpreter
    process (`teeny_ir.testing.kernels.run_cases`): each output's padded buffer."""
    from teeny_ir.testing.kernels import run_cases

    module = request.module
    name = Path(str(module.__file__)).stem.removeprefix("test_")
    return run_cases(module.HARNESS_CASES, tmp_path_factory.mktemp(name))


@pytest.fixture(scope="module")
def triton_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """``TRITON_CACHE_DIR`` at a fresh folder for the module's tests (never the
    user's cache): what its AOT compilations write."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRITON_CACHE_DIR", str(tmp_path_factory.mktemp("triton-cache")))
        yield


@pytest.fixture
def test_passes() -> Iterator[None]:
    """Register the test-only passes for one test."""
    for cls in TEST_PASSES:
        pass_registry.register(pass_registry.PassEntry(cls.name, lambda cls=cls: cls))
    try:
        yield
    finally:
        for cls in TEST_PASSES:
            pass_registry.unregister(cls.name)
        FunctionOnlyPass.visited.clear()
