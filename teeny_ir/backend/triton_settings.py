"""Every ``TRITON_*`` environment setting teeny_ir makes, in one place (and the
allocator settings of the interpreter's worker process).

Triton reads its settings from the environment, most of them once, when
``triton`` is imported, so each must be in place before that import - in this
process (ahead-of-time compilation, the kernel test harness) or in the
environment of a process started for it (the interpreter worker).

Compiling (`teeny_ir.backend.aot`), unless the user set them:

- ``TRITON_DEFAULT_FP_FUSION=1``: Triton 3.9 warns when it is unset and flips
  its default in 3.10, so the choice is made here, explicitly;
- ``TRITON_DISABLE_LINE_INFO=1``: otherwise the PTX and cubin embed the kernel
  file's path, and the same kernel emitted into two directories would compile
  to different bytes.

Interpreting (the runtime's interpreter worker, the kernel test harness):
``TRITON_INTERPRET=1`` always (the point of the process), and the same
``TRITON_DEFAULT_FP_FUSION`` default, so the interpreter sees the setting the
compiled kernels were built with. A worker process started for interpreting
also gets glibc malloc settings (`INTERPRETER_MALLOC`), unless the user set
them: the interpreter makes numpy temporaries of up to a few MiB for every op,
and glibc's defaults hand each one to ``mmap`` and back, so that about half of
a training step's time went to page faults; with a high mmap threshold and a
high trim threshold the freed blocks are reused (measured on LeNet's training
step at batch 32: 3.8 s to 3.2 s). They take effect only at a process's start,
so they are for processes started with `interpreter_environment`.

Standard library only.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, MutableMapping

INTERPRET = "TRITON_INTERPRET"
"""The setting that makes ``@triton.jit`` run kernels in Python on CPU tensors."""

COMPILE_PINS: dict[str, str] = {
    "TRITON_DEFAULT_FP_FUSION": "1",
    "TRITON_DISABLE_LINE_INFO": "1",
}
"""Defaults for compiling: applied only where the user has not set them."""

INTERPRETER_MALLOC: dict[str, str] = {
    "MALLOC_MMAP_THRESHOLD_": str(32 * 2**20),
    "MALLOC_TRIM_THRESHOLD_": str(2**30),
    "MALLOC_TOP_PAD_": str(64 * 2**20),
}
"""glibc malloc settings of an interpreter worker: blocks up to 32 MiB (glibc's
largest threshold) come from the heap, not ``mmap``; up to 1 GiB of freed heap
is kept for reuse rather than returned; the heap grows 64 MiB at a time."""

INTERPRETER_DEFAULTS: dict[str, str] = {"TRITON_DEFAULT_FP_FUSION": "1", **INTERPRETER_MALLOC}
"""Defaults for interpreting, beside ``TRITON_INTERPRET=1`` (which is forced)."""


NOT_CODEGEN: frozenset[str] = frozenset(
    {
        "TRITON_CACHE_DIR",
        "TRITON_HOME",
        "TRITON_DUMP_DIR",
        "TRITON_OVERRIDE_DIR",
        "TRITON_ALWAYS_COMPILE",
        "TRITON_INTERPRET",
        "TRITON_PRINT_AUTOTUNING",
        "TRITON_CACHE_MANAGER",
        "TRITON_REMOTE_CACHE_BACKEND",
    }
)
"""``TRITON_*`` settings that do not change the compiled bytes (where caches
live, forcing a recompile); every other one set is part of the key, so an
unknown setting costs a miss rather than risking a stale hit."""


def compile_environment(base_env: Mapping[str, str]) -> dict[str, str]:
    """``base_env`` with the compile-time pins added where it does not set them."""
    return COMPILE_PINS | dict(base_env)


def interpreter_environment(base_env: Mapping[str, str]) -> dict[str, str]:
    """``base_env`` for a process that runs kernels in Triton's interpreter:
    ``TRITON_INTERPRET=1`` and the interpreter defaults where unset."""
    return INTERPRETER_DEFAULTS | dict(base_env) | {INTERPRET: "1"}


def pin_compile_environment(environ: MutableMapping[str, str] | None = None) -> None:
    """Apply `compile_environment` to this process (``os.environ`` by default);
    call it before ``import triton``."""
    target = os.environ if environ is None else environ
    for name, value in COMPILE_PINS.items():
        target.setdefault(name, value)


def use_interpreter_in_this_process() -> None:
    """Switch this process to Triton's interpreter; raises `RuntimeError` if
    triton is already imported, because the switch would then silently not
    take effect."""
    if "triton" in sys.modules:
        raise RuntimeError(f"triton is already imported, too late to set {INTERPRET}=1")
    os.environ.update(interpreter_environment(os.environ))


def interpreter_is_on(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``environ`` (``os.environ`` by default) selects Triton's interpreter."""
    return (os.environ if environ is None else environ).get(INTERPRET) == "1"
