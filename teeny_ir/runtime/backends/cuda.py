"""The ``cuda`` backend: the plan's AOT-compiled cubins on an NVIDIA GPU, through
cuda-python's driver API (``cuda.bindings.driver``).

`CudaBackend.available` checks, in order, that cuda-python's driver bindings
import (``pip install 'teeny-ir[cuda]'``), that ``cuInit(0)`` succeeds and that
``cuDeviceGetCount`` sees at least one device, and says in one sentence which
step failed. `CudaBackend.run` then executes the plan in a `CudaSession`:

- per kernel and launch configuration, ``cuModuleLoadData`` on the newest
  cubin the plan records that runs on the device's compute capability
  (``sm_XY`` from ``cuDeviceGetAttribute``; `runs_on`: the same arch, or
  below sm_90 the same major and a lower minor, so sm_80 cubins serve an sm_86
  GPU; a plan without one is refused in one sentence naming the archs it has,
  and so is a kernel whose shared memory exceeds the device's opt-in limit) and ``cuModuleGetFunction`` by the kernel's name; a
  kernel that needs more than 48 KiB of shared memory gets
  ``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES``; a kernel whose Triton
  metadata asks for global or profile scratch memory is refused;
- the parameters are uploaded once per session (``cuMemAlloc`` +
  ``cuMemcpyHtoD``), the arena (every buffer at its plan offset) and the inputs
  are allocated once per batch size, all launches go to one stream
  (``cuStreamCreate``), and the outputs come back with ``cuMemcpyDtoH``;
- each launch is ``cuLaunchKernel(function, gx, gy, gz, 32 * num_warps, 1, 1,
  shared, stream, params, 0)`` with the parameters packed by `pack_params`
  from the family's ABI: pointers as u64 device addresses, ``i32`` dims as
  int32, ``fp32`` scalars as float32, constexprs not passed, and Triton 3.x's
  two trailing scratch pointers (global, profile) passed NULL;
- with ``graphs=True`` a run replays one CUDA graph per batch size instead
  (`CudaSession.graph`): the launches and status memsets captured from the
  stream (``cuStreamBeginCapture`` .. ``cuStreamEndCapture``), instantiated
  once (``cuGraphInstantiate``) and launched with ``cuGraphLaunch``, the inputs
  copied into the fixed buffers the graph reads;
- a profiled run (``spans``: `teeny_ir.runtime.profile`) records a CUDA event
  (``cuEventCreate``, ``cuEventRecord``) on the stream just before and just
  after each ``cuLaunchKernel`` and reads each launch's start and end with
  ``cuEventElapsedTime`` from the first event, after ``cuEventSynchronize``
  on the last; it launches one by one, as a traced run does (a graph replay
  cannot be timed per launch).

- a collective (a data-parallel plan's all-reduce) runs in place on the arena:
  its input copied into its output first when they differ
  (``cuMemcpyDtoDAsync`` on the stream), then the ``collective`` the session
  is given (`teeny_ir.runtime.distributed.ProcessGroup.all_reduce_device`:
  NCCL through torch.distributed on the device memory, on this stream, with
  no host synchronisation) reduces the output; one over one rank is the copy
  alone. A plan with collectives over more than one rank needs a
  ``collective`` (a plain run refuses it), and cannot replay CUDA graphs.
  This path is untested on hardware: the tests check the order, addresses
  and sizes of the requests on the fake driver.

cuda-python is imported only here, lazily (`_load_driver`), never by
``import teeny_ir``; a driver module object can be injected instead
(``CudaBackend(driver=...)``, ``CudaSession(..., driver=...)``), which is how
the tests run the backend on a fake driver.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib
import math
import struct
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from teeny_ir.backend import memory
from teeny_ir.backend.kernel_files import CUBIN_BYTES, read_regular
from teeny_ir.backend.plan import (
    BATCH,
    Arg,
    CollectiveSpec,
    CompiledSpec,
    KernelSpec,
    LaunchSpec,
    PlanError,
    TensorSpec,
    ViewSpec,
)
from teeny_ir.core.expressions import eval_text
from teeny_ir.kernels.contract import KernelFamily
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.runtime.errors import (
    ArenaAllocationError,
    BackendUnavailableError,
    RuntimeInputError,
    WorkerError,
    arena_message,
)

if TYPE_CHECKING:
    import numpy as np

    from teeny_ir.backend.plan import Plan
    from teeny_ir.runtime.backends import Progress

DRIVER_MODULE = "cuda.bindings.driver"
NEEDS_CUDA_PYTHON = "the cuda backend needs cuda-python (pip install 'teeny-ir[cuda]')"
DEFAULT_SHARED_LIMIT = 48 * 1024
"""Shared memory per block a kernel gets without opting in (bytes)."""
SCRATCH_POINTERS = 2
"""Triton 3.x kernels take two trailing pointers: global scratch, profile scratch."""
WARP_SIZE = 32
MAX_GRAPHS = 8
"""Batch sizes whose CUDA graph (and the arena and inputs it reads) a session
keeps; the least recently used goes beyond (`CudaSession.max_graphs`)."""
_NAN_BITS = 0x7FC00000
_FORMATS = {"u64": "<Q", "i32": "<i", "f32": "<f"}
_NUMPY_DTYPES = {"f32": "float32", "i64": "int64"}


class _DriverCallError(RuntimeError):
    """A driver call that returned something other than ``CUDA_SUCCESS``."""


@dataclass(frozen=True)
class PackedParams:
    """One launch's kernel parameters: ``data`` holds each value at its offset
    (naturally aligned), ``kinds`` says how each was packed (``u64``, ``i32``,
    ``f32``), the last `SCRATCH_POINTERS` being the NULL scratch pointers."""

    data: bytes
    offsets: tuple[int, ...]
    kinds: tuple[str, ...]

    def values(self) -> list[int | float]:
        """The packed values, in parameter order (for tests and ``--dry-run``)."""
        return [
            struct.unpack_from(_FORMATS[kind], self.data, offset)[0]
            for kind, offset in zip(self.kinds, self.offsets, strict=True)
        ]

    def pointers(self) -> tuple[ctypes.Array[ctypes.c_char], ctypes.Array[ctypes.c_void_p]]:
        """A ctypes copy of ``data`` and the array of pointers into it that
        ``cuLaunchKernel`` takes as ``kernelParams`` (keep both alive)."""
        buffer = ctypes.create_string_buffer(self.data, max(len(self.data), 1))
        base = ctypes.addressof(buffer)
        array = (ctypes.c_void_p * len(self.offsets))(*(base + o for o in self.offsets))
        return buffer, array


def pack_params(
    family: KernelFamily,
    launch_args: Sequence[Arg],
    addresses: Mapping[str, int],
    env: Mapping[str, int],
) -> PackedParams:
    """Pack a launch's arguments by ``family``'s ABI: a tensor argument as the
    u64 device address ``addresses`` gives it, an ``i32`` as int32 and an
    ``fp32`` as float32 (each an expression over ``env``), then the two NULL
    scratch pointers. Raises `RuntimeInputError` for an i32 out of range."""
    fields: list[tuple[str, int | float]] = []
    for abi, arg in zip(family.args, launch_args, strict=True):
        if abi.dtype.startswith("*"):
            if arg.tensor is None:
                raise RuntimeInputError(f"argument '{abi.name}' of {family.name} is no tensor")
            fields.append(("u64", addresses[arg.tensor]))
            continue
        value = eval_text(arg.expr or "", env)
        if abi.dtype == "i32":
            if not -(2**31) <= value < 2**31:
                raise RuntimeInputError(
                    f"argument '{abi.name}' of a {family.name} launch is {value}, which does "
                    "not fit the kernel's int32"
                )
            fields.append(("i32", value))
        elif abi.dtype == "fp32":
            fields.append(("f32", float(value)))
        else:
            raise RuntimeInputError(
                f"argument '{abi.name}' of {family.name} has type {abi.dtype}, which the "
                "cuda backend cannot pass"
            )
    fields += [("u64", 0)] * SCRATCH_POINTERS
    data = bytearray()
    offsets: list[int] = []
    for kind, packed in fields:
        size = struct.calcsize(_FORMATS[kind])
        data += bytes(-len(data) % size)
        offsets.append(len(data))
        data += struct.pack(_FORMATS[kind], packed)
    return PackedParams(bytes(data), tuple(offsets), tuple(kind for kind, _ in fields))


@dataclass(frozen=True)
class LaunchConfig:
    """One launch as the driver gets it, at one batch size."""

    index: int
    kernel: str
    function: Any
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int
    params: PackedParams


@dataclass(frozen=True)
class CollectiveConfig:
    """One collective as the session runs it, at one batch size: ``count``
    float32 (``nbytes`` bytes) at device address ``source`` reduced over the
    ranks into ``target`` (the same address: in place)."""

    index: int
    spec: CollectiveSpec
    source: int
    target: int
    count: int
    nbytes: int


class DeviceCollective(Protocol):
    """What a session runs its collectives with (the trainer's
    `teeny_ir.runtime.distributed.ProcessGroup`; a test's recorder)."""

    @property
    def device(self) -> int:
        """The CUDA device of this rank: the session runs the plan there."""
        ...

    def all_reduce_device(
        self, reduction: str, address: int, count: int, stream: Any, what: str
    ) -> None:
        """``count`` float32 at ``address`` reduced over the ranks in place,
        ordered on ``stream`` after the work enqueued before it."""
        ...


@dataclass(frozen=True)
class CudaGraph:
    """One batch size's launches as an instantiated CUDA graph (`CudaSession.graph`)."""

    batch: int
    executable: Any
    """The ``CUgraphExec`` that ``cuGraphLaunch`` replays."""
    kernels: int
    """Its kernel nodes: the launches with a non-empty grid, in plan order."""
    memsets: int
    """Its memset nodes: the status outputs set to -1 before their first writer."""


@dataclass(frozen=True)
class _BatchMemory:
    """A batch size's arena, inputs and packed launches, set aside while another
    batch size runs because a graph reads them (`CudaSession.prepare`)."""

    arena: int
    inputs: dict[str, int]
    launches: list[LaunchConfig | CollectiveConfig]
    keep: list[Any]
    memsets: dict[int, list[tuple[int, int]]]


class CudaBackend:
    """Runs the plan's cubins on the first GPU through cuda-python."""

    name = "cuda"
    description = "AOT cubins on an NVIDIA GPU via cuda-python"

    def __init__(self, driver: Any = None) -> None:
        self.driver = driver
        """An injected driver module (tests); None: import cuda-python's."""

    def _driver(self) -> Any:
        return self.driver if self.driver is not None else _load_driver()

    def available(self) -> str | None:
        """None when cuda-python imports and the driver sees at least one GPU,
        else one sentence naming the step that failed."""
        try:
            count = _device_count(self._driver())
        except ImportError as err:
            missing = err.name if isinstance(err, ModuleNotFoundError) else None
            if missing is not None and f"{DRIVER_MODULE}.".startswith(f"{missing}."):
                return NEEDS_CUDA_PYTHON
            return f"the cuda backend cannot import cuda-python ({_one_line(err)})"
        # cuda-python 13 raises a RuntimeError subclass where no driver library
        # exists (at the first call, or at import); whatever the probe raises
        # means that no GPU is usable here, which is what available() reports.
        except Exception as err:  # noqa: BLE001
            return f"the cuda backend cannot run here: no CUDA GPU is visible ({_one_line(err)})"
        if count < 1:
            return (
                "the cuda backend cannot run here: no CUDA GPU is visible "
                "(cuDeviceGetCount found 0 devices)"
            )
        return None

    def run(
        self,
        directory: Path,
        plan: Plan,
        tensors: Mapping[str, np.ndarray],
        batch: int,
        times: dict[str, float],
        progress: Progress | None = None,
        trace: dict[int, list[np.ndarray]] | None = None,
        spans: list[tuple[int, int]] | None = None,
        *,
        graphs: bool = False,
    ) -> list[np.ndarray]:
        """Run the plan in a `CudaSession` (see `Backend.run`); ``graphs``: as
        one CUDA graph, captured and replayed once (a check of the graph path,
        no speed-up: `run_session` is what replays a graph many times; with a
        ``trace`` or ``spans`` the launches go one by one)."""
        start = time.perf_counter()
        session = CudaSession(directory, plan, driver=self._driver(), graphs=graphs)
        try:
            session.upload_params(tensors)
            times["load and upload"] = time.perf_counter() - start
            return session.run(tensors, batch, times, progress, trace, spans)
        finally:
            session.close()

    def session(
        self,
        directory: Path,
        plan: Plan,
        *,
        graphs: bool = False,
        collective: DeviceCollective | None = None,
    ) -> CudaSession:
        """A `CudaSession` for repeated runs (a trainer's steps): modules, arena
        and stream stay loaded, and every run uploads the parameters it is
        given; for a training plan whose state can stay on the GPU
        (`carried_params`), the `CudaTrainingSession` a trainer steps without
        copying its state back and forth. ``graphs``: each run replays its
        batch size's CUDA graph; ``collective`` runs the plan's collectives
        over more than one rank, on its rank's device."""
        driver = self._driver()
        device = 0 if collective is None else collective.device
        if carried_params(plan) is not None:
            return CudaTrainingSession(
                directory, plan, driver, device, graphs=graphs, collective=collective
            )
        return CudaSession(
            directory,
            plan,
            driver,
            device,
            refresh_params=True,
            graphs=graphs,
            collective=collective,
        )

    def run_session(self, directory: Path, plan: Plan, *, graphs: bool = False) -> CudaSession:
        """A `CudaSession` for runs with the same parameters
        (`teeny_ir.runtime.RunSession`): they are uploaded at the first run
        only. ``graphs``: each run replays its batch size's CUDA graph."""
        return CudaSession(directory, plan, driver=self._driver(), graphs=graphs)


class CudaSession:
    """A plan loaded on a GPU: modules and functions, parameters uploaded once,
    an arena and input buffers per batch size, one stream. `run` executes it;
    `close` frees everything. Driver failures raise `WorkerError` (one line);
    a plan the GPU cannot run raises `BackendUnavailableError`.

    With ``graphs`` a run replays its batch size's CUDA graph (`graph`,
    `replay`) instead of launching each kernel (`launch`). A graph holds every
    device address it was captured with: the parameters (allocated once; new
    values are uploaded into the same allocations, which the graph reads at
    each replay), the inputs (each run copies its arrays into the same input
    buffers) and the arena. So a session keeps the arena and inputs of every
    batch size that has a graph (up to `max_graphs`, least recently used
    first out: its graph destroyed with them), and a graph lives exactly as
    long as the memory it reads."""

    def __init__(
        self,
        directory: Path,
        plan: Plan,
        driver: Any = None,
        device: int = 0,
        *,
        refresh_params: bool = False,
        graphs: bool = False,
        collective: DeviceCollective | None = None,
    ) -> None:
        from teeny_ir.runtime.distributed import needs_group

        reason = needs_group(plan)
        if reason is not None and collective is None:
            raise RuntimeInputError(reason)
        if graphs and plan.collectives():
            raise RuntimeInputError(
                "CUDA graphs cannot replay this plan: it holds collectives, which the cuda "
                "backend runs through torch.distributed between the launches (run it "
                "without graphs)"
            )
        self.collective = collective
        """Runs the collectives over more than one rank (the trainer's group)."""
        self.driver = _load_driver() if driver is None else driver
        self.use_graphs = graphs
        """Whether `run` replays the batch size's CUDA graph instead of
        launching each kernel on the stream (a run with a ``trace`` launches)."""
        self.graphs: dict[int, CudaGraph] = {}
        """Batch size -> its instantiated graph, least recently used first."""
        self.max_graphs = MAX_GRAPHS
        self._held: dict[int, _BatchMemory] = {}
        """The memory of the batch sizes in `graphs` other than ``batch``."""
        self.refresh_params = refresh_params
        """Whether each `run` uploads the parameters again (a trainer's session
        whose state cannot stay on the GPU: its parameters change every step)
        instead of only the first time."""
        self.directory = Path(directory)
        self.plan = plan
        self._modules: list[Any] = []
        self._allocations: list[int] = []
        self._stream: Any = None
        self._context = False
        self.params: dict[str, int] = {}
        """Parameter name -> device address (uploaded once)."""
        self.batch = 0
        self.arena = 0
        """The arena's device address at ``batch`` (0: not allocated)."""
        self.inputs: dict[str, int] = {}
        self.launches: list[LaunchConfig | CollectiveConfig] = []
        """The launches at ``batch``, packed, and the collectives among them."""
        self._keep: list[Any] = []
        self._memsets: dict[int, list[tuple[int, int]]] = {}
        """Launch index -> (address, bytes) of the status outputs it writes first."""
        try:
            self._call("cuInit", 0)
            self.device = self._call("cuDeviceGet", device)
            attributes = self.driver.CUdevice_attribute
            major = self._call(
                "cuDeviceGetAttribute",
                attributes.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                self.device,
            )
            minor = self._call(
                "cuDeviceGetAttribute",
                attributes.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                self.device,
            )
            self.arch = int(major) * 10 + int(minor)
            self.shared_limit = int(
                self._call(
                    "cuDeviceGetAttribute",
                    attributes.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                    self.device,
                )
            )
            """The most shared memory one block may opt in to on this GPU (bytes)."""
            compiled = self._choose()  # refuse before touching the GPU further
            self._chosen = compiled
            context = self._call("cuDevicePrimaryCtxRetain", self.device)
            self._context = True
            self._call("cuCtxSetCurrent", context)
            self._stream = self._call("cuStreamCreate", 0)
            self.functions = {key: self._load(spec) for key, spec in compiled.items()}
            live = memory.intervals(plan)
            self.first_writes: dict[int, list[str]] = {}
            for buffer in plan.buffers:
                if buffer.dtype == "i64":
                    self.first_writes.setdefault(live[buffer.name][0], []).append(buffer.name)
        except BaseException:
            self.close()
            raise

    @property
    def stream(self) -> Any:
        """The one stream every launch and copy of the session uses."""
        return self._stream

    def _call(self, name: str, *args: Any) -> Any:
        try:
            return _call(self.driver, name, *args)
        except _DriverCallError as err:
            raise WorkerError(f"the cuda backend failed: {err}") from None

    def _choose(self) -> dict[tuple[str, int, int], CompiledSpec]:
        """(kernel, num_warps, num_stages) -> the cubin for this GPU, for every
        launch; raises `BackendUnavailableError` when one is missing or needs
        scratch memory."""
        kernels = {k.name: k for k in self.plan.kernels}
        chosen: dict[tuple[str, int, int], CompiledSpec] = {}
        for launch in self.plan.launches:
            if isinstance(launch, CollectiveSpec):
                continue  # no kernel
            key = (launch.kernel, launch.num_warps, launch.num_stages)
            if key in chosen:
                continue
            kernel = kernels[launch.kernel]
            runnable = [
                c
                for c in kernel.compiled
                if (c.num_warps, c.num_stages) == (launch.num_warps, launch.num_stages)
                and runs_on(c.arch, self.arch)
            ]
            if not runnable:
                raise BackendUnavailableError(_no_cubin(self.plan, kernel, launch, self.arch))
            spec = max(runnable, key=lambda c: c.arch)  # the newest that runs here
            if spec.shared > self.shared_limit:
                raise BackendUnavailableError(
                    f"kernel '{kernel.name}' for sm_{spec.arch} needs {spec.shared} bytes of "
                    f"shared memory and this sm_{self.arch} GPU allows a block "
                    f"{self.shared_limit} (emit the plan with emit-triton{{archs={self.arch}}})"
                )
            scratch = [
                f"{size} bytes of {what} scratch memory"
                for what, size in (
                    ("global", spec.global_scratch_size),
                    ("profile", spec.profile_scratch_size),
                )
                if size > 0
            ]
            if scratch:
                raise BackendUnavailableError(
                    f"kernel '{kernel.name}' for sm_{spec.arch} needs {' and '.join(scratch)}, "
                    "which the cuda backend does not provide (it passes NULL scratch pointers)"
                )
            chosen[key] = spec
        return chosen

    def _load(self, spec: CompiledSpec) -> Any:
        """Load one cubin and get its function (opting in to its shared memory)."""
        try:  # as load_plan read it: a FIFO swapped in since is refused, never waited on
            data = read_regular(self.directory / spec.cubin, CUBIN_BYTES)
        except OSError as err:
            reason = err.strerror or err
            raise PlanError(f"cubin '{spec.cubin}' cannot be read: {reason}") from None
        image = ctypes.create_string_buffer(data)
        module = self._call("cuModuleLoadData", ctypes.addressof(image))
        self._modules.append(module)
        function = self._call("cuModuleGetFunction", module, spec.name.encode("ascii"))
        if spec.shared > DEFAULT_SHARED_LIMIT:
            self._call(
                "cuFuncSetAttribute",
                function,
                self.driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                spec.shared,
            )
        return function

    def _alloc(self, nbytes: int) -> int:
        address = int(self._call("cuMemAlloc", max(nbytes, 1)))
        self._allocations.append(address)
        return address

    def _alloc_batch(self, nbytes: int, batch: int, what: str) -> int:
        """`_alloc` for the memory of one batch size: ``CUDA_ERROR_OUT_OF_MEMORY``
        is an `ArenaAllocationError` naming ``what``, the bytes and the batch."""
        try:
            return self._alloc(nbytes)
        except WorkerError as err:
            if "CUDA_ERROR_OUT_OF_MEMORY" not in str(err):
                raise
        reason = "which the GPU could not allocate (cuMemAlloc returned CUDA_ERROR_OUT_OF_MEMORY)"
        raise ArenaAllocationError(arena_message(nbytes, batch, reason, what))

    def _free(self, address: int) -> None:
        if address in self._allocations:
            self._allocations.remove(address)
            self._call("cuMemFree", address)

    def _upload(self, address: int, array: np.ndarray) -> None:
        import numpy as np

        data = np.ascontiguousarray(array)
        self._call("cuMemcpyHtoD", address, data.ctypes.data, data.nbytes)

    def upload_params(self, tensors: Mapping[str, np.ndarray], *, refresh: bool = False) -> None:
        """Upload the plan's parameters from ``tensors`` (by plan name), once: a
        session that has them keeps them, unless ``refresh`` (a trainer's step,
        whose parameters changed) copies them again into the same allocations."""
        import numpy as np

        for spec in self.plan.params:
            if spec.name in self.params and not refresh:
                continue
            array = np.ascontiguousarray(tensors[spec.name], dtype=np.float32)
            address = self.params.get(spec.name)
            if address is None:
                address = self._alloc(array.nbytes)
                self.params[spec.name] = address
            self._upload(address, array)

    def prepare(self, batch: int) -> list[LaunchConfig | CollectiveConfig]:
        """Allocate the arena and the inputs for ``batch`` (once per batch size)
        and pack every launch at it; returns the launches."""
        if batch == self.batch:
            return self.launches
        import numpy as np

        self._set_aside()
        held = self._held.pop(batch, None)
        if held is not None:  # its graph reads this memory: the launches are packed
            self.arena, self.inputs, self.launches = held.arena, held.inputs, held.launches
            self._keep, self._memsets, self.batch = held.keep, held.memsets, batch
            return self.launches
        env = {BATCH: batch}
        nbytes = memory.layout(self.plan, batch).arena
        self.arena = self._alloc_batch(nbytes, batch, "the arena")
        if nbytes >= 4:  # NaN everywhere: a region no kernel wrote shows
            self._call("cuMemsetD32Async", self.arena, _NAN_BITS, nbytes // 4, self._stream)
        for spec in self.plan.inputs:
            shape = [d if isinstance(d, int) else eval_text(d, env) for d in spec.shape]
            self.inputs[spec.name] = self._alloc_batch(
                math.prod(shape) * np.dtype(_NUMPY_DTYPES[spec.dtype]).itemsize,
                batch,
                f"the buffer of input '{spec.name}'",
            )
        addresses = self.addresses(batch)
        kernels = {k.name: k for k in self.plan.kernels}
        shapes = self._shapes(batch)
        for index, launch in enumerate(self.plan.launches):
            if isinstance(launch, CollectiveSpec):
                count = math.prod(shapes[launch.output])
                self.launches.append(
                    CollectiveConfig(
                        index,
                        launch,
                        addresses[launch.input],
                        addresses[launch.output],
                        count,
                        count * memory.BYTES["f32"],
                    )
                )
                continue
            kernel = kernels[launch.kernel]
            shared = self._shared(kernel, launch)
            grid = tuple(eval_text(axis, env) for axis in launch.grid)
            self.launches.append(
                LaunchConfig(
                    index,
                    launch.kernel,
                    self.functions[launch.kernel, launch.num_warps, launch.num_stages],
                    (grid[0], grid[1], grid[2]),
                    (WARP_SIZE * launch.num_warps, 1, 1),
                    shared,
                    pack_params(FAMILIES[kernel.family], launch.args, addresses, env),
                )
            )
        self._keep = [
            launch.params.pointers() if isinstance(launch, LaunchConfig) else None
            for launch in self.launches
        ]
        self._memsets = {
            index: [(addresses[n], math.prod(shapes[n]) * memory.BYTES["i64"]) for n in names]
            for index, names in self.first_writes.items()
        }
        self.batch = batch
        return self.launches

    def _set_aside(self) -> None:
        """Leave the current batch size: keep its memory when its graph reads
        it, else free it."""
        if self.batch in self.graphs:
            self._held[self.batch] = _BatchMemory(
                self.arena, self.inputs, self.launches, self._keep, self._memsets
            )
        else:
            self._free(self.arena)
            for address in self.inputs.values():
                self._free(address)
        self.batch, self.arena, self.inputs, self.launches = 0, 0, {}, []
        self._keep, self._memsets = [], {}

    def _shared(self, kernel: KernelSpec, launch: LaunchSpec) -> int:
        return self._chosen[kernel.name, launch.num_warps, launch.num_stages].shared

    def addresses(self, batch: int) -> dict[str, int]:
        """Every tensor a launch may bind -> its device address at ``batch``."""
        offsets = memory.layout(self.plan, batch).offsets
        found = dict(self.params) | dict(self.inputs)
        for buffer in self.plan.buffers:
            found[buffer.name] = self.arena + offsets[buffer.name]
        for view in self.plan.views:
            found[view.name] = found[view.base] + view.offset * memory.BYTES["f32"]
        return found

    def launch(self, batch: int, progress: Progress | None = None, after: Any = None) -> None:
        """Enqueue every launch at ``batch`` on the stream (the inputs already
        uploaded); ``after(config)``, when given, runs after each launch."""
        launches = self.prepare(batch)
        for config in launches:
            self._set_statuses(config, self._call)
            self.enqueue(config)
            if after is not None:
                after(config)
            if progress is not None:
                progress(config.index + 1, len(launches))

    def timed_launch(
        self, batch: int, progress: Progress | None = None, after: Any = None
    ) -> list[tuple[int, int]]:
        """`launch`, each ``cuLaunchKernel`` between two CUDA events on the
        stream (after the launch's status memsets, so they are not counted);
        returns each launch's (start, duration) in nanoseconds, the starts
        from the first launch's, read once the last event completed. Both
        ends of a launch are read from the first event, so a launch never
        ends after the next one starts. The events are destroyed at the end."""
        launches = self.prepare(batch)
        events: list[Any] = []
        try:
            for _ in range(2 * len(launches)):
                events.append(self._call("cuEventCreate", 0))  # CU_EVENT_DEFAULT: timed
            for config in launches:
                self._set_statuses(config, self._call)
                self._call("cuEventRecord", events[2 * config.index], self._stream)
                self.enqueue(config)
                self._call("cuEventRecord", events[2 * config.index + 1], self._stream)
                if after is not None:
                    after(config)
                if progress is not None:
                    progress(config.index + 1, len(launches))
            if not events:
                return []
            self._call("cuEventSynchronize", events[-1])
            spans: list[tuple[int, int]] = []
            for index in range(len(launches)):
                begin, end = (
                    round(float(self._call("cuEventElapsedTime", events[0], event)) * 1e6)
                    for event in events[2 * index : 2 * index + 2]
                )
                spans.append((begin, end - begin))
            return spans
        finally:
            for event in events:
                _quiet(self.driver, "cuEventDestroy", event)

    def _set_statuses(
        self, config: LaunchConfig | CollectiveConfig, call: Callable[..., Any]
    ) -> None:
        """Before a launch, set each status output it writes first to -1 (in
        every int64: a status no kernel wrote reads as "not written")."""
        for address, nbytes in self._memsets.get(config.index, ()):
            call("cuMemsetD8Async", address, 0xFF, nbytes, self._stream)

    def enqueue(self, config: LaunchConfig | CollectiveConfig) -> None:
        """``cuLaunchKernel`` of one prepared launch on the stream (nothing for
        an empty grid), or one collective (`run_collective`); `launch` runs
        them all in order (a benchmark may time one alone)."""
        if isinstance(config, CollectiveConfig):
            self.run_collective(config)
            return
        self._launch_kernel(config, self._call)

    def run_collective(self, config: CollectiveConfig) -> None:
        """One collective on the stream: its input copied into its output when
        they differ, then (over more than one rank) the output reduced in place
        by the session's ``collective``."""
        spec = config.spec
        if config.source != config.target and config.nbytes:
            self._call(
                "cuMemcpyDtoDAsync", config.target, config.source, config.nbytes, self._stream
            )
        if spec.world > 1:
            assert self.collective is not None  # checked when the session was made
            self.collective.all_reduce_device(
                spec.reduction, config.target, config.count, self._stream, spec.where()
            )

    def _launch_kernel(
        self, config: LaunchConfig | CollectiveConfig, call: Callable[..., Any]
    ) -> None:
        if isinstance(config, CollectiveConfig):
            raise WorkerError("internal: a collective cannot be captured in a CUDA graph")
        if not all(config.grid):
            return
        _, pointers = self._keep[config.index]
        call(
            "cuLaunchKernel",
            config.function,
            *config.grid,
            *config.block,
            config.shared,
            self._stream,
            ctypes.addressof(pointers),
            0,
        )

    def graph(self, batch: int) -> CudaGraph:
        """The CUDA graph of every launch at ``batch``, built the first time.

        Built by stream capture: between ``cuStreamBeginCapture`` (thread-local
        mode: the calls a capture makes unsafe are refused to this thread only,
        not to the process's other threads) and ``cuStreamEndCapture`` the
        session enqueues exactly what `launch` does, each status memset and
        each ``cuLaunchKernel`` with its `pack_params` parameters, which the
        driver records as nodes of one chain in plan order (it copies the
        parameter values at the call, as for a launch) instead of running them.
        So the graph is the stream path's own calls, not a second description
        of them. ``cuGraphInstantiate`` makes it executable once; the captured
        ``CUgraph`` is destroyed then (the executable graph does not need it).

        Raises `WorkerError` (one line, the driver call and its error) when a
        call fails; the capture is ended first, so the session stays usable."""
        self.prepare(batch)
        found = self.graphs.pop(batch, None)
        if found is None:
            found = self._capture(batch)
            while len(self.graphs) >= max(self.max_graphs, 1):
                self._drop_graph(next(iter(self.graphs)))  # the least recently used
        self.graphs[batch] = found  # now the most recently used
        return found

    def _capture(self, batch: int) -> CudaGraph:
        driver, stream = self.driver, self._stream
        call = functools.partial(_call, driver)
        mode = driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        graph: Any = None
        try:
            call("cuStreamBeginCapture", stream, mode)
            try:
                for config in self.launches:
                    self._set_statuses(config, call)
                    self._launch_kernel(config, call)
            except _DriverCallError:
                with contextlib.suppress(_DriverCallError):  # leave capture mode
                    graph = call("cuStreamEndCapture", stream)
                raise
            graph = call("cuStreamEndCapture", stream)
            executable = call("cuGraphInstantiate", graph, 0)
        except _DriverCallError as err:
            raise WorkerError(
                f"the cuda backend could not build a CUDA graph of the launches at batch "
                f"{batch}: {err} (without graphs the launches go to the stream one by one)"
            ) from None
        finally:
            if graph is not None:
                _quiet(driver, "cuGraphDestroy", graph)
        kernels = sum(
            1 for config in self.launches if isinstance(config, LaunchConfig) and all(config.grid)
        )
        memsets = sum(len(self._memsets.get(config.index, ())) for config in self.launches)
        return CudaGraph(batch, executable, kernels, memsets)

    def replay(self, batch: int, progress: Progress | None = None) -> None:
        """Enqueue the graph of ``batch`` on the stream (`graph`: built the first
        time; the inputs already uploaded); ``progress`` gets (all, all)."""
        graph = self.graph(batch)
        self._call("cuGraphLaunch", graph.executable, self._stream)
        if progress is not None:
            progress(len(self.launches), len(self.launches))

    def execute(self, batch: int, progress: Progress | None = None) -> None:
        """Every launch at ``batch``: `replay` with graphs on, else `launch`."""
        if self.use_graphs:
            self.replay(batch, progress)
        else:
            self.launch(batch, progress)

    def _drop_graph(self, batch: int) -> None:
        """Destroy the graph of ``batch`` and free the memory only it kept."""
        graph = self.graphs.pop(batch)
        _quiet(self.driver, "cuGraphExecDestroy", graph.executable)
        held = self._held.pop(batch, None)
        if held is not None:
            self._free(held.arena)
            for address in held.inputs.values():
                self._free(address)

    def drop_graphs(self) -> None:
        """Destroy every graph (and free the memory of the batch sizes set aside
        for them); the next replay captures again."""
        for batch in list(self.graphs):
            self._drop_graph(batch)

    def synchronize(self) -> None:
        self._call("cuStreamSynchronize", self._stream)

    def run(
        self,
        tensors: Mapping[str, np.ndarray],
        batch: int,
        times: dict[str, float] | None = None,
        progress: Progress | None = None,
        trace: dict[int, list[np.ndarray]] | None = None,
        spans: list[tuple[int, int]] | None = None,
    ) -> list[np.ndarray]:
        """Upload the inputs (and parameters, the first time), run every launch
        and return the outputs in the plan's return order (see `Backend.run`;
        with a ``trace`` or ``spans`` the launches go one by one even with
        graphs on, `timed_launch` timing each for ``spans``)."""
        from teeny_ir.runtime.checks import check_statuses, status_tensors

        times = {} if times is None else times
        start = time.perf_counter()
        self.upload_params(tensors, refresh=self.refresh_params)
        self.prepare(batch)
        for spec in self.plan.inputs:
            self._upload(self.inputs[spec.name], tensors[spec.name])
        times["allocate and upload"] = time.perf_counter() - start
        start = time.perf_counter()
        kernels = {k.name: k for k in self.plan.kernels}

        def record(config: LaunchConfig | CollectiveConfig) -> None:
            assert trace is not None
            launch = self.plan.launches[config.index]
            if isinstance(launch, CollectiveSpec):
                written = [launch.output]
            else:
                family = FAMILIES[kernels[launch.kernel].family]
                written = [
                    arg.tensor
                    for abi, arg in zip(family.args, launch.args, strict=True)
                    if abi.kind == "output" and arg.tensor is not None
                ]
            self.synchronize()
            trace[config.index] = [self.read(name, batch) for name in dict.fromkeys(written)]

        after = record if trace is not None else None
        if spans is not None:
            spans[:] = self.timed_launch(batch, progress, after)
            self.synchronize()
            times["launches"] = time.perf_counter() - start
        elif self.use_graphs and trace is None:  # a graph cannot stop between launches
            if batch not in self.graphs:
                self.graph(batch)
                times["capture and instantiate graph"] = time.perf_counter() - start
                start = time.perf_counter()
            self.replay(batch, progress)
            self.synchronize()
            times["graph launch"] = time.perf_counter() - start
        else:
            self.launch(batch, progress, after)
            self.synchronize()
            times["launches"] = time.perf_counter() - start
        start = time.perf_counter()
        statuses = {
            name: self.read(name, batch).reshape(-1).tolist()
            for _, name, _ in status_tensors(self.plan)
        }
        check_statuses(self.plan, statuses, batch)
        outputs = [self.read(name, batch) for name in self.plan.outputs]
        times["copy outputs"] = time.perf_counter() - start
        return outputs

    def _shapes(self, batch: int) -> dict[str, list[int]]:
        env = {BATCH: batch}
        specs: list[TensorSpec | ViewSpec] = [
            *self.plan.inputs,
            *self.plan.buffers,
            *self.plan.views,
        ]
        shapes = {
            s.name: [d if isinstance(d, int) else eval_text(d, env) for d in s.shape] for s in specs
        }
        return shapes | {p.name: list(p.shape) for p in self.plan.params}

    def read(self, name: str, batch: int) -> np.ndarray:
        """Copy a tensor (input, parameter, buffer or view) back as a numpy array."""
        import numpy as np

        shape = self._shapes(batch)[name]
        dtypes = {s.name: s.dtype for s in (*self.plan.inputs, *self.plan.buffers)}
        dtype = np.dtype(_NUMPY_DTYPES[dtypes.get(name, "f32")])
        address = self.addresses(batch)[name]
        view = next((v for v in self.plan.views if v.name == name), None)
        if view is None:
            result = np.empty(shape, dtype=dtype)
            if result.nbytes:
                self._call("cuMemcpyDtoH", result.ctypes.data, address, result.nbytes)
            return result
        image = math.prod(shape[1:])
        span = np.empty((shape[0] - 1) * view.batch_stride + image, dtype=dtype)
        self._call("cuMemcpyDtoH", span.ctypes.data, address, span.nbytes)
        strides = [view.batch_stride] + [math.prod(shape[k + 1 :]) for k in range(1, len(shape))]
        return np.lib.stride_tricks.as_strided(
            span, shape, [s * dtype.itemsize for s in strides]
        ).copy()

    def close(self) -> None:
        """Free the session's graphs, memory, modules and stream (best effort)."""
        for graph in self.graphs.values():
            _quiet(self.driver, "cuGraphExecDestroy", graph.executable)
        self.graphs, self._held = {}, {}
        for address in reversed(self._allocations):
            _quiet(self.driver, "cuMemFree", address)
        self._allocations = []
        for module in self._modules:
            _quiet(self.driver, "cuModuleUnload", module)
        self._modules = []
        if self._stream is not None:
            _quiet(self.driver, "cuStreamDestroy", self._stream)
            self._stream = None
        if self._context:
            _quiet(self.driver, "cuDevicePrimaryCtxRelease", self.device)
            self._context = False
        self.batch, self.arena, self.inputs, self.params, self.launches = 0, 0, {}, {}, []


ARCH_SPECIFIC = 90
"""From sm_90 on, Triton compiles for the arch-specific target (``sm_90a``,
``sm_100a``: wgmma, TMA), whose cubins run on that compute capability only."""


def runs_on(built: int, device: int) -> bool:
    """Whether a cubin built for ``sm_<built>`` runs on an ``sm_<device>`` GPU:
    the same arch, or (below `ARCH_SPECIFIC`) the same major version and a minor
    one not above the device's (CUDA's binary compatibility: sm_80 runs on
    sm_86 and sm_89, never the other way round)."""
    if built == device:
        return True
    return built < ARCH_SPECIFIC and built // 10 == device // 10 and built % 10 <= device % 10


STATE_ROLES = ("updated", "running")
"""The plan roles of the outputs that replace a training state tensor."""
CARRIED_KINDS = ("identity", "reshape")
"""Derivations whose parameter holds its weight's bytes as they are."""


def carried_params(plan: Plan) -> dict[str, int] | None:
    """For a training plan whose state can stay on the GPU: each parameter that
    is its weight's bytes (an identity or reshape derivation) of a weight an
    output updates -> that output's index. None when the plan updates nothing,
    when such an output is a view (not one contiguous run), or when another
    parameter derives from a weight that changes (the host would have to derive
    it again each step)."""
    updated = {weight: k for k, (role, weight) in enumerate(plan.roles) if role in STATE_ROLES}
    if not updated:
        return None
    buffers = {b.name for b in plan.buffers}
    carried: dict[str, int] = {}
    for param in plan.params:
        sources = param.derivation.sources
        if param.derivation.kind in CARRIED_KINDS and sources[0] in updated:
            if plan.outputs[updated[sources[0]]] not in buffers:
                return None
            carried[param.name] = updated[sources[0]]
        elif any(source in updated for source in sources):
            return None
    return carried


class CudaTrainingSession(CudaSession):
    """A training plan whose state stays on the GPU between steps
    (`carried_params` says which plans can).

    After a step, ``cuMemcpyDtoDAsync`` copies each output that updates a
    weight into the parameters holding that weight, so the next step reads the
    new state without a round trip through the host. Every other parameter
    derives from weights no output updates (fills, literals, frozen weights):
    it is uploaded with the rest by `upload_state` and stays.

    `step` uploads only the inputs and reads back only the user results (role
    ``""``; gradients and state are not copied); `read_state` copies the state
    back, one tensor per updated weight, when the trainer needs it on the host.
    """

    def __init__(
        self,
        directory: Path,
        plan: Plan,
        driver: Any = None,
        device: int = 0,
        *,
        graphs: bool = False,
        collective: DeviceCollective | None = None,
    ) -> None:
        carried = carried_params(plan)
        if carried is None:
            raise RuntimeInputError("this plan's training state cannot stay on the GPU")
        super().__init__(directory, plan, driver, device, graphs=graphs, collective=collective)
        self.carried = carried
        """Parameter name -> index of the output that holds its next value."""
        self.state_params = {plan.role(k)[1]: p for p, k in reversed(self.carried.items())}
        """Updated weight -> one parameter holding it (what `read_state` copies back)."""

    def upload_state(self, params: Mapping[str, np.ndarray]) -> None:
        """Upload every parameter (the trainer's state bound by the plan's
        derivations): at the first step, and after the host state changed."""
        self.upload_params(params, refresh=True)

    def step(
        self,
        inputs: Mapping[str, np.ndarray],
        batch: int,
        commit: Callable[[list[np.ndarray | None]], bool] | None = None,
    ) -> list[np.ndarray | None]:
        """One step on the parameters on the device: outputs in return order,
        the user results read back and None for every other output; the state
        outputs are copied into their parameters (after the status check, so
        a step refused for bad data leaves the state as it was), unless
        ``commit``, called with those outputs first (the trainer's divergence
        check: it may `read` the state outputs at ``batch``), returns False."""
        from teeny_ir.runtime.checks import check_statuses, status_tensors

        plan = self.plan
        self.prepare(batch)
        for spec in plan.inputs:
            self._upload(self.inputs[spec.name], inputs[spec.name])
        self.execute(batch)
        self.synchronize()
        statuses = {
            name: self.read(name, batch).reshape(-1).tolist()
            for _, name, _ in status_tensors(plan)
        }
        check_statuses(plan, statuses, batch)
        results: list[np.ndarray | None] = [
            self.read(name, batch) if not plan.role(k)[0] else None
            for k, name in enumerate(plan.outputs)
        ]
        if commit is not None and not commit(results):
            return results
        addresses = self.addresses(batch)
        shapes = {p.name: p.shape for p in plan.params}
        for param, output in self.carried.items():
            nbytes = math.prod(shapes[param]) * memory.BYTES["f32"]
            source = addresses[plan.outputs[output]]
            self._call("cuMemcpyDtoDAsync", self.params[param], source, nbytes, self._stream)
        self.synchronize()
        return results

    def read_state(self) -> dict[str, np.ndarray]:
        """Every updated weight's current value, copied back from its parameter."""
        return {weight: self.read(param, self.batch) for weight, param in self.state_params.items()}


def _no_cubin(plan: Plan, kernel: KernelSpec, launch: LaunchSpec, arch: int) -> str:
    """The sentence for a plan without a cubin for this GPU."""
    archs = sorted({c.arch for k in plan.kernels for c in k.compiled})
    if not archs:
        return (
            f"the cuda backend cannot run this plan on this sm_{arch} GPU: it has no cubins "
            f"(emit it with emit-triton{{archs={arch}}})"
        )
    has = ", ".join(f"sm_{a}" for a in archs)
    return (
        f"the cuda backend cannot run this plan on this sm_{arch} GPU: kernel "
        f"'{kernel.name}' (num_warps={launch.num_warps}, num_stages={launch.num_stages}) has "
        f"no cubin that runs on sm_{arch} and the plan has cubins for {has} only (emit it "
        f"with emit-triton{{archs={arch}}})"
    )


def _load_driver() -> Any:
    """cuda-python's driver API module; raises `ModuleNotFoundError` without
    cuda-python. Imported by name because cuda-python is an optional extra."""
    return importlib.import_module(DRIVER_MODULE)


def _device_count(driver: Any) -> int:
    """``cuInit(0)`` then ``cuDeviceGetCount``; raises on any failed call."""
    _call(driver, "cuInit", 0)
    return int(_call(driver, "cuDeviceGetCount"))


def _call(driver: Any, name: str, *args: Any) -> Any:
    """``driver.name(*args)``: its one value (None without one), or a tuple of
    them; raises `_DriverCallError` when the result is not ``CUDA_SUCCESS``."""
    answer = getattr(driver, name)(*args)
    result, *values = answer if isinstance(answer, tuple) else (answer,)
    if result != driver.CUresult.CUDA_SUCCESS:
        raise _DriverCallError(f"{name} returned {getattr(result, 'name', result)}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def _quiet(driver: Any, name: str, *args: Any) -> None:
    """A clean-up call whose failure is ignored (the session is going anyway)."""
    with contextlib.suppress(Exception):
        _call(driver, name, *args)


def _one_line(err: BaseException) -> str:
    """An exception as one line of text, for a one-sentence message."""
    lines = str(err).strip().splitlines()
    text = lines[0] if lines else ""
    if isinstance(err, _DriverCallError):
        return text
    return f"{type(err).__name__}: {text}" if text else type(err).__name__
