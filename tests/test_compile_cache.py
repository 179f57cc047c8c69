"""The compile cache (`teeny_ir.backend.cache`) and emit-triton's use of it.

The key and the entry format are checked without compiling anything. The
emission tests compile small variants for one arch (sm_80) with their own
``TEENY_CACHE_DIR`` and ``TRITON_CACHE_DIR``; Triton's cache is shared between
them (once a variant is compiled, "compiling" it again is Triton's cache hit,
which keeps the file fast), teeny_ir's is fresh for each test that needs it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from teeny_ir.backend import aot, cache
from teeny_ir.backend.triton_settings import COMPILE_PINS
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.render import render

ROOT = Path(__file__).resolve().parent.parent
SLICE = ROOT / "examples" / "slice" / "slice.mlir"
ELEMENTWISE = FAMILIES["elementwise"]

_ARGS = (
    'args [x = in0, y = in0, out = out0, numel = "B * 4", size1 = "1", size2 = "1", '
    'size3 = "1", size4 = "B", size5 = "4", x_stride0 = "B * 4", x_stride1 = "B * 4", '
    'x_stride2 = "B * 4", x_stride3 = "B * 4", x_stride4 = "4", x_stride5 = "1", '
    'y_stride0 = "B * 4", y_stride1 = "B * 4", y_stride2 = "B * 4", y_stride3 = "B * 4", '
    'y_stride4 = "4", y_stride5 = "1"] grid ["cdiv(B * 4, 256)", "1", "1"] warps 4 stages 1'
)
TWO_KERNELS = f"""\
func.func @forward(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {{
  %y = kernel.launch "elementwise" (%x) {{OP = "relu", BLOCK = 256}} {_ARGS} \
: (tensor<?x4xf32>) -> tensor<?x4xf32>
  %z = kernel.launch "elementwise" (%y) {{OP = "silu", BLOCK = 256}} {_ARGS} \
: (tensor<?x4xf32>) -> tensor<?x4xf32>
  func.return %z : tensor<?x4xf32>
}}
"""
"""Two small elementwise variants (relu, silu)."""


@pytest.fixture(scope="module")
def triton_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("triton-cache")


@pytest.fixture
def env(
    tmp_path: Path, triton_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    """A fresh, empty compile cache (and the module's Triton cache) for this test."""
    monkeypatch.setenv("TEENY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(triton_cache))
    yield dict(os.environ)


def entries(directory: Path) -> list[Path]:
    return sorted(directory.rglob("*.entry")) if directory.exists() else []


def opt(*argv: str) -> tuple[int, str]:
    from teeny_ir.driver.opt import run

    err = io.StringIO()
    code = run(list(argv), io.BytesIO(), io.StringIO(), err)
    return code, err.getvalue()


def emit(model: Path, out: Path, options: str = "", *flags: str) -> None:
    pipeline = f"emit-triton{{out-dir={out} archs=80 jobs=1{options}}}"
    if model == SLICE:
        pipeline = f"teeny-inference,{pipeline}"
    code, err = opt(str(model), "-p", pipeline, "-o", os.devnull, *flags)
    assert code == 0, err


def files_of(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def count_compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The kernel names `aot.run_job` compiles (in this process: jobs=1)."""
    compiled: list[str] = []
    real: Callable[[aot.Job], aot.CompiledVariant] = aot.run_job

    def counting(job: aot.Job) -> aot.CompiledVariant:
        compiled.append(job.kernel_name)
        return real(job)

    monkeypatch.setattr(aot, "run_job", counting)
    return compiled


# --- the key ---------------------------------------------------------------

SOURCE = render(ELEMENTWISE, "elementwise_0", {"OP": "relu", "BLOCK": 256})
BASE: dict[str, object] = {
    "source": SOURCE,
    "kernel_name": "elementwise_0",
    "family": ELEMENTWISE,
    "constexprs": {"OP": "relu", "BLOCK": 256},
    "arch": 80,
    "num_warps": 4,
    "num_stages": 1,
    "environ": {},
    "version": "3.9.0",
}


def key(**changes: object) -> str:
    return cache.variant_key(**(BASE | changes))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "changes",
    [
        {"source": SOURCE + "\n"},
        {"kernel_name": "elementwise_1"},
        {"family": FAMILIES["channel_affine"]},
        {"constexprs": {"OP": "silu", "BLOCK": 256}},
        {"constexprs": {"OP": "relu", "BLOCK": 512}},
        {"constexprs": {"OP": "relu", "BLOCK": "256"}},
        {"arch": 90},
        {"num_warps": 8},
        {"num_stages": 2},
        {"version": "3.10.0"},
        {"environ": {"TRITON_DEFAULT_FP_FUSION": "0"}},
        {"environ": {"TRITON_DISABLE_LINE_INFO": "0"}},
        {"environ": {"TRITON_F32_DEFAULT": "ieee"}},
    ],
    ids=lambda changes: ",".join(f"{k}={v}"[:40] for k, v in changes.items()),
)
def test_key_changes_with_each_field(changes: dict[str, object]) -> None:
    assert key(**changes) != key()


def test_key_changes_with_the_format_version(monkeypatch: pytest.MonkeyPatch) -> None:
    before = key()
    monkeypatch.setattr(cache, "FORMAT_VERSION", cache.FORMAT_VERSION + 1)
    assert key() != before


def test_key_is_stable_and_ignores_what_does_not_change_the_code() -> None:
    assert key() == key() and len(key()) == 64
    assert key(constexprs={"BLOCK": 256, "OP": "relu"}) == key()
    assert key(environ=dict(COMPILE_PINS)) == key()  # the pins, as in effect when unset
    where = {"TRITON_CACHE_DIR": "/elsewhere", "HOME": "/x", "TRITON_ALWAYS_COMPILE": "1"}
    assert key(environ=where) == key()


def test_triton_version_is_read_without_importing_triton() -> None:
    script = (
        "import sys\nfrom teeny_ir.backend import cache\n"
        "assert cache.triton_version() == '3.9.0', cache.triton_version()\n"
        "assert 'triton' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=ROOT)


# --- entries ---------------------------------------------------------------

VARIANT = aot.CompiledVariant(
    arch=80,
    name="elementwise_0",
    num_warps=4,
    num_stages=1,
    shared=128,
    cubin=b"\x7fELF" + bytes(range(256)) * 4,
    ptx=".version 8.7\n.target sm_80\n",
    cubin_sha256=hashlib.sha256(b"\x7fELF" + bytes(range(256)) * 4).hexdigest(),
)


def test_store_then_lookup_is_a_hit(tmp_path: Path) -> None:
    k = key()
    assert cache.lookup(k, tmp_path) is None
    assert cache.store(k, VARIANT, tmp_path)
    assert cache.lookup(k, tmp_path) == VARIANT
    assert cache.lookup(key(arch=90), tmp_path) is None
    assert [p.name for p in tmp_path.rglob("*")] == [k[:2], f"{k}.entry"]  # no temp files


def _corrupt_variants(data: bytes) -> list[bytes]:
    return [
        data[: len(data) // 2],  # truncated
        data[:-1],
        b"",
        data[:-5] + bytes(b ^ 0xFF for b in data[-5:]),  # flipped payload bytes
        data.replace(b'"shared": 128', b'"shared": 999'),  # a metadata field changed
        b"garbage\n" + data,
        data.replace(b"compile-cache 1 ", b"compile-cache 0 "),
    ]


def test_a_corrupt_entry_is_a_miss_and_is_rewritten(tmp_path: Path) -> None:
    k = key()
    cache.store(k, VARIANT, tmp_path)
    path = cache.entry_path(k, tmp_path)
    good = path.read_bytes()
    for bad in _corrupt_variants(good):
        assert bad != good
        path.write_bytes(bad)
        assert cache.lookup(k, tmp_path) is None
        assert cache.store(k, VARIANT, tmp_path)
        assert path.read_bytes() == good and cache.lookup(k, tmp_path) == VARIANT
    # an entry copied under another key is not that key's entry
    other = cache.entry_path(key(arch=90), tmp_path)
    other.parent.mkdir(parents=True, exist_ok=True)
    other.write_bytes(good)
    assert cache.lookup(key(arch=90), tmp_path) is None


def test_an_unwritable_cache_is_no_cache(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert not cache.store(key(), VARIANT, blocker)
    assert cache.lookup(key(), blocker) is None


def test_cache_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    assert cache.cache_dir({"TEENY_CACHE_DIR": "/some/where"}) == Path("/some/where")
    default = cache.cache_dir({})
    assert default.name == "teeny_ir" and default.is_absolute()


# --- emission --------------------------------------------------------------


def test_warm_emission_is_byte_identical_and_does_not_import_triton(
    env: dict[str, str], tmp_path: Path, count_compiles: list[str]
) -> None:
    root = Path(env["TEENY_CACHE_DIR"])
    emit(SLICE, tmp_path / "cold")
    assert count_compiles and len(entries(root)) == len(count_compiles)
    script = (
        "import io, os, sys\n"
        "from teeny_ir.driver.opt import run\n"
        "err = io.StringIO()\n"
        "code = run(sys.argv[1:], io.BytesIO(), io.StringIO(), err)\n"
        "assert code == 0, err.getvalue()\n"
        "assert 'triton' not in sys.modules, 'a warm emission imported triton'\n"
    )
    pipeline = f"teeny-inference,emit-triton{{out-dir={tmp_path / 'warm'} archs=80}}"
    subprocess.run(
        [sys.executable, "-c", script, str(SLICE), "-p", pipeline, "-o", os.devnull],
        check=True,
        cwd=ROOT,
        env=env,
    )
    assert files_of(tmp_path / "warm") == files_of(tmp_path / "cold")
    # and in this process: all hits, nothing compiled
    compiled = len(count_compiles)
    emit(SLICE, tmp_path / "again")
    assert len(count_compiles) == compiled
    assert files_of(tmp_path / "again") == files_of(tmp_path / "cold")


def test_a_corrupt_entry_is_recompiled(
    env: dict[str, str], tmp_path: Path, count_compiles: list[str]
) -> None:
    root = Path(env["TEENY_CACHE_DIR"])
    model = tmp_path / "two.mlir"
    model.write_text(TWO_KERNELS)
    emit(model, tmp_path / "cold")
    assert count_compiles == ["elementwise_0", "elementwise_1"]
    first, second = entries(root)
    first.write_bytes(first.read_bytes()[:100])  # truncated
    emit(model, tmp_path / "warm")
    assert len(count_compiles) == 3  # only the corrupt one again
    assert all(cache.lookup(p.stem, root) is not None for p in (first, second))
    assert files_of(tmp_path / "warm") == files_of(tmp_path / "cold")


def test_no_cache_writes_nothing(env: dict[str, str], tmp_path: Path) -> None:
    root = Path(env["TEENY_CACHE_DIR"])
    model = tmp_path / "two.mlir"
    model.write_text(TWO_KERNELS)
    emit(model, tmp_path / "flag", "", "--no-cache")
    emit(model, tmp_path / "option", " cache=off")
    assert not root.exists() or not any(root.iterdir())
    assert files_of(tmp_path / "flag") == files_of(tmp_path / "option")
    emit(model, tmp_path / "on")
    assert len(entries(root)) == 2


def test_concurrent_writers_into_one_empty_cache(env: dict[str, str], tmp_path: Path) -> None:
    """Four processes emit the same two variants at once (each with its own
    empty Triton cache, so each really compiles) into one empty compile cache."""
    root = Path(env["TEENY_CACHE_DIR"])
    model = tmp_path / "two.mlir"
    model.write_text(TWO_KERNELS)
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "teeny_ir.driver.opt",
                str(model),
                "-p",
                f"emit-triton{{out-dir={tmp_path / f'out{i}'} archs=80 jobs=1}}",
                "-o",
                os.devnull,
            ],
            cwd=ROOT,
            env=env | {"TRITON_CACHE_DIR": str(tmp_path / f"triton{i}")},
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    for process in processes:
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
    found = entries(root)
    assert len(found) == 2
    assert all(cache.lookup(p.stem, root) is not None for p in found)
    assert [p for p in root.rglob("*") if p.is_file() and p.suffix != ".entry"] == []
    outputs = [files_of(tmp_path / f"out{i}") for i in range(4)]
    assert all(output == outputs[0] for output in outputs)


# --- parallel compilation ----------------------------------------------------


def _job(path: Path, name: str, constexprs: dict[str, int | str]) -> aot.Job:
    return aot.Job(path, name, ELEMENTWISE, constexprs, 80, 4, 1)


def test_compile_all_reports_the_first_failing_job(tmp_path: Path) -> None:
    """Contract errors fail before triton is imported: cheap even in workers."""
    path = tmp_path / "elementwise_0.py"
    path.write_text(SOURCE)
    bad = [_job(path, "elementwise_0", {"OP": "relu"}), _job(path, "elementwise_0", {})]
    for workers in (1, 2):
        with pytest.raises(aot.JobError, match="missing constexpr 'BLOCK'") as raised:
            aot.compile_all(bad, workers)
        assert raised.value.index == 0


def test_compile_all_in_worker_processes_keeps_the_order(
    env: dict[str, str], tmp_path: Path
) -> None:
    jobs = []
    for i, op in enumerate(("relu", "silu")):
        path = tmp_path / f"elementwise_{i}.py"
        constexprs: dict[str, int | str] = {"OP": op, "BLOCK": 256}
        path.write_text(render(ELEMENTWISE, path.stem, constexprs))
        jobs.append(_job(path, path.stem, constexprs))
    results = aot.compile_all(jobs, 2)
    assert [r.name for r in results] == ["elementwise_0", "elementwise_1"]
    assert all(r.cubin[:4] == b"\x7fELF" for r in results)


def test_a_script_without_a_main_guard_runs_once(env: dict[str, str], tmp_path: Path) -> None:
    """Spawned workers are prepared without the caller's main module: a script
    that compiles at its top level is not re-run by each worker."""
    model = tmp_path / "two.mlir"
    model.write_text(TWO_KERNELS)
    ran = tmp_path / "ran.txt"
    script = tmp_path / "compile_at_top_level.py"
    script.write_text(
        "import io, os, sys\n"
        "from teeny_ir.driver.opt import run\n"
        f"with open({str(ran)!r}, 'a') as log:\n"
        "    log.write('ran\\n')\n"
        f"pipeline = 'emit-triton{{out-dir={tmp_path / 'out'} archs=80 jobs=2 cache=off}}'\n"
        f"err = io.StringIO()\n"
        f"code = run([{str(model)!r}, '-p', pipeline, '-o', os.devnull], io.BytesIO(), "
        "io.StringIO(), err)\n"
        "sys.stderr.write(err.getvalue())\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert ran.read_text() == "ran\n", done.stderr
    assert "bootstrapping" not in done.stderr
    assert len(list((tmp_path / "out").rglob("*.cubin"))) == 2


def test_no_progress_bar_off_a_terminal(tmp_path: Path) -> None:
    stream = io.StringIO()
    assert aot.compile_all([], 1, stream) == []
    assert stream.getvalue() == ""


def test_jobs_must_not_be_negative(env: dict[str, str], tmp_path: Path) -> None:
    model = tmp_path / "two.mlir"
    model.write_text(TWO_KERNELS)
    code, err = opt(str(model), "-p", f"emit-triton{{out-dir={tmp_path / 'o'} jobs=-1}}")
    assert code == 1 and "jobs must be 0 (one per CPU) or more, got -1" in err


def test_cached_variants_are_checked_and_errors_name_their_variant(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tmp_path / "two.mlir"
    model.write_text(TWO_KERNELS)
    root = Path(env["TEENY_CACHE_DIR"])
    silu: dict[str, int | str] = {"BLOCK": 256, "OP": "silu"}
    source = render(ELEMENTWISE, "elementwise_1", silu)
    k = cache.variant_key(source, "elementwise_1", ELEMENTWISE, silu, 80, 4, 1)
    huge = dataclasses.replace(VARIANT, name="elementwise_1", shared=10**6)
    cache.store(k, huge, root)
    code, err = opt(str(model), "-p", f"emit-triton{{out-dir={tmp_path / 'o'} archs=80 jobs=1}}")
    assert code == 1
    assert "kernel variant 'elementwise_1' for sm_80: kernel 'elementwise_1' needs 1000000" in err

    def failing(jobs: list[aot.Job], workers: int = 0) -> list[aot.CompiledVariant]:
        assert [job.kernel_name for job in jobs] == ["elementwise_0", "elementwise_1"]
        raise aot.JobError("boom", 1)

    monkeypatch.setattr(aot, "compile_all", failing)
    code, err = opt(str(model), "-p", f"emit-triton{{out-dir={tmp_path / 'o'} archs=80 cache=off}}")
    assert code == 1 and "kernel variant 'elementwise_1' for sm_80: boom" in err


def test_a_stand_in_compiler_is_never_cached(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a test's stand-in for the compiler returns (here: another kernel
    name) is used for that emission but never stored; nor is a variant whose
    cubin does not match its hash."""
    model = tmp_path / "two.mlir"
    model.write_text(TWO_KERNELS)

    def stand_in(job: aot.Job) -> aot.CompiledVariant:
        return aot.CompiledVariant(80, "k", 4, 1, 0, b"x", "", hashlib.sha256(b"x").hexdigest())

    monkeypatch.setattr(aot, "run_job", stand_in)
    emit(model, tmp_path / "o")
    assert entries(Path(env["TEENY_CACHE_DIR"])) == []
    assert not cache.store(key(), dataclasses.replace(VARIANT, cubin=b"other"), tmp_path)
