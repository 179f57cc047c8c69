"""Writing output files without losing what the user had.

Regular files are replaced atomically (a temporary file in the same folder,
then a rename), so a failed run never leaves a half-written file; ``-`` and
device files (``/dev/null``, a FIFO) are written directly; the input file is
never a valid output.
"""

from __future__ import annotations

import os
import stat
import tempfile
from typing import TextIO


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
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
            return
        _replace_atomically(path, text, mode)
    except OSError as err:
        raise OutputError(f"cannot write '{path}': {err.strerror or err}") from None


def _replace_atomically(path: str, text: str, mode: int | None) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    fd, temp = tempfile.mkstemp(prefix=".teeny-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        if mode is not None:
            os.chmod(temp, stat.S_IMODE(mode))
        os.replace(temp, path)
    except BaseException:
        os.unlink(temp)
        raise
