"""The cuda backend on a fake driver (`teeny_ir.testing.fake_cuda`): no
GPU, no cuda-python. A real emitted plan (LeNet inference with cubins for sm_80
and sm_90) runs through ``runtime.load(DIR).run(..., backend="cuda")``; every
launch's module, function, grid, block, shared memory and the exact bytes of
its parameter buffer are checked against the plan, and `pack_params` against
every family's ABI."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import shutil
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import teeny_ir
from teeny_ir import runtime
from teeny_ir.backend import memory
from teeny_ir.backend.plan import BATCH, Arg, Plan, load_plan
from teeny_ir.core.expressions import eval_text
from teeny_ir.kernels.contract import KernelArg
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.runtime.backends import cuda
from teeny_ir.runtime.errors import BackendUnavailableError, RuntimeInputError
from teeny_ir.testing.fake_cuda import FakeDriver, stand_in_cubins

ROOT = Path(__file__).resolve().parent.parent
LENET = ROOT / "examples" / "lenet"


@pytest.fixture(scope="module")
def lenet_plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """LeNet inference emitted with cubins for sm_80 and sm_90 (AOT: ~20 s, once)."""
    out = tmp_path_factory.mktemp("lenet") / "plan"
    module = teeny_ir.parse_module((LENET / "lenet.mlir").read_text(), filename="lenet.mlir")
    pipeline = f"teeny-inference,emit-triton{{out-dir={out} archs=80,90}}"
    teeny_ir.PassManager.parse(pipeline).run(module)
    return out


def _weights() -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    return load_file(str(LENET / "lenet.safetensors"))


def _inputs(plan: Plan, batch: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    env = {BATCH: batch}
    shapes = [
        [d if isinstance(d, int) else eval_text(d, env) for d in t.shape] for t in plan.inputs
    ]
    return [rng.standard_normal(shape).astype(np.float32) for shape in shapes]


def _fake(plan: Plan, capability: tuple[int, int] = (9, 0)) -> FakeDriver:
    """A fake driver that knows each kernel's parameter count (ABI + 2 scratch)."""
    counts = {}
    for kernel in plan.kernels:
        for compiled in kernel.compiled:
            counts[compiled.name] = len(FAMILIES[kernel.family].args) + cuda.SCRATCH_POINTERS
    return FakeDriver(capability=capability, arity=counts.__getitem__)


def _expected_bytes(kinds_values: list[tuple[str, int | float]]) -> tuple[bytes, tuple[int, ...]]:
    """The parameter buffer: each value naturally aligned, in order."""
    formats = {"u64": "<Q", "i32": "<i", "f32": "<f"}
    data, offsets = b"", []
    for kind, value in kinds_values:
        size = struct.calcsize(formats[kind])
        data += bytes(-len(data) % size)
        offsets.append(len(data))
        data += struct.pack(formats[kind], value)
    return data, tuple(offsets)


def _run(directory: Path, driver: FakeDriver, batch: int, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(cuda, "_load_driver", lambda: driver)
    executable = runtime.load(directory)
    return executable.run(_inputs(executable.plan, batch), _weights(), backend="cuda")


@pytest.mark.parametrize("batch", [1, 3])
def test_lenet_launches_on_the_fake_driver(
    lenet_plan: Path, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    plan = load_plan(lenet_plan)
    driver = _fake(plan)
    outputs = _run(lenet_plan, driver, batch, monkeypatch)
    env = {BATCH: batch}

    # the outputs come back with the plan's shapes (NaN: the fake computes nothing)
    specs = {s.name: s.shape for s in (*plan.inputs, *plan.buffers, *plan.views)}
    assert [o.shape for o in outputs] == [
        tuple(eval_text(d, env) if isinstance(d, str) else d for d in specs[name])
        for name in plan.outputs
    ]
    names = driver.names()
    assert names[:2] == ["cuInit", "cuDeviceGetCount"]  # the probe
    assert names.count("cuStreamCreate") == 1 and names.count("cuLaunchKernel") == len(
        plan.launches
    )
    # uploads: every param once, then every input; the arena memset to NaN
    htod = [args for name, args in driver.calls if name == "cuMemcpyHtoD"]
    assert len(htod) == len(plan.params) + len(plan.inputs)
    addresses: dict[str, int] = {}
    for spec, (device, _, nbytes) in zip([*plan.params, *plan.inputs], htod, strict=True):
        addresses[spec.name] = device
        assert nbytes == 4 * math.prod(
            eval_text(d, env) if isinstance(d, str) else d for d in spec.shape
        )
    (memset,) = [args for name, args in driver.calls if name == "cuMemsetD32Async"]
    arena = memset[0]
    layout = memory.layout(plan, batch)  # the runtime's placement at this batch
    assert memset[1:3] == (0x7FC00000, layout.arena // 4)
    for buffer in plan.buffers:
        addresses[buffer.name] = arena + layout.offsets[buffer.name]
    for view in plan.views:
        addresses[view.name] = addresses[view.base] + 4 * view.offset

    kernels = {k.name: k for k in plan.kernels}
    assert len(driver.launches) == len(plan.launches)
    for launch, seen in zip(plan.launches, driver.launches, strict=True):
        kernel = kernels[launch.kernel]
        family = FAMILIES[kernel.family]
        (compiled,) = [
            c
            for c in kernel.compiled
            if (c.arch, c.num_warps, c.num_stages) == (90, launch.num_warps, launch.num_stages)
        ]
        assert seen.function.name == compiled.name == launch.kernel
        assert seen.function.module.sha256 == compiled.cubin_sha256  # the sm_90 cubin
        assert seen.grid == tuple(eval_text(axis, env) for axis in launch.grid)
        assert seen.block == (32 * launch.num_warps, 1, 1)
        assert seen.shared == compiled.shared
        assert seen.stream == "stream0" and seen.extra == 0
        fields: list[tuple[str, int | float]] = []
        for abi, arg in zip(family.args, launch.args, strict=True):
            if arg.tensor is not None:
                fields.append(("u64", addresses[arg.tensor]))
            else:
                assert abi.dtype == "i32"
                fields.append(("i32", eval_text(arg.expr or "", env)))
        fields += [("u64", 0), ("u64", 0)]  # global and profile scratch: NULL
        data, offsets = _expected_bytes(fields)
        assert (seen.data, seen.offsets) == (data, offsets), launch.kernel
        assert seen.data[-16:] == bytes(16)
    # no kernel of LeNet needs more than 48 KiB: no attribute call
    assert "cuFuncSetAttribute" not in names
    # everything freed, modules unloaded, the stream destroyed
    assert not driver.memory
    assert names.count("cuModuleUnload") == names.count("cuModuleLoadData")
    assert names[-2:] == ["cuStreamDestroy", "cuDevicePrimaryCtxRelease"]


def test_session_uploads_params_once_and_the_arena_once_per_batch(lenet_plan: Path) -> None:
    executable = runtime.load(lenet_plan)
    plan = executable.plan
    driver = _fake(plan)
    params = executable.bind_parameters(_weights())
    session = cuda.CudaSession(lenet_plan, plan, driver=driver)
    try:
        for batch in (2, 2, 5):
            tensors = dict(zip([t.name for t in plan.inputs], _inputs(plan, batch), strict=True))
            session.run(tensors | params, batch)
    finally:
        session.close()
    allocs = [args[0] for name, args in driver.calls if name == "cuMemAlloc"]
    arenas = [a for a in allocs if a in (memory.layout(plan, b).arena for b in (2, 5))]
    assert len(arenas) == 2  # batch 2 once, batch 5 once
    htod = [args for name, args in driver.calls if name == "cuMemcpyHtoD"]
    assert len(htod) == len(plan.params) + 3 * len(plan.inputs)
    assert driver.names().count("cuLaunchKernel") == 3 * len(plan.launches)
    assert not driver.memory


def _edited(lenet_plan: Path, tmp_path: Path, change: dict[str, int]) -> Path:
    """A copy of the plan whose first kernel's sm_90 cubins get ``change``."""
    copy = tmp_path / "plan"
    shutil.copytree(lenet_plan, copy)
    data = json.loads((copy / "plan.json").read_text())
    kernel = data["kernels"][0]
    for compiled in kernel["compiled"]:
        if compiled["arch"] == 90:
            compiled.update(change)
    (copy / "plan.json").write_text(json.dumps(data))
    return copy


def test_large_shared_memory_opts_in(
    lenet_plan: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = _edited(lenet_plan, tmp_path, {"shared": 100_000})
    plan = load_plan(copy)
    driver = _fake(plan)
    _run(copy, driver, 1, monkeypatch)
    name = plan.kernels[0].name
    attributes = [args for call, args in driver.calls if call == "cuFuncSetAttribute"]
    assert [(f.name, a, v) for f, a, v in attributes] == [
        (name, "max_dynamic_shared_size_bytes", 100_000)
    ]
    launches = [seen for seen in driver.launches if seen.function.name == name]
    assert launches and all(seen.shared == 100_000 for seen in launches)
    # the attribute is set before the first launch of that function
    names = driver.names()
    assert names.index("cuFuncSetAttribute") < names.index("cuLaunchKernel")


@pytest.mark.parametrize(
    ("field", "words"),
    [
        ("global_scratch_size", "256 bytes of global scratch memory"),
        ("profile_scratch_size", "256 bytes of profile scratch memory"),
    ],
)
def test_kernel_asking_for_scratch_is_refused_at_load(
    lenet_plan: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, field: str, words: str
) -> None:
    copy = _edited(lenet_plan, tmp_path, {field: 256})
    plan = load_plan(copy)
    assert any(getattr(c, field) == 256 for c in plan.kernels[0].compiled)
    driver = _fake(plan)
    with pytest.raises(BackendUnavailableError) as info:
        _run(copy, driver, 1, monkeypatch)
    message = str(info.value)
    assert message == (
        f"kernel '{plan.kernels[0].name}' for sm_90 needs {words}, which the cuda backend "
        "does not provide (it passes NULL scratch pointers)"
    )
    assert "cuModuleLoadData" not in driver.names() and "\n" not in message


def test_scratch_sizes_round_trip_and_stay_out_of_plans_without_them(
    lenet_plan: Path, tmp_path: Path
) -> None:
    assert "scratch" not in (lenet_plan / "plan.json").read_text()
    copy = _edited(lenet_plan, tmp_path, {"global_scratch_size": 8})
    compiled = load_plan(copy).kernels[0].compiled
    assert {c.arch: c.global_scratch_size for c in compiled} == {80: 0, 90: 8}
    assert [c.profile_scratch_size for c in compiled] == [0, 0]


@pytest.mark.parametrize(("capability", "built"), [((7, 5), "sm_75"), ((10, 0), "sm_100")])
def test_gpu_without_a_cubin_for_it(
    lenet_plan: Path, monkeypatch: pytest.MonkeyPatch, capability: tuple[int, int], built: str
) -> None:
    """sm_75 is older than every cubin; sm_100 cannot run sm_90's arch-specific
    (sm_90a) cubins, nor sm_80's (another major version)."""
    plan = load_plan(lenet_plan)
    driver = _fake(plan, capability=capability)
    with pytest.raises(BackendUnavailableError) as info:
        _run(lenet_plan, driver, 1, monkeypatch)
    first = plan.launches[0]
    arch = built.removeprefix("sm_")
    assert str(info.value) == (
        f"the cuda backend cannot run this plan on this {built} GPU: kernel '{first.kernel}' "
        f"(num_warps={first.num_warps}, num_stages={first.num_stages}) has no cubin that runs "
        f"on {built} and the plan has cubins for sm_80, sm_90 only (emit it with "
        f"emit-triton{{archs={arch}}})"
    )
    assert "cuMemAlloc" not in driver.names()


@pytest.mark.parametrize("capability", [(8, 0), (8, 6), (8, 9)])
def test_sm8x_gpus_load_the_sm80_cubins(
    lenet_plan: Path, monkeypatch: pytest.MonkeyPatch, capability: tuple[int, int]
) -> None:
    """CUDA's binary compatibility: an sm_80 cubin runs on any sm_8x GPU."""
    plan = load_plan(lenet_plan)
    driver = _fake(plan, capability=capability)
    _run(lenet_plan, driver, 1, monkeypatch)
    sm80 = {c.cubin_sha256 for k in plan.kernels for c in k.compiled if c.arch == 80}
    assert {m.sha256 for m in driver.modules} == sm80


def test_the_newest_cubin_that_runs_is_chosen(
    lenet_plan: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = load_plan(lenet_plan)
    driver = _fake(plan, capability=(9, 0))
    _run(lenet_plan, driver, 1, monkeypatch)
    sm90 = {c.cubin_sha256 for k in plan.kernels for c in k.compiled if c.arch == 90}
    assert {m.sha256 for m in driver.modules} == sm90


def test_runs_on() -> None:
    assert cuda.runs_on(80, 80) and cuda.runs_on(80, 86) and cuda.runs_on(86, 89)
    assert not cuda.runs_on(86, 80) and not cuda.runs_on(80, 90) and not cuda.runs_on(75, 80)
    assert cuda.runs_on(90, 90) and not cuda.runs_on(90, 91) and not cuda.runs_on(90, 100)


def test_more_shared_memory_than_the_gpu_allows_is_refused(
    lenet_plan: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = load_plan(lenet_plan)
    largest = max(
        (c for k in plan.kernels for c in k.compiled if c.arch == 80), key=lambda c: c.shared
    )
    driver = _fake(plan, capability=(8, 6))
    driver.shared_optin = largest.shared - 1
    with pytest.raises(BackendUnavailableError, match=f"needs {largest.shared} bytes of shared"):
        _run(lenet_plan, driver, 1, monkeypatch)
    assert "cuMemAlloc" not in driver.names()


# --- pack_params for every family's ABI ----------------------------------------


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_pack_params_for_every_family(name: str) -> None:
    family = FAMILIES[name]
    args, addresses, expected = [], {}, []
    env = {BATCH: 7}
    for index, abi in enumerate(family.args):
        if abi.dtype.startswith("*"):
            tensor = f"t{index}"
            addresses[tensor] = 0x7F00_0000_0000 + 256 * index + 4 * index
            args.append(Arg(tensor=tensor))
            expected.append(("u64", addresses[tensor]))
        else:
            assert abi.dtype == "i32", abi  # no family takes an fp32 scalar today
            args.append(Arg(expr=f"B * {index} + 3"))
            expected.append(("i32", 7 * index + 3))
    packed = cuda.pack_params(family, args, addresses, env)
    data, offsets = _expected_bytes([*expected, ("u64", 0), ("u64", 0)])
    assert (packed.data, packed.offsets) == (data, offsets)
    assert packed.kinds[-2:] == ("u64", "u64") and packed.values()[-2:] == [0, 0]
    assert len(packed.offsets) == len(family.args) + 2
    buffer, pointers = packed.pointers()
    base = pointers[0]
    assert [p - base for p in pointers] == list(offsets)
    assert bytes(buffer)[: len(data)] == data


def test_pack_params_fp32_scalar_and_int32_overflow() -> None:
    family = dataclasses.replace(
        FAMILIES["elementwise"],
        args=(
            KernelArg("x", "input", "*fp32"),
            KernelArg("n", "dim", "i32"),
            KernelArg("alpha", "scalar", "fp32"),
        ),
    )
    packed = cuda.pack_params(
        family, [Arg("t"), Arg(expr="B"), Arg(expr="B * 2")], {"t": 16}, {BATCH: 3}
    )
    assert packed.data == struct.pack("<QifQQ", 16, 3, 6.0, 0, 0)
    assert packed.kinds == ("u64", "i32", "f32", "u64", "u64")
    with pytest.raises(RuntimeInputError, match="does not fit the kernel's int32"):
        cuda.pack_params(
            family, [Arg("t"), Arg(expr="B * 1073741824"), Arg(expr="1")], {"t": 0}, {BATCH: 2}
        )


# --- without cuda-python or a GPU ------------------------------------------------


def test_the_package_never_imports_cuda_python() -> None:
    import subprocess
    import sys

    code = (
        "import sys, teeny_ir, teeny_ir.runtime, teeny_ir.runtime.backends.cuda; "
        "print(any(m == 'cuda' or m.startswith('cuda.') for m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_plan_without_cubins_is_one_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (LENET / "lenet.mlir").read_text()
    module = teeny_ir.parse_module(text, filename="lenet.mlir")
    teeny_ir.PassManager.parse(f"teeny-inference,emit-triton{{out-dir={tmp_path / 'p'}}}").run(
        module
    )
    driver = FakeDriver()
    with pytest.raises(BackendUnavailableError) as info:
        _run(tmp_path / "p", driver, 1, monkeypatch)
    assert str(info.value) == (
        "the cuda backend cannot run this plan on this sm_90 GPU: it has no cubins "
        "(emit it with emit-triton{archs=90})"
    )


def test_hash_of_fake_module_is_the_cubin(lenet_plan: Path) -> None:
    """The fake's ELF size reading is right (the checks above rely on it)."""
    import ctypes

    plan = load_plan(lenet_plan)
    compiled = plan.kernels[0].compiled[0]
    image = (lenet_plan / compiled.cubin).read_bytes()
    buffer = ctypes.create_string_buffer(image)
    driver = FakeDriver()
    _, module = driver.cuModuleLoadData(ctypes.addressof(buffer))
    assert module.sha256 == hashlib.sha256(image).hexdigest() == compiled.cubin_sha256


# --- emit-triton{precision=...} -------------------------------------------------


def test_precision_renders_input_precision_into_every_tl_dot() -> None:
    from teeny_ir.kernels.render import render

    for family in FAMILIES.values():
        samples = {"pointwise": "none", "program": "exp %0"}
        constexprs = {
            c.name: samples[c.type]
            if c.type in samples
            else (c.choices[0] if c.choices else max(16, c.minimum))
            for c in family.constexprs
        }
        default = render(family, "k", constexprs)
        assert render(family, "k", constexprs, "tf32") == default
        ieee = render(family, "k", constexprs, "ieee")
        dots = default.count("tl.dot(")
        assert ieee.count("input_precision=INPUT_PRECISION)") == dots, family.name
        assert ("INPUT_PRECISION = tl.constexpr('ieee')" in ieee) == (ieee != default)


def test_precision_is_recorded_in_the_plan_and_the_cache_key(tmp_path: Path) -> None:
    from teeny_ir.backend import cache

    text = (LENET / "lenet.mlir").read_text()
    for precision in ("tf32", "ieee"):
        module = teeny_ir.parse_module(text, filename="lenet.mlir")
        out = tmp_path / precision
        pipeline = f"teeny-inference,emit-triton{{out-dir={out} precision={precision}}}"
        teeny_ir.PassManager.parse(pipeline).run(module)
        plan = load_plan(out)  # the loader renders each file again with its precision
        assert {k.precision for k in plan.kernels} == {precision}
        assert ('"precision"' in (out / "plan.json").read_text()) == (precision == "ieee")
    gemm = next(k for k in load_plan(tmp_path / "ieee").kernels if k.family == "linear")
    assert "input_precision=INPUT_PRECISION" in (tmp_path / "ieee" / gemm.file).read_text()
    family = FAMILIES["elementwise"]
    keys = {
        cache.variant_key(
            "src", "k", family, {}, 80, 4, 1, precision=p, environ={}, version="3.9.0"
        )
        for p in ("tf32", "ieee")
    }
    assert len(keys) == 2


def test_unknown_precision_is_an_error(tmp_path: Path) -> None:
    module = teeny_ir.parse_module((LENET / "lenet.mlir").read_text(), filename="lenet.mlir")
    pipeline = f"teeny-inference,emit-triton{{out-dir={tmp_path / 'p'} precision=fp16}}"
    with pytest.raises(Exception, match=r"unknown precision=fp16 \(known: tf32, ieee\)"):
        teeny_ir.PassManager.parse(pipeline).run(module)


@pytest.mark.slow
def test_ieee_plan_runs_in_the_interpreter_like_the_default(tmp_path: Path) -> None:
    text = (LENET / "lenet.mlir").read_text()
    outputs = []
    for precision in ("tf32", "ieee"):
        module = teeny_ir.parse_module(text, filename="lenet.mlir")
        out = tmp_path / precision
        pipeline = f"teeny-inference,emit-triton{{out-dir={out} precision={precision}}}"
        teeny_ir.PassManager.parse(pipeline).run(module)
        executable = runtime.load(out)
        inputs = list(_inputs(executable.plan, 2))
        outputs.append(executable.run(inputs, _weights()))
    for got, ref in zip(*outputs, strict=True):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_status_outputs_are_set_to_minus_one_and_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A training plan (cross_entropy's int64 status output): each status buffer is
    memset to 0xFF before its first writer; the fake writes nothing, so the run ends
    with the status check's one sentence, as on a GPU whose kernel did not write it."""
    from teeny_ir.frontend.losses import add_cross_entropy_loss
    from teeny_ir.runtime.errors import StatusCheckError

    module = teeny_ir.parse_module((LENET / "lenet.mlir").read_text(), filename="lenet.mlir")
    add_cross_entropy_loss(module)
    pipeline = f"teeny-training{{optimizer=sgd lr=0.01}},emit-triton{{out-dir={tmp_path / 'p'}}}"
    teeny_ir.PassManager.parse(pipeline).run(module)
    stand_in_cubins(tmp_path / "p")
    plan = load_plan(tmp_path / "p")
    statuses = [b for b in plan.buffers if b.dtype == "i64"]
    assert statuses
    driver = _fake(plan)
    executable = runtime.load(tmp_path / "p")
    session = cuda.CudaSession(tmp_path / "p", plan, driver=driver)
    try:
        rng = np.random.default_rng(0)
        tensors = {
            t.name: (
                rng.integers(0, 10, [2]).astype(np.int64)
                if t.dtype == "i64"
                else rng.standard_normal([2, 1, 28, 28]).astype(np.float32)
            )
            for t in plan.inputs
        }
        weights = {w.name: np.zeros(w.shape, np.float32) for w in plan.weights if w.zero_default}
        with pytest.raises(StatusCheckError, match="did not write its"):
            session.run(tensors | executable.bind_parameters(_weights() | weights), 2)
        addresses = session.addresses(2)
    finally:
        session.close()
    memsets = [args for name, args in driver.calls if name == "cuMemsetD8Async"]
    assert sorted(args[0] for args in memsets) == sorted(addresses[b.name] for b in statuses)
    assert all(args[1] == 0xFF for args in memsets)
    # each memset is enqueued just before the launch that writes the status first
    names = driver.names()
    first = names.index("cuMemsetD8Async")
    assert names[first + 1] == "cuLaunchKernel"


def test_an_inference_plan_has_no_state_to_keep_on_the_gpu(lenet_plan: Path) -> None:
    plan = load_plan(lenet_plan)
    assert cuda.carried_params(plan) is None
    with pytest.raises(RuntimeInputError, match="training state cannot stay on the GPU"):
        cuda.CudaTrainingSession(lenet_plan, plan, driver=_fake(plan))
