"""YOLOv8n on a GPU through the cuda backend, against PyTorch on the same GPU.

Three steps, the first and last on this (CPU) machine, the middle one on a GPU
machine (Python 3.12, torch, cuda-bindings, no network). The GPU machine runs
OUR cubins, compiled here with our Triton: it never compiles a kernel itself.

1. ``--prepare`` (here): YOLOv8n at ``--size`` (640) from
   ``examples/yolov8n/make_yolov8n.py``, ``teeny-inference`` +
   ``emit-triton{archs=...}`` into ``DIR/plan``, the weights into
   ``DIR/weights.npz`` (numpy only: the GPU side needs no safetensors),
   ``DIR/meta.json`` (model, size, archs, precision) and, in ``DIR/site``, the
   wheels of the plan loader's jsonschema (with its own dependencies, for
   CPython ``--python``, 3.12 by default; ``--vendor-numpy`` adds numpy for an
   image without it), unpacked: the GPU side puts it last on its path, so the
   image's own copies win. DIR must reach the GPU machine (a folder git does
   not ignore travels with the working tree).
2. (the GPU machine) ``python bench/gpu_check.py DIR``: prints nvidia-smi's GPU
   name and the versions, then per batch (1 and 16 by default) runs the plan
   with the cuda backend (`teeny_ir.runtime.backends.cuda.CudaSession`) and
   the same model in PyTorch eager (a torch module mirroring
   examples/yolov8n, built from the same weights; ultralytics is not needed),
   checks ``max|got - ref| <= tol * max(1, max|ref|)`` with tol 1e-2 for a
   tf32 plan and 1e-4 for an ieee one (the reference is fp32 eager with TF32
   off), and times one forward (CUDA events, after ``--warmup`` forwards,
   median of ``--runs``) for teeny_ir, torch eager and torch.compile (when it
   works). The same forward as a CUDA graph (`CudaSession.graph`: captured
   once per batch size, replayed with ``cuGraphLaunch``) against the stream
   launches: CUDA events per forward, wall time per call with the input and
   output copies (``session.run`` both ways), the capture's cost, and the
   replay's outputs, which must be the stream's bit for bit. Per family
   (``--no-families``: not), every launch timed alone
   against its torch equivalent on the same shapes (`bench/torch_equivalents.py`:
   cuDNN convolution with the BN scale folded in, then SiLU; torch's pools and
   upsampling), summed per family and printed as ratios. Memory: the plan's
   arena (+ parameters + inputs) against ``torch.cuda.max_memory_allocated``
   of an eager forward. Exit status 1 when an output is off.
3. ``--dry-run`` (here, no GPU): the same plan through the cuda backend on the
   fake driver (`teeny_ir.testing.fake_cuda`): every launch's cubin,
   grid, block, shared memory and packed parameters, printed; then each batch
   size's CUDA graph, captured and replayed on the fake, its kernel nodes
   checked against the stream launches' parameter bytes.
   ``--interpret`` (here, no GPU): the fake driver runs every launch in
   Triton's interpreter, from the parameter bytes, and each launch's output
   is checked against its torch equivalent computed from the same memory (the
   equivalents the GPU side times are then known to compute the same thing).

``--model lenet`` does the same with examples/lenet (28x28; no torch mirror, so
the GPU run only prints the teeny_ir side), which is quick to prepare.
``--model lenet-train`` prepares LeNet's SGD training plan: the GPU side (or
``--interpret``, here) runs ``--steps`` steps through ``trainer(weights,
backend="cuda")`` against torch.optim.SGD in float64 (loss, logits, parameters
and momentum within the precision's tolerance) and prints the time per step.

Usage:
  python bench/gpu_check.py DIR --prepare [--model yolov8n|lenet|lenet-train] [--size 640]
      [--archs 90] [--precision tf32|ieee] [--python 3.12]
  python bench/gpu_check.py DIR [--batches 1 16] [--runs 20] [--warmup 5] [--steps 3]
  python bench/gpu_check.py DIR --dry-run [--batches 1 16]
  python bench/gpu_check.py DIR --interpret [--batches 2]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _vendored_site() -> None:
    """Put DIR/site (unpacked by ``--prepare``: see `VENDORED`) last on the
    path, before numpy is imported: what the GPU image has wins, what it lacks
    comes from there."""
    for arg in sys.argv[1:]:
        if not arg.startswith("-") and (Path(arg) / "site").is_dir():
            sys.path.append(str(Path(arg) / "site"))
            return


_vendored_site()

try:
    import numpy as np
except ModuleNotFoundError:
    raise SystemExit(
        "gpu_check: this Python has no numpy; prepare DIR with --vendor-numpy"
    ) from None

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from teeny_ir import runtime  # noqa: E402
from teeny_ir.backend import memory  # noqa: E402
from teeny_ir.backend.plan import BATCH, Plan  # noqa: E402
from teeny_ir.core.expressions import eval_text  # noqa: E402
from teeny_ir.kernels.families import FAMILIES  # noqa: E402
from teeny_ir.runtime.backends import cuda  # noqa: E402

TOLERANCE = {"tf32": 1e-2, "ieee": 1e-4}


# --- 1. prepare (here) ----------------------------------------------------------


def _load_by_path(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prepare(
    directory: Path,
    model: str,
    size: int,
    archs: str,
    precision: str,
    python: str,
    vendor_numpy: bool = False,
) -> None:
    """Emit the plan with cubins into DIR/plan, the weights into DIR/weights.npz
    and the plan loader's one dependency beyond numpy into DIR/site."""
    import teeny_ir

    if model == "yolov8n":
        make = _load_by_path("make_yolov8n", ROOT / "examples" / "yolov8n" / "make_yolov8n.py")
        module = make.make_module(size)
        weights = make.make_weights(module)
    else:
        from safetensors.numpy import load_file

        text = (ROOT / "examples" / "lenet" / "lenet.mlir").read_text()
        module = teeny_ir.parse_module(text, filename="lenet.mlir")
        weights = load_file(str(ROOT / "examples" / "lenet" / "lenet.safetensors"))
        size = 28
    stages = "teeny-inference"
    if model == "lenet-train":
        from teeny_ir.frontend.losses import add_cross_entropy_loss

        add_cross_entropy_loss(module)
        stages = f"teeny-training{{{LENET_SGD} profile=gpu}}"
    directory.mkdir(parents=True, exist_ok=True)
    plan_dir = directory / "plan"
    start = time.perf_counter()
    emit = f"out-dir={plan_dir} archs={archs} precision={precision}"
    pipeline = f"{stages},emit-triton{{{emit}}}"
    teeny_ir.PassManager.parse(pipeline).run(module)
    print(f"emitted {plan_dir} (archs {archs}) in {time.perf_counter() - start:.1f} s")
    np.savez(directory / "weights.npz", **{k: np.asarray(v) for k, v in weights.items()})
    _vendor(directory / "site", python, ("numpy",) if vendor_numpy else ())
    meta = {"model": model, "size": size, "archs": archs, "precision": precision}
    (directory / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    files = [p for p in directory.rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    print(f"{directory}: {len(files)} files, {total / 2**20:.1f} MiB")


LENET_SGD = "optimizer=sgd lr=0.05 momentum=0.9 weight-decay=5e-4"
"""``--model lenet-train``'s optimizer (torch.optim.SGD's, decay on the weights only)."""

VENDORED = ("jsonschema",)
"""What the GPU side needs beyond torch, numpy and cuda-python (the plan
loader's validator): the wheels, and their dependencies', for the GPU side's
Python go to DIR/site, pinned as installed here. ``--vendor-numpy`` adds numpy
(about 60 MB unpacked) for an image without it: torch does not need numpy."""


def _vendor(site: Path, python: str, extra: tuple[str, ...] = ()) -> None:
    """Download the wheels of `VENDORED` (pinned as installed here) for CPython
    ``python`` (``3.12``) on x86-64 Linux and unpack them into ``site``, which
    the GPU side puts last on its path (its own copies, if any, win)."""
    import tempfile
    import zipfile
    from importlib.metadata import version

    pins = [f"{name}=={version(name)}" for name in (*extra, *VENDORED)]
    with tempfile.TemporaryDirectory() as wheels:
        command = [
            sys.executable, "-m", "pip", "download", "-q", *pins, "--dest", wheels,
            "--only-binary=:all:", "--implementation", "cp", "--python-version", python,
            "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux2014_x86_64",
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"gpu_check: pip download failed:\n{done.stderr}")
        shutil.rmtree(site, ignore_errors=True)
        site.mkdir(parents=True)
        for wheel in sorted(Path(wheels).glob("*.whl")):
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(site)
            print(f"vendored {wheel.name}")


# --- shared ---------------------------------------------------------------------


def _load(directory: Path) -> tuple[runtime.Executable, dict[str, np.ndarray], dict[str, Any]]:
    meta = json.loads((directory / "meta.json").read_text())
    try:
        executable = runtime.load(directory / "plan")
    except ImportError as err:
        raise SystemExit(
            f"gpu_check: loading the plan needs {err.name} (pip install {err.name}, "
            "or put a copy on PYTHONPATH)"
        ) from None
    with np.load(directory / "weights.npz") as data:
        weights = {name: data[name] for name in data.files}
    return executable, weights, meta


def _inputs(plan: Plan, batch: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    env = {BATCH: batch}
    return {
        t.name: rng.standard_normal(
            [d if isinstance(d, int) else eval_text(d, env) for d in t.shape]
        ).astype(np.float32)
        for t in plan.inputs
    }


# --- 3. dry run (here, fake driver) ---------------------------------------------


def dry_run(directory: Path, batches: list[int], arch: int) -> None:
    from teeny_ir.testing.fake_cuda import FakeDriver

    executable, weights, meta = _load(directory)
    plan = executable.plan
    counts = {
        c.name: len(FAMILIES[k.family].args) + cuda.SCRATCH_POINTERS
        for k in plan.kernels
        for c in k.compiled
    }
    driver = FakeDriver(capability=divmod(arch, 10), arity=counts.__getitem__)
    params = executable.bind_parameters(weights)
    session = cuda.CudaSession(directory / "plan", plan, driver=driver)
    print(f"dry run of {meta['model']} ({meta['size']}x{meta['size']}) on a fake sm_{arch} GPU")
    loaded = [args for name, args in driver.calls if name == "cuModuleGetFunction"]
    print(f"loaded {len(loaded)} functions from {len(driver.modules)} cubins")
    for name, args in driver.calls:
        if name == "cuFuncSetAttribute":
            print(f"  {args[0].name}: {args[1]} = {args[2]}")
    graphs: list[str] = []
    try:
        for batch in batches:
            mark = len(driver.launches)
            try:
                session.run(_inputs(plan, batch) | params, batch)
            except runtime.StatusCheckError as err:  # the fake's kernels write nothing
                print(f"(batch {batch}: the status check fails as it must here: {err})")
            graphs.append(_dry_graph(session, driver, batch, driver.launches[mark:]))
            names = {address: name for name, address in session.addresses(batch).items()}
            print(f"\nbatch {batch}: arena {memory.arena_bytes(plan, batch)} bytes")
            for config in session.launches:
                values = []
                for kind, value in zip(config.params.kinds, config.params.values(), strict=True):
                    if kind == "u64":
                        values.append(names.get(int(value), "NULL" if value == 0 else hex(value)))
                    else:
                        values.append(str(value))
                print(
                    f"  {config.index:3d} {config.kernel}: grid {config.grid} block "
                    f"{config.block} shared {config.shared} params [{', '.join(values)}]"
                )
    finally:
        session.close()
    print("\nCUDA graphs (CudaSession(..., graphs=True)): one per batch size, replayed")
    for line in graphs:
        print(line)
    calls: dict[str, int] = {}
    for name, _ in driver.calls:
        calls[name] = calls.get(name, 0) + 1
    print("\ndriver calls: " + ", ".join(f"{k} {v}" for k, v in calls.items()))
    if driver.memory:
        raise SystemExit("gpu_check: the session left device memory allocated")
    if driver.graph_execs or driver.graphs:
        raise SystemExit("gpu_check: the session left CUDA graphs alive")


def _dry_graph(session: cuda.CudaSession, driver: Any, batch: int, streamed: list[Any]) -> str:
    """Capture and replay the graph of ``batch`` on the fake driver; its kernel
    nodes and the launches the replay ran must carry exactly what the stream
    launches of the same batch did. One line saying so."""
    from teeny_ir.testing.fake_cuda import KernelNode

    mark = len(driver.launches)
    graph = session.graph(batch)
    session.replay(batch)
    session.synchronize()
    replayed = driver.launches[mark:]
    executable = driver.graph_execs[graph.executable]
    nodes = [n.launch for n in executable.nodes if isinstance(n, KernelNode)]
    fields = ("function", "grid", "block", "shared", "offsets", "data")
    for what, launches in (("kernel nodes", nodes), ("replayed launches", replayed)):
        if len(launches) != len(streamed) or any(
            getattr(a, f) != getattr(b, f)
            for a, b in zip(launches, streamed, strict=True)
            for f in fields
        ):
            raise SystemExit(f"gpu_check: batch {batch}: the graph's {what} differ from the stream")
    return (
        f"  batch {batch}: {graph.kernels} kernel nodes and {graph.memsets} memset nodes; "
        f"the replay ran {len(replayed)} launches, each with the stream launch's parameter bytes"
    )


def _launch_dims(plan: Plan, index: int, batch: int) -> tuple[str, dict[str, Any], dict[str, int]]:
    """A launch's family, constexprs and integer ABI dims at ``batch``."""
    kernel = next(k for k in plan.kernels if k.name == plan.launches[index].kernel)
    family = FAMILIES[kernel.family]
    dims = {
        abi.name: eval_text(arg.expr or "", {BATCH: batch})
        for abi, arg in zip(family.args, plan.launches[index].args, strict=True)
        if not abi.dtype.startswith("*")
    }
    return kernel.family, dict(kernel.constexprs), dims


def _interpreting_driver(directory: Path, plan: Plan) -> Any:
    """A fake driver that runs every launch in Triton's interpreter, installed
    as the cuda backend's driver (this process must have the interpreter on)."""
    from teeny_ir.testing.fake_cuda import FakeDriver, Interpreting

    counts = {
        c.name: len(FAMILIES[k.family].args) + cuda.SCRATCH_POINTERS
        for k in plan.kernels
        for c in k.compiled
    }
    arch = plan.kernels[0].compiled[0].arch
    driver = FakeDriver(capability=divmod(arch, 10), arity=counts.__getitem__)
    driver.execute = Interpreting(driver, directory / "plan", plan)
    cuda._load_driver = lambda: driver  # what CudaBackend and CudaSession import
    return driver


def _in_interpreter() -> int | None:
    """Re-run this command with the interpreter on (its exit status), or None
    when this process has it on already."""
    from teeny_ir.backend import triton_settings

    if triton_settings.interpreter_is_on():
        return None
    env = triton_settings.interpreter_environment(dict(os.environ))
    return subprocess.run([sys.executable, *sys.argv], env=env, check=False).returncode


def check_equivalents(directory: Path, batch: int) -> int:
    """Every launch of the plan on the interpreting fake driver (the kernel in
    Triton's interpreter, here): the torch equivalent of `torch_equivalents`,
    computed from the same memory just before the kernel runs, must match what
    the kernel writes (1e-4 of the output's scale; 1e-3 relative to ``|x|``
    sums would be looser than needed for fp32 on the CPU)."""
    import torch

    status = _in_interpreter()
    if status is not None:
        return status
    sys.path.insert(0, str(ROOT / "bench"))
    import torch_equivalents

    executable, weights, meta = _load(directory)
    plan = executable.plan
    driver = _interpreting_driver(directory, plan)
    interpreting = driver.execute
    failures: list[str] = []
    worst: dict[str, float] = {}
    index = iter(range(len(plan.launches)))

    def execute(launch: Any) -> None:
        at = next(index)
        kernel, function, args = interpreting.arguments(launch)
        family, constexprs, dims = _launch_dims(plan, at, batch)
        abi = FAMILIES[family].args
        by_name = dict(zip((a.name for a in abi), args, strict=True))
        views = {}
        for name, (shape, stride) in torch_equivalents.shapes(family, dims, constexprs).items():
            strides = [dims[stride] if stride else int(np.prod(shape[1:]))]
            strides += [int(np.prod(shape[k + 1 :])) for k in range(1, len(shape))]
            views[name] = torch.as_strided(by_name[name], shape, strides)
        compute = torch_equivalents.equivalent(family, constexprs, dims, views)
        timed = torch_equivalents.equivalent(family, constexprs, dims, views, fold=True)
        want = compute().clone() if compute is not None else None
        # The form the GPU side times (the scale folded into the weight), too.
        folded = timed().clone() if timed is not None else None
        function[launch.grid](*args, **kernel.constexprs, num_warps=launch.block[0] // 32)
        if want is None or folded is None:
            failures.append(f"launch {at} ({family}): no torch equivalent")
            return
        got = views["y"]
        bound = 1e-4 * max(1.0, float(want.abs().max()))
        for form, value in (("", want), (" (folded)", folded)):
            error = float((got - value).abs().max())
            worst[family + form] = max(worst.get(family + form, 0.0), error / bound)
            if not error <= bound:
                failures.append(
                    f"launch {at} ({family}{form}): max error {error:.3g} > {bound:.3g}"
                )

    driver.execute = execute
    session = cuda.CudaSession(directory / "plan", plan, driver=driver)
    try:
        session.run(_inputs(plan, batch) | executable.bind_parameters(weights), batch)
    finally:
        session.close()
    print(
        f"{meta['model']} {meta['size']}x{meta['size']} batch {batch}: {len(plan.launches)} launches"
    )
    for family, ratio in sorted(worst.items()):
        print(f"  {family}: worst error / bound {ratio:.3g}")
    for line in failures:
        print(f"  FAIL {line}")
    return 1 if failures else 0


# --- 2. the GPU run -------------------------------------------------------------


def _versions() -> None:
    smi = shutil.which("nvidia-smi")
    if smi is not None:
        query = "--query-gpu=name,driver_version,memory.total"
        result = subprocess.run(
            [smi, query, "--format=csv,noheader"], capture_output=True, text=True, check=False
        )
        print(f"nvidia-smi: {result.stdout.strip() or result.stderr.strip()}")
    else:
        print("nvidia-smi: not found")
    import torch

    found = [f"python {platform.python_version()}", f"torch {torch.__version__}"]
    found.append(f"torch CUDA {torch.version.cuda}")
    for package in ("cuda-bindings", "cuda-python", "triton", "numpy"):
        try:
            from importlib.metadata import version

            found.append(f"{package} {version(package)}")
        except Exception:  # noqa: BLE001 - not installed
            found.append(f"{package} -")
    print("versions: " + ", ".join(found))
    print(f"torch device: {torch.cuda.get_device_name(0)}")


def torch_lenet(weights: dict[str, np.ndarray]) -> Any:
    """examples/lenet in torch (float64, CPU: the training check's reference)."""
    import torch
    from torch import nn

    class LeNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1 = nn.Linear(400, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, x: Any) -> Any:
            x = nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
            x = nn.functional.avg_pool2d(torch.relu(self.conv2(x)), 2)
            x = torch.relu(self.fc1(x.flatten(1)))
            return self.fc3(torch.relu(self.fc2(x)))

    model = LeNet().double()
    model.load_state_dict({k: torch.tensor(v, dtype=torch.float64) for k, v in weights.items()})
    return model


def train_check(directory: Path, batch: int, steps: int, interpret: bool) -> int:
    """``--model lenet-train``: ``steps`` SGD steps of the training plan through
    ``trainer(weights, backend="cuda")`` against torch.optim.SGD in float64 on
    the CPU, each step's loss and logits and the final parameters and momentum
    buffers within ``tol * max(1, max|ref|)`` (the plan's precision's tol).
    With ``interpret`` (here, no GPU) the cuda backend runs on the fake driver
    with every launch in Triton's interpreter."""
    import torch

    if interpret:
        status = _in_interpreter()
        if status is not None:
            return status
    executable, weights, meta = _load(directory)
    tolerance = TOLERANCE[str(meta.get("precision", "tf32"))]
    if interpret:
        _interpreting_driver(directory, executable.plan)
    problem = runtime.BACKENDS["cuda"].available()
    if problem is not None:
        raise SystemExit(f"gpu_check: {problem}")
    model = torch_lenet(weights)
    named = dict(model.named_parameters())
    groups = [
        {"params": [p for n, p in named.items() if n.endswith("weight")]},
        {"params": [p for n, p in named.items() if n.endswith("bias")], "weight_decay": 0.0},
    ]
    sgd = torch.optim.SGD(groups, lr=0.05, momentum=0.9, weight_decay=5e-4)
    rng = np.random.default_rng(5)
    worst = 0.0
    failed = False

    def compare(got: np.ndarray, want: np.ndarray, what: str) -> None:
        nonlocal worst, failed
        bound = tolerance * max(1.0, float(np.abs(want).max()))
        error = float(np.abs(np.asarray(got, np.float64) - want).max())
        worst = max(worst, error / bound)
        if not (np.isfinite(got).all() and error <= bound):
            failed = True
            print(f"  FAIL {what}: max error {error:.3g} > {bound:.3g}")

    times = []
    with executable.trainer(weights, backend="cuda") as trainer:
        for step in range(steps):
            x = rng.standard_normal((batch, 1, 28, 28)).astype(np.float32)
            targets = rng.integers(0, 10, batch).astype(np.int64)
            start = time.perf_counter()
            loss, logits = trainer.step([x, targets])
            times.append(time.perf_counter() - start)
            sgd.zero_grad()
            reference = model(torch.tensor(x, dtype=torch.float64))
            ref_loss = torch.nn.functional.cross_entropy(reference, torch.tensor(targets))
            ref_loss.backward()
            sgd.step()
            compare(loss, ref_loss.detach().numpy(), f"loss of step {step}")
            compare(logits, reference.detach().numpy(), f"logits of step {step}")
            print(f"  step {step}: loss {float(loss):.6f} (torch float64 {ref_loss.item():.6f})")
        state = trainer.state_dict()
    for name, parameter in named.items():
        compare(state[name], parameter.detach().numpy(), name)
        buffer = sgd.state[parameter]["momentum_buffer"].numpy()
        compare(state[f"{name}.momentum_buffer"], buffer, f"{name}.momentum_buffer")
    where = "the interpreting fake driver" if interpret else "the GPU"
    print(
        f"lenet training on {where}, batch {batch}: {steps} steps, {len(named)} parameters "
        f"and their momentum: worst error / bound {worst:.3g} "
        f"({meta.get('precision', 'tf32')} tol {tolerance}): {'FAIL' if failed else 'ok'}"
    )
    print(f"  wall per step (inputs up, launches, results back; the state stays): "
          f"first {times[0] * 1e3:.1f} ms, then median {statistics.median(times[1:] or times) * 1e3:.1f} ms")  # fmt: skip
    return 1 if failed else 0


def torch_yolov8n(weights: dict[str, np.ndarray]) -> Any:
    """YOLOv8n in torch, mirroring examples/yolov8n/make_yolov8n.py (raw head
    outputs: per level concat(box branch, class branch)), with ``weights``."""
    import torch
    from torch import nn

    class Conv(nn.Module):
        def __init__(self, c_in: int, c_out: int, k: int = 1, s: int = 1) -> None:
            super().__init__()
            self.conv = nn.Conv2d(c_in, c_out, k, s, k // 2, bias=False)
            self.bn = nn.BatchNorm2d(c_out, eps=1e-3, momentum=0.03)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return nn.functional.silu(self.bn(self.conv(x)))

    class Bottleneck(nn.Module):
        def __init__(self, c: int, shortcut: bool) -> None:
            super().__init__()
            self.cv1, self.cv2, self.shortcut = Conv(c, c, 3), Conv(c, c, 3), shortcut

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.cv2(self.cv1(x))
            return x + y if self.shortcut else y

    class C2f(nn.Module):
        def __init__(self, c_in: int, c_out: int, n: int, shortcut: bool) -> None:
            super().__init__()
            c = c_out // 2
            self.cv1 = Conv(c_in, 2 * c)
            self.m = nn.ModuleList(Bottleneck(c, shortcut) for _ in range(n))
            self.cv2 = Conv((2 + n) * c, c_out)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            ys = list(self.cv1(x).chunk(2, 1))
            for block in self.m:
                ys.append(block(ys[-1]))
            return self.cv2(torch.cat(ys, 1))

    class SPPF(nn.Module):
        def __init__(self, c_in: int, c_out: int, k: int = 5) -> None:
            super().__init__()
            self.cv1 = Conv(c_in, c_in // 2)
            self.cv2 = Conv(2 * c_in, c_out)
            self.m = nn.MaxPool2d(k, 1, k // 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            ys = [self.cv1(x)]
            for _ in range(3):
                ys.append(self.m(ys[-1]))
            return self.cv2(torch.cat(ys, 1))

    class Detect(nn.Module):
        def __init__(self, channels: list[int]) -> None:
            super().__init__()
            box, cls = max(16, channels[0] // 4, 64), max(channels[0], 80)

            def branch(c: int, hidden: int, out: int) -> nn.Sequential:
                return nn.Sequential(
                    Conv(c, hidden, 3), Conv(hidden, hidden, 3), nn.Conv2d(hidden, out, 1)
                )

            self.cv2 = nn.ModuleList(branch(c, box, 64) for c in channels)
            self.cv3 = nn.ModuleList(branch(c, cls, 80) for c in channels)

        def forward(self, xs: list[torch.Tensor]) -> list[torch.Tensor]:
            return [torch.cat([self.cv2[i](x), self.cv3[i](x)], 1) for i, x in enumerate(xs)]

    class YoloV8n(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            none = nn.Identity
            self.model = nn.ModuleList(
                [
                    Conv(3, 16, 3, 2), Conv(16, 32, 3, 2), C2f(32, 32, 1, True),
                    Conv(32, 64, 3, 2), C2f(64, 64, 2, True), Conv(64, 128, 3, 2),
                    C2f(128, 128, 2, True), Conv(128, 256, 3, 2), C2f(256, 256, 1, True),
                    SPPF(256, 256), none(), none(), C2f(384, 128, 1, False), none(), none(),
                    C2f(192, 64, 1, False), Conv(64, 64, 3, 2), none(),
                    C2f(192, 128, 1, False), Conv(128, 128, 3, 2), none(),
                    C2f(384, 256, 1, False), Detect([64, 128, 256]),
                ]
            )  # fmt: skip

        def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
            m = self.model
            up = nn.functional.interpolate
            y4 = m[4](m[3](m[2](m[1](m[0](x)))))
            y6 = m[6](m[5](y4))
            y9 = m[9](m[8](m[7](y6)))
            y12 = m[12](torch.cat([up(y9, scale_factor=2.0, mode="nearest"), y6], 1))
            y15 = m[15](torch.cat([up(y12, scale_factor=2.0, mode="nearest"), y4], 1))
            y18 = m[18](torch.cat([m[16](y15), y12], 1))
            y21 = m[21](torch.cat([m[19](y18), y9], 1))
            return m[22]([y15, y18, y21])

    model = YoloV8n()
    state = {k: torch.from_numpy(np.asarray(v)) for k, v in weights.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith("num_batches_tracked")]
    if missing or unexpected:
        raise SystemExit(
            f"gpu_check: the torch mirror's weights: missing {missing}, extra {unexpected}"
        )
    return model.eval()


def _events_ms(
    driver: Any, stream: Any, forward: Callable[[], None], warmup: int, runs: int
) -> float:
    """Median milliseconds of ``forward`` on ``stream`` between driver events."""
    for _ in range(warmup):
        forward()
    cuda._call(driver, "cuStreamSynchronize", stream)
    start, end = cuda._call(driver, "cuEventCreate", 0), cuda._call(driver, "cuEventCreate", 0)
    times = []
    for _ in range(runs):
        cuda._call(driver, "cuEventRecord", start, stream)
        forward()
        cuda._call(driver, "cuEventRecord", end, stream)
        cuda._call(driver, "cuEventSynchronize", end)
        times.append(float(cuda._call(driver, "cuEventElapsedTime", start, end)))
    for event in (start, end):
        cuda._call(driver, "cuEventDestroy", event)
    return statistics.median(times)


def _wall_ms(forward: Callable[[], Any], warmup: int, runs: int) -> float:
    """Median wall milliseconds of ``forward`` (which waits for the GPU itself)."""
    for _ in range(warmup):
        forward()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        forward()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def _torch_ms(forward: Callable[[], Any], warmup: int, runs: int) -> float:
    import torch

    for _ in range(warmup):
        forward()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        forward()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def gpu_run(
    directory: Path,
    batches: list[int],
    warmup: int,
    runs: int,
    compile_too: bool,
    families: bool = True,
) -> int:
    import torch

    _versions()
    torch.cuda.init()  # the primary context, which the cuda backend shares
    executable, weights, meta = _load(directory)
    plan = executable.plan
    precision = str(meta.get("precision", "tf32"))
    tolerance = TOLERANCE[precision]
    problem = runtime.BACKENDS["cuda"].available()
    if problem is not None:
        raise SystemExit(f"gpu_check: {problem}")
    params = executable.bind_parameters(weights)
    model = None
    if meta["model"] == "yolov8n":
        torch.backends.cuda.matmul.allow_tf32 = False  # the reference: IEEE fp32
        torch.backends.cudnn.allow_tf32 = False
        model = torch_yolov8n(weights).cuda()
    session = cuda.CudaSession(directory / "plan", plan)
    failed = False
    try:
        start = time.perf_counter()
        session.upload_params(params)
        print(f"loaded {len(session.functions)} cubins for sm_{session.arch} and uploaded "
              f"{len(plan.params)} parameters in {time.perf_counter() - start:.2f} s")  # fmt: skip
        for batch in batches:
            tensors = _inputs(plan, batch) | params
            start = time.perf_counter()
            outputs = session.run(tensors, batch)
            first = time.perf_counter() - start
            teeny_ms = _events_ms(
                session.driver, session.stream, lambda b=batch: session.launch(b), warmup, runs
            )
            start = time.perf_counter()
            graph = session.graph(batch)
            capture_ms = (time.perf_counter() - start) * 1e3
            graph_ms = _events_ms(
                session.driver, session.stream, lambda b=batch: session.replay(b), warmup, runs
            )
            session.replay(batch)  # the inputs of the first run are still in place
            session.synchronize()
            replayed = [session.read(name, batch) for name in plan.outputs]
            same = all(np.array_equal(a, b) for a, b in zip(replayed, outputs, strict=True))
            failed |= not same
            walls = {}
            for graphs in (False, True):
                session.use_graphs = graphs
                walls[graphs] = _wall_ms(lambda b=batch, t=tensors: session.run(t, b), warmup, runs)
            session.use_graphs = False
            param_bytes = sum(4 * int(np.prod(p.shape)) for p in plan.params)
            input_bytes = sum(a.nbytes for k, a in tensors.items() if k not in params)
            arena = memory.arena_bytes(plan, batch)
            print(f"\n{meta['model']} {meta['size']}x{meta['size']} batch {batch}")
            print(
                f"  teeny_ir cuda: {teeny_ms:8.3f} ms/forward (first run with copies {first * 1e3:.1f} ms)"
            )
            print(f"  teeny_ir graph: {graph_ms:8.3f} ms/forward (the stream launches take "
                  f"{teeny_ms / graph_ms:.2f}x that; {graph.kernels} kernel nodes, captured and "
                  f"instantiated in {capture_ms:.1f} ms); outputs "
                  f"{'bit-identical to the stream' if same else 'DIFFER from the stream: FAIL'}")  # fmt: skip
            print(f"  per call with copies (session.run): stream {walls[False]:.3f} ms, "
                  f"graph {walls[True]:.3f} ms")  # fmt: skip
            print(f"  teeny_ir memory: arena {arena / 2**20:.1f} MiB, + params and inputs "
                  f"{(arena + param_bytes + input_bytes) / 2**20:.1f} MiB")  # fmt: skip
            if model is None:
                continue
            x = torch.from_numpy(tensors[plan.inputs[0].name]).cuda()
            with torch.no_grad():
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                base = torch.cuda.memory_allocated()
                reference = [r.float().cpu().numpy() for r in model(x)]
                peak = torch.cuda.max_memory_allocated()
                eager_ms = _torch_ms(lambda m=model, x=x: m(x), warmup, runs)
                print(f"  torch eager:   {eager_ms:8.3f} ms/forward")
                print(f"  torch memory: max_memory_allocated {peak / 2**20:.1f} MiB "
                      f"({(peak - base) / 2**20:.1f} MiB above weights and input)")  # fmt: skip
                if compile_too:
                    try:
                        compiled = torch.compile(model)
                        compiled(x)
                        compile_ms = _torch_ms(lambda m=compiled, x=x: m(x), warmup, runs)
                        print(f"  torch.compile: {compile_ms:8.3f} ms/forward")
                    except Exception as err:  # noqa: BLE001 - reported, not fatal
                        print(
                            f"  torch.compile: failed ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})"
                        )
            if families:
                family_table(session, plan, batch, warmup, runs)
            for index, (got, ref) in enumerate(zip(outputs, reference, strict=True)):
                error = float(np.max(np.abs(got - ref)))
                bound = tolerance * max(1.0, float(np.max(np.abs(ref))))
                ok = got.shape == ref.shape and np.isfinite(got).all() and error <= bound
                failed |= not ok
                print(f"  output {index} {list(got.shape)}: max|got-ref| = {error:.3g} "
                      f"<= {bound:.3g} ({precision}): {'ok' if ok else 'FAIL'}")  # fmt: skip
    finally:
        session.close()
    return 1 if failed else 0


def family_table(session: cuda.CudaSession, plan: Plan, batch: int, warmup: int, runs: int) -> None:
    """Each family's launches timed alone (CUDA events over ``runs`` launches of
    the same kernel, after ``warmup``) against their torch equivalents
    (`torch_equivalents`, scale folded into the weight: cuDNN convolution with
    bias, then the activation) on random tensors of the same shapes."""
    import torch

    sys.path.insert(0, str(ROOT / "bench"))
    import torch_equivalents

    ours: dict[str, float] = {}
    theirs: dict[str, float] = {}
    counts: dict[str, int] = {}
    missing: dict[str, int] = {}
    generator = torch.Generator(device="cuda").manual_seed(0)
    for config in session.prepare(batch):
        family, constexprs, dims = _launch_dims(plan, config.index, batch)
        counts[family] = counts.get(family, 0) + 1
        ours[family] = ours.get(family, 0.0) + _events_ms(
            session.driver, session.stream, lambda c=config: session.enqueue(c), warmup, runs
        )
        tensors = {
            name: torch.randn(shape, device="cuda", generator=generator)
            for name, (shape, _) in torch_equivalents.shapes(family, dims, constexprs).items()
        }
        compute = torch_equivalents.equivalent(family, constexprs, dims, tensors, fold=True)
        if compute is None:
            missing[family] = missing.get(family, 0) + 1
            continue
        with torch.no_grad():
            theirs[family] = theirs.get(family, 0.0) + _torch_ms(compute, warmup, runs)
    print(f"  per family at batch {batch} (sum over its launches, each timed alone):")
    print(f"    {'family':<22} {'launches':>8} {'teeny_ir ms':>12} {'torch ms':>10} {'ratio':>7}")
    for family in sorted(counts, key=lambda f: -ours[f]):
        if family in missing:
            print(f"    {family:<22} {counts[family]:>8} {ours[family]:>12.3f} "
                  f"{'-':>10} {'-':>7} ({missing[family]} without a torch equivalent)")  # fmt: skip
            continue
        ratio = ours[family] / theirs[family] if theirs[family] else float("nan")
        print(f"    {family:<22} {counts[family]:>8} {ours[family]:>12.3f} "
              f"{theirs[family]:>10.3f} {ratio:>7.2f}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path, help="DIR: plan/, weights.npz, meta.json")
    parser.add_argument(
        "--prepare", action="store_true", help="emit the plan and weights into DIR (here)"
    )
    parser.add_argument("--dry-run", action="store_true", help="run on the fake driver (no GPU)")
    parser.add_argument("--model", choices=("yolov8n", "lenet", "lenet-train"), default="yolov8n")
    parser.add_argument("--steps", type=int, default=3, help="training steps (lenet-train)")
    parser.add_argument("--size", type=int, default=640, help="YOLOv8n input size (--prepare)")
    parser.add_argument("--archs", default="90", help="cubin archs (--prepare)")
    parser.add_argument(
        "--precision", choices=tuple(TOLERANCE), default="tf32", help="tl.dot's (--prepare)"
    )
    parser.add_argument("--arch", type=int, default=90, help="the fake GPU's sm (--dry-run)")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--no-families", action="store_true", help="skip the per-family table")
    parser.add_argument(
        "--python",
        default="3.12",
        help="the GPU side's Python, for the vendored wheels (--prepare)",
    )
    parser.add_argument(
        "--vendor-numpy", action="store_true", help="also unpack numpy into DIR/site (--prepare)"
    )
    parser.add_argument(
        "--interpret",
        action="store_true",
        help="here, no GPU: the checks on the fake driver, each launch in Triton's "
        "interpreter (inference: every launch against its torch equivalent)",
    )
    args = parser.parse_args()
    if args.prepare:
        prepare(
            args.directory,
            args.model,
            args.size,
            args.archs,
            args.precision,
            args.python,
            args.vendor_numpy,
        )
        return 0
    if args.dry_run:
        dry_run(args.directory, args.batches, args.arch)
        return 0
    meta = json.loads((args.directory / "meta.json").read_text())
    if meta["model"] == "lenet-train":
        return train_check(args.directory, args.batches[0], args.steps, args.interpret)
    if args.interpret:
        return check_equivalents(args.directory, args.batches[0])
    return gpu_run(
        args.directory,
        args.batches,
        args.warmup,
        args.runs,
        not args.no_compile,
        not args.no_families,
    )


if __name__ == "__main__":
    sys.exit(main())
