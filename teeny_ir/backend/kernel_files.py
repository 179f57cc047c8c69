"""Reading the files of a plan directory, and importing a rendered kernel file
by its path - the one place teeny_ir does either.

`read_regular` (`teeny_ir.core.files.read_regular`, here with the limits for
the files of a plan directory) is how every file of a plan directory is read
(``plan.json``, ``kernels/*.py``, the cubins): a plan directory is user input,
and a FIFO, a device or a symlink to ``/dev/zero`` in it must be one error
naming the file, never a hang or an exhausted memory. The file is opened
without blocking (``O_NONBLOCK``: opening a FIFO waits for no writer), the
opened descriptor is checked to be a regular file (``fstat``, so nothing can be
swapped in between the check and the read) and at most a limit of bytes is
read; a symlink loop is an error too.

``@triton.jit`` reads a kernel's source back from its file (``inspect``), so a
kernel must come from a real file rather than ``exec`` of a string. The file
is compiled from its source every time: no bytecode is read (a kernel file
rewritten within the same second and at the same size would otherwise load
stale code) and none is written (no ``__pycache__`` inside a plan directory).

Standard library only: the caller has imported or configured triton first.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from collections.abc import Callable
from importlib.machinery import SourceFileLoader
from types import CodeType
from typing import Any

from teeny_ir.core.files import read_regular

PLAN_JSON_BYTES = 256 * 2**20
"""The most of ``plan.json`` that is read (a YOLOv8n training plan is 1.4 MB)."""
KERNEL_SOURCE_BYTES = 16 * 2**20
"""The most of a kernel source file that is read (a rendered kernel is ~10 KB)."""
CUBIN_BYTES = 256 * 2**20
"""The most of a cubin that is read (a YOLOv8n cubin is ~200 KB)."""

__all__ = [
    "CUBIN_BYTES",
    "KERNEL_SOURCE_BYTES",
    "PLAN_JSON_BYTES",
    "KernelImportError",
    "import_kernel",
    "read_regular",
]


class KernelImportError(ImportError):
    """A kernel file that cannot be imported or does not define the kernel."""


class _SourceOnlyLoader(SourceFileLoader):
    """A loader that compiles the source and never touches ``__pycache__``, and
    reads the file as `read_regular` does (never blocking on a FIFO)."""

    def get_data(self, path: str) -> bytes:
        return read_regular(path, KERNEL_SOURCE_BYTES)

    def get_code(self, fullname: str) -> CodeType:
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)


def import_kernel(path: str | os.PathLike[str], name: str) -> Callable[..., Any]:
    """Execute the kernel file at ``path`` as a fresh module and return its
    attribute ``name``; raises `KernelImportError` (naming the file) when the
    file cannot be read or defines no ``name``. Errors raised by the file's own
    code propagate unchanged.

    The module is registered in ``sys.modules`` under a name derived from the
    resolved path, as a normal import would register it, so code that looks a
    function's module up by name finds it; importing the same file again
    replaces it.
    """
    filename = os.path.realpath(os.fspath(path))
    digest = hashlib.sha256(filename.encode()).hexdigest()[:16]
    module_name = f"_teeny_ir_kernel_{digest}"
    loader = _SourceOnlyLoader(module_name, filename)
    spec = importlib.util.spec_from_file_location(module_name, filename, loader=loader)
    if spec is None:
        raise KernelImportError(f"kernel file '{os.fspath(path)}' cannot be imported")
    try:
        code = loader.get_code(module_name)
    except OSError as err:
        raise KernelImportError(
            f"kernel file '{os.fspath(path)}' cannot be read: {err.strerror or err}"
        ) from None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        exec(code, module.__dict__)
    except BaseException:
        del sys.modules[module_name]  # no half-initialised module left behind
        raise
    kernel = getattr(module, name, None)
    if kernel is None:
        raise KernelImportError(f"kernel file '{os.fspath(path)}' defines no '{name}'")
    result: Callable[..., Any] = kernel
    return result
