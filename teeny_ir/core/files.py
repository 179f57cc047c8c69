"""Writing output files without losing what the user had.

Regular files are replaced atomically (a temporary file in the same folder,
then a rename), so a failed run never leaves a half-written file; ``-`` and
device files (``/dev/null``, a FIFO) are written directly; the input file is
never a valid output, and `check_output` refuses an output path that cannot be
written before any work is done.

`read_npy` reads one ``.npy`` array and nothing else: never unpickled (object
arrays are refused from the header), an ``.npz`` archive named as such, and a
header whose shape claims more data than the file holds refused before any
memory is allocated for it.
"""

from __future__ import annotations

import math
import os
import stat
import sys
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

if TYPE_CHECKING:
    import numpy as np


class OutputError(Exception):
    """A file that cannot be read or written, or a refused output path."""


def check_not_input(output: str, input_path: str) -> None:
    """Refuse ``-o`` naming the input file (compared by identity, not spelling)."""
    if output == "-" or input_path == "-":
        return
    try:
        same = os.path.samefile(output, input_path)
    except OSError:
        same = os.path.abspath(output) == os.path.abspath(input_path)
    if same:
        raise OutputError(f"refusing to overwrite the input file '{input_path}' with -o")


def write_text(path: str, text: str, stdout: TextIO) -> None:
    """Write ``text`` to ``path`` ('-' is ``stdout``)."""
    if path == "-":
        stdout.write(text)
        stdout.flush()
        return
    write_bytes(path, text.encode("utf-8"), stdout)


def write_bytes(path: str, data: bytes, stdout: TextIO) -> None:
    """Write ``data`` to ``path`` ('-' is ``stdout``'s binary buffer)."""
    if path == "-":
        stdout.flush()
        getattr(stdout, "buffer", sys.stdout.buffer).write(data)
        return
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as err:
        raise OutputError(f"cannot write '{path}': {err.strerror or err}") from None
    try:
        if mode is not None and not stat.S_ISREG(mode):
            if stat.S_ISDIR(mode):
                raise OutputError(f"cannot write '{path}': it is a directory")
            with open(path, "wb") as handle:
                handle.write(data)
            return
        _replace_atomically(path, data, mode)
    except OSError as err:
        raise OutputError(f"cannot write '{path}': {err.strerror or err}") from None


def check_output(path: str) -> None:
    """Refuse, before any work, an output path that cannot be written: a
    directory, or one in a folder that does not exist ('-' is stdout)."""
    if path == "-":
        return
    if os.path.isdir(path):
        raise OutputError(f"cannot write '{path}': it is a directory")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        what = "is not a directory" if os.path.exists(folder) else "does not exist"
        raise OutputError(f"cannot write '{path}': the folder '{folder}' {what}")


_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = b"PK"


def read_npy(path: str) -> np.ndarray:
    """One array from a ``.npy`` file (never unpickled)."""
    try:
        if os.path.isdir(path):
            raise OutputError(f"cannot read input '{path}': it is a directory")
        with open(path, "rb") as handle:
            return _read_npy(path, handle)
    except (OSError, ValueError, EOFError) as err:
        reason = getattr(err, "strerror", None) or err
        raise OutputError(f"cannot read input '{path}': {reason}") from None
    except MemoryError:
        raise OutputError(f"cannot read input '{path}': it does not fit in memory") from None


def _read_npy(path: str, handle: BinaryIO) -> np.ndarray:
    import numpy as np
    from numpy.lib import format as npy

    magic = handle.read(len(_NPY_MAGIC))
    if magic.startswith(_ZIP_MAGIC):
        raise OutputError(f"input '{path}' is an .npz archive; give one .npy array per --input")
    if magic != _NPY_MAGIC:
        raise OutputError(f"cannot read input '{path}': it is not a .npy file (see its start)")
    handle.seek(0)
    version = npy.read_magic(handle)
    if version == (1, 0):
        shape, _, dtype = npy.read_array_header_1_0(handle)
    elif version in ((2, 0), (3, 0)):
        shape, _, dtype = npy.read_array_header_2_0(handle)
    else:
        raise OutputError(f"cannot read input '{path}': .npy format version {version} is unknown")
    if dtype.hasobject:
        raise OutputError(
            f"cannot read input '{path}': Object arrays cannot be loaded without unpickling, "
            f"which is never done (dtype {dtype})"
        )
    needed = math.prod(shape) * dtype.itemsize
    size = os.fstat(handle.fileno())
    if stat.S_ISREG(size.st_mode) and needed > size.st_size - handle.tell():
        raise OutputError(
            f"cannot read input '{path}': its header claims shape {list(shape)} of {dtype} "
            f"({needed} bytes), but the file holds {max(size.st_size - handle.tell(), 0)} "
            "bytes of data"
        )
    handle.seek(0)
    array = np.load(handle, allow_pickle=False)
    if not isinstance(array, np.ndarray):  # unreachable after the magic check
        raise OutputError(f"cannot read input '{path}': it is not a single .npy array")
    return array


def write_npz(path: str, outputs: Sequence[np.ndarray], stdout: TextIO) -> None:
    """Write ``output_0 ... output_{N-1}`` as an ``.npz`` ('-' is stdout)."""
    import io

    import numpy as np

    buffer = io.BytesIO()
    arrays: dict[str, Any] = {f"output_{i}": array for i, array in enumerate(outputs)}
    np.savez(buffer, **arrays)
    write_bytes(path, buffer.getvalue(), stdout)


def _replace_atomically(path: str, data: bytes, mode: int | None) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    fd, temp = tempfile.mkstemp(prefix=".teeny-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        # A new file gets the usual 0666 & ~umask, not mkstemp's 0600.
        os.chmod(temp, _default_mode() if mode is None else stat.S_IMODE(mode))
        os.replace(temp, path)
    except BaseException:
        os.unlink(temp)
        raise


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
