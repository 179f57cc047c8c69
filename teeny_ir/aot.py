"""Ahead-of-time compilation of rendered kernel files with ``triton.compile``.

No GPU or driver is touched: Triton lowers the kernel for a target
architecture and its bundled ptxas assembles the cubin. The result is an
artifact (PTX, cubin, metadata and a content hash) that the emitter records
in the launch plan.

Triton is imported only inside `compile_variant`, so ``import teeny_ir`` never
pays for it. Two Triton settings are pinned before that import, unless the
user set them: ``TRITON_DEFAULT_FP_FUSION=1`` (Triton 3.9 warns when it is
unset and flips its default in 3.10, so the choice is made here, explicitly)
and ``TRITON_DISABLE_LINE_INFO=1`` (otherwise the PTX and cubin embed the
kernel file's path, and the same kernel emitted into two directories would
compile to different bytes).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from teeny_ir.kernel_families import KernelFamily

SHARED_MEMORY_LIMITS: dict[int, int] = {
    80: 166912,
    86: 101376,
    87: 166912,
    89: 101376,
    90: 232448,
    100: 232448,
    120: 101376,
}
"""Opt-in shared memory per block (bytes) by compute capability; Triton itself
does not check it when compiling ahead of time."""

PINNED_ENVIRONMENT: dict[str, str] = {
    "TRITON_DEFAULT_FP_FUSION": "1",
    "TRITON_DISABLE_LINE_INFO": "1",
}
"""Triton settings applied with ``setdefault`` before triton is imported."""


class AotError(Exception):
    """A kernel variant that cannot be compiled or would not launch on its target."""


@dataclass(frozen=True)
class CompiledVariant:
    """One kernel compiled for one architecture and launch configuration."""

    arch: int
    name: str
    num_warps: int
    num_stages: int
    shared: int
    """Static shared memory per block in bytes, as Triton's metadata reports it."""
    cubin: bytes
    ptx: str
    cubin_sha256: str


def compile_variant(
    source_file: Path,
    kernel_name: str,
    family: KernelFamily,
    constexprs: Mapping[str, int],
    arch: int,
    num_warps: int,
    num_stages: int,
) -> CompiledVariant:
    """Compile ``kernel_name`` from ``source_file`` (a rendered family template)
    for ``sm_<arch>``.

    The signature comes from the family's ABI: each non-constexpr argument gets
    its Triton dtype and the constexprs are bound to ``constexprs``, which must
    name exactly the family's constexprs. Raises `AotError` for a mismatch, a
    file that does not define the kernel, or ``TRITON_INTERPRET`` being on.
    """
    expected = [c.name for c in family.constexprs]
    if sorted(constexprs) != sorted(expected):
        raise AotError(
            f"family '{family.name}' takes constexprs {expected}, got {sorted(constexprs)}"
        )
    for name, value in PINNED_ENVIRONMENT.items():
        os.environ.setdefault(name, value)

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.runtime.jit import JITFunction

    kernel = _load_kernel(source_file, kernel_name)
    if not isinstance(kernel, JITFunction):
        raise AotError(
            f"{source_file}: '{kernel_name}' is not a @triton.jit function "
            "(is TRITON_INTERPRET set in this process?)"
        )
    signature = {arg.name: arg.dtype for arg in family.args}
    signature |= {c.name: "constexpr" for c in family.constexprs}
    if list(kernel.arg_names) != list(signature):
        raise AotError(
            f"{source_file}: '{kernel_name}' takes {list(kernel.arg_names)}, "
            f"family '{family.name}' expects {list(signature)}"
        )
    source = ASTSource(fn=kernel, signature=signature, constexprs=dict(constexprs))
    compiled = triton.compile(
        source,
        target=GPUTarget("cuda", arch, 32),
        options={"num_warps": num_warps, "num_stages": num_stages},
    )
    cubin: bytes = compiled.asm["cubin"]
    metadata = compiled.metadata
    return CompiledVariant(
        arch=arch,
        name=str(metadata.name),
        num_warps=int(metadata.num_warps),
        num_stages=int(metadata.num_stages),
        shared=int(metadata.shared),
        cubin=cubin,
        ptx=str(compiled.asm["ptx"]),
        cubin_sha256=hashlib.sha256(cubin).hexdigest(),
    )


def check_shared(variant: CompiledVariant) -> None:
    """Raise `AotError` if the variant needs more shared memory than its
    architecture offers per block (or the architecture's limit is unknown)."""
    limit = SHARED_MEMORY_LIMITS.get(variant.arch)
    if limit is None:
        known = ", ".join(f"sm_{arch}" for arch in sorted(SHARED_MEMORY_LIMITS))
        raise AotError(
            f"kernel '{variant.name}': no shared memory limit known for sm_{variant.arch} "
            f"(known: {known})"
        )
    if variant.shared > limit:
        raise AotError(
            f"kernel '{variant.name}' needs {variant.shared} bytes of shared memory per block "
            f"with num_stages={variant.num_stages}, but sm_{variant.arch} allows {limit}; "
            "use smaller tiles or fewer stages"
        )


def _load_kernel(source_file: Path, kernel_name: str) -> Callable[..., Any]:
    """Import ``source_file`` by path and return its ``kernel_name`` attribute.

    Triton reads a jit function's source back from its file, so the kernel must
    come from a real file rather than ``exec`` of a string.
    """
    module_name = f"teeny_ir_aot_{hashlib.sha256(str(source_file).encode()).hexdigest()[:16]}"
    spec = importlib.util.spec_from_file_location(module_name, source_file)
    if spec is None or spec.loader is None:
        raise AotError(f"{source_file}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = getattr(module, kernel_name, None)
    if kernel is None:
        raise AotError(f"{source_file}: defines no '{kernel_name}'")
    result: Callable[..., Any] = kernel
    return result
