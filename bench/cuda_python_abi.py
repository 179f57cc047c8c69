"""The cuda backend against the REAL cuda-python driver bindings, on a fake libcuda.

Where there is no GPU, `teeny_ir.testing.fake_cuda` stands in for the
whole of ``cuda.bindings.driver``, so the argument TYPES the backend passes
(plain ints for host and device addresses, the kernelParams array's address,
``bytes`` kernel names, ``0`` for ``extra``) never meet cuda-python's own
conversions. This bench keeps the real bindings and replaces only the driver
library under them: ``bench/fake_libcuda/fake_libcuda.c``, compiled here into
``libcuda.so.1`` (device memory is host memory; a launch computes nothing and
logs what it got, see the C file's header for how the bindings find it).

1. Compile the fake into a temporary folder; emit LeNet inference with
   ``emit-triton{archs=90}`` with the main venv's python (or take ``--plan DIR``).
2. Re-execute itself under ``--python`` (an interpreter with cuda-bindings 12.9 or 13 and
   numpy; the default is this one) with ``LD_LIBRARY_PATH`` at the fake, which
   is all cuda-pathfinder's system search for the driver needs, and
   ``PYTHONPATH`` at this checkout.
3. There: the probe (``CudaBackend.available``), ``runtime.load(DIR).run(...,
   backend="cuda")``, then a `CudaSession` at each ``--batches`` size, checking
   against the fake's log that every call went through (no TypeError, no error
   code, no unimplemented entry point), that each launch got the plan's cubin,
   function, grid, block, shared bytes and stream, and parameter bytes equal to
   `pack_params`'s and to the plan's arguments at the addresses the fake handed
   out, that HtoD/DtoH moved the right bytes (an output's fake device memory is
   filled with a pattern and must come back), that a kernel over 48 KiB of
   shared memory opts in first, that the status memset reaches the driver, and
   that ``close`` frees everything. Then a `CudaSession` with CUDA graphs at
   each batch size, twice: the first run captures every launch (the fake logs
   the kernelParams bytes it copied into each node: `pack_params`'s),
   instantiates and replays; the second replays only; each replayed kernel node
   carries the same bytes, the new inputs are in the buffers the graph reads,
   and ``close`` destroys the executable graphs.

Not a CI test: it needs gcc and cuda-python. Exit status 1 when a check fails.
Measured: all checks pass with cuda-bindings 13.4.4 (cuda-python 13.4.4, the
``cuda`` extra's pin) and with cuda-bindings 12.9.10, the line a GPU image may
carry instead (both with numpy and jsonschema next to them).

Usage:
  python bench/cuda_python_abi.py --python /tmp/cudapy/bin/python [--plan DIR]
      [--batches 1 3] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "bench" / "fake_libcuda" / "fake_libcuda.c"
MAIN_PYTHON = ROOT / ".venv" / "bin" / "python"
LENET = ROOT / "examples" / "lenet" / "lenet.mlir"
EMIT = """
import sys
from pathlib import Path
import teeny_ir
module = teeny_ir.parse_module(Path(sys.argv[1]).read_text(), filename="lenet.mlir")
teeny_ir.PassManager.parse(f"teeny-inference,emit-triton{{out-dir={sys.argv[2]} archs=90}}").run(
    module
)
"""
FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED = 8
BIG_SHARED = 100_000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plan", type=Path, help="an emitted plan with sm_90 cubins")
    parser.add_argument("--python", default=sys.executable, help="python with cuda-bindings")
    parser.add_argument("--main-python", default=str(MAIN_PYTHON), help="python that emits")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        return Child(args.child, args.plan, args.batches).run()

    work = Path(tempfile.mkdtemp(prefix="cuda_python_abi."))
    try:
        lib = work / "lib"
        lib.mkdir()
        command = ["gcc", "-shared", "-fPIC", "-O1", "-Wall", "-Wextra", "-Werror"]
        command += ["-Wl,-soname,libcuda.so.1", "-o", str(lib / "libcuda.so.1"), str(SOURCE)]
        print("compile:", " ".join(command))
        subprocess.run(command, check=True)
        plan = args.plan
        if plan is None:
            plan = work / "plan"
            print(f"emit: {args.main_python} (teeny-inference,emit-triton{{archs=90}}) -> {plan}")
            subprocess.run([args.main_python, "-c", EMIT, str(LENET), str(plan)], check=True)
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in (str(lib), env.get("LD_LIBRARY_PATH", "")) if p
        )
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
        env["FAKE_CUDA_LOG"] = str(work / "calls.jsonl")
        env["FAKE_CUDA_ARITY"] = str(work / "arity.txt")
        env.pop("FAKE_CUDA_CC", None)
        child = [args.python, str(Path(__file__).resolve()), "--child", str(work)]
        child += ["--plan", str(Path(plan).resolve()), "--batches", *map(str, args.batches)]
        print(f"run: LD_LIBRARY_PATH={lib} {' '.join(child)}", flush=True)
        return subprocess.run(child, env=env, check=False).returncode
    finally:
        if args.keep:
            print(f"kept {work} (calls.jsonl: the fake driver's log)")
        else:
            shutil.rmtree(work, ignore_errors=True)


def fnv1a64(data: bytes) -> str:
    """The fake's module hash, for matching a loaded module to its cubin file."""
    value = 0xCBF29CE484222325
    for byte in data:
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{value:016x}"


class Child:
    """The checks, under the bindings' python with the fake libcuda on the loader path."""

    def __init__(self, work: Path, plan_dir: Path, batches: list[int]) -> None:
        self.work = work
        self.plan_dir = plan_dir
        self.batches = batches
        self.log_path = Path(os.environ["FAKE_CUDA_LOG"])
        self.seen = 0
        self.failures: list[str] = []
        self.passes = 0

    # --- bookkeeping ---------------------------------------------------------

    def check(self, ok: bool, what: str) -> bool:
        if ok:
            self.passes += 1
        else:
            self.failures.append(what)
            print(f"  FAIL {what}")
        return ok

    def calls(self) -> list[dict[str, Any]]:
        """Every call the fake logged so far."""
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text().splitlines() if line]

    def new_calls(self) -> list[dict[str, Any]]:
        """The calls logged since the last time this was asked."""
        everything = self.calls()
        fresh, self.seen = everything[self.seen :], len(everything)
        return fresh

    def step(self, title: str, body: Any) -> None:
        print(f"- {title}", flush=True)
        before = len(self.failures)
        try:
            body()
        except Exception as err:  # noqa: BLE001 -- a TypeError here is the finding
            self.failures.append(f"{title}: {type(err).__name__}: {err}")
            print(f"  FAIL {type(err).__name__}: {err}")
            traceback.print_exc()
        self.check_calls(title)
        if len(self.failures) == before:
            print("  ok")

    def check_calls(self, title: str) -> None:
        for call in self.new_calls():
            self.all_calls.append(call)
            if call["call"] == "unimplemented":
                self.check(False, f"{title}: called unimplemented {call['name']}")
            elif "error" in call and not call.get("expected"):
                self.check(False, f"{title}: {call['call']} returned {call['error']} ({call})")

    # --- the run ---------------------------------------------------------------

    def run(self) -> int:
        import numpy as np

        from teeny_ir.backend.plan import load_plan
        from teeny_ir.kernels.families import FAMILIES
        from teeny_ir.runtime.backends import cuda

        self.np = np
        self.cuda = cuda
        self.all_calls: list[dict[str, Any]] = []
        self.plan = load_plan(self.plan_dir)
        arity = {
            c.name: len(FAMILIES[k.family].args) + cuda.SCRATCH_POINTERS
            for k in self.plan.kernels
            for c in k.compiled
        }
        Path(os.environ["FAKE_CUDA_ARITY"]).write_text(
            "".join(f"{name} {count}\n" for name, count in arity.items())
        )
        self.step("the bindings load the fake libcuda.so.1", self.resolution)
        self.step("CudaBackend.available() (cuInit, cuDeviceGetCount)", self.probe)
        self.step("runtime.load(DIR).run(..., backend='cuda') at B=1", self.executable)
        self.step(f"CudaSession at B={self.batches}, every launch checked", self.session)
        self.step(f"shared > 48 KiB opts in (cuFuncSetAttribute, {BIG_SHARED})", self.big_shared)
        self.step("the status memset (cuMemsetD8Async) before its launch", self.status_memset)
        self.step("a training step's state copy (cuMemcpyDtoDAsync)", self.state_copy)
        self.step(f"CUDA graphs at B={self.batches}: capture, instantiate, replay", self.graphs)
        self.step("an unimplemented entry point returns an error code", self.unimplemented)
        print(f"{self.passes} checks passed, {len(self.failures)} failed")
        for failure in self.failures:
            print(f"FAILED: {failure}")
        return 1 if self.failures else 0

    def resolution(self) -> None:
        import ctypes

        from cuda import bindings
        from cuda.bindings import driver
        from cuda.pathfinder import load_nvidia_dynamic_lib

        loaded = load_nvidia_dynamic_lib("cuda")
        ours = (self.work / "lib" / "libcuda.so.1").resolve()
        print(f"  cuda-bindings {bindings.__version__} ({Path(driver.__file__).name})")
        print(f"  cuda.pathfinder: {loaded.abs_path} ({loaded.found_via})")
        self.check(Path(loaded.abs_path).resolve() == ours, f"pathfinder found {loaded.abs_path}")
        self.check(self.cuda._load_driver() is driver, "the backend loads cuda.bindings.driver")
        self.check(driver.cuDriverGetVersion()[1] == 13040, "cuDriverGetVersion via the fake")
        self.lib = ctypes.CDLL("libcuda.so.1", mode=os.RTLD_NOLOAD)
        counts = (ctypes.c_int * 2)()
        self.lib.fake_cuda_lookups(counts)
        looked = [c for c in self.calls() if c["call"] == "cuGetProcAddress"]
        print(
            f"  cuGetProcAddress_v2: {counts[0]} lookups, {len(looked)} resolved to the fake's "
            f"entry points, {counts[1]} to error stubs"
        )
        for call in looked:
            print(f"    {call['symbol']} (cudaVersion {call['version']}, flags {call['flags']})")
        self.check(len(looked) > 20, "the bindings resolved the entry points the backend uses")

    def probe(self) -> None:
        reason = self.cuda.CudaBackend().available()
        self.check(reason is None, f"available() said {reason!r}")
        names = [c["call"] for c in self.new_calls_peek()]
        self.check(names[:2] == ["cuInit", "cuDeviceGetCount"], f"probe calls {names}")

    def new_calls_peek(self) -> list[dict[str, Any]]:
        return self.calls()[self.seen :]

    def inputs(self, batch: int, seed: int | None = None) -> list[Any]:
        from teeny_ir.backend.plan import BATCH
        from teeny_ir.core.expressions import eval_text

        rng = self.np.random.default_rng(batch if seed is None else seed)
        arrays = []
        for spec in self.plan.inputs:
            shape = [d if isinstance(d, int) else eval_text(d, {BATCH: batch}) for d in spec.shape]
            if spec.dtype == "i64":
                arrays.append(rng.integers(0, 2, shape).astype(self.np.int64))
            else:
                arrays.append(rng.standard_normal(shape).astype(self.np.float32))
        return arrays

    def weights(self) -> dict[str, Any]:
        """Made-up weights of the plan's shapes (the kernels compute nothing)."""
        rng = self.np.random.default_rng(0)
        return {
            w.name: rng.uniform(0.5, 1.5, w.shape).astype(self.np.float32)
            for w in self.plan.weights
        }

    def shape(self, name: str, batch: int) -> tuple[int, ...]:
        from teeny_ir.backend.plan import BATCH
        from teeny_ir.core.expressions import eval_text

        specs = {s.name: s.shape for s in (*self.plan.inputs, *self.plan.buffers, *self.plan.views)}
        return tuple(d if isinstance(d, int) else eval_text(d, {BATCH: batch}) for d in specs[name])

    def executable(self) -> None:
        from teeny_ir import runtime

        outputs = runtime.load(self.plan_dir).run(self.inputs(1), self.weights(), backend="cuda")
        want = [self.shape(name, 1) for name in self.plan.outputs]
        shapes = [o.shape for o in outputs]
        self.check(shapes == want, f"output shapes {shapes}")
        launched = [c for c in self.new_calls_peek() if c["call"] == "cuLaunchKernel"]
        self.check(len(launched) == len(self.plan.launches), f"{len(launched)} launches")
        self.check_live("after run()")

    def check_live(self, when: str) -> None:
        import ctypes

        live = (ctypes.c_int * 7)()
        self.lib.fake_cuda_live(live)
        what: tuple[str, ...] = ("allocations", "modules", "functions", "streams")
        what += ("context retains", "graphs", "executable graphs")
        left = {k: v for k, v in zip(what, live, strict=True) if v}
        self.check(not left, f"{when}: the fake still holds {left}")

    # --- CudaSession -----------------------------------------------------------

    def session(self) -> None:
        cuda, plan = self.cuda, self.plan
        from teeny_ir import runtime

        executable = runtime.load(self.plan_dir)
        params = executable.bind_parameters(self.weights())
        session = cuda.CudaSession(self.plan_dir, plan)
        opened = self.new_calls_peek()
        try:
            self.check(session.driver.__name__ == "cuda.bindings.driver", "the real driver")
            (stream,) = [c["stream"] for c in opened if c["call"] == "cuStreamCreate"]
            modules = {c["module"]: c for c in opened if c["call"] == "cuModuleLoadData"}
            uploads: dict[str, int] = {}
            for number, batch in enumerate(self.batches):
                inputs = dict(zip([t.name for t in plan.inputs], self.inputs(batch), strict=True))
                trace: dict[int, list[Any]] | None = {} if number == len(self.batches) - 1 else None
                mark = len(self.calls())
                outputs = session.run(inputs | params, batch, trace=trace)
                calls = self.calls()[mark:]
                self.check_batch(session, batch, calls, stream, modules, uploads, params, inputs)
                want = [self.shape(name, batch) for name in plan.outputs]
                self.check([o.shape for o in outputs] == want, f"B={batch}: output shapes")
                fresh = any(c["call"] == "cuMemsetD32Async" for c in calls)
                self.check_outputs(session, batch, outputs, fresh)
                if trace is not None:
                    self.check(sorted(trace) == list(range(len(plan.launches))), "trace")
        finally:
            session.close()
        tail = [c["call"] for c in self.new_calls_peek()][-2:]
        self.check(tail == ["cuStreamDestroy", "cuDevicePrimaryCtxRelease"], f"close: {tail}")
        self.check_live("after close()")

    def check_batch(
        self,
        session: Any,
        batch: int,
        calls: list[dict[str, Any]],
        stream: int,
        modules: dict[int, dict[str, Any]],
        uploads: dict[str, int],
        params: dict[str, Any],
        inputs: dict[str, Any],
    ) -> None:
        """One run's calls against the plan, addresses taken from the fake's log."""
        import struct

        from teeny_ir.backend import memory
        from teeny_ir.backend.plan import BATCH
        from teeny_ir.core.expressions import eval_text
        from teeny_ir.kernels.families import FAMILIES

        np, plan, env = self.np, self.plan, {BATCH: batch}
        htod = [c for c in calls if c["call"] == "cuMemcpyHtoD"]
        fresh = [s for s in plan.params if s.name not in uploads]
        for spec, copy in zip([*fresh, *plan.inputs], htod, strict=True):
            uploads[spec.name] = copy["dst"]
            array = params[spec.name] if spec.name in params else inputs[spec.name]
            self.check(copy["bytes"] == array.nbytes, f"B={batch}: HtoD size of {spec.name}")
        self.check(len(htod) == len(fresh) + len(plan.inputs), f"B={batch}: {len(htod)} HtoD")
        memsets = [c for c in calls if c["call"] == "cuMemsetD32Async"]
        layout = memory.layout(plan, batch)  # where the runtime places the buffers
        if memsets:  # a new batch size: a new arena, NaN everywhere
            (memset,) = memsets
            self.arena = memset["dst"]
            nbytes = layout.arena
            got = (memset["value"], memset["count"], memset["stream"])
            self.check(got == (0x7FC00000, nbytes // 4, stream), f"B={batch}: arena {memset}")
        addresses = dict(uploads)
        for buffer in plan.buffers:
            addresses[buffer.name] = self.arena + layout.offsets[buffer.name]
        for view in plan.views:
            addresses[view.name] = addresses[view.base] + 4 * view.offset
        self.check(addresses == session.addresses(batch), f"B={batch}: addresses")
        # the uploaded bytes are in fake device memory
        for name, address in uploads.items():
            array = np.ascontiguousarray(params.get(name, inputs.get(name)))
            got = self.device_bytes(address, array.nbytes)
            self.check(got == array.tobytes(), f"B={batch}: {name} in fake device memory")

        launched = [c for c in calls if c["call"] == "cuLaunchKernel"]
        self.check(len(launched) == len(plan.launches), f"B={batch}: {len(launched)} launches")
        kernels = {k.name: k for k in plan.kernels}
        formats = {"u64": "<Q", "i32": "<i", "f32": "<f"}
        for launch, seen, config in zip(plan.launches, launched, session.launches, strict=True):
            kernel = kernels[launch.kernel]
            (compiled,) = [
                c
                for c in kernel.compiled
                if (c.arch, c.num_warps, c.num_stages) == (90, launch.num_warps, launch.num_stages)
            ]
            where = f"B={batch} {launch.kernel}"
            module = modules[seen["module"]]
            cubin = (self.plan_dir / compiled.cubin).read_bytes()
            self.check(seen["function"] == compiled.name, f"{where}: function {seen['function']}")
            self.check(module["fnv1a64"] == fnv1a64(cubin), f"{where}: not its sm_90 cubin")
            grid = [eval_text(axis, env) for axis in launch.grid]
            self.check(seen["grid"] == grid, f"{where}: grid {seen['grid']} != {grid}")
            self.check(seen["block"] == [32 * launch.num_warps, 1, 1], f"{where}: block")
            self.check(seen["shared"] == compiled.shared, f"{where}: shared {seen['shared']}")
            self.check((seen["stream"], seen["extra"]) == (stream, 0), f"{where}: stream/extra")
            # the plan's arguments at the fake's addresses, packed by hand
            fields: list[tuple[str, int | float]] = []
            family = FAMILIES[kernel.family]
            for abi, arg in zip(family.args, launch.args, strict=True):
                if arg.tensor is not None:
                    fields.append(("u64", addresses[arg.tensor]))
                elif abi.dtype == "i32":
                    fields.append(("i32", eval_text(arg.expr or "", env)))
                else:
                    fields.append(("f32", float(eval_text(arg.expr or "", env))))
            fields += [("u64", 0)] * self.cuda.SCRATCH_POINTERS
            data, offsets = b"", []
            for kind, value in fields:
                size = struct.calcsize(formats[kind])
                data += bytes(-len(data) % size)
                offsets.append(len(data))
                data += struct.pack(formats[kind], value)
            # what the driver read through kernelParams
            packed = config.params
            self.check(len(seen["params"]) == len(fields), f"{where}: parameter count")
            self.check(tuple(offsets) == packed.offsets, f"{where}: offsets {packed.offsets}")
            self.check(packed.data == data, f"{where}: pack_params bytes != the plan's arguments")
            self.check_params(seen, packed, where)

    def check_params(self, seen: dict[str, Any], packed: Any, where: str) -> None:
        """The parameter bytes a logged launch (or graph node) read through
        kernelParams, each entry at its offset and of its size, against
        `pack_params`'s ``packed``."""
        import struct

        formats = {"u64": "<Q", "i32": "<i", "f32": "<f"}
        if len(seen["params"]) != len(packed.kinds):
            self.check(False, f"{where}: {len(seen['params'])} parameters")
            return
        got = bytearray(len(packed.data))
        for entry, kind in zip(seen["params"], packed.kinds, strict=True):
            size = struct.calcsize(formats[kind])
            got[entry["offset"] : entry["offset"] + size] = bytes.fromhex(entry["hex"])[:size]
        logged = tuple(entry["offset"] for entry in seen["params"])
        self.check(logged == packed.offsets, f"{where}: offsets {logged}")
        self.check(bytes(got) == packed.data, f"{where}: driver bytes != pack_params bytes")

    def device_bytes(self, address: int, nbytes: int) -> bytes:
        import ctypes

        return ctypes.string_at(address, nbytes)

    def check_outputs(self, session: Any, batch: int, outputs: list[Any], fresh: bool) -> None:
        """DtoH brought back what is in fake device memory: NaN in a ``fresh`` arena
        (its memset; nothing computes), then a pattern written there behind the
        driver's back (which a later run at the same batch size finds again)."""
        import ctypes

        np = self.np
        addresses = session.addresses(batch)
        for name, output in zip(self.plan.outputs, outputs, strict=True):
            raw = self.device_bytes(addresses[name], output.nbytes)
            self.check(output.tobytes() == raw, f"B={batch}: output {name} != device memory")
            if fresh:
                self.check(bool(np.isnan(output).all()), f"B={batch}: {name} is not the NaN")
        for name in [*self.plan.outputs, *(v.name for v in self.plan.views)]:
            shape = self.shape(name, batch)
            view = next((v for v in self.plan.views if v.name == name), None)
            count = int(np.prod(shape)) if view is None else (shape[0] - 1) * view.batch_stride
            count += 0 if view is None else int(np.prod(shape[1:]))
            pattern = np.arange(count, dtype=np.float32) + 0.25
            ctypes.memmove(addresses[name], pattern.ctypes.data, pattern.nbytes)
            if view is None:
                want = pattern.reshape(shape)
            else:
                inner = [int(np.prod(shape[k + 1 :])) for k in range(1, len(shape))]
                strides = [view.batch_stride, *inner]
                want = np.lib.stride_tricks.as_strided(pattern, shape, [4 * s for s in strides])
            self.check(np.array_equal(session.read(name, batch), want), f"B={batch}: read {name}")

    # --- CUDA graphs -------------------------------------------------------------

    def graphs(self) -> None:
        """A `CudaSession` with graphs: per batch size, the first run captures
        (every launch a node holding pack_params's bytes), instantiates and
        replays; the second, on other inputs, replays only."""
        cuda, plan = self.cuda, self.plan
        from teeny_ir import runtime

        params = runtime.load(self.plan_dir).bind_parameters(self.weights())
        session = cuda.CudaSession(self.plan_dir, plan, graphs=True)
        count = len(plan.launches)
        building = (
            "cuStreamBeginCapture",
            "cuStreamEndCapture",
            "cuGraphInstantiate",
            "cuGraphDestroy",
        )
        try:
            for batch in self.batches:
                for repeat in range(2):
                    where = f"B={batch} run {repeat + 1}"
                    arrays = self.inputs(batch, seed=100 * batch + repeat)  # new values
                    inputs = dict(zip([t.name for t in plan.inputs], arrays, strict=True))
                    mark = len(self.calls())
                    outputs = session.run(inputs | params, batch)
                    calls = self.calls()[mark:]
                    names = [c["call"] for c in calls]
                    got = {name: names.count(name) for name in building}
                    want = {name: int(repeat == 0) for name in building}
                    self.check(got == want, f"{where}: {got}")
                    self.check(names.count("cuGraphLaunch") == 1, f"{where}: one cuGraphLaunch")
                    captured = [c for c in calls if c["call"] == "cuLaunchKernel"]
                    replayed = [c for c in calls if c["call"] == "graph kernel node"]
                    wanted = count if repeat == 0 else 0
                    self.check(len(captured) == wanted, f"{where}: {len(captured)} captured")
                    self.check(all(c.get("captured") for c in captured), f"{where}: a launch ran")
                    self.check(len(replayed) == count, f"{where}: {len(replayed)} nodes replayed")
                    for seen, config in zip(captured, session.launches, strict=False):
                        self.check_params(seen, config.params, f"{where} captured {config.kernel}")
                    for seen, config in zip(replayed, session.launches, strict=False):
                        self.check(seen["function"] == config.kernel, f"{where}: node order")
                        self.check_params(seen, config.params, f"{where} replayed {config.kernel}")
                    if repeat == 0:
                        (made,) = [c for c in calls if c["call"] == "cuGraphInstantiate"]
                        self.check((made["nodes"], made["flags"]) == (count, 0), f"{where}: {made}")
                    for name, array in inputs.items():  # in the buffer the graph reads
                        stored = self.device_bytes(session.inputs[name], array.nbytes)
                        self.check(stored == array.tobytes(), f"{where}: input {name}")
                    addresses = session.addresses(batch)
                    for name, output in zip(plan.outputs, outputs, strict=True):
                        raw = self.device_bytes(addresses[name], output.nbytes)
                        self.check(output.tobytes() == raw, f"{where}: output {name}")
            self.check(sorted(session.graphs) == sorted(set(self.batches)), "a graph per batch")
        finally:
            session.close()
        destroyed = [c for c in self.new_calls_peek() if c["call"] == "cuGraphExecDestroy"]
        self.check(len(destroyed) == len(set(self.batches)), f"{len(destroyed)} destroyed")
        self.check_live("after close()")

    # --- the rest of the backend's calls ----------------------------------------

    def big_shared(self) -> None:
        copy = Path(tempfile.mkdtemp(prefix="plan-big-shared.", dir=self.work)) / "plan"
        shutil.copytree(self.plan_dir, copy)
        data = json.loads((copy / "plan.json").read_text())
        kernel = data["kernels"][0]
        for compiled in kernel["compiled"]:
            compiled["shared"] = BIG_SHARED
        (copy / "plan.json").write_text(json.dumps(data))
        from teeny_ir import runtime

        executable = runtime.load(copy)
        executable.run(self.inputs(1), self.weights(), backend="cuda")
        calls = self.new_calls_peek()
        names = [c["call"] for c in calls]
        attributes = [c for c in calls if c["call"] == "cuFuncSetAttribute"]
        want = [(kernel["name"], FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED, BIG_SHARED)]
        got = [(c["function"], c["attribute"], c["value"]) for c in attributes]
        self.check(got == want, f"cuFuncSetAttribute calls {got}")
        launches = [c for c in calls if c["call"] == "cuLaunchKernel"]
        big = [c for c in launches if c["function"] == kernel["name"]]
        self.check(bool(big) and all(c["shared"] == BIG_SHARED for c in big), "big launches")
        self.check(len(launches) == len(self.plan.launches), "every launch went through")
        self.check(names.index("cuFuncSetAttribute") < names.index("cuLaunchKernel"), "order")

    def status_memset(self) -> None:
        """LeNet inference has no int64 status output, so the session's memset
        table gets one by hand; the call itself is the backend's own line."""
        session = self.cuda.CudaSession(self.plan_dir, self.plan)
        try:
            from teeny_ir import runtime

            params = runtime.load(self.plan_dir).bind_parameters(self.weights())
            session.upload_params(params)
            session.prepare(1)
            buffer = self.plan.buffers[0].name
            address = session.addresses(1)[buffer]
            session._memsets = {0: [(address, 64)]}
            mark = len(self.calls())
            session.launch(1)
            session.synchronize()
            calls = self.calls()[mark:]
            names = [c["call"] for c in calls]
            (memset,) = [c for c in calls if c["call"] == "cuMemsetD8Async"]
            want = (address, 0xFF, 64)
            self.check((memset["dst"], memset["value"], memset["count"]) == want, f"{memset}")
            self.check(names[names.index("cuMemsetD8Async") + 1] == "cuLaunchKernel", "order")
            self.check(self.device_bytes(address, 64) == b"\xff" * 64, "0xFF in device memory")
        finally:
            session.close()
        self.check_live("after close()")

    def state_copy(self) -> None:
        """A `CudaTrainingSession` copies each updated state tensor into its
        parameter on the device after a step. LeNet inference updates nothing,
        so the session is made as if it carried nothing, and the carried map
        gets one entry by hand (the smallest parameter from
        output 0); the copy itself is the backend's own line."""
        from teeny_ir import runtime

        real = self.cuda.carried_params
        self.cuda.carried_params = lambda plan: {}  # an inference plan carries nothing
        try:
            session = self.cuda.CudaTrainingSession(self.plan_dir, self.plan)
        finally:
            self.cuda.carried_params = real
        try:
            params = runtime.load(self.plan_dir).bind_parameters(self.weights())
            session.upload_state(params)
            smallest = min(self.plan.params, key=lambda p: int(self.np.prod(p.shape)))
            session.carried = {smallest.name: 0}
            nbytes = 4 * int(self.np.prod(smallest.shape))
            mark = len(self.calls())
            tensors = {
                spec.name: x for spec, x in zip(self.plan.inputs, self.inputs(1), strict=True)
            }
            results = session.step(tensors, 1)
            calls = self.calls()[mark:]
            (copy,) = [c for c in calls if c["call"] == "cuMemcpyDtoDAsync"]
            source = session.addresses(1)[self.plan.outputs[0]]
            target = session.params[smallest.name]
            got = (copy["dst"], copy["src"], copy["bytes"])
            self.check(got == (target, source, nbytes), f"{copy}")
            self.check(
                self.device_bytes(target, nbytes) == self.device_bytes(source, nbytes),
                "the parameter holds the output's bytes",
            )
            self.check(all(r is not None for r in results), "the user results are read back")
        finally:
            session.close()
        self.check_live("after close()")

    def unimplemented(self) -> None:
        from cuda.bindings import driver

        result, _ = driver.cuCtxGetCurrent()
        self.check(result == driver.CUresult.CUDA_ERROR_NOT_SUPPORTED, f"got {result}")
        calls = self.new_calls()  # expected: keep it out of check_calls
        self.all_calls.extend(calls)
        self.check([c.get("name") for c in calls] == ["cuCtxGetCurrent"], f"logged {calls}")


if __name__ == "__main__":
    sys.exit(main())
