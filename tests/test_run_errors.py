"""teeny-run and the runtime on bad input: one sentence and exit 1, never a
traceback, nothing the user wrote overwritten; a failed worker is one line and
exit 2, its full traceback kept in a log file that line names.

Most cases run teeny-run in-process on the hand-written fixture plan of
test_plan.py; the torch-less cases run the console script with a
``sitecustomize`` that hides torch (from both teeny-run and its worker), and
the plan files that are not regular files (a FIFO, a symlink to /dev/zero)
run it in a process of its own with a timeout, so a regression fails instead
of hanging.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.machinery
import importlib.util
import io
import os
import pickle
import struct
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import save_file

from teeny_ir import runtime
from teeny_ir.backend import kernel_files
from teeny_ir.backend.plan import Arg, CompiledSpec, Plan, load_plan, write_plan
from teeny_ir.driver.run import run
from teeny_ir.runtime import backends
from teeny_ir.runtime.backends import interpreter
from teeny_ir.testing import sample_plan as fixtures

TEENY_RUN = str(Path(sys.executable).with_name("teeny-run"))
NEEDS_TORCH = "the interpreter backend needs torch (pip install 'teeny-ir[interp]')"


VAR = f"{fixtures.PREFIX}bn.running_var"


@dataclasses.dataclass
class Case:
    root: Path
    plan: Plan

    @property
    def out(self) -> Path:
        return self.root / "out.npz"

    def argv(self, *extra: str, weights: str = "w.safetensors", plan: str = "plan") -> list[str]:
        inputs = [x for name in ("a.npy", "b.npy") for x in ("--input", str(self.root / name))]
        return [str(self.root / plan), "--weights", str(self.root / weights), *inputs, *extra]


@pytest.fixture
def case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Case:
    """The fixture plan in ``plan/``, weights, inputs ``a.npy`` and ``b.npy`` (batch 3);
    the interpreter's work directories go to ``tmp/``."""
    (tmp_path / "plan").mkdir()
    plan = fixtures.write_fixture(tmp_path / "plan")
    save_file(fixtures.fixture_weights(), str(tmp_path / "w.safetensors"))
    for name, array in zip("ab", fixtures.fixture_inputs(3), strict=True):
        np.save(tmp_path / f"{name}.npy", array)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    return Case(tmp_path, plan)


@pytest.fixture
def no_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if a worker process is started."""

    def refuse(workdir: Path) -> int:
        raise AssertionError("a worker was started")

    monkeypatch.setattr(interpreter, "_start_worker", refuse)


def teeny_run(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(argv, out, err)
    return code, err.getvalue()


def one_error(argv: list[str], code: int = 1) -> str:
    """Run teeny-run; check the exit code and that stderr is one error line."""
    got, stderr = teeny_run(argv)
    assert got == code, stderr
    assert stderr.count("\n") == 1 and "Traceback" not in stderr, stderr
    assert stderr.startswith("teeny-run: error: "), stderr
    return stderr.removeprefix("teeny-run: error: ").rstrip("\n")


def use_plan(monkeypatch: pytest.MonkeyPatch, plan: Plan) -> None:
    """Make `runtime.load` return ``plan`` as it is (a plan the loader, which
    proves launches at small batches, would accept in its file form)."""
    monkeypatch.setattr(runtime, "load_plan", lambda root: plan)


def with_grid(plan: Plan, launch: int, axis: int, text: str) -> Plan:
    launches = list(plan.launches)
    grid = list(launches[launch].grid)
    grid[axis] = text
    launches[launch] = dataclasses.replace(launches[launch], grid=(grid[0], grid[1], grid[2]))
    return dataclasses.replace(plan, launches=tuple(launches))


# --- expressions that cannot be evaluated at the run's batch ----------------


def test_grid_dividing_by_zero_at_the_runs_batch(
    case: Case, monkeypatch: pytest.MonkeyPatch, no_worker: None
) -> None:
    use_plan(monkeypatch, with_grid(case.plan, 1, 1, "cdiv(1, 3 - B)"))
    assert one_error(case.argv("-o", str(case.out))) == (
        "launch 1 ('elementwise_0'): grid[1] = 'cdiv(1, 3 - B)' cannot be evaluated at B = 3: "
        "division by zero in cdiv"
    )
    assert not case.out.exists()


def test_argument_dividing_by_zero_at_the_runs_batch(
    case: Case, monkeypatch: pytest.MonkeyPatch, no_worker: None
) -> None:
    launches = list(case.plan.launches)
    args = list(launches[1].args)
    args[3] = Arg(expr="floordiv(B * 126, B - 3)")
    launches[1] = dataclasses.replace(launches[1], args=tuple(args))
    use_plan(monkeypatch, dataclasses.replace(case.plan, launches=tuple(launches)))
    assert one_error(case.argv("-o", str(case.out))) == (
        "launch 1 ('elementwise_0'): argument 'numel' = 'floordiv(B * 126, B - 3)' cannot "
        "be evaluated at B = 3: division by zero in floordiv"
    )


def test_argument_outside_its_integer_type(
    case: Case, monkeypatch: pytest.MonkeyPatch, no_worker: None
) -> None:
    launches = list(case.plan.launches)
    args = list(launches[1].args)
    args[3] = Arg(expr="B * 1000000000")
    launches[1] = dataclasses.replace(launches[1], args=tuple(args))
    use_plan(monkeypatch, dataclasses.replace(case.plan, launches=tuple(launches)))
    assert one_error(case.argv("-o", str(case.out))) == (
        "launch 1 ('elementwise_0'): argument 'numel' = 'B * 1000000000' is 3000000000 at "
        "B = 3, outside [0, 2147483647] (i32 sizes and strides)"
    )


def test_buffer_shape_dividing_by_zero(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    buffers = list(case.plan.buffers)
    buffers[0] = dataclasses.replace(buffers[0], shape=("floordiv(B, B - 3)", 6, 3, 7))
    use_plan(monkeypatch, dataclasses.replace(case.plan, buffers=tuple(buffers)))
    executable = runtime.load(case.root / "plan")
    with pytest.raises(runtime.RuntimeInputError, match=r"at B=3 the shape of buffer 't0'"):
        executable.check_batch(3)


# --- input files --------------------------------------------------------------


def npy_header(shape: tuple[int, ...], descr: str = "<f4") -> bytes:
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}"
    header += " " * (117 - len(header)) + "\n"  # 128 bytes in all, as numpy aligns it
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode()


def test_a_200_byte_npy_claiming_18_tib(case: Case) -> None:
    huge = case.root / "huge.npy"
    count = 18 * 2**40 // 4
    huge.write_bytes(npy_header((count,)) + bytes(72))
    assert huge.stat().st_size == 200
    argv = case.argv("-o", str(case.out))
    argv[argv.index(str(case.root / "a.npy"))] = str(huge)
    assert one_error(argv) == (
        f"cannot read input '{huge}': its header claims shape [{count}] of float32 "
        f"({count * 4} bytes), but the file holds 72 bytes of data"
    )


def test_a_truncated_npy(case: Case) -> None:
    short = case.root / "short.npy"
    short.write_bytes(npy_header((3, 5, 3, 7)) + bytes(100))
    argv = case.argv("-o", str(case.out))
    argv[argv.index(str(case.root / "a.npy"))] = str(short)
    assert "1260 bytes), but the file holds 100 bytes of data" in one_error(argv)


class _Planted:
    """Unpickling this creates a file: the proof that nothing was unpickled."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.marker), "w"))


def test_object_npy_is_never_unpickled(case: Case) -> None:
    marker = case.root / "unpickled"
    evil = case.root / "evil.npy"
    np.save(evil, np.array([_Planted(marker)], dtype=object), allow_pickle=True)
    assert pickle.dumps(_Planted(marker))  # a real payload
    argv = case.argv("-o", str(case.out))
    argv[argv.index(str(case.root / "a.npy"))] = str(evil)
    assert one_error(argv).startswith(
        f"cannot read input '{evil}': Object arrays cannot be loaded without unpickling"
    )
    assert not marker.exists()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda root: _mkdir(root / "inputs"), "cannot read input '{path}': it is a directory"),
        (
            lambda root: _npz(root / "x.npz"),
            "input '{path}' is an .npz archive; give one .npy array per --input",
        ),
        (
            lambda root: _write(root / "x.npy", b"not an array"),
            "cannot read input '{path}': it is not a .npy file (see its start)",
        ),
        (
            lambda root: _write(root / "empty.npy", b""),
            "cannot read input '{path}': it is not a .npy file",
        ),
    ],
    ids=["directory", "npz", "not npy", "empty"],
)
def test_bad_input_files(case: Case, make: Any, message: str) -> None:
    path = make(case.root)
    argv = case.argv("-o", str(case.out))
    argv[argv.index(str(case.root / "a.npy"))] = str(path)
    assert one_error(argv).startswith(message.format(path=path))


def _mkdir(path: Path) -> Path:
    path.mkdir()
    return path


def _npz(path: Path) -> Path:
    np.savez(path, x=np.zeros(3, np.float32))
    return path


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


# --- weights, plan directory and output paths --------------------------------


def test_weights_that_are_a_directory(case: Case) -> None:
    assert one_error(case.argv("-o", str(case.out), weights=".")) == (
        f"weights '{case.root}' is a directory; give one .safetensors file"
    )


def test_weights_that_are_not_safetensors(case: Case) -> None:
    np.savez(case.root / "w.npz", x=np.zeros(3))
    message = one_error(case.argv("-o", str(case.out), weights="w.npz"))
    assert message.startswith(f"cannot read weights '{case.root}/w.npz' as a .safetensors file: ")


def test_plan_json_given_as_the_plan_directory(case: Case) -> None:
    assert one_error(case.argv("-o", str(case.out), plan="plan/plan.json")) == (
        f"'{case.root}/plan/plan.json' is the plan file; give its directory '{case.root}/plan'"
    )


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        ("a.npy", "'{root}/a.npy' is a file, not a plan directory (the out-dir of emit-triton)"),
        ("none", "plan directory '{root}/none' does not exist"),
    ],
)
def test_plan_directory_that_is_not_one(case: Case, plan: str, message: str) -> None:
    assert one_error(case.argv("-o", str(case.out), plan=plan)) == message.format(root=case.root)


def test_output_in_a_missing_directory_fails_before_any_work(case: Case, no_worker: None) -> None:
    out = case.root / "missing" / "out.npz"
    assert one_error(case.argv("-o", str(out))) == (
        f"cannot write '{out}': the folder '{case.root / 'missing'}' does not exist"
    )


def test_output_that_is_a_directory(case: Case, no_worker: None) -> None:
    assert one_error(case.argv("-o", str(case.root))) == (
        f"cannot write '{case.root}': it is a directory"
    )


@pytest.mark.parametrize("name", ["plan.json", "kernels/elementwise_0.py"])
def test_output_never_overwrites_the_plan(case: Case, no_worker: None, name: str) -> None:
    target = case.root / "plan" / name
    before = target.read_bytes()
    message = one_error(case.argv("-o", str(target)))
    assert message == f"refusing to overwrite the input file '{target}' with -o"
    assert target.read_bytes() == before


# --- plan files that are not regular files: refused, never waited on --------
# Each runs teeny-run in a process of its own with a timeout, so a regression
# (a FIFO opened for reading, /dev/zero read to the end) fails instead of hanging.

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
SECONDS = 60


def run_process(argv: list[str], root: Path, script: str | None = None) -> tuple[int, str]:
    """teeny-run (or ``script``, given the same arguments) in a fresh process."""
    command = [TEENY_RUN] if script is None else [sys.executable, "-c", script]
    done = subprocess.run(
        [*command, *argv],
        env=os.environ | {"TMPDIR": str(root / "tmp")},
        capture_output=True,
        text=True,
        timeout=SECONDS,
        check=False,
    )
    return done.returncode, done.stderr


def with_cubins(case: Case) -> Plan:
    """The fixture plan with an sm_90 cubin (placeholder bytes) for each kernel
    and launch configuration, rewritten into ``plan/``."""
    directory = case.root / "plan"
    kernels = []
    for kernel in case.plan.kernels:
        configs = sorted(
            {(x.num_warps, x.num_stages) for x in case.plan.launches if x.kernel == kernel.name}
        )
        compiled = []
        for warps, stages in configs:
            cubin = directory / "kernels" / f"{kernel.name}.sm90.cubin"
            cubin.write_bytes(f"not a cubin: {kernel.name}".encode())
            sha = hashlib.sha256(cubin.read_bytes()).hexdigest()
            relative = f"kernels/{cubin.name}"
            compiled.append(CompiledSpec(90, kernel.name, warps, stages, 0, relative, sha))
        kernels.append(dataclasses.replace(kernel, compiled=tuple(compiled)))
    plan = dataclasses.replace(case.plan, kernels=tuple(kernels))
    write_plan(directory, plan)
    load_plan(directory)  # a plan the loader accepts, before a file is replaced
    return plan


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    path.unlink()
    path.symlink_to("/dev/zero")


def _sparse(size: int) -> Any:
    def make(path: Path) -> None:
        with path.open("r+b") as handle:
            handle.truncate(size)  # a hole: no disk space, no memory

    return make


PLAN_JSON = "plan/plan.json"
KERNEL = "plan/kernels/elementwise_0.py"
CUBIN = "plan/kernels/elementwise_0.sm90.cubin"
NOT_REGULAR = [
    ("fifo plan.json", PLAN_JSON, _fifo, "cannot read '{path}': it is a FIFO, not a regular file"),
    (
        "fifo kernel file",
        KERNEL,
        _fifo,
        "kernel 'elementwise_0' file 'kernels/elementwise_0.py' cannot be read: it is a FIFO, "
        "not a regular file",
    ),
    (
        "fifo cubin",
        CUBIN,
        _fifo,
        "kernel 'elementwise_0' sm90 cubin 'kernels/elementwise_0.sm90.cubin' cannot be read: "
        "it is a FIFO, not a regular file",
    ),
    (
        "plan.json to /dev/zero",
        PLAN_JSON,
        _dev_zero,
        "cannot read '{path}': it is a character device, not a regular file",
    ),
    (
        "kernel file to /dev/zero",
        KERNEL,
        _dev_zero,
        "kernel 'elementwise_0' file 'kernels/elementwise_0.py' resolves outside the plan "
        "directory",
    ),
    (
        "huge plan.json",
        PLAN_JSON,
        _sparse(kernel_files.PLAN_JSON_BYTES + 1),
        f"cannot read '{{path}}': it is larger than {kernel_files.PLAN_JSON_BYTES} bytes, the "
        "most teeny_ir reads of such a file",
    ),
    (
        "huge kernel file",
        KERNEL,
        _sparse(kernel_files.KERNEL_SOURCE_BYTES + 1),
        "kernel 'elementwise_0' file 'kernels/elementwise_0.py' cannot be read: it is larger "
        f"than {kernel_files.KERNEL_SOURCE_BYTES} bytes, the most teeny_ir reads of such a file",
    ),
]


@needs_fifo
@pytest.mark.parametrize(
    ("name", "replace", "message"), [c[1:] for c in NOT_REGULAR], ids=[c[0] for c in NOT_REGULAR]
)
def test_a_plan_file_that_is_not_a_regular_file(
    case: Case, name: str, replace: Any, message: str
) -> None:
    with_cubins(case)
    path = case.root / name
    replace(path)
    code, stderr = run_process(case.argv("-o", str(case.out)), case.root)
    resolved = (case.root / "plan").resolve() / path.name
    assert (code, stderr) == (1, f"teeny-run: error: {message.format(path=resolved)}\n")
    assert not case.out.exists()


SWAP_CUBINS_AFTER_LOAD = """
import os, sys
from teeny_ir import runtime
from teeny_ir.driver.run import run
from teeny_ir.runtime.backends import cuda
from teeny_ir.testing.fake_cuda import FakeDriver

checked = runtime.load_plan

def load_then_swap(root):
    plan = checked(root)
    for kernel in plan.kernels:
        for compiled in kernel.compiled:
            (root / compiled.cubin).unlink()
            os.mkfifo(root / compiled.cubin)
    return plan

runtime.load_plan = load_then_swap
cuda._load_driver = FakeDriver
sys.exit(run(sys.argv[1:], sys.stdout, sys.stderr))
"""


@needs_fifo
def test_cuda_refuses_a_cubin_swapped_for_a_fifo_after_the_checks(case: Case) -> None:
    """The cuda backend reads each cubin again to load it: a FIFO put there
    after `load_plan` checked the directory is refused too."""
    plan = with_cubins(case)
    argv = case.argv("-o", str(case.out), "--backend", "cuda")
    code, stderr = run_process(argv, case.root, SWAP_CUBINS_AFTER_LOAD)
    first = plan.kernels[0].compiled[0].cubin
    assert (code, stderr) == (
        1,
        f"teeny-run: error: cubin '{first}' cannot be read: it is a FIFO, not a regular file\n",
    )


IMPORT_KERNEL = """
import sys
from teeny_ir.backend.kernel_files import KernelImportError, import_kernel

try:
    import_kernel(sys.argv[1], "elementwise_0")
except KernelImportError as err:
    sys.exit(str(err))
"""


@needs_fifo
def test_importing_a_kernel_file_that_is_a_fifo(case: Case) -> None:
    """What the interpreter worker does after the checks: a FIFO swapped in is
    refused, never waited on."""
    path = case.root / KERNEL
    _fifo(path)
    code, stderr = run_process([str(path)], case.root, IMPORT_KERNEL)
    assert (code, stderr) == (
        1,
        f"kernel file '{path}' cannot be read: it is a FIFO, not a regular file\n",
    )


# --- weights that make a derivation non-finite, and unused weights -----------


def _negative_variance(case: Case, **extra: np.ndarray) -> str:
    weights = fixtures.fixture_weights()
    weights[VAR] = weights[VAR].copy()
    weights[VAR][2] = -2.0
    save_file(weights | extra, str(case.root / "neg.safetensors"))
    return "neg.safetensors"


def test_negative_running_var_is_one_sentence_naming_it(case: Case, no_worker: None) -> None:
    message = one_error(case.argv("-o", str(case.out), weights=_negative_variance(case)))
    assert message.startswith(
        f"the weights give unusable parameters: derivation bn_scale('{fixtures.PREFIX}bn.weight', "
        f"'{VAR}') is not finite at 1 of 6 entries (first at index [2]): the running variance "
        f"'{VAR}' is -2 there, and variance + eps (0.001) must be positive; derivation bn_shift("
    )
    assert not case.out.exists()


def test_negative_running_var_through_the_runtime(case: Case, no_worker: None) -> None:
    weights = fixtures.fixture_weights()
    weights[VAR] = np.full_like(weights[VAR], -1.0)
    with pytest.raises(runtime.RuntimeInputError, match=r"bn_scale\(.*is not finite at 6 of 6"):
        runtime.load(case.root / "plan").run(fixtures.fixture_inputs(1), weights)


class _EchoBackend:
    """A registered backend that returns ``in0`` twice (no worker)."""

    name = "echo"
    description = "returns its first input"

    def available(self) -> str | None:
        return None

    def run(
        self,
        directory: Path,
        plan: Any,
        tensors: Any,
        batch: int,
        times: Any,
        progress: Any = None,
        trace: Any = None,
    ) -> list[Any]:
        return [tensors["in0"], tensors["in0"]]


@pytest.fixture
def echo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backends, "BACKENDS", {**backends.BACKENDS, "echo": _EchoBackend()})


def _extra_weights(case: Case, count: int) -> str:
    extra = {f"head.{i:02d}.weight": np.zeros(2, np.float32) for i in range(count)}
    save_file(fixtures.fixture_weights() | extra, str(case.root / "extra.safetensors"))
    return "extra.safetensors"


def test_unused_weights_are_one_warning_line(case: Case, echo: None) -> None:
    code, stderr = teeny_run(
        case.argv("-o", str(case.out), "--backend", "echo", weights=_extra_weights(case, 2))
    )
    assert code == 0
    # num_batches_tracked (in the fixture's state dict) is PyTorch bookkeeping: not reported.
    assert stderr == (
        "teeny-run: warning: 2 weights are not used by the plan: 'head.00.weight', "
        "'head.01.weight'\n"
    )
    assert case.out.exists()


def test_many_unused_weights_stay_one_line(case: Case, echo: None) -> None:
    code, stderr = teeny_run(
        case.argv("-o", str(case.out), "--backend", "echo", weights=_extra_weights(case, 20))
    )
    assert code == 0 and stderr.count("\n") == 1
    assert stderr.endswith("'head.07.weight' and 12 more\n")


def test_unused_weights_warning_comes_before_an_error(case: Case, no_worker: None) -> None:
    weights = _negative_variance(case, **{"head.weight": np.zeros(2, np.float32)})
    code, stderr = teeny_run(case.argv("-o", str(case.out), weights=weights))
    assert code == 1
    warning, error = stderr.splitlines()
    assert warning == "teeny-run: warning: 1 weight is not used by the plan: 'head.weight'"
    assert error.startswith("teeny-run: error: the weights give unusable parameters")


def test_unused_weights_warn_through_the_runtime(case: Case, echo: None) -> None:
    weights = fixtures.fixture_weights() | {"head.weight": np.zeros(2, np.float32)}
    executable = runtime.load(case.root / "plan")
    with pytest.warns(runtime.UnusedWeightsWarning, match=r"^1 weight is not used by the plan"):
        executable.run(fixtures.fixture_inputs(1), weights, backend="echo")
    # The fixture's own weights (with num_batches_tracked) warn nothing: -W error would raise.
    executable.run(fixtures.fixture_inputs(1), fixtures.fixture_weights(), backend="echo")
    assert executable.unused_weights(weights) == ["head.weight"]


# --- worker failures: one line, the traceback kept in the log -----------------

FAKE_WORKER = """
import os, signal, sys
from teeny_ir.runtime.backends import interpreter_worker as worker

def failing(workdir):
    mode = os.environ["FAKE_WORKER_MODE"]
    if mode == "signal":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "silent":
        print("a last word on stderr", file=sys.stderr)
        sys.exit(3)
    def deep():
        undefined_name  # noqa: F821
    deep()

worker.run = failing
sys.exit(worker.main())
"""


@pytest.fixture
def fake_worker(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker replaced by one that fails as ``FAKE_WORKER_MODE`` says."""
    (case.root / "fakes").mkdir()
    (case.root / "fakes" / "fake_worker.py").write_text(textwrap.dedent(FAKE_WORKER))
    path = os.pathsep.join(p for p in (str(case.root / "fakes"), os.environ.get("PYTHONPATH")) if p)
    monkeypatch.setenv("PYTHONPATH", path)
    monkeypatch.setattr(interpreter, "WORKER_MODULE", "fake_worker")


def _kept_log(case: Case) -> Path:
    (workdir,) = (case.root / "tmp").iterdir()
    assert [p.name for p in workdir.iterdir()] == [interpreter.LOG_FILE]
    return workdir / interpreter.LOG_FILE


def test_worker_exception_is_one_line_naming_its_log(
    case: Case, fake_worker: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_WORKER_MODE", "raise")
    message = one_error(case.argv("-o", str(case.out)), code=2)
    log = _kept_log(case)
    assert message == (
        "the interpreter worker failed (exit status 1): NameError: name 'undefined_name' is "
        f"not defined (worker log: {log})"
    )
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "in deep" in text
    assert text.rstrip().endswith("error: NameError: name 'undefined_name' is not defined")
    assert not case.out.exists()


def test_worker_killed_by_a_signal(
    case: Case, fake_worker: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_WORKER_MODE", "signal")
    message = one_error(case.argv("-o", str(case.out)), code=2)
    assert message == (
        f"the interpreter worker failed (killed by SIGKILL): it wrote nothing "
        f"(worker log: {_kept_log(case)})"
    )


def test_worker_failing_without_a_report(
    case: Case, fake_worker: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_WORKER_MODE", "silent")
    with pytest.raises(runtime.WorkerError) as info:
        runtime.load(case.root / "plan").run(fixtures.fixture_inputs(1), fixtures.fixture_weights())
    assert str(info.value) == (
        "the interpreter worker failed (exit status 3): a last word on stderr "
        f"(worker log: {_kept_log(case)})"
    )


def test_a_successful_run_leaves_no_work_directory(case: Case) -> None:
    code, stderr = teeny_run(case.argv("-o", str(case.out)))
    assert (code, stderr) == (0, "")
    assert list((case.root / "tmp").iterdir()) == []


# --- torch missing --------------------------------------------------------------

HIDE_TORCH = {
    # Not installed: import fails and importlib.util.find_spec finds nothing.
    "absent": "import sys\nsys.modules['torch'] = None\n",
    # Installed but failing to import (found by find_spec): only the worker meets it.
    "unimportable": textwrap.dedent(
        """
        import builtins
        _import = builtins.__import__
        def _no_torch(name, *args, **kwargs):
            if name == "torch" or name.startswith("torch."):
                raise ModuleNotFoundError("No module named 'torch'", name="torch")
            return _import(name, *args, **kwargs)
        builtins.__import__ = _no_torch
        """
    ),
}


@pytest.mark.parametrize("how", sorted(HIDE_TORCH))
def test_without_torch_teeny_run_names_the_extra(case: Case, how: str) -> None:
    shim = case.root / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(HIDE_TORCH[how])
    path = os.pathsep.join(p for p in (str(shim), os.environ.get("PYTHONPATH")) if p)
    env = os.environ | {"PYTHONPATH": path, "TMPDIR": str(case.root / "tmp")}
    done = subprocess.run(
        [TEENY_RUN, *case.argv("-o", str(case.out))],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr) == (1, f"teeny-run: error: {NEEDS_TORCH}\n")
    assert not case.out.exists()
    assert list((case.root / "tmp").iterdir()) == []


def test_without_torch_nothing_is_read(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a)
    )
    argv = case.argv("-o", str(case.out))
    argv[argv.index(str(case.root / "a.npy"))] = str(case.root / "none.npy")
    assert one_error(argv) == NEEDS_TORCH


def test_a_finder_that_raises_counts_as_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(name: str, *args: Any) -> Any:
        raise ImportError("blocked")

    monkeypatch.setattr(importlib.util, "find_spec", broken)
    assert runtime.BACKENDS["interpreter"].available() == NEEDS_TORCH


def test_a_namespace_directory_named_torch_is_not_torch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "torch").mkdir()  # no __init__.py: a namespace package, not torch
    real = importlib.util.find_spec

    def only_the_directory(name: str, *args: Any) -> Any:
        if name != "torch":
            return real(name, *args)
        return importlib.machinery.PathFinder.find_spec("torch", [str(tmp_path)])

    monkeypatch.setattr(importlib.util, "find_spec", only_the_directory)
    assert runtime.BACKENDS["interpreter"].available() == NEEDS_TORCH
