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
compute nothing. Only the standard library is imported.
"""

from __future__ import annotations

import ctypes
import hashlib
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

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
    calls: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)
    memory: dict[int, bytearray] = field(default_factory=dict)
    modules: list[FakeModule] = field(default_factory=list)
    _next: int = BASE_ADDRESS

    CUresult = SimpleNamespace(CUDA_SUCCESS=SUCCESS)
    CUdevice_attribute = SimpleNamespace(
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR="major",
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR="minor",
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
        return SUCCESS, self.capability[0 if attribute == "major" else 1]

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
        self.launches.append(
            Launch(function, (gx, gy, gz), (bx, by, bz), shared, stream, offsets, data, extra)
        )
        return (SUCCESS,)


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
