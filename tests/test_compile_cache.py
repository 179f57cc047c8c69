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
import json
import os
import random
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from teeny_ir.backend import aot, cache
from teeny_ir.backend.triton_settings import COMPILE_PINS
from teeny_ir.core import expressions
from teeny_ir.kernels import validator
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


def test_two_cold_compiles_write_identical_plan_directories(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same model compiled twice from nothing (no compile cache, each with
    its own empty Triton cache): in this process, and in two worker processes
    that take the variants largest first - the same bytes, file for file."""
    model = tmp_path / "two.mlir"
    model.write_text(TWO_KERNELS)
    outputs = []
    for jobs, name in ((1, "serial"), (2, "parallel")):
        monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / f"triton-{name}"))
        out = tmp_path / name
        code, err = opt(
            str(model),
            "-p",
            f"emit-triton{{out-dir={out} archs=80 jobs={jobs} cache=off}}",
            "-o",
            os.devnull,
        )
        assert code == 0, err
        outputs.append(files_of(out))
    assert outputs[0] == outputs[1]
    assert sorted(outputs[0]) == [
        "kernels/elementwise_0.py",
        "kernels/elementwise_0.sm80.cubin",
        "kernels/elementwise_1.py",
        "kernels/elementwise_1.sm80.cubin",
        "plan.json",
    ]


def test_the_pool_takes_the_largest_tiles_first_and_returns_in_job_order(
    env: dict[str, str], tmp_path: Path
) -> None:
    jobs = []
    for i, block in enumerate((256, 1024, 256)):
        path = tmp_path / f"elementwise_{i}.py"
        constexprs: dict[str, int | str] = {"OP": "relu", "BLOCK": block}
        path.write_text(render(ELEMENTWISE, path.stem, constexprs))
        jobs.append(_job(path, path.stem, constexprs))
    assert aot._largest_first(jobs) == [1, 0, 2]  # equals keep their order
    gemm = aot.Job(
        tmp_path / "g.py", "g", FAMILIES["conv1x1_gemm"], CONV1X1_TILES, 80, 4, 2
    )  # 64*64 + 64*16 + 16*64 elements, 2 stages: before a 1024-element block
    assert aot._largest_first([*jobs, gemm]) == [3, 1, 0, 2]
    results = aot.compile_all(jobs, 2)
    assert [r.name for r in results] == ["elementwise_0", "elementwise_1", "elementwise_2"]


CONV1X1_TILES: dict[str, int | str] = {
    "BLOCK_M": 64,
    "BLOCK_N": 64,
    "BLOCK_K": 16,
    "GROUP_M": 8,
    "ACTIVATION": "silu",
}


# --- compile time: what the front end proves and checks ---------------------


def _lowered_contracts(model: Path) -> list[tuple[validator.LaunchContract, tuple[int, ...]]]:
    """The distinct (canonical) contracts lowering ``model`` proves, with the
    batches each is proven for."""
    seen: dict[tuple[validator.LaunchContract, tuple[int, ...]], None] = {}
    real = validator.canonical

    def spy(contract: validator.LaunchContract) -> validator.LaunchContract:
        canonical = real(contract)
        seen[canonical, validator.COVERAGE_BATCHES] = None
        return canonical

    validator._validate.cache_clear()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(validator, "canonical", spy)
        code, err = opt(str(model), "-p", "teeny-inference", "-o", os.devnull)
    assert code == 0, err
    return list(seen)


def _outcome(contract: validator.LaunchContract, batches: tuple[int, ...], symbolic: bool) -> str:
    """What `validator.validate` says of ``contract``: ``ok`` or the message,
    with the symbolic proof over a range, or batch by batch only."""
    validator._validate.cache_clear()
    with pytest.MonkeyPatch.context() as patch:
        if not symbolic:
            patch.setattr(validator, "_proven_over_range", lambda *args: False)
        try:
            validator.validate(contract, batches)
        except validator.ContractError as err:
            return f"refused: {err}"
        except expressions.ExpressionError as err:
            return f"expression error: {err}"
        finally:
            validator._validate.cache_clear()
    return "ok"


_NEW_EXPRESSIONS = (
    "B", "B * 3", "B - 1", "0", "7", "B * B", "cdiv(B, 3)", "floordiv(B * 7, 4)", "max(B, 3)",
    "min(B, 64)", "2147483647 * B", "2147483648", "64 - B", "cdiv(B * 16, 64)",
    "floordiv(64, B)", "B * 65536",
)  # fmt: skip


def _mutated(contract: validator.LaunchContract, rng: random.Random) -> validator.LaunchContract:
    """``contract`` with one dim, grid entry, shape entry or batch stride changed
    (a batch-stride dim made to hold at B = 1 only, among others)."""
    kind = rng.randrange(5)
    dims = [i for i, (_, key) in enumerate(contract.args) if not key.startswith("%")]
    stride_dims = set(FAMILIES[contract.family].batch_strides.values())
    strided = [i for i in dims if contract.args[i][0] in stride_dims]
    if kind == 4 and strided:
        index = rng.choice(strided)
        name, text = contract.args[index]
        args = list(contract.args)
        args[index] = (name, rng.choice([f"B * ({text})", f"{text} + B - 1", f"{text} + 64 - B"]))
        return dataclasses.replace(contract, args=tuple(args))
    if kind == 0 and dims:
        index = rng.choice(dims)
        name, text = contract.args[index]
        new = rng.choice([*_NEW_EXPRESSIONS, f"{text} + 1", f"({text}) * 2", f"B * ({text})"])
        args = list(contract.args)
        args[index] = (name, new)
        return dataclasses.replace(contract, args=tuple(args))
    if kind == 1:
        index = rng.randrange(3)
        grid = list(contract.grid)
        grid[index] = rng.choice([*_NEW_EXPRESSIONS, f"{grid[index]} - 1", "B * 70000"])
        return dataclasses.replace(contract, grid=tuple(grid))
    if kind == 2 and contract.strides:
        index = rng.randrange(len(contract.strides))
        strides = list(contract.strides)
        key, stride = strides[index]
        strides[index] = (key, stride + rng.choice([-1, 1, 64]))
        return dataclasses.replace(contract, strides=tuple(strides))
    index = rng.randrange(len(contract.tensors))
    key, shape = contract.tensors[index]
    if not shape:
        return contract
    at = rng.randrange(len(shape))
    choices: list[validator.Dim] = [1, "B + 1", "B - 1", "2 * B", "floordiv(B + 1, 2)"]
    old_dim = shape[at]
    if isinstance(old_dim, int):
        choices += [old_dim + 1, old_dim - 1]
    new_dim = rng.choice(choices)
    tensors = list(contract.tensors)
    tensors[index] = (key, (*shape[:at], new_dim, *shape[at + 1 :]))
    return dataclasses.replace(contract, tensors=tuple(tensors))


def test_launch_proofs_over_the_batch_range_are_symbolic_and_agree_with_batch_by_batch() -> None:
    """Every launch YOLOv8n (and the slice model) lowers to is proven for B =
    1..64 without a batch-by-batch proof, and on those launches with one
    quantity changed (a dim, a grid entry, a shape entry, a batch stride:
    most then unsafe) the validator says exactly what the batch-by-batch proof
    alone says, message for message, for 1..64 and for 3..8."""
    contracts = _lowered_contracts(ROOT / "examples" / "yolov8n" / "yolov8n.mlir")
    contracts += _lowered_contracts(SLICE)
    proven: list[bool] = []
    real = validator._proven_over_range

    def spy(*args: Any) -> bool:
        proven.append(real(*args))
        return proven[-1]

    validator._validate.cache_clear()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(validator, "_proven_over_range", spy)
        for contract, batches in contracts:
            validator.validate(contract, batches)
    assert len(proven) == len(contracts) > 100 and all(proven)

    rng = random.Random(26)
    refused = 0
    for contract, _ in contracts * 2:
        mutated = _mutated(contract, rng)
        for batches in (validator.COVERAGE_BATCHES, tuple(range(3, 9))):
            symbolic = _outcome(mutated, batches, symbolic=True)
            assert symbolic == _outcome(mutated, batches, symbolic=False), mutated
            refused += symbolic != "ok"
    assert refused > len(contracts) // 2  # the mutations mostly break the launch


def _random_expression(rng: random.Random, depth: int = 0) -> expressions.Expr:
    if depth > 3 or rng.random() < 0.3:
        return (
            expressions.Sym("B") if rng.random() < 0.5 else expressions.Num(rng.randrange(-9, 70))
        )
    lhs, rhs = _random_expression(rng, depth + 1), _random_expression(rng, depth + 1)
    if rng.random() < 0.5:
        return expressions.BinOp(rng.choice("+-*"), lhs, rhs)
    return expressions.Call(rng.choice(expressions.FUNCTIONS), lhs, rhs)


def test_the_symbolic_forms_are_exact_on_their_range() -> None:
    """Wherever the validator puts an expression in its normal form, the form
    equals the expression at every batch of the range, and the bounds it takes
    at the range's ends are the true least and greatest values."""
    rng = random.Random(26)
    formed = 0
    for _ in range(4000):
        expr = _random_expression(rng)
        span = rng.choice([(1, 64), (3, 8), (1, 2)])
        form = validator._form(expr, {"B": validator._BATCH_FORM}, span)
        batches = range(span[0], span[1] + 1)
        if form is None:
            continue
        formed += 1
        values = [expressions.evaluate(expr, {"B": b}) for b in batches]
        assert [form.at(b) for b in batches] == values, expressions.format_expr(expr)
        bounds = validator._range(form, span)
        if bounds is not None:
            assert bounds == (min(values), max(values)), expressions.format_expr(expr)
    assert formed > 1000


def test_the_compiled_schema_check_never_passes_what_jsonschema_refuses(
    env: dict[str, str], tmp_path: Path
) -> None:
    """A real plan passes the compiled check (so jsonschema is not needed for
    it); each of hundreds of plans with one entry changed passes it only if
    jsonschema finds no error in it either."""
    import jsonschema

    from teeny_ir.backend.plan import SCHEMA
    from teeny_ir.backend.schema_check import fits_schema

    emit(SLICE, tmp_path / "plan")
    plan = json.loads((tmp_path / "plan" / "plan.json").read_text())
    check = jsonschema.Draft202012Validator(SCHEMA)
    assert fits_schema(plan) and not list(check.iter_errors(plan))
    rng = random.Random(26)
    replacements: list[object] = [
        None, True, 0, -1, 1.0, 2.5, 2**32, "", "x" * 1001, "a b", "f16", [], {}, [1], {"x": 1},
    ]  # fmt: skip
    passed = refused = 0
    for _ in range(600):
        mutated = json.loads(json.dumps(plan))
        path, node = _random_node(mutated, rng)
        parent, key = path[-1]
        choice = rng.randrange(3)
        if choice == 0 and isinstance(parent, dict):
            del parent[key]
        elif choice == 1 and isinstance(node, dict):
            node[rng.choice(["extra", "name", "shape"])] = rng.choice(replacements)
        else:
            parent[key] = rng.choice(replacements)
        fits = fits_schema(mutated)
        valid = not list(check.iter_errors(mutated))
        assert valid or not fits, path
        passed += fits
        refused += not valid
    assert passed > 0 and refused > 300


def _random_node(document: Any, rng: random.Random) -> tuple[list[tuple[Any, Any]], Any]:
    """A random entry of ``document`` below the top, with the path of
    (container, key) pairs to it."""
    path: list[tuple[Any, Any]] = []
    node = document
    while isinstance(node, (dict, list)) and node and (not path or rng.random() < 0.7):
        key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
        path.append((node, key))
        node = node[key]
    return path, node
