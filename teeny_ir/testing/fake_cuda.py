"""A fake ``cuda.bindings.driver`` for the cuda backend's tests and
``bench/gpu_check.py --dry-run``: no GPU, no cuda-python.

`FakeDriver` has the calls `teeny_ir.runtime.backends.cuda` makes, each
returning ``(CUresult, value...)`` as cuda-python does (`FakeResult` codes),
and records every call in `FakeDriver.calls` (name, arguments). Device memory
is host memory: ``cuMemAlloc`` hands out fake addresses (256-byte aligned, far
from any host address) backed by bytearrays, ``cuMemcpyHtoD`` /
``cuMemcpyDtoH`` and the memsets copy bytes.
``cuModuleLoadData`` reads the image at the host address it gets (an ELF cubin's
size from its header) and records its sha256; ``cuLaunchKernel`` reads the
``kernelParams`` array of pointers (``arity(function name)`` of them) and
records the launch with the parameter bytes they point at (`Launch`). Kernels
compute nothing, unless the driver has an ``execute`` hook: `Interpreting` is
one that runs each launched kernel in Triton's interpreter on the fake device
memory, the arguments decoded from the parameter bytes alone, as a GPU would
read them (a test of every address and value the backend packs, numerically).

CUDA graphs by stream capture, as the driver does them: between
``cuStreamBeginCapture`` and ``cuStreamEndCapture`` the work enqueued on the
capturing stream is recorded, not run: a launch becomes a `KernelNode` holding
its parameter bytes as they were at the call (the driver copies them then), a
memset a `MemsetNode`, a device-to-device copy a `CopyNode`. A call that would
synchronize with the capture or is unsafe during it (``cuMemcpyHtoD``,
``cuMemcpyDtoH``, ``cuStreamSynchronize``, ``cuMemAlloc``, ``cuMemFree``,
``cuModuleLoadData``; the last three are allowed in the relaxed mode) fails
and invalidates the capture, so ``cuStreamEndCapture`` then returns
``CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`` and no graph.
``cuGraphInstantiate`` copies the graph's nodes into a `FakeGraphExec` (the
graph may be destroyed after), and ``cuGraphLaunch`` replays them in order:
each kernel node is a `Launch` with the recorded bytes, recorded in `launches`
and run by ``execute``, each memset and copy is done. `launches` holds the
launches that ran (on the stream or replayed), never the captured ones.

Time is a fake clock too, for the profile's CUDA events: `FakeDriver.clock_ns`
starts at 0 and each kernel that runs (on the stream or replayed) advances it
by ``kernel_ns(launch)`` (`fake_kernel_ns` by default: 1000 ns plus 1 ns per
program of its grid, so each launch's time is known to a test);
``cuEventRecord`` stamps an event with the clock, ``cuEventElapsedTime``
returns the difference in milliseconds (CUDA_ERROR_INVALID_HANDLE for an
event never recorded, as the driver does).

``failures`` makes a call fail: name -> the `FakeResult` it returns (the call
recorded, nothing done), for the tests of the backend's error paths.

Only the standard library is imported (`Interpreting` imports torch and the
plan's kernel files when it is made, in a process with the interpreter on).
"""

from __future__ import annotations

import ctypes
import dataclasses
import enum
import functools
import hashlib
import json
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    from teeny_ir.backend.plan import KernelSpec, Plan

BASE_ADDRESS = 0x7F00_0000_0000
"""The first fake device address."""


class FakeResult(enum.IntEnum):
    """The driver's result codes the fake returns (cuda-python's values and names)."""

    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_OUT_OF_MEMORY = 2
    CUDA_ERROR_INVALID_HANDLE = 400
    CUDA_ERROR_ILLEGAL_STATE = 401
    CUDA_ERROR_NOT_SUPPORTED = 801
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901
    CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = 906


SUCCESS = FakeResult.CUDA_SUCCESS
RELAXED = "relaxed"
"""``CU_STREAM_CAPTURE_MODE_RELAXED`` as the fake spells it: unsafe calls allowed."""
UNSAFE_WHILE_CAPTURING = ("cuMemAlloc", "cuMemFree", "cuModuleLoadData")
"""Calls that fail during a global or thread-local capture (not a relaxed one)."""
SYNCHRONIZING = ("cuMemcpyHtoD", "cuMemcpyDtoH")
"""Synchronous copies on the legacy stream: they would wait for the capturing
stream (a blocking one), which the driver refuses in every capture mode."""

_Method = TypeVar("_Method", bound=Callable[..., Any])


def _entry(method: _Method) -> _Method:
    """A driver entry point: a name in ``failures`` returns its code at once
    (the call recorded, nothing done), which invalidates a capture under way,
    as a failed call does on the driver; a failed ``cuStreamEndCapture`` ends
    its capture too (as the driver's does for an invalidated one)."""

    @functools.wraps(method)
    def call(self: FakeDriver, *args: Any) -> Any:
        code = self.failures.get(method.__name__)
        if code is None:
            return method(self, *args)
        self._record(method.__name__, *args)
        for capture in self._captures.values():
            if capture.invalidated is None:
                capture.invalidated = code
        if method.__name__ == "cuStreamEndCapture" and args[0] in self._captures:
            del self.graphs[self._captures.pop(args[0]).graph.handle]
        return (code,)

    return cast(_Method, call)


@dataclass(frozen=True)
class FakeModule:
    handle: int
    sha256: str | None
    """The image's sha256 (None when it is no ELF file)."""


@dataclass(frozen=True)
class FakeFunction:
    module: FakeModule
    name: str


@dataclass(frozen=True)
class Launch:
    """One ``cuLaunchKernel`` as the fake saw it."""

    function: FakeFunction
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int
    stream: Any
    offsets: tuple[int, ...]
    """Each parameter pointer, relative to the first one."""
    data: bytes
    """The bytes from the first parameter to the end of the last (a u64)."""
    extra: Any


def fake_kernel_ns(launch: Launch) -> int:
    """The fake clock's time for one kernel: 1000 ns plus 1 ns per program."""
    return 1000 + launch.grid[0] * launch.grid[1] * launch.grid[2]


@dataclass(frozen=True)
class FakeEvent:
    """A ``CUevent``: ``cuEventRecord`` stamps it in `FakeDriver.event_times`."""

    handle: int


@dataclass(frozen=True)
class KernelNode:
    """A launch captured into a graph: its parameter bytes as they were when
    ``cuLaunchKernel`` was called (``launch.stream``: the capturing stream)."""

    launch: Launch


@dataclass(frozen=True)
class MemsetNode:
    """A captured ``cuMemsetD8Async`` (``size`` 1) or ``cuMemsetD32Async`` (4)."""

    address: int
    value: int
    count: int
    size: int


@dataclass(frozen=True)
class CopyNode:
    """A captured ``cuMemcpyDtoDAsync``."""

    dst: int
    src: int
    nbytes: int


Node = KernelNode | MemsetNode | CopyNode


@dataclass(eq=False)
class FakeGraph:
    """A ``CUgraph``: the nodes one capture recorded, in stream order."""

    handle: int
    nodes: list[Node]


@dataclass(frozen=True, eq=False)
class FakeGraphExec:
    """A ``CUgraphExec``: the nodes of the graph it was instantiated from."""

    handle: int
    graph: int
    """The handle of that graph."""
    nodes: tuple[Node, ...]


@dataclass
class _Capture:
    graph: FakeGraph
    mode: str
    invalidated: FakeResult | None = None
    """The error that invalidated the capture (then nothing more is recorded)."""


@dataclass
class FakeDriver:
    """The fake driver module (see the module docstring)."""

    capability: tuple[int, int] = (9, 0)
    arity: Callable[[str], int] | None = None
    """Parameters of a function by name: needed to read ``kernelParams``."""
    devices: int = 1
    execute: Callable[[Launch], None] | None = None
    """Called with each launch that runs, after it is recorded (`Interpreting`
    runs it): a stream launch, or a kernel node of a replayed graph."""
    calls: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)
    """The launches that ran, in order (captured ones run when replayed)."""
    memory: dict[int, bytearray] = field(default_factory=dict)
    modules: list[FakeModule] = field(default_factory=list)
    failures: dict[str, FakeResult] = field(default_factory=dict)
    """Call name -> the error code it returns (see the module docstring)."""
    graphs: dict[int, FakeGraph] = field(default_factory=dict)
    """The live graphs by handle."""
    graph_execs: dict[int, FakeGraphExec] = field(default_factory=dict)
    """The live executable graphs by handle."""
    instantiated: list[FakeGraphExec] = field(default_factory=list)
    """Every executable graph made, destroyed or not, in order."""
    kernel_ns: Callable[[Launch], int] = fake_kernel_ns
    """The fake clock's nanoseconds for each kernel that runs."""
    clock_ns: int = 0
    """The fake clock: the time the kernels run so far took."""
    event_times: dict[FakeEvent, int | None] = field(default_factory=dict)
    """The live events -> the clock when last recorded (None: never recorded)."""
    _next: int = BASE_ADDRESS
    _handles: int = 0
    _captures: dict[Any, _Capture] = field(default_factory=dict)

    CUresult = FakeResult
    shared_optin: int = 232448
    """CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN (an H100's, bytes)."""
    CUdevice_attribute = SimpleNamespace(
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR="major",
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR="minor",
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN="shared_optin",
    )
    CUfunction_attribute = SimpleNamespace(
        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES="max_dynamic_shared_size_bytes"
    )
    CUstreamCaptureMode = SimpleNamespace(
        CU_STREAM_CAPTURE_MODE_GLOBAL="global",
        CU_STREAM_CAPTURE_MODE_THREAD_LOCAL="thread_local",
        CU_STREAM_CAPTURE_MODE_RELAXED=RELAXED,
    )

    @classmethod
    def for_plan(cls, plan: Plan, **options: Any) -> FakeDriver:
        """A fake that knows each of ``plan``'s kernels' parameter count (its
        family's ABI and the two scratch pointers), so it can read launches."""
        from teeny_ir.kernels.families import FAMILIES
        from teeny_ir.runtime.backends.cuda import SCRATCH_POINTERS

        counts = {
            compiled.name: len(FAMILIES[kernel.family].args) + SCRATCH_POINTERS
            for kernel in plan.kernels
            for compiled in kernel.compiled
        }
        return cls(arity=counts.__getitem__, **options)

    def _record(self, name: str, *args: Any) -> None:
        self.calls.append((name, args))

    def names(self) -> list[str]:
        """The names of the calls made, in order."""
        return [name for name, _ in self.calls]

    def _region(self, address: int, nbytes: int) -> tuple[bytearray, int]:
        for start, data in self.memory.items():
            if start <= address and address + nbytes <= start + len(data):
                return data, address - start
        raise AssertionError(f"fake device range {address:#x} + {nbytes} is not allocated")

    def read(self, address: int, nbytes: int) -> bytes:
        """Device bytes (for tests)."""
        data, offset = self._region(address, nbytes)
        return bytes(data[offset : offset + nbytes])

    def _handle(self) -> int:
        self._handles += 1
        return self._handles

    # --- capture ------------------------------------------------------------------

    def _refused(self, name: str, stream: Any = None) -> FakeResult | None:
        """The error a call gets while a capture is under way, or None: a
        synchronous copy fails in every mode, an unsafe call outside the
        relaxed mode, a synchronize of the capturing stream always; each
        invalidates the capture."""
        for capturing, capture in self._captures.items():
            unsafe = name in UNSAFE_WHILE_CAPTURING and capture.mode != RELAXED
            if name in SYNCHRONIZING:
                code = FakeResult.CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
            elif unsafe or (name == "cuStreamSynchronize" and stream == capturing):
                code = FakeResult.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
            else:
                continue
            if capture.invalidated is None:
                capture.invalidated = code
            return code
        return None

    def _captured(self, stream: Any, node: Node) -> FakeResult | None:
        """Record ``node`` when ``stream`` is capturing: SUCCESS (recorded, not
        run), the invalidation error of a capture gone wrong, or None (not
        capturing: run it)."""
        capture = self._captures.get(stream)
        if capture is None:
            return None
        if capture.invalidated is not None:
            return FakeResult.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
        capture.graph.nodes.append(node)
        return SUCCESS

    @_entry
    def cuStreamBeginCapture(self, stream: Any, mode: str) -> tuple[FakeResult]:
        self._record("cuStreamBeginCapture", stream, mode)
        if stream in self._captures:
            return (FakeResult.CUDA_ERROR_ILLEGAL_STATE,)
        graph = FakeGraph(self._handle(), [])
        self.graphs[graph.handle] = graph
        self._captures[stream] = _Capture(graph, mode)
        return (SUCCESS,)

    @_entry
    def cuStreamEndCapture(self, stream: Any) -> tuple[FakeResult, int | None]:
        self._record("cuStreamEndCapture", stream)
        capture = self._captures.pop(stream, None)
        if capture is None:
            return FakeResult.CUDA_ERROR_ILLEGAL_STATE, None
        if capture.invalidated is not None:
            del self.graphs[capture.graph.handle]
            return FakeResult.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, None
        return SUCCESS, capture.graph.handle

    @_entry
    def cuGraphInstantiate(self, graph: int, flags: int) -> tuple[FakeResult, int | None]:
        self._record("cuGraphInstantiate", graph, flags)
        found = self.graphs.get(graph)
        if found is None or flags != 0:
            return FakeResult.CUDA_ERROR_INVALID_VALUE, None
        executable = FakeGraphExec(self._handle(), graph, tuple(found.nodes))
        self.graph_execs[executable.handle] = executable
        self.instantiated.append(executable)
        return SUCCESS, executable.handle

    @_entry
    def cuGraphLaunch(self, executable: int, stream: Any) -> tuple[FakeResult]:
        self._record("cuGraphLaunch", executable, stream)
        found = self.graph_execs.get(executable)
        if found is None:
            return (FakeResult.CUDA_ERROR_INVALID_VALUE,)
        if stream in self._captures:  # a child graph: the backend never does it
            return (FakeResult.CUDA_ERROR_NOT_SUPPORTED,)
        for node in found.nodes:
            if isinstance(node, KernelNode):
                self._run(dataclasses.replace(node.launch, stream=stream))
            elif isinstance(node, MemsetNode):
                self._memset(node.address, node.value, node.count, node.size)
            else:
                self._copy(node.dst, node.src, node.nbytes)
        return (SUCCESS,)

    @_entry
    def cuGraphExecDestroy(self, executable: int) -> tuple[FakeResult]:
        self._record("cuGraphExecDestroy", executable)
        if self.graph_execs.pop(executable, None) is None:
            return (FakeResult.CUDA_ERROR_INVALID_VALUE,)
        return (SUCCESS,)

    @_entry
    def cuGraphDestroy(self, graph: int) -> tuple[FakeResult]:
        self._record("cuGraphDestroy", graph)
        if any(capture.graph.handle == graph for capture in self._captures.values()):
            return (FakeResult.CUDA_ERROR_ILLEGAL_STATE,)
        if self.graphs.pop(graph, None) is None:
            return (FakeResult.CUDA_ERROR_INVALID_VALUE,)
        return (SUCCESS,)

    # --- the rest of the driver -----------------------------------------------------

    @_entry
    def cuInit(self, flags: int) -> tuple[FakeResult]:
        self._record("cuInit", flags)
        return (SUCCESS,)

    @_entry
    def cuDeviceGetCount(self) -> tuple[FakeResult, int]:
        self._record("cuDeviceGetCount")
        return SUCCESS, self.devices

    @_entry
    def cuDeviceGet(self, ordinal: int) -> tuple[FakeResult, int]:
        self._record("cuDeviceGet", ordinal)
        return SUCCESS, ordinal

    @_entry
    def cuDeviceGetAttribute(self, attribute: str, device: int) -> tuple[FakeResult, int]:
        self._record("cuDeviceGetAttribute", attribute, device)
        values = {"major": self.capability[0], "minor": self.capability[1]}
        return SUCCESS, values.get(attribute, self.shared_optin)

    @_entry
    def cuDevicePrimaryCtxRetain(self, device: int) -> tuple[FakeResult, str]:
        self._record("cuDevicePrimaryCtxRetain", device)
        return SUCCESS, f"context{device}"

    @_entry
    def cuDevicePrimaryCtxRelease(self, device: int) -> tuple[FakeResult]:
        self._record("cuDevicePrimaryCtxRelease", device)
        return (SUCCESS,)

    @_entry
    def cuCtxSetCurrent(self, context: str) -> tuple[FakeResult]:
        self._record("cuCtxSetCurrent", context)
        return (SUCCESS,)

    @_entry
    def cuStreamCreate(self, flags: int) -> tuple[FakeResult, str]:
        self._record("cuStreamCreate", flags)
        return SUCCESS, "stream0"

    @_entry
    def cuStreamDestroy(self, stream: str) -> tuple[FakeResult]:
        self._record("cuStreamDestroy", stream)
        if stream in self._captures:
            return (FakeResult.CUDA_ERROR_ILLEGAL_STATE,)
        return (SUCCESS,)

    @_entry
    def cuStreamSynchronize(self, stream: str) -> tuple[FakeResult]:
        self._record("cuStreamSynchronize", stream)
        refused = self._refused("cuStreamSynchronize", stream)
        return (SUCCESS if refused is None else refused,)

    @_entry
    def cuModuleLoadData(self, image: int) -> tuple[FakeResult, FakeModule | None]:
        self._record("cuModuleLoadData", image)
        refused = self._refused("cuModuleLoadData")
        if refused is not None:
            return refused, None
        sha256 = None
        if ctypes.string_at(image, 4) == b"\x7fELF":
            sha256 = hashlib.sha256(ctypes.string_at(image, _elf_size(image))).hexdigest()
        module = FakeModule(len(self.modules) + 1, sha256)
        self.modules.append(module)
        return SUCCESS, module

    @_entry
    def cuModuleUnload(self, module: FakeModule) -> tuple[FakeResult]:
        self._record("cuModuleUnload", module)
        return (SUCCESS,)

    @_entry
    def cuModuleGetFunction(
        self, module: FakeModule, name: bytes
    ) -> tuple[FakeResult, FakeFunction]:
        self._record("cuModuleGetFunction", module, name)
        return SUCCESS, FakeFunction(module, name.decode("ascii"))

    @_entry
    def cuFuncSetAttribute(
        self, function: FakeFunction, attribute: str, value: int
    ) -> tuple[FakeResult]:
        self._record("cuFuncSetAttribute", function, attribute, value)
        return (SUCCESS,)

    @_entry
    def cuMemAlloc(self, nbytes: int) -> tuple[FakeResult, int | None]:
        self._record("cuMemAlloc", nbytes)
        refused = self._refused("cuMemAlloc")
        if refused is not None:
            return refused, None
        address = self._next
        self.memory[address] = bytearray(nbytes)
        self._next += (nbytes + 255) // 256 * 256 + 256
        return SUCCESS, address

    @_entry
    def cuMemFree(self, address: int) -> tuple[FakeResult]:
        self._record("cuMemFree", address)
        refused = self._refused("cuMemFree")
        if refused is not None:
            return (refused,)
        del self.memory[address]
        return (SUCCESS,)

    @_entry
    def cuMemcpyHtoD(self, device: int, host: int, nbytes: int) -> tuple[FakeResult]:
        self._record("cuMemcpyHtoD", device, host, nbytes)
        refused = self._refused("cuMemcpyHtoD")
        if refused is not None:
            return (refused,)
        data, offset = self._region(device, nbytes)
        data[offset : offset + nbytes] = ctypes.string_at(host, nbytes)
        return (SUCCESS,)

    @_entry
    def cuMemcpyDtoH(self, host: int, device: int, nbytes: int) -> tuple[FakeResult]:
        self._record("cuMemcpyDtoH", host, device, nbytes)
        refused = self._refused("cuMemcpyDtoH")
        if refused is not None:
            return (refused,)
        ctypes.memmove(host, self.read(device, nbytes), nbytes)
        return (SUCCESS,)

    def _copy(self, dst: int, src: int, nbytes: int) -> None:
        data, offset = self._region(dst, nbytes)
        data[offset : offset + nbytes] = self.read(src, nbytes)

    def _memset(self, device: int, value: int, count: int, size: int) -> None:
        data, offset = self._region(device, size * count)
        pattern = struct.pack("<I", value) if size == 4 else bytes([value])
        data[offset : offset + size * count] = pattern * count

    @_entry
    def cuMemcpyDtoDAsync(self, dst: int, src: int, nbytes: int, stream: str) -> tuple[FakeResult]:
        self._record("cuMemcpyDtoDAsync", dst, src, nbytes, stream)
        captured = self._captured(stream, CopyNode(dst, src, nbytes))
        if captured is not None:
            return (captured,)
        self._copy(dst, src, nbytes)
        return (SUCCESS,)

    @_entry
    def cuMemsetD32Async(
        self, device: int, value: int, count: int, stream: str
    ) -> tuple[FakeResult]:
        self._record("cuMemsetD32Async", device, value, count, stream)
        captured = self._captured(stream, MemsetNode(device, value, count, 4))
        if captured is not None:
            return (captured,)
        self._memset(device, value, count, 4)
        return (SUCCESS,)

    @_entry
    def cuMemsetD8Async(
        self, device: int, value: int, count: int, stream: str
    ) -> tuple[FakeResult]:
        self._record("cuMemsetD8Async", device, value, count, stream)
        captured = self._captured(stream, MemsetNode(device, value, count, 1))
        if captured is not None:
            return (captured,)
        self._memset(device, value, count, 1)
        return (SUCCESS,)

    @_entry
    def cuLaunchKernel(
        self,
        function: FakeFunction,
        gx: int,
        gy: int,
        gz: int,
        bx: int,
        by: int,
        bz: int,
        shared: int,
        stream: str,
        params: int,
        extra: Any,
    ) -> tuple[FakeResult]:
        self._record("cuLaunchKernel", function, gx, gy, gz, bx, by, bz, shared, stream, params)
        count = self.arity(function.name) if self.arity is not None else 0
        pointers = list((ctypes.c_void_p * count).from_address(params)) if count else []
        first = pointers[0] if pointers else 0
        offsets = tuple((p or 0) - (first or 0) for p in pointers)
        data = ctypes.string_at(first, offsets[-1] + 8) if pointers else b""
        launch = Launch(function, (gx, gy, gz), (bx, by, bz), shared, stream, offsets, data, extra)
        captured = self._captured(stream, KernelNode(launch))
        if captured is not None:
            return (captured,)
        self._run(launch)
        return (SUCCESS,)

    @_entry
    def cuEventCreate(self, flags: int) -> tuple[FakeResult, FakeEvent | None]:
        self._record("cuEventCreate", flags)
        if flags != 0:  # CU_EVENT_DEFAULT: the only events that can be timed
            return FakeResult.CUDA_ERROR_INVALID_VALUE, None
        event = FakeEvent(self._handle())
        self.event_times[event] = None
        return SUCCESS, event

    @_entry
    def cuEventRecord(self, event: FakeEvent, stream: Any) -> tuple[FakeResult]:
        self._record("cuEventRecord", event, stream)
        if event not in self.event_times:
            return (FakeResult.CUDA_ERROR_INVALID_HANDLE,)
        if stream in self._captures:  # an event node: the backend never captures one
            return (FakeResult.CUDA_ERROR_NOT_SUPPORTED,)
        self.event_times[event] = self.clock_ns
        return (SUCCESS,)

    @_entry
    def cuEventSynchronize(self, event: FakeEvent) -> tuple[FakeResult]:
        self._record("cuEventSynchronize", event)
        if event not in self.event_times:
            return (FakeResult.CUDA_ERROR_INVALID_HANDLE,)
        return (SUCCESS,)

    @_entry
    def cuEventElapsedTime(
        self, start: FakeEvent, end: FakeEvent
    ) -> tuple[FakeResult, float | None]:
        self._record("cuEventElapsedTime", start, end)
        begin, finish = self.event_times.get(start), self.event_times.get(end)
        if begin is None or finish is None:
            return FakeResult.CUDA_ERROR_INVALID_HANDLE, None
        return SUCCESS, (finish - begin) / 1e6

    @_entry
    def cuEventDestroy(self, event: FakeEvent) -> tuple[FakeResult]:
        self._record("cuEventDestroy", event)
        if event not in self.event_times:
            return (FakeResult.CUDA_ERROR_INVALID_HANDLE,)
        del self.event_times[event]
        return (SUCCESS,)

    def _run(self, launch: Launch) -> None:
        self.launches.append(launch)
        self.clock_ns += self.kernel_ns(launch)
        if self.execute is not None:
            self.execute(launch)


class Interpreting:
    """A `FakeDriver.execute` hook that runs each launch in Triton's interpreter.

    The kernel is found by the sha256 of the cubin its module was loaded from
    (so a launch through the wrong module runs the wrong kernel), its arguments
    are decoded from the launch's parameter bytes by the family's ABI (a
    pointer as a u64 fake device address, resolved into the fake memory as a
    torch view of it), the two trailing scratch pointers must be NULL, and
    ``num_warps`` is the block's width over 32. Needs ``TRITON_INTERPRET=1``
    in the environment before triton is imported (a process of its own)."""

    def __init__(self, driver: FakeDriver, directory: Path, plan: Plan) -> None:
        from teeny_ir.backend import triton_settings
        from teeny_ir.backend.kernel_files import import_kernel

        if not triton_settings.interpreter_is_on():
            raise RuntimeError(f"Interpreting needs {triton_settings.INTERPRET}=1")
        self.driver = driver
        self.kernels: dict[str, tuple[KernelSpec, Any]] = {}
        """A cubin's sha256 -> its kernel spec and the imported Triton kernel."""
        for kernel in plan.kernels:
            function = import_kernel(Path(directory) / kernel.file, kernel.name)
            for compiled in kernel.compiled:
                image = (Path(directory) / compiled.cubin).read_bytes()
                self.kernels[hashlib.sha256(image).hexdigest()] = (kernel, function)
        self._regions: dict[int, Any] = {}

    def _tensor(self, address: int, dtype: str) -> Any:
        """The fake device memory from ``address`` to the end of its allocation,
        as a 1-D torch tensor of ``dtype`` (``*fp32`` or ``*i64``) sharing it."""
        import torch

        for start, data in self.driver.memory.items():
            if start <= address < start + len(data):
                break
        else:
            raise AssertionError(f"launch argument {address:#x} is no fake device address")
        region = self._regions.get(start)
        if region is None or region.numel() != len(data):
            region = torch.frombuffer(data, dtype=torch.uint8)
            self._regions[start] = region
        kind = torch.int64 if dtype == "*i64" else torch.float32
        size = kind.itemsize
        offset = address - start
        if offset % size:
            raise AssertionError(f"launch argument {address:#x} is not aligned for {dtype}")
        return region[offset : offset + (len(data) - offset) // size * size].view(kind)

    def __call__(self, launch: Launch) -> None:
        kernel, function, args = self.arguments(launch)
        function[launch.grid](*args, **kernel.constexprs, num_warps=launch.block[0] // 32)

    def arguments(self, launch: Launch) -> tuple[KernelSpec, Any, list[Any]]:
        """The launch's kernel spec, its imported Triton kernel and its ABI
        arguments decoded from the parameter bytes (pointers as tensors)."""
        from teeny_ir.kernels.families import FAMILIES

        sha256 = launch.function.module.sha256
        if sha256 not in self.kernels:
            raise AssertionError(f"launch of {launch.function.name}: its module is no plan cubin")
        kernel, function = self.kernels[sha256]
        family = FAMILIES[kernel.family]
        if len(launch.offsets) != len(family.args) + 2:
            raise AssertionError(f"{kernel.name}: {len(launch.offsets)} parameters")
        args: list[Any] = []
        for abi, offset in zip(family.args, launch.offsets, strict=False):
            if abi.dtype.startswith("*"):
                (address,) = struct.unpack_from("<Q", launch.data, offset)
                args.append(self._tensor(address, abi.dtype))
            elif abi.dtype == "i32":
                args.append(struct.unpack_from("<i", launch.data, offset)[0])
            else:
                args.append(struct.unpack_from("<f", launch.data, offset)[0])
        for offset in launch.offsets[len(family.args) :]:
            if struct.unpack_from("<Q", launch.data, offset)[0] != 0:
                raise AssertionError(f"{kernel.name}: a scratch pointer is not NULL")
        if launch.block[1:] != (1, 1) or launch.block[0] % 32:
            raise AssertionError(f"{kernel.name}: block {launch.block}")
        return kernel, function, args


def stand_in_cubins(directory: Path) -> None:
    """Give every kernel of a plan emitted without archs an sm_90 record per
    launch configuration, its cubin a small stand-in file (the fake driver loads
    anything; `Interpreting` needs real ones), so tests run the cuda backend on
    a plan without compiling it ahead of time."""
    path = Path(directory) / "plan.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    configs: dict[str, set[tuple[int, int]]] = {}
    for launch in data["launches"]:
        configs.setdefault(launch["kernel"], set()).add((launch["num_warps"], launch["num_stages"]))
    for kernel in data["kernels"]:
        kernel["compiled"] = []
        for warps, stages in sorted(configs[kernel["name"]]):
            image = f"stand-in {kernel['name']} {warps} {stages}".encode()
            cubin = f"kernels/{kernel['name']}.sm90.w{warps}s{stages}.cubin"
            (Path(directory) / cubin).write_bytes(image)
            kernel["compiled"].append(
                {"arch": 90, "name": kernel["name"], "num_warps": warps, "num_stages": stages}
                | {"shared": 0, "cubin": cubin, "cubin_sha256": hashlib.sha256(image).hexdigest()}
            )
    path.write_text(json.dumps(data), encoding="utf-8")


def _elf_size(image: int) -> int:
    """The size of the 64-bit ELF file at host address ``image``: the end of its
    headers' tables or of its last section, whichever is further."""
    header = ctypes.string_at(image, 64)
    (programs, sections) = struct.unpack_from("<QQ", header, 0x20)
    program_entry, program_count, section_entry, section_count = struct.unpack_from(
        "<HHHH", header, 0x36
    )
    end = max(
        64, programs + program_entry * program_count, sections + section_entry * section_count
    )
    table = ctypes.string_at(image + sections, section_entry * section_count)
    for index in range(section_count):
        (kind,) = struct.unpack_from("<I", table, index * section_entry + 4)
        offset, size = struct.unpack_from("<QQ", table, index * section_entry + 0x18)
        if kind != 8:  # SHT_NOBITS takes no room in the file
            end = max(end, int(offset) + int(size))
    return int(end)
