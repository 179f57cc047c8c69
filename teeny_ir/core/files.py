"""Writing output files without losing what the user had.

Regular files are replaced atomically (a temporary file in the same folder,
then a rename), so a failed run never leaves a half-written file; ``-`` and
device files (``/dev/null``, a FIFO) are written directly; the input file is
never a valid output.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

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


def read_npy(path: str) -> np.ndarray:
    """One array from a ``.npy`` file (never unpickled)."""
    import numpy as np

    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:
        reason = getattr(err, "strerror", None) or err
        raise OutputError(f"cannot read input '{path}': {reason}") from None
    if not isinstance(array, np.ndarray):
        array.close()
        raise OutputError(f"input '{path}' is an .npz archive; give one .npy array per --input")
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
