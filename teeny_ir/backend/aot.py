"""Ahead-of-time compilation of rendered kernel files with ``triton.compile``.

No GPU or driver is touched: Triton lowers the kernel for a target
architecture and its bundled ptxas assembles the cubin. The result is an
artifact (PTX, cubin, metadata and a content hash) that the emitter records
in the launch plan.

Triton is imported only inside `compile_variant`, so ``import teeny_ir`` never
pays for it. The Triton settings for compiling are pinned before that import,
unless the user set them (`teeny_ir.backend.triton_settings` says which and
why).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from teeny_ir.backend import triton_settings
from teeny_ir.backend.kernel_files import KernelImportError, import_kernel
from teeny_ir.kernels import validator
from teeny_ir.kernels.contract import KernelFamily

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
    constexprs: Mapping[str, int | str],
    arch: int,
    num_warps: int,
    num_stages: int,
) -> CompiledVariant:
    """Compile ``kernel_name`` from ``source_file`` (a rendered family template)
    for ``sm_<arch>``.

    The signature comes from the family's ABI: each non-constexpr argument gets
    its Triton dtype and the constexprs are bound to ``constexprs``, which the
    contract validator checks (with the launch configuration) first. Raises
    `AotError` for a contract violation, a
    file that does not define the kernel, or ``TRITON_INTERPRET`` being on.
    """
    try:
        validator.check_constexprs(family, constexprs)
        validator.check_launch_config(num_warps, num_stages)
    except validator.ContractError as err:
        raise AotError(str(err)) from None
    triton_settings.pin_compile_environment()

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.runtime.jit import JITFunction

    try:
        kernel = import_kernel(source_file, kernel_name)
    except KernelImportError as err:
        raise AotError(str(err)) from None
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
