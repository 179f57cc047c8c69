"""CUDA graphs on the cuda backend, on the fake driver (`teeny_ir.testing.fake_cuda`):
no GPU, no cuda-python, no ahead-of-time compile (stand-in cubins).

A graph is the stream path's own calls captured (``cuStreamBeginCapture`` ..
``cuStreamEndCapture``): its kernel nodes must hold exactly the parameter bytes
the stream launches pass, each status memset must sit before its first writer,
a session must build one graph per batch size and replay it
(``cuGraphLaunch``) on later runs with the new inputs copied into the same
buffers, and a driver error while building one is one sentence that leaves the
session usable. The numbers a replay computes are checked on the interpreting
fake in tests/test_cuda_interpreted.py.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pytest

import teeny_ir
from teeny_ir import runtime
from teeny_ir.backend.plan import BATCH, Plan, load_plan
from teeny_ir.core.expressions import eval_text
from teeny_ir.driver import run as teeny_run
from teeny_ir.frontend.losses import add_cross_entropy_loss
from teeny_ir.runtime.backends import cuda
from teeny_ir.runtime.errors import RuntimeInputError, StatusCheckError, WorkerError
from teeny_ir.testing.fake_cuda import (
    FakeDriver,
    FakeResult,
    KernelNode,
    Launch,
    MemsetNode,
    stand_in_cubins,
)

ROOT = Path(__file__).resolve().parent.parent
LENET = ROOT / "examples" / "lenet"
WEIGHTS = LENET / "lenet.safetensors"


def _emit(tmp_path_factory: pytest.TempPathFactory, name: str, pipeline: str) -> Path:
    module = teeny_ir.parse_module((LENET / "lenet.mlir").read_text(), filename="lenet.mlir")
    if "training" in pipeline:
        add_cross_entropy_loss(module)
    out = tmp_path_factory.mktemp(name) / "plan"
    teeny_ir.PassManager.parse(f"{pipeline},emit-triton{{out-dir={out}}}").run(module)
    stand_in_cubins(out)
    return out


@pytest.fixture(scope="module")
def inference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _emit(tmp_path_factory, "inference", "teeny-inference")


@pytest.fixture(scope="module")
def training(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _emit(tmp_path_factory, "training", "teeny-training{optimizer=sgd lr=0.01}")


def _inputs(plan: Plan, batch: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for spec in plan.inputs:
        shape = [d if isinstance(d, int) else eval_text(d, {BATCH: batch}) for d in spec.shape]
        if spec.dtype == "i64":
            arrays.append(rng.integers(0, 10, shape).astype(np.int64))
        else:
            arrays.append(rng.standard_normal(shape).astype(np.float32))
    return arrays


def _tensors(plan: Plan, batch: int, seed: int = 0) -> dict[str, np.ndarray]:
    return dict(zip([t.name for t in plan.inputs], _inputs(plan, batch, seed), strict=True))


def _params(directory: Path) -> dict[str, np.ndarray]:
    executable = runtime.load(directory)
    weights = runtime.read_weights(WEIGHTS)
    zeros = {w.name: np.zeros(w.shape, np.float32) for w in executable.plan.weights}
    return executable.bind_parameters(zeros | weights)


def _same_launch(a: Launch, b: Launch) -> bool:
    """Everything the GPU gets from a launch (the stream aside)."""
    fields = ("function", "grid", "block", "shared", "offsets", "data", "extra")
    return all(getattr(a, f) == getattr(b, f) for f in fields)


def test_kernel_nodes_hold_the_stream_launches_parameters(inference: Path) -> None:
    plan = load_plan(inference)
    driver = FakeDriver.for_plan(plan)
    session = cuda.CudaSession(inference, plan, driver=driver, graphs=True)
    try:
        session.run(_tensors(plan, 3) | _params(inference), 3)
        (executable,) = driver.instantiated
        replayed = list(driver.launches)
        session.launch(3)  # the stream path of the same session: the same addresses
        streamed = driver.launches[len(replayed) :]
        configs, graph = list(session.launches), session.graphs[3]
    finally:
        session.close()
    nodes = [node.launch for node in executable.nodes if isinstance(node, KernelNode)]
    assert len(nodes) == len(executable.nodes) == len(plan.launches) == graph.kernels
    assert graph.memsets == 0  # LeNet inference has no status output
    for node, config, seen, again in zip(nodes, configs, streamed, replayed, strict=True):
        assert (node.data, node.offsets) == (config.params.data, config.params.offsets)
        assert (node.grid, node.block, node.shared) == (config.grid, config.block, config.shared)
        assert node.function == config.function
        assert _same_launch(node, seen) and _same_launch(node, again)
        assert again.stream == seen.stream == "stream0"
    names = driver.names()
    begin, end = names.index("cuStreamBeginCapture"), names.index("cuStreamEndCapture")
    assert set(names[begin + 1 : end]) == {"cuLaunchKernel"}
    assert names[end + 1 : end + 4] == ["cuGraphInstantiate", "cuGraphDestroy", "cuGraphLaunch"]
    calls = dict(driver.calls)
    assert calls["cuStreamBeginCapture"] == ("stream0", "thread_local")
    assert calls["cuGraphInstantiate"] == (executable.graph, 0)
    assert not driver.memory and not driver.graphs and not driver.graph_execs


def test_status_memsets_are_nodes_before_their_first_writer(training: Path) -> None:
    plan = load_plan(training)
    statuses = [b.name for b in plan.buffers if b.dtype == "i64"]
    assert statuses
    driver = FakeDriver.for_plan(plan)
    session = cuda.CudaSession(training, plan, driver=driver, graphs=True)
    try:
        with pytest.raises(StatusCheckError, match="did not write its"):
            session.run(_tensors(plan, 2) | _params(training), 2)  # the fake writes nothing
        addresses = session.addresses(2)
        (executable,) = driver.instantiated
        nodes = executable.nodes
        memsets = [(k, n) for k, n in enumerate(nodes) if isinstance(n, MemsetNode)]
        assert sorted(n.address for _, n in memsets) == sorted(addresses[s] for s in statuses)
        for k, node in memsets:
            assert (node.value, node.size) == (0xFF, 1) and isinstance(nodes[k + 1], KernelNode)
            assert driver.read(node.address, node.count) == b"\xff" * node.count  # replayed
        assert session.graphs[2].memsets == len(statuses)
        assert session.graphs[2].kernels == len(nodes) - len(statuses)
    finally:
        session.close()


def test_one_graph_per_batch_size_replayed_with_new_inputs(
    inference: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = load_plan(inference)
    driver = FakeDriver.for_plan(plan)
    monkeypatch.setattr(cuda, "_load_driver", lambda: driver)
    executable = runtime.load(inference)
    batches = (2, 5, 2, 5, 5)
    copies: list[list[tuple[int, bytes]]] = []
    with executable.session(WEIGHTS, backend="cuda", graphs=True) as session:
        for call, batch in enumerate(batches):
            mark = len(driver.calls)
            inputs = _inputs(plan, batch, seed=call)
            outputs = session.run(inputs)
            assert [o.shape[0] for o in outputs] == [batch] * len(plan.outputs)
            fresh = [args for name, args in driver.calls[mark:] if name == "cuMemcpyHtoD"]
            copies.append([(args[0], driver.read(args[0], args[2])) for args in fresh[-1:]])
            assert copies[-1][0][1] == inputs[-1].tobytes()  # this call's input
    names = driver.names()
    assert names.count("cuStreamBeginCapture") == names.count("cuGraphInstantiate") == 2
    assert names.count("cuGraphLaunch") == len(batches)
    assert names.count("cuLaunchKernel") == 2 * len(plan.launches)  # captured, not run
    assert len(driver.launches) == len(batches) * len(plan.launches)  # replayed
    # one arena per batch size, kept while its graph lives; the inputs go to the
    # same buffers each time (the addresses the graph was captured with)
    arenas = [args[0] for name, args in driver.calls if name == "cuMemsetD32Async"]
    assert len(arenas) == 2
    assert copies[0][0][0] == copies[2][0][0] and copies[1][0][0] == copies[3][0][0]
    assert copies[0][0][0] != copies[1][0][0] and copies[0][0][1] != copies[2][0][1]
    assert names.count("cuGraphExecDestroy") == 2
    assert not driver.memory and not driver.graph_execs and not driver.graphs


def test_the_least_recently_used_graph_goes_beyond_max_graphs(inference: Path) -> None:
    plan = load_plan(inference)
    driver = FakeDriver.for_plan(plan)
    session = cuda.CudaSession(inference, plan, driver=driver, graphs=True)
    session.max_graphs = 2
    params = _params(inference)
    try:
        for batch in (1, 2):
            session.run(_tensors(plan, batch) | params, batch)
        live = len(driver.memory)
        first = session.graphs[1].executable
        session.run(_tensors(plan, 3) | params, 3)  # batch 1 goes: its graph and memory
        assert sorted(session.graphs) == [2, 3] and first not in driver.graph_execs
        assert len(driver.memory) == live  # batch 3's arena and input for batch 1's
        session.run(_tensors(plan, 2) | params, 2)  # replayed
        assert driver.names().count("cuGraphInstantiate") == 3
        assert list(session.graphs) == [3, 2]  # the most recently used last
        session.run(_tensors(plan, 1) | params, 1)  # captured again; batch 3 goes
        assert driver.names().count("cuGraphInstantiate") == 4
        assert sorted(session.graphs) == [1, 2]
    finally:
        session.close()
    assert not driver.memory and not driver.graph_execs


def test_a_stream_run_between_graph_runs_keeps_the_graphs(inference: Path) -> None:
    """Without graphs on, a run at another batch size frees that size's memory
    as before; a batch size with a graph keeps its memory and its graph."""
    plan = load_plan(inference)
    driver = FakeDriver.for_plan(plan)
    session = cuda.CudaSession(inference, plan, driver=driver, graphs=True)
    params = _params(inference)
    try:
        session.run(_tensors(plan, 2) | params, 2)
        session.use_graphs = False
        session.run(_tensors(plan, 4) | params, 4)
        session.run(_tensors(plan, 1) | params, 1)  # batch 4's memory is freed
        assert len([a for n, a in driver.calls if n == "cuMemFree"]) == 1 + len(plan.inputs)
        session.use_graphs = True
        session.run(_tensors(plan, 2) | params, 2)
        assert driver.names().count("cuGraphInstantiate") == 1
    finally:
        session.close()
    assert not driver.memory


def test_graphs_are_off_by_default(inference: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = load_plan(inference)
    driver = FakeDriver.for_plan(plan)
    monkeypatch.setattr(cuda, "_load_driver", lambda: driver)
    executable = runtime.load(inference)
    executable.run(_inputs(plan, 2), WEIGHTS, backend="cuda")
    with executable.session(WEIGHTS, backend="cuda") as session:
        session.run(_inputs(plan, 2))
        session.run(_inputs(plan, 2))
    names = driver.names()
    assert "cuStreamBeginCapture" not in names and "cuGraphLaunch" not in names
    assert names.count("cuLaunchKernel") == 3 * len(plan.launches)
    # the session uploads the parameters once
    htod = names.count("cuMemcpyHtoD")
    assert htod == 2 * len(plan.params) + 3 * len(plan.inputs)


def test_graphs_need_the_cuda_backend(inference: Path) -> None:
    executable = runtime.load(inference)
    message = "CUDA graphs need the cuda backend; the interpreter backend launches each kernel"
    with pytest.raises(RuntimeInputError, match=message):
        executable.session(WEIGHTS, graphs=True)
    with pytest.raises(RuntimeInputError, match=message):
        executable.run(_inputs(executable.plan, 1), WEIGHTS, graphs=True)


@pytest.mark.parametrize(
    ("call", "code"),
    [
        ("cuStreamBeginCapture", FakeResult.CUDA_ERROR_INVALID_VALUE),
        ("cuLaunchKernel", FakeResult.CUDA_ERROR_INVALID_HANDLE),
        ("cuStreamEndCapture", FakeResult.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED),
        ("cuGraphInstantiate", FakeResult.CUDA_ERROR_OUT_OF_MEMORY),
    ],
)
def test_a_driver_error_while_building_a_graph_is_one_sentence(
    inference: Path, call: str, code: FakeResult
) -> None:
    plan = load_plan(inference)
    driver = FakeDriver.for_plan(plan)
    session = cuda.CudaSession(inference, plan, driver=driver, graphs=True)
    params = _params(inference)
    try:
        driver.failures[call] = code
        with pytest.raises(WorkerError) as info:
            session.run(_tensors(plan, 2) | params, 2)
        assert str(info.value) == (
            "the cuda backend could not build a CUDA graph of the launches at batch 2: "
            f"{call} returned {code.name} (without graphs the launches go to the stream "
            "one by one)"
        )
        # the capture was ended and its graph destroyed: the session is usable
        assert not driver._captures and not driver.graphs and not session.graphs
        del driver.failures[call]
        session.run(_tensors(plan, 2) | params, 2)
        assert len(driver.graph_execs) == 1 and len(driver.launches) == len(plan.launches)
        session.use_graphs = False
        session.run(_tensors(plan, 2) | params, 2)
    finally:
        session.close()
    assert not driver.memory and not driver.graph_execs


def test_the_fake_refuses_what_a_capture_refuses(inference: Path) -> None:
    """The stand-in is strict where the driver is: a synchronous copy or a
    stream synchronize during the capture fails and invalidates it."""
    plan = load_plan(inference)
    driver = FakeDriver.for_plan(plan)
    session = cuda.CudaSession(inference, plan, driver=driver)
    try:
        session.upload_params(_params(inference))
        session.prepare(1)
        host = np.zeros(4, np.float32)
        for name, args in [
            ("cuMemcpyDtoH", (host.ctypes.data, session.arena, 16)),
            ("cuStreamSynchronize", ("stream0",)),
            ("cuMemAlloc", (64,)),
        ]:
            assert driver.cuStreamBeginCapture("stream0", "global") == (FakeResult.CUDA_SUCCESS,)
            result, *_ = getattr(driver, name)(*args)
            assert result != FakeResult.CUDA_SUCCESS, name
            assert driver.cuStreamEndCapture("stream0") == (
                FakeResult.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                None,
            )
        assert not driver.graphs
    finally:
        session.close()


def test_a_training_session_replays_its_step_and_copies_the_state_after(
    training: Path,
) -> None:
    plan = load_plan(training)
    driver = FakeDriver.for_plan(plan)
    session = cuda.CudaTrainingSession(training, plan, driver=driver, graphs=True)
    statuses = [b.name for b in plan.buffers if b.dtype == "i64"]

    def write_statuses(launch: Launch) -> None:  # every status "written": 0, all well
        for name in statuses:
            address = session.addresses(session.batch)[name]
            nbytes = 8 * math.prod(session._shapes(session.batch)[name])
            data, offset = driver._region(address, nbytes)
            data[offset : offset + nbytes] = bytes(nbytes)

    driver.execute = write_statuses
    try:
        session.upload_state(_params(training))
        for _ in range(2):
            results = session.step(_tensors(plan, 2), 2)
            assert results[0] is not None
    finally:
        session.close()
    names = driver.names()
    assert names.count("cuGraphInstantiate") == 1 and names.count("cuGraphLaunch") == 2
    last = len(names) - 1 - names[::-1].index("cuGraphLaunch")
    copies = [k for k, name in enumerate(names) if name == "cuMemcpyDtoDAsync"]
    assert copies and min(copies) > names.index("cuGraphLaunch")
    assert len([k for k in copies if k > last]) == len(session.carried)


# --- teeny-run --cuda-graphs ------------------------------------------------------


def _teeny_run(argv: list[str]) -> tuple[int, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = teeny_run.run(argv, stdout, stderr)
    return code, stderr.getvalue()


def _cli(inference: Path, tmp_path: Path, *options: str) -> list[str]:
    x = tmp_path / "x.npy"
    np.save(x, _inputs(load_plan(inference), 3)[0])
    out = str(tmp_path / "out.npz")
    return [str(inference), "--weights", str(WEIGHTS), "--input", str(x), "-o", out, *options]


def test_teeny_run_cuda_graphs(
    inference: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = load_plan(inference)
    driver = FakeDriver.for_plan(plan)
    monkeypatch.setattr(cuda, "_load_driver", lambda: driver)
    code, stderr = _teeny_run(_cli(inference, tmp_path, "--backend", "cuda", "--cuda-graphs"))
    assert code == 0, stderr
    names = driver.names()
    assert names.count("cuGraphLaunch") == 1 and len(driver.launches) == len(plan.launches)
    with np.load(tmp_path / "out.npz") as saved:
        assert saved["output_0"].shape == (3, 10)
    code, stderr = _teeny_run(
        _cli(inference, tmp_path, "--backend", "cuda", "--cuda-graphs", "--timing")
    )
    assert code == 0 and "capture and instantiate graph" in stderr and "graph launch" in stderr


def test_teeny_run_cuda_graphs_errors_are_one_line(
    inference: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, stderr = _teeny_run(_cli(inference, tmp_path, "--cuda-graphs"))
    assert (code, stderr) == (1, "teeny-run: error: --cuda-graphs needs --backend cuda\n")
    driver = FakeDriver.for_plan(load_plan(inference))
    driver.failures["cuGraphInstantiate"] = FakeResult.CUDA_ERROR_OUT_OF_MEMORY
    monkeypatch.setattr(cuda, "_load_driver", lambda: driver)
    code, stderr = _teeny_run(_cli(inference, tmp_path, "--backend", "cuda", "--cuda-graphs"))
    assert code == 2 and stderr.count("\n") == 1 and "Traceback" not in stderr
    assert stderr.startswith(
        "teeny-run: error: the cuda backend could not build a CUDA graph of the launches at "
        "batch 3: cuGraphInstantiate returned CUDA_ERROR_OUT_OF_MEMORY"
    )
    assert not driver.memory  # the session was closed
