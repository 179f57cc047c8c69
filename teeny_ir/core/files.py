"""Reading inputs and writing outputs: never a hang, never an exhausted memory,
never a lost or replaced file the user had. The one file layer of teeny_ir.

Reading. `read_regular` reads a regular file and nothing else: it opens the
path without blocking (``O_NONBLOCK``: a FIFO waits for no writer), checks the
opened descriptor (``fstat``, so nothing can be swapped in between the check and
the read) and reads at most a limit of bytes. A FIFO, a device (``/dev/zero``),
a directory or a socket is one error naming the file, as is a symlink loop
(``ELOOP``) or a file over the limit. `read_npy` and `read_npz` read arrays the
same way and never unpickle (object arrays are refused from the header); a
header whose shape claims more data than the file (or the archive member) holds,
or more than the machine's memory, is refused before any memory is allocated
for it. `read_stream` is the bounded read of stdin (``-``).

Writing (`write_text`, `write_bytes`, `write_npz`, `write_file`, `output_file`);
the rules, by what the output path names:

- ``-``: stdout.
- A regular file, or nothing: replaced atomically. The data goes to a temporary
  sibling ``.NAME.<pid>@<host>.XXXXXXXX.tmp``, is flushed to disk, gets the mode
  the file had (a new file: ``0666 & ~umask``, never ``mkstemp``'s 0600) and is
  renamed over ``NAME``; a failed run leaves the old file as it was.
- A symlink: followed. The file it names is replaced as above (a dangling link's
  target is created) and the link stays.
- A character device (``/dev/null``) or a FIFO: written directly, opened without
  creating, truncating or replacing anything. A FIFO with no reader is refused
  (one line) rather than waited on.
- Anything else, a directory, a block device or a socket, is refused.

`check_output` applies these rules before any work is done, and also makes sure
the folder of a regular output can take a new file (``os.access`` and a real
probe: a temporary file created and removed), so that a run never computes for
minutes to fail at the end; `check_not_input` refuses an output naming an input.

A temporary file or folder that a killed process left behind carries its
creator's pid and host (`temp_prefix`): `sweep_stale` removes the ones whose
process is gone (or that are a day old) the next time something is written
beside them.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import re
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any, BinaryIO, TextIO

if TYPE_CHECKING:
    import numpy as np


class OutputError(Exception):
    """A file that cannot be read or written, or a refused output path."""


TEXT_INPUT_BYTES = 1 << 30
"""The most of an IR text input (a file or stdin) that is read (YOLOv8n's is 62 KB)."""

STALE_AFTER = 24 * 3600.0
"""Seconds after which a temporary file is stale even if its pid is alive
(the pid may have been reused) or it comes from another host."""

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_of(mode: int) -> str:
    """What a non-regular file is, for a message: ``a FIFO``, ``a directory``, ..."""
    return next((what for test, what in _KINDS if test(mode)), "a special file")


# --- reading ------------------------------------------------------------------


def open_regular(path: str | os.PathLike[str]) -> int:
    """A read-only descriptor of the regular file at ``path`` (symlinks
    followed), opened without blocking on a FIFO. Raises `OSError`, whose
    ``strerror`` is one clause for the caller's message (``it is a FIFO, not a
    regular file``), for anything else."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(
                errno.EINVAL, f"it is {kind_of(mode)}, not a regular file", os.fspath(path)
            )
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_regular(path: str | os.PathLike[str]) -> None:
    """Raise `OSError` (as `open_regular`) unless ``path`` is a readable regular file."""
    os.close(open_regular(path))


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of the regular file at ``path`` (symlinks followed), at most
    ``limit`` of them. Raises `OSError`, whose ``strerror`` is one clause for
    the caller's message, when the file cannot be opened, is not a regular
    file (a FIFO, a device, a directory: refused without blocking on it) or
    holds more than ``limit`` bytes."""
    fd = open_regular(path)
    try:
        if os.fstat(fd).st_size > limit:
            raise _too_big(path, limit)
        chunks: list[bytes] = []
        size = 0
        # To the end rather than to st_size: the file may grow while it is read.
        while chunk := os.read(fd, min(1 << 20, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise _too_big(path, limit)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_stream(stream: IO[bytes], limit: int, name: str = "stdin") -> bytes:
    """At most ``limit`` bytes of ``stream`` (stdin, a pipe), to its end; an
    `OutputError` when it holds more."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise OutputError(f"cannot read {name}: it holds more than {limit} bytes")
    return data


def _too_big(path: str | os.PathLike[str], limit: int) -> OSError:
    reason = f"it is larger than {limit} bytes, the most teeny_ir reads of such a file"
    return OSError(errno.EFBIG, reason, os.fspath(path))


def _reason(err: BaseException) -> str:
    return str(getattr(err, "strerror", None) or err)


_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = b"PK"


def read_npy(path: str, what: str = "input") -> np.ndarray:
    """One array from a ``.npy`` file (never unpickled); errors say
    ``cannot read <what> '<path>': ...``."""
    try:
        with os.fdopen(open_regular(path), "rb") as handle:
            magic = handle.read(len(_NPY_MAGIC))
            if magic.startswith(_ZIP_MAGIC):
                raise OutputError(
                    f"{what} '{path}' is an .npz archive; give one .npy array per --input"
                )
            if magic != _NPY_MAGIC:
                raise OutputError(
                    f"cannot read {what} '{path}': it is not a .npy file (see its start)"
                )
            handle.seek(0)
            size = os.fstat(handle.fileno()).st_size
            return _read_array(handle, size, f"cannot read {what} '{path}'", "the file")
    except (OSError, ValueError, EOFError) as err:
        raise OutputError(f"cannot read {what} '{path}': {_reason(err)}") from None
    except MemoryError:
        raise OutputError(f"cannot read {what} '{path}': it does not fit in memory") from None


def read_npz(path: str, what: str = "input") -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` archive by name (``x.npy`` is ``x``), never
    unpickled: every member must be a ``.npy`` array whose header fits the
    member's size; errors say ``cannot read <what> '<path>': ...``."""
    import zipfile

    prefix = f"cannot read {what} '{path}'"
    try:
        with os.fdopen(open_regular(path), "rb") as handle:
            if handle.read(len(_NPY_MAGIC)) == _NPY_MAGIC:
                raise OutputError(f"{what} '{path}' is one .npy array, not an .npz archive")
            handle.seek(0)
            arrays: dict[str, np.ndarray] = {}
            with zipfile.ZipFile(handle) as archive:
                for info in archive.infolist():
                    name = info.filename.removesuffix(".npy")
                    if info.is_dir() or name in arrays:
                        raise OutputError(f"{prefix}: member '{info.filename}' is not one array")
                    with archive.open(info) as member:
                        if member.read(len(_NPY_MAGIC)) != _NPY_MAGIC:
                            raise OutputError(
                                f"{prefix}: member '{info.filename}' is not a .npy array"
                            )
                        member.seek(0)
                        arrays[name] = _read_array(
                            member, info.file_size, f"{prefix}: member '{info.filename}'", "it"
                        )
            return arrays
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        raise OutputError(f"{prefix}: {_reason(err)}") from None
    except MemoryError:
        raise OutputError(f"{prefix}: it does not fit in memory") from None


def _read_array(handle: IO[bytes], size: int, prefix: str, holder: str) -> np.ndarray:
    """The array a ``.npy`` stream of ``size`` bytes holds, ``handle`` at its
    start: its header is read and checked against ``size`` and the memory
    before the one allocation of its data."""
    import numpy as np
    from numpy.lib import format as npy

    version = npy.read_magic(handle)
    if version == (1, 0):
        shape, fortran, dtype = npy.read_array_header_1_0(handle)
    elif version in ((2, 0), (3, 0)):
        shape, fortran, dtype = npy.read_array_header_2_0(handle)
    else:
        raise OutputError(f"{prefix}: .npy format version {version} is unknown")
    if dtype.hasobject:
        raise OutputError(
            f"{prefix}: Object arrays cannot be loaded without unpickling, which teeny_ir "
            f"never does (dtype {dtype}); save plain numeric arrays"
        )
    needed = math.prod(shape) * dtype.itemsize
    available = max(size - handle.tell(), 0)
    if needed > available:
        raise OutputError(
            f"{prefix}: its header claims shape {list(shape)} of {dtype} ({needed} bytes), "
            f"but {holder} holds {available} bytes of data"
        )
    memory = _physical_memory()
    if memory is not None and needed > memory:
        raise OutputError(
            f"{prefix}: its shape {list(shape)} of {dtype} ({needed} bytes) does not fit in "
            f"this machine's memory ({memory} bytes)"
        )
    buffer = bytearray(needed)
    view = memoryview(buffer)
    done = 0
    while done < needed:
        chunk = handle.read(min(1 << 24, needed - done))
        if not chunk:
            raise OutputError(f"{prefix}: it ends after {done} of its {needed} bytes of data")
        view[done : done + len(chunk)] = chunk
        done += len(chunk)
    flat = np.frombuffer(buffer, dtype=dtype)
    if fortran:
        return flat.reshape(shape[::-1]).transpose()
    return flat.reshape(shape)


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


# --- checking outputs ---------------------------------------------------------


def check_not_input(output: str, input_path: str) -> None:
    """Refuse ``-o`` naming the input file (compared by identity, not spelling)."""
    if output == "-" or input_path == "-":
        return
    try:
        same = os.path.samefile(output, input_path)
    except (OSError, ValueError):
        same = os.path.abspath(output) == os.path.abspath(input_path)
    if same:
        raise OutputError(f"refusing to overwrite the input file '{input_path}' with -o")


def check_output(path: str) -> None:
    """Refuse, before any work, an output path that cannot be written by the
    rules of this module ('-' is stdout): a directory, a block device or a
    socket; a device or FIFO without write permission; a regular file (or
    none) in a folder that does not exist or cannot take a new file."""
    if path == "-":
        return
    info = _stat_output(path)
    if info is not None and not stat.S_ISREG(info.st_mode):
        _check_special(path, info.st_mode)
        if not os.access(path, os.W_OK):
            raise OutputError(f"cannot write '{path}': {os.strerror(errno.EACCES)}")
        return
    final = _final_path(path)
    folder = os.path.dirname(final)
    try:
        folder_mode: int | None = os.stat(folder).st_mode
    except FileNotFoundError:
        folder_mode = None
    except OSError as err:
        raise OutputError(f"cannot write '{path}': {_reason(err)}") from None
    if folder_mode is None or not stat.S_ISDIR(folder_mode):
        what = "does not exist" if folder_mode is None else "is not a directory"
        raise OutputError(f"cannot write '{path}': the folder '{folder}' {what}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(
            f"cannot write '{path}': the folder '{folder}' is not writable "
            f"({os.strerror(errno.EACCES)})"
        )
    try:  # what os.access cannot see: a read-only mount for root, /proc, quotas, ACLs
        fd, probe = tempfile.mkstemp(
            prefix=temp_prefix(os.path.basename(final)), suffix=".tmp", dir=folder
        )
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise OutputError(
            f"cannot write '{path}': the folder '{folder}' cannot take a new file ({_reason(err)})"
        ) from None


def _stat_output(path: str) -> os.stat_result | None:
    """``os.stat(path)`` (None when nothing is there), errors as `OutputError`."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise OutputError(f"cannot write '{path}': {_reason(err)}") from None


def _check_special(path: str, mode: int) -> None:
    """Refuse a non-regular output other than a character device or a FIFO."""
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return
    if stat.S_ISDIR(mode):
        raise OutputError(f"cannot write '{path}': it is a directory")
    raise OutputError(
        f"cannot write '{path}': it is {kind_of(mode)}; teeny_ir writes regular files, "
        "character devices and FIFOs only"
    )


def _final_path(path: str) -> str:
    """Where a regular output ``path`` lands: the path a symlink names (the
    link stays), else ``path`` itself, absolute."""
    if os.path.islink(path):
        return os.path.realpath(path)
    return os.path.abspath(path)


# --- writing ------------------------------------------------------------------


def write_text(path: str, text: str, stdout: TextIO) -> None:
    """Write ``text`` to ``path`` ('-' is ``stdout``)."""
    if path == "-":
        stdout.write(text)
        stdout.flush()
        return
    write_file(path, text.encode("utf-8"))


def write_bytes(path: str, data: bytes, stdout: TextIO) -> None:
    """Write ``data`` to ``path`` ('-' is ``stdout``'s binary buffer)."""
    if path == "-":
        stdout.flush()
        getattr(stdout, "buffer", sys.stdout.buffer).write(data)
        return
    write_file(path, data)


def write_npz(path: str, outputs: Sequence[np.ndarray], stdout: TextIO) -> None:
    """Write ``output_0 ... output_{N-1}`` as an ``.npz`` ('-' is stdout)."""
    import io

    import numpy as np

    buffer = io.BytesIO()
    arrays: dict[str, Any] = {f"output_{i}": array for i, array in enumerate(outputs)}
    np.savez(buffer, **arrays)
    write_bytes(path, buffer.getvalue(), stdout)


def write_file(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to the file ``path`` by the rules of this module (no
    ``-``); raises `OutputError`."""
    with output_file(path) as handle:
        handle.write(data)


@contextlib.contextmanager
def output_file(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """A binary file whose content, when the block ends without an exception,
    is what ``path`` holds, by the rules of this module: a regular file (or
    none) is replaced atomically only then, a device or FIFO is written as the
    block writes. Raises `OutputError` for a refused path, and for an `OSError`
    inside the block (the write failed); after any exception a regular
    ``path`` is as it was and no temporary file is left."""
    name = os.fspath(path)
    info = _stat_output(name)
    if info is not None and not stat.S_ISREG(info.st_mode):
        _check_special(name, info.st_mode)
        fd = _open_special(name)
        try:
            with os.fdopen(fd, "wb") as handle:
                yield handle
        except OSError as err:
            raise OutputError(f"cannot write '{name}': {_reason(err)}") from None
        return
    final = _final_path(name)
    folder, base = os.path.split(final)
    sweep_stale(folder, base, (".tmp",))
    try:
        fd, temp = tempfile.mkstemp(prefix=temp_prefix(base), suffix=".tmp", dir=folder)
    except OSError as err:
        raise OutputError(f"cannot write '{name}': {_reason(err)}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())  # renamed only once its bytes are on disk
        os.chmod(temp, default_file_mode() if info is None else stat.S_IMODE(info.st_mode))
        os.replace(temp, final)
    except BaseException as err:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        if isinstance(err, OSError):
            raise OutputError(f"cannot write '{name}': {_reason(err)}") from None
        raise


def _open_special(path: str) -> int:
    """A blocking write descriptor of the character device or FIFO ``path``,
    opened without creating or truncating anything (a FIFO with no reader is
    an `OutputError`, never a wait)."""
    flags = os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as err:
        if err.errno == errno.ENXIO:
            raise OutputError(
                f"cannot write '{path}': it is a FIFO with no reader (start the reader first)"
            ) from None
        raise OutputError(f"cannot write '{path}': {_reason(err)}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
            what = "a regular file" if stat.S_ISREG(mode) else kind_of(mode)
            raise OutputError(f"cannot write '{path}': it became {what} while it was opened")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def default_file_mode() -> int:
    """The mode a new file gets from ``open``: ``0666 & ~umask``."""
    return 0o666 & ~_umask()


def default_dir_mode() -> int:
    """The mode a new folder gets from ``mkdir``: ``0777 & ~umask``."""
    return 0o777 & ~_umask()


def _umask() -> int:
    """The process's umask, read without changing it where the system says
    (Linux' ``/proc/self/status``): setting it to read it would give a file
    another thread creates meanwhile the wrong mode."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status", "rb") as status:
        for line in status:
            if line.startswith(b"Umask:"):
                return int(line.split()[1], 8)
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


# --- temporary files a killed process left ------------------------------------


_NAME_CHARS = 96
"""The most of a file's name a temporary sibling repeats (a name may be 255 bytes long)."""


def _host() -> str:
    import socket

    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:63] or "host"


def temp_prefix(name: str) -> str:
    """The prefix of a temporary sibling of the file or folder ``name`` made
    by this process (``.NAME.<pid>@<host>.``, for ``tempfile.mkstemp`` or
    ``mkdtemp``), which `sweep_stale` recognises once the process is gone."""
    return f".{name[:_NAME_CHARS]}.{os.getpid()}@{_host()}."


def stale_siblings(
    folder: str | os.PathLike[str], name: str | None, suffixes: Sequence[str]
) -> list[str]:
    """The paths in ``folder`` of the temporary siblings of ``name`` (any name
    when None) ending in one of ``suffixes`` that `temp_prefix` named and whose
    process is gone: a pid of this host that no longer runs, or older than
    `STALE_AFTER`; sorted. Unreadable entries are skipped."""
    stem = re.escape(name[:_NAME_CHARS]) if name is not None else r"[^/]+?"
    ends = "|".join(re.escape(suffix) for suffix in suffixes)
    pattern = re.compile(rf"\.{stem}\.([0-9]+)@([A-Za-z0-9-]+)\.[A-Za-z0-9_]+(?:{ends})")
    host, now, stale = _host(), time.time(), []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match is None:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            pid = int(match.group(1))
        except (OSError, ValueError):
            continue
        gone = match.group(2) == host and pid != os.getpid() and not _alive(pid)
        if gone or now - info.st_mtime >= STALE_AFTER:
            stale.append(entry.path)
    return sorted(stale)


def sweep_stale(folder: str | os.PathLike[str], name: str | None, suffixes: Sequence[str]) -> int:
    """Remove the `stale_siblings` of ``name`` in ``folder``. A symlink is
    removed, never followed. Returns how many were removed; errors are ignored
    (a sweep never fails a write)."""
    removed = 0
    for path in stale_siblings(folder, name, suffixes):
        try:
            if stat.S_ISDIR(os.lstat(path).st_mode):
                shutil.rmtree(path)
            else:
                os.unlink(path)
            removed += 1
        except OSError:
            continue
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True
