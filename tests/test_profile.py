"""The per-launch profile (`teeny_ir.runtime.profile`, ``teeny-run --profile`` and
``--profile-out``): LeNet inference on the interpreter (one worker: a session
run without and with the profile) and on the cuda backend over the fake driver,
whose CUDA events read a fake clock (`teeny_ir.testing.fake_cuda`), so every
launch's time is known. The bytes are checked against the sizes the plan's
tensors have, computed here from the plan; the trace is loaded back as JSON.
YOLOv8n's profiled run is tests/test_yolov8n_compiled.py's."""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
import math
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

import teeny_ir
from teeny_ir import runtime
from teeny_ir.backend.plan import BATCH, Plan
from teeny_ir.core.expressions import eval_text
from teeny_ir.driver.run import run as teeny_run
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.runtime.backends import cuda
from teeny_ir.runtime.profile import Profile, launch_bytes
from teeny_ir.testing.fake_cuda import FakeDriver, fake_kernel_ns, stand_in_cubins

ROOT = Path(__file__).resolve().parent.parent
LENET = ROOT / "examples" / "lenet"
BATCH_SIZE = 2


@pytest.fixture(scope="module")
def lenet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """LeNet inference emitted without cubins (the interpreter's plan)."""
    out = tmp_path_factory.mktemp("lenet") / "plan"
    module = teeny_ir.parse_module((LENET / "lenet.mlir").read_text(), filename="lenet.mlir")
    teeny_ir.PassManager.parse(f"teeny-inference,emit-triton{{out-dir={out}}}").run(module)
    return out


@pytest.fixture(scope="module")
def lenet_cuda(lenet: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same plan with stand-in cubins, for the cuda backend on the fake driver."""
    out = tmp_path_factory.mktemp("lenet_cuda") / "plan"
    shutil.copytree(lenet, out)
    stand_in_cubins(out)
    return out


def _weights() -> dict[str, np.ndarray]:
    return load_file(str(LENET / "lenet.safetensors"))


def _input() -> np.ndarray:
    return np.random.default_rng(3).standard_normal((BATCH_SIZE, 1, 28, 28)).astype(np.float32)


def _expected_bytes(plan: Plan, batch: int) -> list[tuple[int, int]]:
    """Per launch: the bytes of the distinct tensors bound to its input and param
    arguments, and of those bound to its output arguments, from the shapes."""
    env = {BATCH: batch}
    itemsize = {"f32": 4, "i64": 8}
    sizes: dict[str, int] = {}
    for spec in (*plan.inputs, *plan.buffers):
        dims = [d if isinstance(d, int) else eval_text(d, env) for d in spec.shape]
        sizes[spec.name] = math.prod(dims) * itemsize[spec.dtype]
    for view in plan.views:
        dims = [d if isinstance(d, int) else eval_text(d, env) for d in view.shape]
        sizes[view.name] = math.prod(dims) * 4
    for param in plan.params:
        sizes[param.name] = math.prod(param.shape) * 4
    kernels = {k.name: k for k in plan.kernels}
    found = []
    for launch in plan.launches:
        family = FAMILIES[kernels[launch.kernel].family]
        bound = [(abi.kind, a.tensor) for abi, a in zip(family.args, launch.args, strict=True)]
        read = {tensor for kind, tensor in bound if kind in ("input", "param") and tensor}
        written = {tensor for kind, tensor in bound if kind == "output" and tensor}
        found.append((sum(sizes[t] for t in read), sum(sizes[t] for t in written)))
    return found


def _check_records(profile: Profile, plan: Plan, backend: str) -> None:
    """One record per launch, in plan order, with the plan's facts at the batch."""
    env = {BATCH: BATCH_SIZE}
    kernels = {k.name: k for k in plan.kernels}
    assert (profile.backend, profile.batch, profile.function) == (backend, BATCH_SIZE, "forward")
    assert len(profile.records) == len(plan.launches) == 7
    expected = _expected_bytes(plan, BATCH_SIZE)
    for index, (record, launch) in enumerate(zip(profile.records, plan.launches, strict=True)):
        assert record.index == index
        assert record.kernel == launch.kernel
        assert record.family == kernels[launch.kernel].family
        assert record.ops == tuple(s.op for s in launch.sources) and record.ops
        assert all(op.startswith("graph.") for op in record.ops)
        assert record.grid == tuple(eval_text(axis, env) for axis in launch.grid)
        assert (record.bytes_read, record.bytes_written) == expected[index]
        assert record.duration_ns > 0
    assert profile.records[0].start_ns == 0
    for before, after in itertools.pairwise(profile.records):
        assert before.end_ns <= after.start_ns  # plan order, no overlap


def _check_trace(trace: dict[str, Any], profile: Profile) -> None:
    """The Chrome trace: one complete event per launch, in order, never overlapping."""
    trace = json.loads(json.dumps(trace))  # what a file holds
    assert trace["displayTimeUnit"] == "ms"
    events = trace["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    assert {e["ph"] for e in events} == {"X", "M"}
    assert len(complete) == len(profile.records)
    for event, record in zip(complete, profile.records, strict=True):
        assert event["name"] == record.kernel and event["cat"] == record.family
        assert event["ts"] == pytest.approx(record.start_ns / 1000, abs=1e-6)
        assert event["dur"] == pytest.approx(record.duration_ns / 1000, abs=1e-6)
        assert event["args"]["index"] == record.index
        assert event["args"]["ops"] == list(record.ops)
        assert event["args"]["grid"] == list(record.grid)
        assert event["args"]["bytes_read"] == record.bytes_read
        assert event["args"]["bytes_written"] == record.bytes_written
        assert (event["pid"], event["tid"]) == (1, 1)
    for before, after in itertools.pairwise(complete):
        assert before["ts"] + before["dur"] <= after["ts"] + 1e-6


def _check_table(text: str, profile: Profile) -> None:
    """Every family in the totals, whose launches, times and bytes add up."""
    totals = profile.families()
    assert {t.family for t in totals} == {r.family for r in profile.records}
    assert sum(t.launches for t in totals) == len(profile.records)
    assert sum(t.duration_ns for t in totals) == profile.total_ns > 0
    assert sum(t.share for t in totals) == pytest.approx(1.0)
    assert sum(t.bytes_read for t in totals) == sum(r.bytes_read for r in profile.records)
    assert sum(t.bytes_written for t in totals) == sum(r.bytes_written for r in profile.records)
    lines = text.splitlines()
    for record in profile.records:  # one row per launch, its numbers as printed
        row = next(line for line in lines if line.split()[:2] == [str(record.index), record.family])
        assert f"{record.bytes_read:,}" in row and f"{record.bytes_written:,}" in row
        assert "x".join(map(str, record.grid)) in row
    total = next(line.split() for line in lines if line.startswith("total"))
    assert total[1] == str(len(profile.records))
    assert total[-2:] == [
        f"{sum(r.bytes_read for r in profile.records):,}",
        f"{sum(r.bytes_written for r in profile.records):,}",
    ]
    split = [line.split() for line in lines]
    for family in totals:
        cells = next(r for r in split if len(r) == 6 and r[0] == family.family)
        assert cells[1] == str(family.launches)
        assert cells[3] == f"{100 * family.share:.1f}%"


def test_interpreter_profile_of_lenet(lenet: Path) -> None:
    executable = runtime.load(lenet)
    x = _input()
    profile = Profile()
    with executable.session(_weights()) as session:
        plain = session.run([x])
        profiled = session.run([x], profile=profile)
    for a, b in zip(plain, profiled, strict=True):  # profiling changes nothing
        np.testing.assert_array_equal(a, b)
    _check_records(profile, executable.plan, "interpreter")
    assert "Triton-interpreter" in profile.clock and "not GPU time" in profile.clock
    _check_trace(profile.chrome_trace(), profile)
    _check_table(profile.table(), profile)


def _fake(monkeypatch: pytest.MonkeyPatch, plan: Plan) -> FakeDriver:
    driver = FakeDriver.for_plan(plan)
    monkeypatch.setattr(cuda, "_load_driver", lambda: driver)
    return driver


def test_cuda_profile_times_each_launch_with_events(
    lenet_cuda: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    executable = runtime.load(lenet_cuda)
    driver = _fake(monkeypatch, executable.plan)
    x = _input()
    plain = executable.run([x], _weights(), backend="cuda")
    mark, ran = len(driver.calls), len(driver.launches)
    profile = Profile()
    profiled = executable.run([x], _weights(), backend="cuda", profile=profile)
    for a, b in zip(plain, profiled, strict=True):  # same shapes; NaN: the fake computes nothing
        np.testing.assert_array_equal(a, b)
    _check_records(profile, executable.plan, "cuda")
    # the fake clock: each kernel 1000 ns + 1 ns per program, back to back
    launched = driver.launches[ran:]
    assert [r.duration_ns for r in profile.records] == [fake_kernel_ns(k) for k in launched]
    starts = np.cumsum([0] + [fake_kernel_ns(k) for k in launched[:-1]])
    assert [r.start_ns for r in profile.records] == starts.tolist()
    names = [name for name, _ in driver.calls[mark:]]
    count = len(executable.plan.launches)
    assert names.count("cuEventCreate") == names.count("cuEventDestroy") == 2 * count
    assert names.count("cuEventRecord") == 2 * count and not driver.event_times
    # each launch between its two events
    index = [i for i, name in enumerate(names) if name in ("cuEventRecord", "cuLaunchKernel")]
    assert [names[i] for i in index] == ["cuEventRecord", "cuLaunchKernel", "cuEventRecord"] * count
    assert "GPU time" in profile.clock
    _check_trace(profile.chrome_trace(), profile)
    _check_table(profile.table(), profile)


def test_a_graphs_session_profiles_launch_by_launch(
    lenet_cuda: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    executable = runtime.load(lenet_cuda)
    driver = _fake(monkeypatch, executable.plan)
    with executable.session(_weights(), backend="cuda", graphs=True) as session:
        session.run([_input()])
        mark = len(driver.calls)
        profile = Profile()
        session.run([_input()], profile=profile)
        names = [name for name, _ in driver.calls[mark:]]
        session.run([_input()])  # and the graph again after
        after = [name for name, _ in driver.calls[mark + len(names) :]]
    assert "cuGraphLaunch" not in names and names.count("cuLaunchKernel") == 7
    assert "cuGraphLaunch" in after and "cuLaunchKernel" not in after
    _check_records(profile, executable.plan, "cuda")


def test_fake_events_need_a_record() -> None:
    driver = FakeDriver()
    _, start = driver.cuEventCreate(0)
    _, end = driver.cuEventCreate(0)
    assert start is not None and end is not None
    assert driver.cuEventElapsedTime(start, end)[0].name == "CUDA_ERROR_INVALID_HANDLE"
    driver.cuEventRecord(start, "stream0")
    driver.clock_ns += 2500
    driver.cuEventRecord(end, "stream0")
    result, elapsed = driver.cuEventElapsedTime(start, end)
    assert result == 0 and elapsed == pytest.approx(0.0025)
    assert driver.cuEventDestroy(start) == (0,)
    assert driver.cuEventDestroy(start)[0].name == "CUDA_ERROR_INVALID_HANDLE"


def test_bytes_follow_the_contract_footprint(lenet: Path) -> None:
    """A residual operand is read only with the HAS_RESIDUAL dim set: bound to
    another tensor in a launch without it, it adds nothing; with it, that
    tensor's bytes."""
    plan = runtime.load(lenet).plan
    first = plan.launches[0]
    family = FAMILIES["implicit_gemm_conv"]
    names = [abi.name for abi in family.args]
    r, flag = names.index("r"), names.index("HAS_RESIDUAL")
    assert first.args[r].tensor == first.args[0].tensor  # bound to x, never read
    assert first.args[flag].expr == "0"
    other = plan.params[3]  # the second conv's weight: a tensor launch 0 does not bind
    args = list(first.args)
    args[r] = dataclasses.replace(args[r], tensor=other.name)
    launches = (dataclasses.replace(first, args=tuple(args)), *plan.launches[1:])
    edited = dataclasses.replace(plan, launches=launches)
    before = launch_bytes(plan, BATCH_SIZE)[0]
    assert launch_bytes(edited, BATCH_SIZE)[0] == before
    args[flag] = dataclasses.replace(args[flag], expr="1")
    launches = (dataclasses.replace(first, args=tuple(args)), *plan.launches[1:])
    with_residual = dataclasses.replace(plan, launches=launches)
    # r may touch its footprint, C_OUT * OH * OW per image, of the tensor bound
    # to it: here all of the (smaller) weight
    footprint = BATCH_SIZE * 6 * 28 * 28
    elements = min(math.prod(other.shape), footprint)
    read, written = launch_bytes(with_residual, BATCH_SIZE)[0]
    assert (read, written) == (before[0] + 4 * elements, before[1])


def test_in_place_counts_as_read_and_written(lenet: Path) -> None:
    plan = runtime.load(lenet).plan
    pool = plan.launches[1]  # pool2d: x -> y
    family = FAMILIES["pool2d"]
    kinds = [abi.kind for abi in family.args]
    args = list(pool.args)
    args[kinds.index("output")] = args[kinds.index("input")]  # y bound to x
    launches = list(plan.launches)
    launches[1] = dataclasses.replace(pool, args=tuple(args))
    edited = dataclasses.replace(plan, launches=tuple(launches))
    read, written = launch_bytes(edited, BATCH_SIZE)[1]
    assert launch_bytes(plan, BATCH_SIZE)[1] == (read, written)
    # the same tensor in both: all of x read, y's footprint (N * C * OH * OW) of it written
    assert (read, written) == (BATCH_SIZE * 6 * 28 * 28 * 4, BATCH_SIZE * 6 * 14 * 14 * 4)


# --- teeny-run ------------------------------------------------------------------


@pytest.fixture
def case(lenet_cuda: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Weights and an input in ``tmp_path``; the cuda backend on the fake driver."""
    save_file(_weights(), str(tmp_path / "w.safetensors"))
    np.save(tmp_path / "x.npy", _input())
    _fake(monkeypatch, runtime.load(lenet_cuda).plan)
    return tmp_path


def _argv(lenet_cuda: Path, case: Path, *extra: str) -> list[str]:
    weights = ["--weights", str(case / "w.safetensors"), "--input", str(case / "x.npy")]
    return [str(lenet_cuda), *weights, "--backend", "cuda", *extra]


def _teeny_run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = teeny_run(argv, out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("rich", [True, False], ids=["rich", "plain"])
def test_teeny_run_profile_and_trace(
    lenet_cuda: Path, case: Path, monkeypatch: pytest.MonkeyPatch, rich: bool
) -> None:
    if not rich:  # as without the interp extra: the import fails
        for name in ("rich", "rich.console", "rich.table"):
            monkeypatch.setitem(sys.modules, name, None)
    code, _, stderr = _teeny_run(_argv(lenet_cuda, case, "-o", str(case / "plain.npz")))
    assert (code, stderr) == (0, "")
    trace = case / "trace.json"
    argv = _argv(lenet_cuda, case, "-o", str(case / "out.npz"), "--profile")
    code, stdout, stderr = _teeny_run([*argv, "--profile-out", str(trace)])
    assert code == 0, stderr
    assert stdout == ""
    with np.load(case / "plain.npz") as a, np.load(case / "out.npz") as b:
        assert a.files == b.files
        for name in a.files:
            np.testing.assert_array_equal(a[name], b[name])
    plan = runtime.load(lenet_cuda).plan
    families = {k.family for k in plan.kernels}
    assert ("┃" in stderr) is rich  # rich's table, or the plain one
    for family in families:
        assert family in stderr
    assert "7 launches on the cuda backend at B=2" in stderr
    data = json.loads(trace.read_text(encoding="utf-8"))
    complete = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert [e["name"] for e in complete] == [launch.kernel for launch in plan.launches]
    assert data["otherData"]["backend"] == "cuda" and data["otherData"]["batch"] == BATCH_SIZE
    if not rich:
        spans = [(round(e["ts"] * 1000), round(e["dur"] * 1000)) for e in complete]
        profile = Profile()
        profile.fill(plan, BATCH_SIZE, "cuda", spans)
        _check_table(stderr, profile)


def test_profile_out_alone_prints_no_table(lenet_cuda: Path, case: Path) -> None:
    trace = case / "t.json"
    argv = _argv(lenet_cuda, case, "-o", str(case / "o.npz"), "--profile-out", str(trace))
    assert _teeny_run(argv) == (0, "", "")
    assert len([e for e in json.loads(trace.read_text())["traceEvents"] if e["ph"] == "X"]) == 7


def _errors(case: Path) -> list[tuple[list[str], str]]:
    out = str(case / "o.npz")
    return [
        (
            ["-o", out, "--profile-out", str(case / "missing" / "t.json")],
            f"cannot write '{case / 'missing' / 't.json'}': the folder "
            f"'{case / 'missing'}' does not exist",
        ),
        (["-o", out, "--profile-out", str(case)], f"cannot write '{case}': it is a directory"),
        (["-o", out, "--profile-out", out], f"--profile-out and -o name the same file '{out}'"),
        (
            ["-o", out, "--profile-out", str(case / "x.npy")],
            f"refusing to overwrite the input file '{case / 'x.npy'}' with --profile-out",
        ),
        (["-o", "-", "--profile-out", "-"], "--profile-out - and -o - would both write to stdout"),
        (
            ["-o", out, "--profile", "--cuda-graphs"],
            "--profile and --profile-out time each launch, which one CUDA graph replay "
            "cannot; drop --cuda-graphs to profile the launches",
        ),
        (
            ["-o", out, "--profile", "--compare-reference", str(LENET / "lenet.mlir")],
            "--profile and --profile-out cannot be combined with --compare-reference",
        ),
    ]


@pytest.mark.parametrize("which", range(7))
def test_bad_profile_usage_is_one_line_before_any_launch(
    lenet_cuda: Path, case: Path, which: int
) -> None:
    extra, message = _errors(case)[which]
    driver = cuda._load_driver()
    code, stdout, stderr = _teeny_run(_argv(lenet_cuda, case, *extra))
    assert (code, stderr) == (1, f"teeny-run: error: {message}\n")
    assert stdout == "" and not driver.launches
    assert not (case / "o.npz").exists()


def test_profile_out_in_the_plan_directory_is_refused(lenet_cuda: Path, case: Path) -> None:
    target = str(lenet_cuda / "plan.json")
    argv = _argv(lenet_cuda, case, "-o", str(case / "o.npz"), "--profile-out", target)
    code, _, stderr = _teeny_run(argv)
    assert (code, stderr) == (
        1,
        f"teeny-run: error: refusing to overwrite the input file '{target}' with --profile-out\n",
    )
