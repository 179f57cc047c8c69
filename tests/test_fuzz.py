"""Deterministic fuzzing of the teeny-opt driver.

Seeds: every ``lit_tests/**/*.mlir`` file plus a small built-in corpus (so
that enough variants exist even while lit_tests/ is nearly empty). From them
``random.Random(1234)`` derives `N_CASES` mutated inputs (byte flips,
insertions of punctuation and non-UTF-8 bytes, deletions, truncation, line
shuffles and duplication, token swaps and insertions), each run in-process
through ``teeny_ir.driver.opt.run`` with a varying command line (always with
``--allow-unregistered-dialect`` when the seed mentions that flag).

Every case must: return 0 or 1, print no traceback, let no exception escape,
print at least one ``error:`` line when it returns 1, emit no Python warning
and leave the recursion limit as it was. A case slower than `HANG_SECONDS` is
reported as a hang. A failure prints the case's description, its command
line and ``repr`` of the mutated input, so it can be reproduced with::

    teeny_ir.driver.opt.run(argv, io.BytesIO(data), io.StringIO(), io.StringIO())
"""

from __future__ import annotations

import io
import random
import re
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

from teeny_ir.driver.opt import run

ROOT = Path(__file__).resolve().parents[1]
SEED = 1234
N_CASES = 2400
CHUNK = 100
HANG_SECONDS = 5.0
MAX_SEED_BYTES = 16_384
"""Seeds longer than this are cut (at a line end) to keep the run short."""

PUNCTUATION = b"<>(){}[]%^@#!:=,\"'\\"
NON_UTF8 = [b"\xff", b"\xfe", b"\x80", b"\xc3", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82"]
TOKENS = [
    b"^bb0:",
    b"^bb1:",
    b"^bb-1",
    b"%0",
    b"%1",
    b"%0:2",
    b"%0:99999999999999999",
    b"@f",
    b"{",
    b"}",
    b"(",
    b")",
    b"<",
    b">",
    b"[",
    b"]",
    b"->",
    b":",
    b",",
    b"=",
    b'"',
    b"\\",
    b"// -----\n",
    b"\n// -----\n",
    b"{-#",
    b"#-}",
    b"loc(",
    b"dense<",
    b"tensor<",
    b"i8000000000",
    b"i0",
    b"f80",
    b"tensor<99999999999999x3xf32>",
    b"?x",
    b"0x7FF00000000000001",
    b"9" * 400,
    b"-",
    b"tuple<" * 150,
    b"[" * 150,
    b"({" * 60,
    b"//",
    b"/*",
    b"\t",
    b"\r\n",
    b"\x00",
    b"\xff",
    b"arith.constant",
    b"func.func",
    b"cf.br",
    b'"test.br"() [^bb1] : () -> ()',
    b"return",
    b"graph.silu",
    b'"test.op"()',
    b"// expected-error {{x}}",
    b"// expected-error @+1 {{",
    b"true",
    b"unit",
    b"external_resources:",
    b"dialect_resources:",
    b"mlir_reproducer",
    b'"' + b"a" * 80,
]
FLAG_SETS: list[tuple[str, ...]] = [
    (),
    (),
    ("-p", "cse,canonicalize,dce"),
    ("-p", "cse,canonicalize,dce"),
    ("--pass-pipeline=builtin.module(func.func(cse))",),
    ("--verify-diagnostics", "--split-input-file"),
    ("--verify-diagnostics", "--split-input-file"),
    ("--allow-unregistered-dialect",),
    ("--mlir-print-op-generic", "--mlir-print-debuginfo"),
    ("--allow-unregistered-dialect", "-p", "cse,dce"),
]
ERROR_LINE = re.compile(r"(^|\s)error: ", re.M)
UNREGISTERED = "--allow-unregistered-dialect"
"""Added to every case (and seed run) whose seed mentions it, e.g. in a RUN line."""

# --- built-in corpus ------------------------------------------------------------

BUILTIN_CORPUS: dict[str, str] = {
    "builtin/arith.mlir": """\
func.func @arith(%a: i32, %b: i32) -> i32 {
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %0 = arith.addi %a, %c1 : i32
  %1 = arith.muli %0, %c2 : i32
  %2 = arith.addi %a, %c1 : i32
  %3 = arith.subi %1, %2 : i32
  %4 = arith.cmpi slt, %3, %b : i32
  %5 = arith.select %4, %3, %b : i32
  %f = arith.constant 1.500000e+00 : f32
  %g = arith.addf %f, %f : f32
  return %5 : i32
}

func.func @caller(%x: i32) -> i32 {
  %0 = func.call @arith(%x, %x) : (i32, i32) -> i32
  return %0 : i32
}
""",
    "builtin/cfg.mlir": """\
// RUN: teeny-opt %s --allow-unregistered-dialect
func.func @loop(%n: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  "test.br"(%c0) [^head] : (i32) -> ()
^head(%i: i32):
  %done = arith.cmpi sge, %i, %n : i32
  "test.cond_br"(%done) [^exit, ^body] : (i1) -> ()
^body:
  %next = arith.addi %i, %c1 : i32
  "test.br"(%next) [^head] : (i32) -> ()
^exit:
  return %i : i32
}

"test.op"() ({
^bb0(%x: i32):
  %y = "test.def"(%x) : (i32) -> i32
  "test.br"() [^bb1] : () -> ()
^bb1:
  "test.use"(%y) : (i32) -> ()
}) : () -> ()
""",
    "builtin/graph.mlir": """\
func.func @block(%x: tensor<?x3x8x8xf32>) -> tensor<?x16x4x4xf32> {
  %w = graph.param "model.0.conv.weight" : tensor<16x3x3x3xf32>
  %b = graph.param "model.0.conv.bias" : tensor<16xf32>
  %g = graph.param "model.0.bn.weight" : tensor<16xf32>
  %be = graph.param "model.0.bn.bias" : tensor<16xf32>
  %m = graph.param "model.0.bn.running_mean" : tensor<16xf32>
  %v = graph.param "model.0.bn.running_var" : tensor<16xf32>
  %c = graph.conv2d %x, %w, %b strides [2, 2] padding [1, 1, 1, 1] : (tensor<?x3x8x8xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<?x16x4x4xf32>
  %n = graph.batch_norm %c, %g, %be, %m, %v eps 1.000000e-03 : (tensor<?x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x16x4x4xf32>
  %s = graph.silu %n : tensor<?x16x4x4xf32>
  %s2 = graph.silu %n : tensor<?x16x4x4xf32>
  %a = graph.add %s, %s2 : (tensor<?x16x4x4xf32>, tensor<?x16x4x4xf32>) -> tensor<?x16x4x4xf32>
  return %a : tensor<?x16x4x4xf32>
}

func.func @train(%x: tensor<2x4x3x3xf32>, %p: tensor<4xf32>) -> (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>) {
  %y, %rm, %rv = graph.batch_norm %x, %p, %p, %p, %p momentum 2.000000e-01 training : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
  %w = graph.param "w" : tensor<4x1x3x3xf32>
  %c = graph.conv2d %y, %w dilation [1, 1] groups 4 : (tensor<2x4x3x3xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x1x1xf32>
  %z = graph.add %c, %p : (tensor<2x4x1x1xf32>, tensor<4xf32>) -> tensor<2x4x1x4xf32>
  return %y, %rm, %rv : tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>
}
""",
    "builtin/generic.mlir": """\
"builtin.module"() ({
  "func.func"() <{function_type = (tensor<2x2xi32>) -> i32, sym_name = "g"}> ({
  ^bb0(%t: tensor<2x2xi32>):
    %0 = "arith.constant"() <{value = dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>}> : () -> tensor<2x2xi32>
    %1 = "arith.constant"() <{value = 0x7FC00000 : f32}> : () -> f32
    %2 = "arith.constant"() <{value = -7 : i32}> {note = "a\\"b\\\\c\\0A", flag, arr = [1, "s", [i1, f16]], d = {x = 1 : i64}} : () -> i32
    "func.return"(%2) : (i32) -> ()
  }) {sym_visibility = "private", ty = tuple<i32, f32>} : () -> ()
}) : () -> ()
""",
    "builtin/split-diagnostics.mlir": """\
func.func @ok(%a: i64) -> i64 {
  return %a : i64
}

// -----

// expected-error @+1 {{integer bitwidth is limited}}
func.func @wide(%a: i8000000000) {
  return
}

// -----

func.func @bad() -> i64 {
  %0 = arith.constant 1 : i32
  // expected-error @+1 {{'func.return' op}}
  return %0 : i32
}
""",
    "builtin/trailer.mlir": """\
func.func @f(%a: f32) -> f32 {
  %0 = arith.mulf %a, %a : f32 loc(fused["x.py":1:2, "y.py":3:4])
  return %0 : f32 loc("orig.py":3:7)
} loc(unknown)

{-# external_resources: { mlir_reproducer: { pipeline: "builtin.module(cse)", disable_threading: true, verify_each: true } } #-}
""",
}


# --- mutations ---------------------------------------------------------------------


def _pos(rng: random.Random, data: bytes) -> int:
    return rng.randrange(len(data) + 1)


def flip_bytes(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    if not data:
        return bytes([rng.randrange(256)]), "flip(empty)"
    buf = bytearray(data)
    count = rng.randint(1, 4)
    for _ in range(count):
        buf[rng.randrange(len(buf))] = rng.randrange(256)
    return bytes(buf), f"flip x{count}"


def insert_punctuation(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    at = _pos(rng, data)
    piece = bytes([rng.choice(PUNCTUATION)]) * rng.choice([1, 1, 1, 2, 3])
    return data[:at] + piece + data[at:], f"insert {piece!r} @{at}"


def insert_non_utf8(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    at = _pos(rng, data)
    piece = rng.choice(NON_UTF8)
    return data[:at] + piece + data[at:], f"insert {piece!r} @{at}"


def insert_random_bytes(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    at = _pos(rng, data)
    piece = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
    return data[:at] + piece + data[at:], f"insert {piece!r} @{at}"


def insert_token(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    at = _pos(rng, data)
    piece = rng.choice(TOKENS)
    return data[:at] + piece + data[at:], f"insert token {piece[:20]!r} @{at}"


def delete_bytes(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    if not data:
        return data, "delete(empty)"
    at = rng.randrange(len(data))
    count = rng.randint(1, 8)
    return data[:at] + data[at + count :], f"delete {count} @{at}"


def truncate(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    at = _pos(rng, data)
    return data[:at], f"truncate @{at}"


def shuffle_lines(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    lines = data.split(b"\n")
    if len(lines) < 2:
        return data, "shuffle(1 line)"
    start = rng.randrange(len(lines) - 1)
    end = min(len(lines), start + rng.randint(2, 6))
    window = lines[start:end]
    rng.shuffle(window)
    lines[start:end] = window
    return b"\n".join(lines), f"shuffle lines {start + 1}-{end}"


def duplicate_line(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    lines = data.split(b"\n")
    index = rng.randrange(len(lines))
    target = rng.randrange(len(lines) + 1)
    lines.insert(target, lines[index])
    return b"\n".join(lines), f"duplicate line {index + 1} before {target + 1}"


def delete_line(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    lines = data.split(b"\n")
    index = rng.randrange(len(lines))
    del lines[index]
    return b"\n".join(lines), f"delete line {index + 1}"


_TOKEN = re.compile(rb"\s+|[%^@#!]?[\w.$-]+|\"(?:[^\"\\\n]|\\.)*\"|.", re.S)


def swap_tokens(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    tokens = _TOKEN.findall(data)
    words = [i for i, t in enumerate(tokens) if not t.isspace()]
    if len(words) < 2:
        return data, "swap(too few tokens)"
    i, j = rng.sample(words, 2)
    tokens[i], tokens[j] = tokens[j], tokens[i]
    return b"".join(tokens), f"swap tokens {tokens[j][:20]!r} <-> {tokens[i][:20]!r}"


def duplicate_token(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    tokens = _TOKEN.findall(data)
    if not tokens:
        return data, "dup-token(empty)"
    i = rng.randrange(len(tokens))
    j = rng.randrange(len(tokens) + 1)
    tokens.insert(j, tokens[i])
    return b"".join(tokens), f"copy token {tokens[j][:20]!r} to #{j}"


MUTATORS = [
    flip_bytes,
    insert_punctuation,
    insert_punctuation,
    insert_non_utf8,
    insert_random_bytes,
    insert_token,
    insert_token,
    delete_bytes,
    truncate,
    shuffle_lines,
    duplicate_line,
    delete_line,
    swap_tokens,
    swap_tokens,
    duplicate_token,
]


# --- cases --------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    index: int
    source: str
    mutations: str
    argv: tuple[str, ...]
    data: bytes

    def describe(self, limit: int = 1500) -> str:
        shown = repr(self.data)
        if len(shown) > limit:
            shown = shown[:limit] + f"... ({len(self.data)} bytes)"
        return (
            f"case #{self.index}: {self.source} [{self.mutations}]\n"
            f"  argv={list(self.argv)!r}\n  data={shown}"
        )


def _cut(data: bytes) -> bytes:
    if len(data) <= MAX_SEED_BYTES:
        return data
    end = data.rfind(b"\n", 0, MAX_SEED_BYTES)
    return data[: end + 1 if end > 0 else MAX_SEED_BYTES]


def seed_corpus() -> list[tuple[str, bytes]]:
    """(name, bytes) of every lit test (relative to the repo root), then the built-ins."""
    seeds = [
        (path.relative_to(ROOT).as_posix(), _cut(path.read_bytes()))
        for path in sorted((ROOT / "lit_tests").glob("**/*.mlir"))
        if path.is_file() and "/Output/" not in path.as_posix()
    ]
    seeds += [(name, text.encode()) for name, text in BUILTIN_CORPUS.items()]
    return seeds


def generate_cases(n: int = N_CASES, seed: int = SEED) -> list[Case]:
    rng = random.Random(seed)
    seeds = seed_corpus()
    cases = []
    for index in range(n):
        name, seed_data = seeds[index % len(seeds)]
        data = seed_data
        steps = []
        for _ in range(rng.choice([1, 1, 1, 2, 2, 3])):
            data, step = rng.choice(MUTATORS)(rng, data)
            steps.append(step)
        base = ("-", "--split-input-file") if index % 2 == 0 else ("-",)
        flags = rng.choice(FLAG_SETS)
        if UNREGISTERED.encode() in seed_data:
            flags = (UNREGISTERED, *flags)
        argv = base + tuple(dict.fromkeys(f for f in flags if f not in base))
        cases.append(Case(index, name, "; ".join(steps), argv, data))
    return cases


CASES = generate_cases()
CHUNKS = [CASES[i : i + CHUNK] for i in range(0, len(CASES), CHUNK)]


def run_case(case: Case) -> tuple[str | None, float]:
    """Run one case; return (problem or None, seconds)."""
    out, err = io.StringIO(), io.StringIO()
    limit = sys.getrecursionlimit()
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            rc = run(list(case.argv), io.BytesIO(case.data), out, err)
        except BaseException as exc:  # anything escaping run() is the bug
            if isinstance(exc, KeyboardInterrupt):
                raise
            elapsed = time.perf_counter() - start
            return f"{type(exc).__name__} escaped run(): {exc!s:.300}", elapsed
    elapsed = time.perf_counter() - start
    stderr = err.getvalue()
    problems = []
    if rc not in (0, 1):
        problems.append(f"exit code {rc}")
    if "Traceback" in stderr:
        problems.append("traceback on stderr")
    if rc == 1 and not ERROR_LINE.search(stderr):
        problems.append("exit 1 without an 'error:' line")
    if caught:
        problems.append(
            "warnings: " + "; ".join(f"{w.category.__name__}: {w.message}" for w in caught)[:300]
        )
    if sys.getrecursionlimit() != limit:
        problems.append(f"recursion limit changed {limit} -> {sys.getrecursionlimit()}")
        sys.setrecursionlimit(limit)
    if elapsed > HANG_SECONDS:
        problems.append(f"hang: took {elapsed:.1f} s")
    if not problems:
        return None, elapsed
    return ", ".join(problems) + f"\n  stderr: {stderr[-600:]!r}", elapsed


def test_enough_cases() -> None:
    assert len(CASES) >= 1000
    assert len({c.data for c in CASES}) > 900, "mutations should rarely coincide"
    assert generate_cases(20) == CASES[:20], "generation must be deterministic"


@pytest.mark.parametrize("name", sorted(BUILTIN_CORPUS))
def test_builtin_corpus_seeds_run_cleanly(name: str) -> None:
    argv = ["-", "--split-input-file"]
    if "diagnostics" in name:
        argv.append("--verify-diagnostics")
    if UNREGISTERED in BUILTIN_CORPUS[name]:
        argv.append(UNREGISTERED)
    out, err = io.StringIO(), io.StringIO()
    rc = run(argv, io.BytesIO(BUILTIN_CORPUS[name].encode()), out, err)
    assert "Traceback" not in err.getvalue()
    assert rc == 0, err.getvalue()


@pytest.mark.parametrize("chunk", range(len(CHUNKS)), ids=lambda i: f"chunk{i:02d}")
def test_fuzz_chunk(chunk: int) -> None:
    failures = []
    for case in CHUNKS[chunk]:
        problem, _elapsed = run_case(case)
        if problem is not None:
            failures.append(f"{problem}\n{case.describe()}")
    assert not failures, f"{len(failures)} of {len(CHUNKS[chunk])} cases failed:\n\n" + "\n\n".join(
        failures[:5]
    )
