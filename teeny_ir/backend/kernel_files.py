"""Importing a rendered kernel file by its path - the one place teeny_ir does it.

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


class KernelImportError(ImportError):
    """A kernel file that cannot be imported or does not define the kernel."""


class _SourceOnlyLoader(SourceFileLoader):
    """A loader that compiles the source and never touches ``__pycache__``."""

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
