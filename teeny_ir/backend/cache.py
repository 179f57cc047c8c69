"""A content-addressed store of compiled kernel variants (the compile cache).

`teeny_ir.backend.aot` turns a rendered kernel file into a cubin in about a
second per variant, most of it Triton's import and its lowering. An emission
asks this store first: the key (`variant_key`) is the sha256 of a canonical
JSON of everything that decides the compiled bytes - the rendered kernel
source, the kernel name, the family's signature, the constexprs, the target
(arch, warp size), ``num_warps`` and ``num_stages``, Triton's installed version
(read from the package metadata: triton is not imported), the ``TRITON_*``
settings in effect with the compile pins of `teeny_ir.backend.triton_settings`
applied where unset, and `FORMAT_VERSION`. Triton keeps its own cache too,
keyed on its own compiler's source hash besides; this one sits in front of
it, so a warm emission never imports triton at all. A Triton rebuilt in place
under the same version number is the one change this key cannot see: clear
the cache (or bump `FORMAT_VERSION`) after patching Triton. The kernel file's
path is not part of the key: with line info off (the compile pin) the bytes do
not depend on it; a user who turns line info back on gets a cubin that names
the (temporary) directory of the first emission that compiled it.

An entry (``<dir>/<key[:2]>/<key>.entry``) holds the cubin, the PTX and the
metadata `aot.compile_variant` returns (kernel name, warps, stages, shared
memory). Its first line carries a sha256 over the rest, checked on every read:
a truncated or corrupt entry is a miss (and the next store rewrites it),
never an error. Entries are written to a temporary file in the entry's folder
and renamed into place (``os.replace``), so concurrent writers of the same
key each leave a whole entry and a reader never sees half of one. A cache
that cannot be read or written is no cache: lookups miss, stores are skipped.

An entry is read as `teeny_ir.core.files.read_regular` reads (never blocking,
at most `ENTRY_BYTES`): a FIFO, a device, a directory, a symlink loop or an
oversized file where an entry should be is a miss like a corrupt one. A store
replaces only a regular file, or a symlink of ours that names a regular file or
nothing (the link itself is replaced, never written through); anything else in
an entry's place stays, and that variant is not cached. Entries get the
umask's mode (``0666 & ~umask``), and the temporary file of a store that was
killed (named by `teeny_ir.core.files.temp_prefix`) is removed by the next
store into its folder.

Where: ``TEENY_CACHE_DIR`` if set, else ``teeny_ir/`` in the platform's user
cache folder (``platformdirs``). `disabled` turns the cache off for a block
(``teeny-opt --no-cache``); ``emit-triton{cache=off}`` does the same for one
pass.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import functools
import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from teeny_ir.backend import triton_settings
from teeny_ir.backend.aot import CompiledVariant
from teeny_ir.backend.kernel_files import CUBIN_BYTES
from teeny_ir.core.files import default_file_mode, read_regular, sweep_stale, temp_prefix
from teeny_ir.kernels.contract import KernelFamily

FORMAT_VERSION = 1
"""Bumped whenever the key's fields or the entry layout change."""

ENV_DIR = "TEENY_CACHE_DIR"
_MAGIC = b"teeny-ir-compile-cache"
ENTRY_BYTES = 4 * CUBIN_BYTES
"""The most of an entry that is read (a cubin, its PTX and the metadata)."""

_enabled: contextvars.ContextVar[bool] = contextvars.ContextVar("teeny_compile_cache", default=True)


def enabled() -> bool:
    """Whether the compile cache is on in this context (`disabled` turns it off)."""
    return _enabled.get()


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Turn the compile cache off (no lookups, no stores) inside the block."""
    token = _enabled.set(False)
    try:
        yield
    finally:
        _enabled.reset(token)


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``TEENY_CACHE_DIR``, else ``teeny_ir`` in the user cache folder."""
    env = os.environ if environ is None else environ
    chosen = env.get(ENV_DIR)
    if chosen:
        return Path(chosen)
    import platformdirs

    return Path(platformdirs.user_cache_dir("teeny_ir", appauthor=False, opinion=False))


@functools.cache
def triton_version() -> str:
    """The installed Triton's version, from its package metadata (no import;
    read once per process): the ``Version`` of the ``triton-*.dist-info`` beside
    the package ``import triton`` would load, else what `importlib.metadata`
    finds. (Importing `importlib.metadata` alone, which pulls in the ``email``
    package, takes 25-40 ms: a few percent of a warm compile.)"""
    beside = _dist_info_version("triton")
    if beside is not None:
        return beside
    from importlib import metadata

    try:
        return metadata.version("triton")
    except metadata.PackageNotFoundError:
        return "not installed"


def _dist_info_version(package: str) -> str | None:
    """The version in the one ``<package>-*.dist-info/METADATA`` (its ``Name``
    ``package``) in the folder that holds the importable ``package``, or None
    (not installed so, none or several such folders, unreadable)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(package)  # a top-level name: nothing is imported
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    if len(locations) != 1:
        return None
    versions: set[str] = set()
    for info in Path(locations[0]).parent.glob(f"{package}-*.dist-info"):
        try:
            text = (info / "METADATA").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        fields = dict(
            line.split(": ", 1) for line in text.split("\n\n", 1)[0].splitlines() if ": " in line
        )
        if fields.get("Name", "").lower() == package and fields.get("Version"):
            versions.add(fields["Version"].strip())
    return versions.pop() if len(versions) == 1 else None


def compile_settings(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ``TRITON_*`` settings a compile in this environment runs with: the
    compile pins where unset, and every other codegen-relevant setting."""
    env = triton_settings.compile_environment(os.environ if environ is None else environ)
    return {
        name: value
        for name, value in sorted(env.items())
        if name.startswith("TRITON_") and name not in triton_settings.NOT_CODEGEN
    }


def variant_key(
    source: str,
    kernel_name: str,
    family: KernelFamily,
    constexprs: Mapping[str, int | str],
    arch: int,
    num_warps: int,
    num_stages: int,
    *,
    precision: str = "tf32",
    environ: Mapping[str, str] | None = None,
    version: str | None = None,
) -> str:
    """The content address of one compiled variant (64 hex digits); ``precision``
    is emit-triton's (the rendered ``source`` shows it too)."""
    fields = {
        "format": FORMAT_VERSION,
        "source": source,
        "kernel": kernel_name,
        "signature": [[arg.name, arg.dtype] for arg in family.args],
        "constexpr_names": [c.name for c in family.constexprs],
        "constexprs": {name: [type(v).__name__, v] for name, v in sorted(constexprs.items())},
        "target": ["cuda", arch, 32],
        "num_warps": num_warps,
        "num_stages": num_stages,
        "precision": precision,
        "triton": triton_version() if version is None else version,
        "environment": compile_settings(environ),
    }
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def entry_path(key: str, directory: Path | None = None) -> Path:
    root = cache_dir() if directory is None else directory
    return root / key[:2] / f"{key}.entry"


def _encode(key: str, variant: CompiledVariant) -> bytes:
    ptx = variant.ptx.encode("utf-8")
    meta = {
        "key": key,
        "arch": variant.arch,
        "name": variant.name,
        "num_warps": variant.num_warps,
        "num_stages": variant.num_stages,
        "shared": variant.shared,
        "cubin_size": len(variant.cubin),
        "cubin_sha256": variant.cubin_sha256,
        "ptx_size": len(ptx),
        "global_scratch_size": variant.global_scratch_size,
        "profile_scratch_size": variant.profile_scratch_size,
    }
    body = json.dumps(meta, sort_keys=True).encode("utf-8") + b"\n" + variant.cubin + ptx
    digest = hashlib.sha256(body).hexdigest().encode("ascii")
    return _MAGIC + b" " + str(FORMAT_VERSION).encode("ascii") + b" " + digest + b"\n" + body


def _decode(key: str, data: bytes) -> CompiledVariant | None:
    """The variant an entry holds, or None when it is not a whole, valid entry."""
    header, newline, body = data.partition(b"\n")
    parts = header.split(b" ")
    if not newline or len(parts) != 3 or parts[0] != _MAGIC:
        return None
    if parts[1] != str(FORMAT_VERSION).encode("ascii"):
        return None
    if hashlib.sha256(body).hexdigest().encode("ascii") != parts[2]:
        return None
    text, newline, payload = body.partition(b"\n")
    try:
        meta = json.loads(text)
        cubin_size, ptx_size = int(meta["cubin_size"]), int(meta["ptx_size"])
        if meta["key"] != key or len(payload) != cubin_size + ptx_size:
            return None
        cubin = payload[:cubin_size]
        if hashlib.sha256(cubin).hexdigest() != meta["cubin_sha256"]:
            return None
        return CompiledVariant(
            arch=int(meta["arch"]),
            name=str(meta["name"]),
            num_warps=int(meta["num_warps"]),
            num_stages=int(meta["num_stages"]),
            shared=int(meta["shared"]),
            cubin=cubin,
            ptx=payload[cubin_size:].decode("utf-8"),
            cubin_sha256=str(meta["cubin_sha256"]),
            # required: an entry from before they were recorded is a miss
            global_scratch_size=int(meta["global_scratch_size"]),
            profile_scratch_size=int(meta["profile_scratch_size"]),
        )
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None


def is_for(
    variant: CompiledVariant, kernel_name: str, arch: int, num_warps: int, num_stages: int
) -> bool:
    """Whether ``variant`` is what compiling ``kernel_name`` for that target and
    launch configuration gives (checked on a hit and before a store, so that
    nothing else - a stand-in compiler in a test, say - is ever served)."""
    target = (variant.name, variant.arch, variant.num_warps, variant.num_stages)
    intact = hashlib.sha256(variant.cubin).hexdigest() == variant.cubin_sha256
    return intact and target == (kernel_name, arch, num_warps, num_stages)


def lookup(key: str, directory: Path | None = None) -> CompiledVariant | None:
    """The cached variant for ``key``, or None (absent, unreadable or corrupt)."""
    try:
        data = read_regular(entry_path(key, directory), ENTRY_BYTES)
    except (OSError, ValueError):
        return None
    return _decode(key, data)


def _replaceable(path: Path) -> bool:
    """Whether a store may put an entry at ``path``: nothing is there, a
    regular file, or a symlink of this user's naming a regular file or nothing
    (dangling, or a loop)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return True
    if stat.S_ISREG(info.st_mode):
        return True
    if not stat.S_ISLNK(info.st_mode) or info.st_uid != os.geteuid():
        return False
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except FileNotFoundError:
        return True
    except OSError as err:
        return err.errno == errno.ELOOP


def store(key: str, variant: CompiledVariant, directory: Path | None = None) -> bool:
    """Write the entry for ``key`` atomically; False (and nothing left behind)
    when the cache folder cannot be written, something other than a regular
    file or a symlink of ours is where the entry goes, or the variant's cubin
    does not match its hash."""
    if hashlib.sha256(variant.cubin).hexdigest() != variant.cubin_sha256:
        return False
    path = entry_path(key, directory)
    temp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not _replaceable(path):
            return False
        sweep_stale(path.parent, None, (".tmp",))
        handle, temp = tempfile.mkstemp(
            prefix=temp_prefix(key[:16]), suffix=".tmp", dir=path.parent
        )
        with os.fdopen(handle, "wb") as file:
            file.write(_encode(key, variant))
        os.chmod(temp, default_file_mode())
        os.replace(temp, path)
        temp = None
        return True
    except OSError:
        return False
    finally:
        if temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(temp)
