"""Faults and bad input in the file layer, the compile cache and emission
(issue 29): FIFOs, devices and symlink loops as outputs, inputs and cache
entries; headers that claim petabytes; float options float32 cannot hold;
``-o`` inside emit-triton's out-dir; compile workers outliving a killed
``teeny-opt``; temporary files a killed process left; output modes.

Every case is bounded (`bounded`, or a subprocess timeout): a regression is a
failure, never a hung suite. The tests run as root here, which no permission
bit stops: the unwritable folders are ``/proc`` and ``/sys``.
"""

from __future__ import annotations

import io
import os
import signal
import socket
import stat
import struct
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pytest

from teeny_ir.backend import aot, cache
from teeny_ir.core import files
from teeny_ir.core.files import OutputError

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")

ROOT = Path(__file__).resolve().parent.parent
STARTER = ROOT / "examples" / "starter" / "starter.mlir"
SECONDS = 60
"""The bound of every case (the issue's bar)."""

T = TypeVar("T")

TRAIN = """\
func.func @forward(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32> {teeny.grad = "w"}) {
  %w = graph.param "w" : tensor<4xf32>
  %y = graph.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y, %y : tensor<4xf32>, tensor<4xf32>
}
"""
"""The smallest module apply-optimizer takes: one parameter and its gradient."""

_ARGS = (
    'args [x = in0, y = in0, out = out0, numel = "B * 4", size1 = "1", size2 = "1", '
    'size3 = "1", size4 = "B", size5 = "4", x_stride0 = "B * 4", x_stride1 = "B * 4", '
    'x_stride2 = "B * 4", x_stride3 = "B * 4", x_stride4 = "4", x_stride5 = "1", '
    'y_stride0 = "B * 4", y_stride1 = "B * 4", y_stride2 = "B * 4", y_stride3 = "B * 4", '
    'y_stride4 = "4", y_stride5 = "1"] grid ["cdiv(B * 4, 256)", "1", "1"] warps 4 stages 1'
)
KERNELS = f"""\
func.func @forward(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {{
  %y = kernel.launch "elementwise" (%x) {{OP = "relu", BLOCK = 256}} {_ARGS} \
: (tensor<?x4xf32>) -> tensor<?x4xf32>
  %z = kernel.launch "elementwise" (%y) {{OP = "silu", BLOCK = 256}} {_ARGS} \
: (tensor<?x4xf32>) -> tensor<?x4xf32>
  func.return %z : tensor<?x4xf32>
}}
"""
"""Kernel IR with two variants (two compile jobs), emitted in a moment."""


def bounded(call: Callable[[], T], seconds: float = SECONDS) -> T:
    """``call()``, failing the test (not hanging it) if it takes longer."""
    result: list[Any] = []

    def target() -> None:
        try:
            result.append(("ok", call()))
        except BaseException as err:  # noqa: BLE001 - re-raised below, in the test
            result.append(("err", err))

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still running after {seconds} s: a hang")
    kind, value = result[0]
    if kind == "err":
        raise value
    return value  # type: ignore[no-any-return]


def opt(*argv: str, stdin: bytes = b"") -> tuple[int, str, str]:
    """teeny-opt in-process, bounded: (exit code, stdout, stderr)."""
    from teeny_ir.driver.opt import run

    out, err = io.StringIO(), io.StringIO()
    code = bounded(lambda: run(list(argv), io.BytesIO(stdin), out, err))
    return code, out.getvalue(), err.getvalue()


def one_error(code: int, stderr: str) -> str:
    """The one ``teeny-opt: error: ...`` line of a run that exited 1."""
    assert code == 1, stderr
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("teeny-opt: error: "), stderr
    return lines[0].removeprefix("teeny-opt: error: ")


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
        timeout=SECONDS,
    )
    return int(done.stdout)


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "in.mlir"
    path.write_text(STARTER.read_text())
    return path


# --- outputs: FIFOs, devices, links, folders ----------------------------------


def test_a_fifo_output_without_a_reader_is_refused_at_once(model: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    message = one_error(*opt(str(model), "-o", str(fifo))[::2])
    assert message == f"cannot write '{fifo}': it is a FIFO with no reader (start the reader first)"
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_a_fifo_output_with_a_reader_is_written_and_stays_a_fifo(
    model: Path, tmp_path: Path
) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    ready = threading.Event()

    def reader() -> None:
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader before the writer comes
        ready.set()
        os.set_blocking(fd, True)
        chunks = []
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                continue
            if chunk:
                chunks.append(chunk)
            elif chunks:  # the writer came and went
                break
            else:
                time.sleep(0.01)  # no writer yet: EOF until it opens
        os.close(fd)
        received.append(b"".join(chunks))

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    ready.wait(SECONDS)
    code, _, err = opt(str(model), "-o", str(fifo))
    thread.join(SECONDS)
    assert code == 0, err
    assert received and received[0].startswith(b"builtin.module {")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


@pytest.mark.parametrize("device", ["/dev/null", "/dev/zero"])
def test_a_character_device_output_is_written_and_never_replaced(model: Path, device: str) -> None:
    before = os.lstat(device)
    code, _, err = opt(str(model), "-o", device)
    assert code == 0, err
    after = os.lstat(device)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert after.st_ino == before.st_ino
    files.write_file(device, b"checkpoint bytes")  # the library writer, as Trainer.save uses
    assert os.lstat(device).st_ino == before.st_ino


def _block_device() -> str | None:
    for entry in sorted(os.listdir("/dev")):
        path = f"/dev/{entry}"
        with_stat = os.lstat(path)
        if stat.S_ISBLK(with_stat.st_mode):
            return path
    return None


def test_a_block_device_or_a_socket_output_is_refused(model: Path, tmp_path: Path) -> None:
    sock = tmp_path / "out.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock))
    try:
        targets = [str(sock)] + ([device] if (device := _block_device()) else [])
        for target in targets:
            message = one_error(*opt(str(model), "-o", target)[::2])
            assert message.startswith(f"cannot write '{target}': it is a ")
            assert "teeny_ir writes regular files, character devices and FIFOs only" in message
            with pytest.raises(OutputError, match="writes regular files"):
                files.write_file(target, b"x")
        assert stat.S_ISSOCK(sock.lstat().st_mode)
    finally:
        server.close()


def test_a_symlinked_output_replaces_its_target_and_keeps_the_link(
    model: Path, tmp_path: Path
) -> None:
    target = tmp_path / "target.mlir"
    target.write_text("old\n")
    target.chmod(0o640)
    link = tmp_path / "link.mlir"
    link.symlink_to(target.name)
    code, _, err = opt(str(model), "-o", str(link))
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == target.name
    assert target.read_text().startswith("builtin.module {")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # the file's own mode kept
    dangling = tmp_path / "dangling.mlir"
    dangling.symlink_to("created.mlir")
    files.write_file(dangling, b"new\n")
    assert dangling.is_symlink() and (tmp_path / "created.mlir").read_bytes() == b"new\n"


def test_a_new_output_gets_the_umask_mode_not_0600(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        assert files.default_file_mode() == 0o640
        files.write_file(tmp_path / "new.bin", b"x")
        entry = cache.entry_path("ab" * 32, tmp_path / "cache")
        variant = _variant()
        assert cache.store("ab" * 32, variant, tmp_path / "cache")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.bin").stat().st_mode) == 0o640
    assert stat.S_IMODE(entry.stat().st_mode) == 0o640


@pytest.mark.parametrize(
    ("output", "message"),
    [
        (
            "/proc/teeny-out.mlir",
            "cannot write '/proc/teeny-out.mlir': the folder '/proc' cannot take a new file",
        ),
        ("{tmp}/loop", "cannot write '{tmp}/loop': Too many levels of symbolic links"),
        (
            "{tmp}/loop/out.mlir",
            "cannot write '{tmp}/loop/out.mlir': Too many levels of symbolic links",
        ),
        (
            "{tmp}/none/out.mlir",
            "cannot write '{tmp}/none/out.mlir': the folder '{tmp}/none' does not exist",
        ),
    ],
    ids=["proc", "loop", "inside a loop", "no folder"],
)
def test_an_unwritable_output_is_refused_before_any_work(
    tmp_path: Path, output: str, message: str
) -> None:
    (tmp_path / "loop").symlink_to("loop")
    output = output.format(tmp=tmp_path)
    # The input does not exist: the output is checked first, before anything is read or run.
    code, _, err = opt(str(tmp_path / "missing.mlir"), "-p", "cse", "-o", output)
    assert one_error(code, err).startswith(message.format(tmp=tmp_path))
    with pytest.raises(OutputError):
        files.check_output(output)


def test_a_killed_writers_temporary_files_are_swept_by_the_next_write(tmp_path: Path) -> None:
    host = files.temp_prefix("x").split("@")[1].rstrip(".")
    dead = tmp_path / f".out.mlir.{dead_pid()}@{host}.a1b2c3d4.tmp"
    alive = tmp_path / f".out.mlir.{os.getppid()}@{host}.e5f6g7h8.tmp"
    elsewhere = tmp_path / ".out.mlir.1234@another-host.i9j0k1l2.tmp"
    old = tmp_path / ".out.mlir.1234@another-host.m3n4o5p6.tmp"
    other = tmp_path / f".other.mlir.{dead_pid()}@{host}.q7r8s9t0.tmp"
    for path in (dead, alive, elsewhere, old, other):
        path.write_bytes(b"half a checkpoint")
    two_days_ago = time.time() - 2 * 24 * 3600
    os.utime(old, (two_days_ago, two_days_ago))
    files.write_file(tmp_path / "out.mlir", b"whole\n")
    assert (tmp_path / "out.mlir").read_bytes() == b"whole\n"
    assert not dead.exists() and not old.exists()
    assert alive.exists() and elsewhere.exists() and other.exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".out.mlir")) == sorted(
        [alive.name, elsewhere.name]
    )


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "ckpt.bin"
    target.write_bytes(b"precious")
    with pytest.raises(RuntimeError), files.output_file(target) as handle:
        handle.write(b"half")
        raise RuntimeError("killed halfway")
    assert target.read_bytes() == b"precious"
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.bin"]


# --- inputs: FIFOs, devices, loops, stdin --------------------------------------


def test_a_fifo_device_or_loop_input_is_one_line_never_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    loop = tmp_path / "loop"
    loop.symlink_to("loop")
    cases = {
        str(fifo): "it is a FIFO, not a regular file",
        "/dev/zero": "it is a character device, not a regular file",
        str(loop): "Too many levels of symbolic links",
        str(tmp_path): "it is a directory, not a regular file",
    }
    for path, reason in cases.items():
        assert one_error(*opt(path, "-o", "-")[::2]) == f"cannot read '{path}': {reason}"
        with pytest.raises(OutputError, match=f"cannot read input '{path}': {reason}"):
            bounded(partial(files.read_npy, path))
        with pytest.raises(OutputError, match=f"cannot read batches '{path}': {reason}"):
            bounded(partial(files.read_npz, path, "batches"))
        with pytest.raises(OSError, match=reason):
            bounded(partial(files.read_regular, path, 1 << 20))


def test_teeny_import_refuses_a_fifo_model(tmp_path: Path) -> None:
    from teeny_ir.driver.import_model import run

    fifo = tmp_path / "model.onnx"
    os.mkfifo(fifo)
    err = io.StringIO()
    code = bounded(lambda: run([str(fifo), "-o", str(tmp_path / "m.mlir")], io.StringIO(), err))
    assert (code, err.getvalue()) == (
        1,
        f"teeny-import: error: cannot read '{fifo}': it is a FIFO, not a regular file\n",
    )


def test_stdin_and_large_files_are_read_with_a_bound(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="cannot read stdin: it holds more than 4 bytes"):
        files.read_stream(io.BytesIO(b"12345"), 4)
    assert files.read_stream(io.BytesIO(b"1234"), 4) == b"1234"
    sparse = tmp_path / "huge.mlir"
    with sparse.open("wb") as handle:
        handle.truncate(files.TEXT_INPUT_BYTES + 1)  # a hole: no disk, no memory
    message = one_error(*opt(str(sparse), "-o", "-")[::2])
    assert message == (
        f"cannot read '{sparse}': it is larger than {files.TEXT_INPUT_BYTES} bytes, the most "
        "teeny_ir reads of such a file"
    )


# --- .npy and .npz headers -------------------------------------------------------

PIB3 = 3 * 2**50 // 4
"""A float32 count of 3 PiB."""


def npy_header(shape: tuple[int, ...], descr: str = "<f4") -> bytes:
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}"
    header += " " * (117 - len(header)) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode()


def test_a_3_pib_npy_header_is_refused_before_allocating(tmp_path: Path) -> None:
    huge = tmp_path / "huge.npy"
    huge.write_bytes(npy_header((PIB3,)) + bytes(64))
    with pytest.raises(OutputError) as caught:
        bounded(lambda: files.read_npy(str(huge)))
    assert str(caught.value) == (
        f"cannot read input '{huge}': its header claims shape [{PIB3}] of float32 "
        f"({PIB3 * 4} bytes), but the file holds 64 bytes of data"
    )


def test_a_3_pib_npz_member_is_refused_before_allocating(tmp_path: Path) -> None:
    for compression in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        archive = tmp_path / "batches.npz"
        with zipfile.ZipFile(archive, "w", compression) as zipped:
            zipped.writestr("in0.npy", npy_header((PIB3,)) + bytes(64))
        with pytest.raises(OutputError) as caught:
            bounded(partial(files.read_npz, str(archive), "batches"))
        assert str(caught.value) == (
            f"cannot read batches '{archive}': member 'in0.npy': its header claims shape "
            f"[{PIB3}] of float32 ({PIB3 * 4} bytes), but it holds 64 bytes of data"
        )


def test_an_object_npz_member_is_never_unpickled_and_the_hint_is_not_allow_pickle(
    tmp_path: Path,
) -> None:
    archive = tmp_path / "batches.npz"
    np.savez(archive, in0=np.array([{"x": 1}], dtype=object))
    with pytest.raises(OutputError) as caught:
        files.read_npz(str(archive), "batches")
    message = str(caught.value)
    assert message.startswith(
        f"cannot read batches '{archive}': member 'in0.npy': Object arrays cannot be loaded "
        "without unpickling, which teeny_ir never does"
    )
    assert "allow_pickle" not in message


def test_npy_and_npz_read_back_what_numpy_wrote(tmp_path: Path) -> None:
    arrays: dict[str, Any] = {
        "in0": np.arange(24, dtype=np.float32).reshape(2, 3, 4),
        "in1": np.asfortranarray(np.arange(6, dtype=">i8").reshape(2, 3)),
        "in2": np.zeros((0, 5), dtype=np.float16),
        "in3": np.float64(2.5),
    }
    for name, array in arrays.items():
        np.save(tmp_path / f"{name}.npy", array)
        got = files.read_npy(str(tmp_path / f"{name}.npy"))
        assert got.dtype == array.dtype and got.shape == array.shape
        assert np.array_equal(got, array) and got.flags.writeable
    for save in (np.savez, np.savez_compressed):
        save(tmp_path / "all.npz", **arrays)
        got_all = files.read_npz(str(tmp_path / "all.npz"))
        assert sorted(got_all) == sorted(arrays)
        for name, array in arrays.items():
            assert got_all[name].dtype == array.dtype
            assert np.array_equal(got_all[name], array)


# --- the compile cache --------------------------------------------------------


def _variant() -> aot.CompiledVariant:
    import hashlib

    cubin = b"\x7fELF not really a cubin"
    return aot.CompiledVariant(
        arch=80,
        name="k",
        num_warps=4,
        num_stages=1,
        shared=0,
        cubin=cubin,
        ptx="// ptx",
        cubin_sha256=hashlib.sha256(cubin).hexdigest(),
    )


KEY = "cd" * 32


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _to_dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _loop(path: Path) -> None:
    path.symlink_to(path.name)


def _directory(path: Path) -> None:
    path.mkdir()


def _truncated(path: Path) -> None:
    assert cache.store(KEY, _variant(), path.parent.parent)
    path.write_bytes(path.read_bytes()[:-5])


def _oversized(path: Path) -> None:
    with path.open("wb") as handle:
        handle.truncate(cache.ENTRY_BYTES + 1)


def _dangling(path: Path) -> None:
    path.symlink_to("gone.entry")


BAD_ENTRIES: list[tuple[str, Callable[[Path], None], bool]] = [
    # (what, make it, whether a store replaces it)
    ("fifo", _fifo, False),
    ("symlink to /dev/zero", _to_dev_zero, False),
    ("directory", _directory, False),
    ("symlink loop", _loop, True),
    ("dangling symlink", _dangling, True),
    ("truncated", _truncated, True),
    ("oversized", _oversized, True),
]


@pytest.mark.parametrize(
    ("make", "replaced"), [c[1:] for c in BAD_ENTRIES], ids=[c[0] for c in BAD_ENTRIES]
)
def test_a_bad_cache_entry_is_a_miss_and_never_written_through(
    tmp_path: Path, make: Callable[[Path], None], replaced: bool
) -> None:
    directory = tmp_path / "cache"
    entry = cache.entry_path(KEY, directory)
    entry.parent.mkdir(parents=True)
    make(entry)
    kind = entry.lstat().st_mode
    assert bounded(lambda: cache.lookup(KEY, directory)) is None
    stored = bounded(lambda: cache.store(KEY, _variant(), directory))
    assert stored is replaced
    if replaced:
        assert stat.S_ISREG(entry.lstat().st_mode)
        assert cache.lookup(KEY, directory) == _variant()
    else:
        assert stat.S_IFMT(entry.lstat().st_mode) == stat.S_IFMT(kind)
        assert bounded(lambda: cache.lookup(KEY, directory)) is None
    assert os.lstat("/dev/zero").st_mode & stat.S_IFCHR
    leftovers = [p.name for p in entry.parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_a_killed_stores_temporary_file_is_swept_by_the_next_store(tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    bucket = cache.entry_path(KEY, directory).parent
    bucket.mkdir(parents=True)
    host = files.temp_prefix("x").split("@")[1].rstrip(".")
    stale = bucket / f".{'ce' * 8}.{dead_pid()}@{host}.z9y8x7w6.tmp"
    stale.write_bytes(b"half an entry")
    assert cache.store(KEY, _variant(), directory)
    assert not stale.exists()


# --- float options float32 cannot hold -----------------------------------------


@pytest.mark.parametrize(
    ("pipeline", "message"),
    [
        ("apply-optimizer{lr=1e39}", "bad value '1e39' for option 'lr' of pass 'apply-optimizer'"),
        (
            "apply-optimizer{weight-decay=-4e38}",
            "bad value '-4e38' for option 'weight-decay' of pass 'apply-optimizer'",
        ),
        (
            "apply-optimizer{kind=adamw eps=1e39}",
            "bad value '1e39' for option 'eps' of pass 'apply-optimizer'",
        ),
        (
            "teeny-training{lr=3.5e38}",
            "bad value '3.5e38' for option 'lr' of named pipeline 'teeny-training'",
        ),
    ],
)
def test_a_float_option_beyond_float32_is_a_pipeline_error(
    tmp_path: Path, pipeline: str, message: str
) -> None:
    source = tmp_path / "train.mlir"
    source.write_text(TRAIN)
    code, _, err = opt(str(source), "-p", pipeline, "-o", "/dev/null")
    assert code == 1 and "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("teeny-opt: <pipeline>:1:1: error: " + message)
    assert err.rstrip().endswith(
        "expected a number within float32's range (at most 3.4028235e+38 in magnitude), the "
        "precision the compiled program computes in"
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            "lr=1e-50",
            "expected lr to be finite and > 0 in float32, the precision the update "
            "computes in, got 1e-50 (0.0 in float32)",
        ),
        (
            "momentum=0.99999999999",
            "expected momentum in [0, 1) in float32, the precision the "
            "update computes in, got 0.99999999999 (1.0 in float32)",
        ),
        ("kind=adamw betas=0.9,0.9999999999", "expected betas[1] in [0, 1) in float32"),
        ("kind=adamw eps=1e-46", "expected eps to be finite and > 0 in float32"),
    ],
)
def test_an_optimizer_value_float32_rounds_out_of_range_is_located(
    tmp_path: Path, options: str, message: str
) -> None:
    source = tmp_path / "train.mlir"
    source.write_text(TRAIN)
    code, _, err = opt(str(source), "-p", f"apply-optimizer{{{options}}}", "-o", "/dev/null")
    assert code == 1 and "Traceback" not in err, err
    assert err.startswith(f"{source}:1:1: error: apply-optimizer: {message}"), err
    from passes.apply_optimizer import ApplyOptimizerPass

    assert ApplyOptimizerPass(lr=1e39).option_problems() == [
        "expected lr to be finite and > 0 in float32, the precision the update computes in, "
        "got 1e+39 (inf in float32)"
    ]


@pytest.mark.parametrize("eps", ["1.000000e+39", "1.000000e-50"])
def test_a_batch_norm_eps_float32_cannot_hold_is_a_verifier_error(tmp_path: Path, eps: str) -> None:
    source = tmp_path / "bn.mlir"
    source.write_text(STARTER.read_text().replace("eps 1.000000e-03", f"eps {eps}"))
    code, _, err = opt(str(source), "-p", "train-mode", "-o", "/dev/null")
    assert code == 1 and "Traceback" not in err, err
    assert (
        f"error: 'graph.batch_norm' op expected eps to be finite and > 0 in float32, the precision the batch norm "
        f"computes in, got {float(eps)}" in err
    )


# --- -o inside emit-triton's out-dir ------------------------------------------


@pytest.mark.parametrize(
    ("extra", "what", "path"),
    [
        (["-o", "{out}/plan.json"], "-o", "{out}/plan.json"),
        (["-o", "{out}"], "-o", "{out}"),
        (["-o", "{alias}/plan.json"], "-o", "{alias}/plan.json"),
        (
            ["--mlir-pass-pipeline-crash-reproducer", "{out}/repro.mlir"],
            "the crash reproducer",
            "{out}/repro.mlir",
        ),
        (["--view-op-graph=out={out}/g.dot"], "view-op-graph out=", "{out}/g.dot"),
    ],
    ids=["plan.json", "the out-dir", "through a symlink", "reproducer", "view-op-graph"],
)
def test_an_output_inside_the_out_dir_is_refused_before_running(
    tmp_path: Path, extra: list[str], what: str, path: str
) -> None:
    source = tmp_path / "k.mlir"
    source.write_text(KERNELS)
    out = tmp_path / "plan"
    names = {"out": out, "alias": tmp_path / "alias"}
    (tmp_path / "alias").symlink_to(out.name)  # dangling until the emission
    argv = [arg.format(**names) for arg in extra]
    code, _, err = opt(str(source), "-p", f"emit-triton{{out-dir={out}}}", *argv)
    assert one_error(code, err) == (
        f"{what} '{path.format(**names)}' is inside emit-triton's out-dir '{out}', which the "
        "emission replaces; write it outside the out-dir"
    )
    assert not out.exists()  # refused before anything ran


def test_an_output_beside_the_out_dir_is_written(tmp_path: Path) -> None:
    source = tmp_path / "k.mlir"
    source.write_text(KERNELS)
    out = tmp_path / "plan"
    beside = tmp_path / "plan-ir.mlir"  # shares the out-dir's name as a prefix only
    code, _, err = opt(str(source), "-p", f"emit-triton{{out-dir={out}}}", "-o", str(beside))
    assert code == 0, err
    assert (out / "plan.json").is_file() and beside.read_text().startswith("builtin.module")


# --- compile workers and emission's temporary folder ---------------------------


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(text[text.rindex(")") + 2 :].split()[1]) == pid:
            found.append(int(entry))
    return found


def _running(pid: int) -> bool:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text[text.rindex(")") + 2 :].split()[0] != "Z"


def _is_worker(pid: int) -> bool:
    try:
        return b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_kill_9_during_aot_compilation_leaves_no_worker(tmp_path: Path) -> None:
    source = tmp_path / "k.mlir"
    source.write_text(KERNELS)
    env = dict(
        os.environ,
        TEENY_CACHE_DIR=str(tmp_path / "cache"),
        TRITON_CACHE_DIR=str(tmp_path / "triton"),  # fresh: every compile takes a while
    )
    argv = [
        sys.executable,
        "-m",
        "teeny_ir.driver.opt",
        str(source),
        "-p",
        f"emit-triton{{out-dir={tmp_path / 'plan'} archs=80 jobs=2 cache=off}}",
        "-o",
        "/dev/null",
    ]
    parent = subprocess.Popen(
        argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path
    )
    children: list[int] = []
    try:
        deadline = time.monotonic() + SECONDS
        while time.monotonic() < deadline and parent.poll() is None:
            children = _children(parent.pid)
            if sum(map(_is_worker, children)) >= 2:
                break
            time.sleep(0.05)
        assert parent.poll() is None, "teeny-opt finished before its workers were seen"
        assert sum(map(_is_worker, children)) >= 2, children
        time.sleep(0.3)  # inside the worker's start-up, or compiling
        parent.send_signal(signal.SIGKILL)
        parent.wait(SECONDS)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(map(_running, children)):
            time.sleep(0.05)
        assert not [pid for pid in children if _running(pid)], "workers outlived teeny-opt"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait(SECONDS)
        for pid in children:  # nothing of this test's left behind, whatever happened
            if _running(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_worker_whose_parent_is_gone_exits_at_start(tmp_path: Path) -> None:
    """The re-check after the watch is set: a worker whose parent died before
    it could set PR_SET_PDEATHSIG exits at once."""
    script = (
        "import os, sys\n"
        "from teeny_ir.backend.aot import _die_with_parent\n"
        "_die_with_parent(os.getppid() + 1)\n"
        "print('still alive')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=SECONDS
    )
    assert (done.returncode, done.stdout) == (1, "")


def test_a_killed_emissions_temporary_folder_is_swept_by_the_next(tmp_path: Path) -> None:
    source = tmp_path / "k.mlir"
    source.write_text(KERNELS)
    out = tmp_path / "plan"
    host = files.temp_prefix("x").split("@")[1].rstrip(".")
    stale = tmp_path / f".plan.{dead_pid()}@{host}.a1b2c3d4.emit"
    (stale / "kernels").mkdir(parents=True)
    code, _, err = opt(str(source), "-p", f"emit-triton{{out-dir={out}}}", "-o", "/dev/null")
    assert code == 0, err
    assert not stale.exists()


def test_a_plan_moved_aside_by_a_killed_emission_is_put_back(tmp_path: Path) -> None:
    """A kill between _replace's two renames leaves the previous plan only in
    the dead process's .old folder: the next emission puts it back first (and
    then replaces it as usual), so no plan is lost."""
    source = tmp_path / "k.mlir"
    source.write_text(KERNELS)
    out = tmp_path / "plan"
    code, _, err = opt(str(source), "-p", f"emit-triton{{out-dir={out}}}", "-o", "/dev/null")
    assert code == 0, err
    before = (out / "plan.json").read_bytes()
    host = files.temp_prefix("x").split("@")[1].rstrip(".")
    aside = tmp_path / f".plan.{dead_pid()}@{host}.a1b2c3d4.old"
    aside.mkdir()
    out.rename(aside / "previous")
    from teeny_ir.backend import emit

    emit._recover(out)
    assert (out / "plan.json").read_bytes() == before
    assert not aside.exists()


def test_sweep_never_follows_a_symlink(tmp_path: Path) -> None:
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "file").write_text("mine")
    host = files.temp_prefix("x").split("@")[1].rstrip(".")
    link = tmp_path / f".plan.{dead_pid()}@{host}.a1b2c3d4.emit"
    link.symlink_to(keep)
    assert files.sweep_stale(tmp_path, "plan", (".emit",)) == 1
    assert not link.is_symlink() and (keep / "file").read_text() == "mine"
