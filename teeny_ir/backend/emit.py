"""Writing a plan directory: kernel files, AOT cubins, ``plan.json``.

`emit` writes what `teeny_ir.backend.collect` read from ``@forward``:
``DIR/kernels/<family>_<ordinal>.py`` per kernel variant (the family's Triton
source rendered by `teeny_ir.kernels.render`: slots filled from the pointwise
table, shared helpers pasted in, the kernel renamed) and ``DIR/plan.json``
(`teeny_ir.backend.plan`). Every file name is generated (``conv1x1_gemm_0``).
With ``archs``, every variant is compiled ahead of time for each architecture
and launch configuration (`teeny_ir.backend.aot`, through the compile cache
`teeny_ir.backend.cache`) and its cubins written next to its source.

The directory is built as a temporary sibling and renamed into place, so a
failed emission leaves no half-written plan; it is checked with the runtime's
own loader (`load_plan`) first, so a plan the runtime would refuse is never
written. An existing ``DIR`` is replaced only if it is a previous emission;
any other non-empty directory is refused. An out-dir that cannot be made or
written (its parent is a file, permission denied, a name too long, a full
disk) is one located error, as is a variant that does not render or compile.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation

from teeny_ir.backend.collect import Collected, Variant, draft_plan, error_at
from teeny_ir.backend.kernel_files import PLAN_JSON_BYTES, read_regular
from teeny_ir.backend.plan import (
    FORMAT,
    CompiledSpec,
    KernelSpec,
    Plan,
    load_plan,
    sha256_of,
    write_plan,
)
from teeny_ir.core.files import default_dir_mode, stale_siblings, sweep_stale, temp_prefix
from teeny_ir.kernels.render import RenderError, render

if TYPE_CHECKING:
    from teeny_ir.backend import aot

_EMITTED_FILE = re.compile(r"[a-z0-9_]+_[0-9]+\.(py|sm[0-9]+(\.w[0-9]+s[0-9]+)?\.cubin)")


def emit(
    target: str | os.PathLike[str],
    forward: FuncOp,
    collected: Collected,
    archs: tuple[int, ...] = (),
    *,
    jobs: int = 0,
    cache: bool = True,
    draft: Plan | None = None,
) -> None:
    """Write the plan directory ``target`` for ``forward`` from ``collected``
    (which `teeny_ir.backend.collect.check_schema` has passed; ``draft`` is the
    draft plan it returned, made afresh when not given), with cubins
    for each of ``archs`` (known to `teeny_ir.backend.aot.SHARED_MEMORY_LIMITS`)
    compiled in ``jobs`` worker processes (0: one per CPU), through the compile
    cache unless ``cache`` is False. Raises `DiagnosticError`, located at
    ``forward`` or at the launch a failing variant comes from."""
    path = Path(target).absolute()
    try:
        _emit(path, forward, collected, archs, jobs, cache, draft)
    except OSError as err:
        raise error_at(_os_message(path, err), forward) from None


def _emit(
    target: Path,
    forward: FuncOp,
    collected: Collected,
    archs: tuple[int, ...],
    jobs: int,
    use_cache: bool,
    draft: Plan | None,
) -> None:
    """Write the emission into a temporary sibling of ``target`` and rename it
    into place (raises OSError where the file system refuses)."""
    _check_target(target, forward)
    target.parent.mkdir(parents=True, exist_ok=True)
    _recover(target)
    temp = Path(tempfile.mkdtemp(prefix=temp_prefix(target.name), suffix=".emit", dir=target.parent))
    try:
        kernels = _write_kernels(temp, collected, archs, jobs, use_cache)
        if draft is None:
            draft = draft_plan(forward, collected)
        plan = dataclasses.replace(draft, kernels=tuple(kernels))
        write_plan(temp, plan)
        load_plan(temp)  # the runtime's checks: never write a plan it would refuse
        temp.chmod(default_dir_mode())
        _replace(temp, target)
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def _write_kernels(
    directory: Path, plan: Collected, archs: tuple[int, ...], jobs: int, use_cache: bool
) -> list[KernelSpec]:
    """Render (and with ``archs`` compile) every variant into ``directory/kernels``."""
    kernels_dir = directory / "kernels"
    kernels_dir.mkdir()
    texts: dict[str, str] = {}
    for variant in plan.variants.values():
        try:
            texts[variant.name] = render(
                variant.family, variant.name, variant.constexprs, plan.precision
            )
        except RenderError as err:
            raise error_at(f"kernel variant '{variant.name}': {err}", variant.first_use) from None
        (kernels_dir / f"{variant.name}.py").write_text(texts[variant.name], encoding="utf-8")
    compiled = _compile_variants(kernels_dir, plan, archs, texts, jobs, use_cache)
    specs: list[KernelSpec] = []
    for variant in plan.variants.values():
        source = kernels_dir / f"{variant.name}.py"
        specs.append(
            KernelSpec(
                variant.name,
                variant.family.name,
                f"kernels/{source.name}",
                variant.constexprs,
                sha256_of(source),
                tuple(
                    _write_cubin(
                        source, variant, arch, config, compiled[variant.name, arch, config]
                    )
                    for arch in archs
                    for config in variant.configs
                ),
                plan.precision,
            )
        )
    shutil.rmtree(kernels_dir / "__pycache__", ignore_errors=True)  # left by AOT's import
    return specs


def _compile_variants(
    kernels_dir: Path,
    plan: Collected,
    archs: tuple[int, ...],
    texts: dict[str, str],
    jobs: int,
    use_cache: bool,
) -> dict[tuple[str, int, tuple[int, int]], aot.CompiledVariant]:
    """Every (variant, arch, launch config) compiled: from the compile cache
    where it holds them, the rest in parallel processes (`aot.compile_all`),
    stored in the cache; each checked against its arch's shared memory.
    ``jobs`` worker processes (0: one per CPU); ``use_cache`` False reads and
    writes no cache entry."""
    from teeny_ir.backend import aot, cache

    root = cache.cache_dir() if use_cache and cache.enabled() and archs else None
    found: dict[tuple[str, int, tuple[int, int]], aot.CompiledVariant] = {}
    missing: list[tuple[Variant, int, tuple[int, int], str]] = []
    for variant in plan.variants.values():
        for arch in archs:
            for config in variant.configs:
                key = ""
                if root is not None:
                    key = cache.variant_key(
                        texts[variant.name], variant.name, variant.family, variant.constexprs,
                        arch, *config, precision=plan.precision,
                    )  # fmt: skip
                    hit = cache.lookup(key, root)
                    if hit is not None and cache.is_for(hit, variant.name, arch, *config):
                        found[variant.name, arch, config] = hit
                        continue
                missing.append((variant, arch, config, key))
    work = [
        aot.Job(kernels_dir / f"{v.name}.py", v.name, v.family, v.constexprs, arch, *config)
        for v, arch, config, _ in missing
    ]
    try:  # nothing to compile (every variant a hit): no worker pool, not even its import
        results = aot.compile_all(work, jobs) if work else []
    except aot.JobError as err:
        variant, arch = missing[err.index][:2]
        message = f"kernel variant '{variant.name}' for sm_{arch}: {err}"
        raise error_at(message, variant.first_use) from None
    for (variant, arch, config, key), result in zip(missing, results, strict=True):
        found[variant.name, arch, config] = result
        if root is not None and cache.is_for(result, variant.name, arch, *config):
            cache.store(key, result, root)
    for variant in plan.variants.values():
        for arch in archs:
            for config in variant.configs:
                try:
                    aot.check_shared(found[variant.name, arch, config])
                except aot.AotError as err:
                    message = f"kernel variant '{variant.name}' for sm_{arch}: {err}"
                    raise error_at(message, variant.first_use) from None
    return found


def _write_cubin(
    source: Path,
    variant: Variant,
    arch: int,
    config: tuple[int, int],
    result: aot.CompiledVariant,
) -> CompiledSpec:
    num_warps, num_stages = config
    suffix = "" if len(variant.configs) == 1 else f".w{num_warps}s{num_stages}"
    cubin = source.with_name(f"{variant.name}.sm{arch}{suffix}.cubin")
    cubin.write_bytes(result.cubin)
    return CompiledSpec(
        arch,
        result.name,
        result.num_warps,
        result.num_stages,
        result.shared,
        f"kernels/{cubin.name}",
        result.cubin_sha256,
        result.global_scratch_size,
        result.profile_scratch_size,
    )


def _is_previous_emission(directory: Path) -> bool:
    """Whether ``directory`` holds only what an emission writes (so replacing it
    loses nothing of the user's)."""
    entries = {p.name for p in directory.iterdir()}
    if not entries <= {"plan.json", "kernels"} or "plan.json" not in entries:
        return False
    kernels = directory / "kernels"
    if kernels.exists() and (kernels.is_symlink() or not kernels.is_dir()):
        return False
    for path in kernels.iterdir() if kernels.exists() else ():
        if path.name == "__pycache__" and _only_bytecode(path):
            continue  # left by importing a kernel file
        if path.is_symlink() or not path.is_file() or not _EMITTED_FILE.fullmatch(path.name):
            return False
    try:
        data = json.loads(read_regular(directory / "plan.json", PLAN_JSON_BYTES).decode("utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("format") == FORMAT


def _only_bytecode(directory: Path) -> bool:
    return not directory.is_symlink() and all(
        p.is_file() and not p.is_symlink() and p.suffix == ".pyc" for p in directory.iterdir()
    )


def _check_target(target: Path, where: Operation) -> None:
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise error_at(f"out-dir '{target}' exists and is not a directory", where)
    if target.is_dir() and any(target.iterdir()) and not _is_previous_emission(target):
        raise error_at(
            f"refusing to replace out-dir '{target}': it is not empty and does not hold "
            "only a previous emission (plan.json and kernels/)",
            where,
        )


def _os_message(target: Path, err: OSError) -> str:
    """One sentence for an out-dir the file system refuses (parent a file,
    permission denied, a name too long, a full disk...)."""
    nearest = next((p for p in target.parents if _lexists(p)), None)
    if nearest is not None and not _is_dir(nearest):
        return f"cannot create out-dir '{target}': '{nearest}' is not a directory"
    reason = err.strerror or str(err)
    filename = f" ('{err.filename}')" if err.filename and str(err.filename) != str(target) else ""
    return f"cannot write out-dir '{target}': {reason}{filename}"


def _lexists(path: Path) -> bool:
    try:
        return os.path.lexists(path)
    except (OSError, ValueError):
        return False


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


def _recover(target: Path) -> None:
    """Clean up after an emission into ``target`` that was killed: a previous
    emission it had moved aside (``.old/previous``) goes back in place when
    ``target`` is missing (the kill fell between `_replace`'s two renames),
    then the dead process's temporary folders are removed."""
    if not target.exists():
        for aside in stale_siblings(target.parent, target.name, (".old",)):
            previous = Path(aside) / "previous"
            if previous.is_dir() and not previous.is_symlink():
                with contextlib.suppress(OSError):
                    os.replace(previous, target)
                    break
    sweep_stale(target.parent, target.name, (".emit", ".old"))


def _replace(temp: Path, target: Path) -> None:
    """Rename ``temp`` to ``target``, moving a previous emission aside first."""
    if not target.exists():
        os.replace(temp, target)
        return
    aside = Path(tempfile.mkdtemp(prefix=temp_prefix(target.name), suffix=".old", dir=target.parent))
    try:
        os.replace(target, aside / "previous")
        try:
            os.replace(temp, target)
        except BaseException:
            os.replace(aside / "previous", target)
            raise
    finally:
        shutil.rmtree(aside, ignore_errors=True)
