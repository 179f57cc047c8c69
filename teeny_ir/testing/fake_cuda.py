"""A fake ``cuda.bindings.driver`` for the cuda backend's tests and
``bench/gpu_check.py --dry-run``: no GPU, no cuda-python.

`FakeDriver` has the calls `teeny_ir.runtime.backends.cuda` makes, each
returning ``(CUresult, value...)`` as cuda-python does, and records every call
in `FakeDriver.calls` (name, arguments). Device memory is host memory: ``cuMemAlloc``
hands out fake addresses (256-byte aligned, far from any host address) backed by
bytearrays, ``cuMemcpyHtoD`` / ``cuMemcpyDtoH`` and the memsets copy bytes.
``cuModuleLoadData`` reads the image at the host address it gets (an ELF cubin's
size from its header) and records its sha256; ``cuLaunchKernel`` reads the
``kernelParams`` array of pointers (``arity(function name)`` of them) and
records the launch with the parameter bytes they point at (`Launch`). Kernels
compute nothing, unless the driver has an ``execute`` hook: `Interpreting` is
one that runs each launched kernel in Triton's interpreter on the fake device
memory, the arguments decoded from the parameter bytes alone, as a GPU would
read them (a test of every address and value the backend packs, numerically).
Only the standard library is imported (`Interpreting` imports torch and the
plan's kernel files when it is made, in a process with the interpreter on).
"""

from __future__ import annotations

import ctypes
import hashlib
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from teeny_ir.backend.plan import KernelSpec, Plan

SUCCESS = 0
BASE_ADDRESS = 0x7F00_0000_0000
"""The first fake device address."""


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


@dataclass
class FakeDriver:
    """The fake driver module (see the module docstring)."""

    capability: tuple[int, int] = (9, 0)
    arity: Callable[[str], int] | None = None
    """Parameters of a function by name: needed to read ``kernelParams``."""
    devices: int = 1
    execute: Callable[[Launch], None] | None = None
    """Called with each launch after it is recorded (`Interpreting` runs it)."""
    calls: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)
    memory: dict[int, bytearray] = field(default_factory=dict)
    modules: list[FakeModule] = field(default_factory=list)
    _next: int = BASE_ADDRESS

    CUresult = SimpleNamespace(CUDA_SUCCESS=SUCCESS)
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

    def cuInit(self, flags: int) -> tuple[int]:
        self._record("cuInit", flags)
        return (SUCCESS,)

    def cuDeviceGetCount(self) -> tuple[int, int]:
        self._record("cuDeviceGetCount")
        return SUCCESS, self.devices

    def cuDeviceGet(self, ordinal: int) -> tuple[int, int]:
        self._record("cuDeviceGet", ordinal)
        return SUCCESS, ordinal

    def cuDeviceGetAttribute(self, attribute: str, device: int) -> tuple[int, int]:
        self._record("cuDeviceGetAttribute", attribute, device)
        values = {"major": self.capability[0], "minor": self.capability[1]}
        return SUCCESS, values.get(attribute, self.shared_optin)

    def cuDevicePrimaryCtxRetain(self, device: int) -> tuple[int, str]:
        self._record("cuDevicePrimaryCtxRetain", device)
        return SUCCESS, f"context{device}"

    def cuDevicePrimaryCtxRelease(self, device: int) -> tuple[int]:
        self._record("cuDevicePrimaryCtxRelease", device)
        return (SUCCESS,)

    def cuCtxSetCurrent(self, context: str) -> tuple[int]:
        self._record("cuCtxSetCurrent", context)
        return (SUCCESS,)

    def cuStreamCreate(self, flags: int) -> tuple[int, str]:
        self._record("cuStreamCreate", flags)
        return SUCCESS, "stream0"

    def cuStreamDestroy(self, stream: str) -> tuple[int]:
        self._record("cuStreamDestroy", stream)
        return (SUCCESS,)

    def cuStreamSynchronize(self, stream: str) -> tuple[int]:
        self._record("cuStreamSynchronize", stream)
        return (SUCCESS,)

    def cuModuleLoadData(self, image: int) -> tuple[int, FakeModule]:
        self._record("cuModuleLoadData", image)
        sha256 = None
        if ctypes.string_at(image, 4) == b"\x7fELF":
            sha256 = hashlib.sha256(ctypes.string_at(image, _elf_size(image))).hexdigest()
        module = FakeModule(len(self.modules) + 1, sha256)
        self.modules.append(module)
        return SUCCESS, module

    def cuModuleUnload(self, module: FakeModule) -> tuple[int]:
        self._record("cuModuleUnload", module)
        return (SUCCESS,)

    def cuModuleGetFunction(self, module: FakeModule, name: bytes) -> tuple[int, FakeFunction]:
        self._record("cuModuleGetFunction", module, name)
        return SUCCESS, FakeFunction(module, name.decode("ascii"))

    def cuFuncSetAttribute(self, function: FakeFunction, attribute: str, value: int) -> tuple[int]:
        self._record("cuFuncSetAttribute", function, attribute, value)
        return (SUCCESS,)

    def cuMemAlloc(self, nbytes: int) -> tuple[int, int]:
        self._record("cuMemAlloc", nbytes)
        address = self._next
        self.memory[address] = bytearray(nbytes)
        self._next += (nbytes + 255) // 256 * 256 + 256
        return SUCCESS, address

    def cuMemFree(self, address: int) -> tuple[int]:
        self._record("cuMemFree", address)
        del self.memory[address]
        return (SUCCESS,)

    def cuMemcpyHtoD(self, device: int, host: int, nbytes: int) -> tuple[int]:
        self._record("cuMemcpyHtoD", device, host, nbytes)
        data, offset = self._region(device, nbytes)
        data[offset : offset + nbytes] = ctypes.string_at(host, nbytes)
        return (SUCCESS,)

    def cuMemcpyDtoH(self, host: int, device: int, nbytes: int) -> tuple[int]:
        self._record("cuMemcpyDtoH", host, device, nbytes)
        ctypes.memmove(host, self.read(device, nbytes), nbytes)
        return (SUCCESS,)

    def cuMemcpyDtoDAsync(self, dst: int, src: int, nbytes: int, stream: str) -> tuple[int]:
        self._record("cuMemcpyDtoDAsync", dst, src, nbytes, stream)
        data, offset = self._region(dst, nbytes)
        data[offset : offset + nbytes] = self.read(src, nbytes)
        return (SUCCESS,)

    def cuMemsetD32Async(self, device: int, value: int, count: int, stream: str) -> tuple[int]:
        self._record("cuMemsetD32Async", device, value, count, stream)
        data, offset = self._region(device, 4 * count)
        data[offset : offset + 4 * count] = struct.pack("<I", value) * count
        return (SUCCESS,)

    def cuMemsetD8Async(self, device: int, value: int, count: int, stream: str) -> tuple[int]:
        self._record("cuMemsetD8Async", device, value, count, stream)
        data, offset = self._region(device, count)
        data[offset : offset + count] = bytes([value]) * count
        return (SUCCESS,)

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
    ) -> tuple[int]:
        self._record("cuLaunchKernel", function, gx, gy, gz, bx, by, bz, shared, stream, params)
        count = self.arity(function.name) if self.arity is not None else 0
        pointers = list((ctypes.c_void_p * count).from_address(params)) if count else []
        first = pointers[0] if pointers else 0
        offsets = tuple((p or 0) - (first or 0) for p in pointers)
        data = ctypes.string_at(first, offsets[-1] + 8) if pointers else b""
        launch = Launch(function, (gx, gy, gz), (bx, by, bz), shared, stream, offsets, data, extra)
        self.launches.append(launch)
        if self.execute is not None:
            self.execute(launch)
        return (SUCCESS,)


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
