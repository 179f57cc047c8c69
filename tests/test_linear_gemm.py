"""The ``linear`` and ``matmul`` kernel families, their tiles, the linear fusion
of fuse-conv-bn-act, and LeNet end to end.

Every rendered kernel runs in one harness process for all cases
(`teeny_ir.testing.kernels.run_cases`): inputs are NaN-padded (an unmasked read poisons the result), outputs NaN-filled
(an element never written stays NaN) and canary-padded (a write past the
output changes a canary). A batch-strided ``x`` of ``linear`` is embedded in a
larger buffer whose gaps are NaN, and a strided ``y``'s gaps must stay NaN. No
extent is a multiple of its tile; batches are 1 and 3; every grid has more
programs than the tile model needs. Then: the validator proves each case and
refuses a wrong batch stride; every variant the tile rules can give compiles
for sm_80 and sm_90 at each num_warps `launch_config` emits; and LeNet and a
matmul graph run end to end against the reference.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import teeny_ir
from dialects.graph.linear import LinearOp
from dialects.kernel import LaunchOp
from teeny_ir import reference, runtime
from teeny_ir.backend import aot
from teeny_ir.core import pointwise
from teeny_ir.kernels import validator
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.linear import tiles
from teeny_ir.kernels.matmul.contract import BatchGroup, collapse_batch
from teeny_ir.kernels.render import render
from teeny_ir.testing import REDUCTION_TOL, assert_close
from teeny_ir.testing.kernels import Case, Results, problems, tile_grid

ROOT = Path(__file__).resolve().parents[1]
LENET = ROOT / "examples" / "lenet"
DYN = -(2**63)  # xDSL's DYNAMIC_INDEX
EDGES = [2**i for i in range(4, 8)]
"""Every BLOCK_M / BLOCK_N `tiles.pick_tiles` gives (16..128)."""
CONFIG_WARPS = sorted({tiles.launch_config(m, n)[0] for m in EDGES for n in EDGES})
"""Every num_warps `tiles.launch_config` can give."""
WARP_TILES = {2: (16, 16, 16), 4: (32, 32, 16), 8: (128, 128, 32)}
"""A tile the launch config gives each num_warps."""


# ---------------------------------------------------------------- tiles


@pytest.mark.parametrize(
    ("extent", "block"),
    [(1, 16), (16, 16), (17, 32), (32, 32), (33, 64), (64, 64), (65, 128), (128, 128), (999, 128)],
)
def test_block_m_and_n_round_up_within_16_to_128(extent: int, block: int) -> None:
    assert tiles.pick_tiles(extent, 7, 5)[0] == block
    assert tiles.pick_tiles(7, extent, 5)[1] == block


def test_unknown_rows_count_as_64_and_k_tiles_are_16_or_32() -> None:
    assert tiles.pick_tiles(None, 10, 84) == (64, 16, 16)
    assert tiles.pick_tiles(3, 120, 127)[2] == 16
    assert tiles.pick_tiles(3, 120, 128)[2] == 32
    assert tiles.pick_tiles(3, 120, 1)[2] == 16
    for m in (None, 1, 5, 300):
        for n in (1, 20, 300):
            for k in (1, 8, 200):
                assert all(t >= 16 and not t & (t - 1) for t in tiles.pick_tiles(m, n, k))


@pytest.mark.parametrize("bad", [(0, 4, 4), (4, 0, 4), (4, 4, 0)])
def test_extents_below_one_are_refused(bad: tuple[int, int, int]) -> None:
    with pytest.raises(ValueError, match="must be >= 1"):
        tiles.pick_tiles(*bad)


def test_launch_config_boundaries() -> None:
    assert tiles.launch_config(16, 16) == (2, 2)
    assert tiles.launch_config(16, 32) == (2, 2)
    assert tiles.launch_config(32, 32) == (4, 2)
    assert tiles.launch_config(16, 64) == (4, 2)
    assert tiles.launch_config(128, 64) == (4, 2)
    assert tiles.launch_config(128, 128) == (8, 2)
    assert CONFIG_WARPS == [2, 4, 8]
    assert all(tiles.launch_config(*t[:2])[0] == w for w, t in WARP_TILES.items())


# ---------------------------------------------------------------- batch collapse


def test_collapse_batch() -> None:
    # No batch at all, and a dynamic M of a rank-2 lhs: no groups.
    assert collapse_batch((DYN, 19), (19, 7), (DYN, 7)) == []
    # A rank-2 rhs multiplies every matrix of lhs: lhs dims merge, rhs stride 0.
    assert collapse_batch((DYN, 4, 8, 16), (16, 5), (DYN, 4, 8, 5)) == [BatchGroup(4, True, 128, 0)]
    # The dynamic batch against a static one: two groups.
    assert collapse_batch((DYN, 4, 8, 16), (4, 16, 5), (DYN, 4, 8, 5)) == [
        BatchGroup(1, True, 512, 0),
        BatchGroup(4, False, 128, 80),
    ]
    # A size-1 operand dim broadcasts (stride 0); three groups are refused.
    with pytest.raises(ValueError, match="3 separate groups"):
        collapse_batch((3, 1, 2, 6, 4), (1, 5, 1, 4, 2), (3, 5, 2, 6, 2))
    assert collapse_batch((1, 1, 6, 4), (2, 3, 4, 2), (2, 3, 6, 2)) == [BatchGroup(6, False, 0, 8)]
    # Size-1 result dims drop.
    assert collapse_batch((3, 1, 6, 4), (1, 1, 4, 2), (3, 1, 6, 2)) == [BatchGroup(3, False, 24, 0)]


# ---------------------------------------------------------------- interpreter cases


@dataclass(frozen=True)
class LinearSpec:
    batch: int
    rows: tuple[int, ...]  # the dims between the batch and the features
    k: int
    n: int
    block: tuple[int, int, int]
    activation: str = "none"
    num_warps: int = 4
    x_gap: int = 0  # elements between consecutive images of x beyond one image
    y_gap: int = 0

    @property
    def id(self) -> str:
        parts = [
            f"linear-b{self.batch}",
            "x".join(map(str, (*self.rows, self.k))) + f"to{self.n}",
            self.activation,
            "t" + "x".join(map(str, self.block)),
            f"w{self.num_warps}",
        ]
        parts += [f"xgap{self.x_gap}"] if self.x_gap else []
        parts += [f"ygap{self.y_gap}"] if self.y_gap else []
        return "-".join(parts)


@dataclass(frozen=True)
class MatmulSpec:
    a: tuple[int, ...]
    b: tuple[int, ...]
    block: tuple[int, int, int]
    activation: str = "none"
    num_warps: int = 4

    @property
    def id(self) -> str:
        shapes = "x".join(map(str, self.a)) + "@" + "x".join(map(str, self.b))
        block = "x".join(map(str, self.block))
        return f"matmul-{shapes}-{self.activation}-t{block}-w{self.num_warps}"


def _case(
    spec: LinearSpec | MatmulSpec,
    family: str,
    args: dict[str, Any],
    shapes: dict[str, tuple[int, ...]],
    strides: dict[str, int],
    grid: int,
    expected: np.ndarray,
    pad: int,
) -> Case:
    """A harness case: ``shapes`` (and ``strides``, for the batch-strided
    pointers) are the tensors the validator sees bound to the pointers."""
    return Case(
        id=spec.id,
        family=family,
        constexprs=_constexprs(spec.block, spec.activation),
        args=list(args.items()),
        grid=grid,
        pad=pad,
        expected={"y": expected},
        tensors={n: (s, strides.get(n, math.prod(s[1:]))) for n, s in shapes.items()},
        num_warps=spec.num_warps,
        num_stages=2,
        tol=REDUCTION_TOL,
        spec=spec,
    )


def needed(case: Case) -> int:
    """The programs the family's tile model needs for ``case``."""
    (programs,) = tile_grid(FAMILIES[case.family], dict(case.args), case.constexprs)
    return programs


def _epilogue(acc: np.ndarray, scale: np.ndarray, shift: np.ndarray, activation: str) -> Any:
    want = acc * scale.astype(np.float64) + shift.astype(np.float64)
    if activation != pointwise.NO_ACTIVATION:
        want = pointwise.BY_NAME[activation].evaluate(np, [want], {})
    return want


def _constexprs(block: tuple[int, int, int], activation: str) -> dict[str, int | str]:
    block_m, block_n, block_k = block
    return {
        "BLOCK_M": block_m,
        "BLOCK_N": block_n,
        "BLOCK_K": block_k,
        "GROUP_M": tiles.GROUP_M,
        "ACTIVATION": activation,
    }


def linear_case(spec: LinearSpec, rng: np.random.Generator) -> Case:
    rows = math.prod(spec.rows)
    x = rng.standard_normal((spec.batch, *spec.rows, spec.k)).astype(np.float32)
    w = (rng.standard_normal((spec.n, spec.k)) / np.sqrt(spec.k)).astype(np.float32)
    scale = rng.uniform(0.5, 1.5, spec.n).astype(np.float32)
    shift = rng.standard_normal(spec.n).astype(np.float32)
    want = _epilogue(x.astype(np.float64) @ w.T.astype(np.float64), scale, shift, spec.activation)
    x_stride = rows * spec.k + spec.x_gap
    buffer = np.full((spec.batch, x_stride), np.nan, np.float32)
    buffer[:, : rows * spec.k] = x.reshape(spec.batch, -1)
    x_data = buffer.ravel()[: (spec.batch - 1) * x_stride + rows * spec.k]
    image = rows * spec.n
    y_stride = image + spec.y_gap
    expected = np.full((spec.batch, y_stride), np.nan)
    expected[:, :image] = want.reshape(spec.batch, image)
    numel = (spec.batch - 1) * y_stride + image
    block_m, block_n, _ = spec.block
    programs = math.ceil(spec.batch * rows / block_m) * math.ceil(spec.n / block_n)
    args: dict[str, Any] = {
        "x": x_data,
        "w": w.ravel(),
        "scale": scale,
        "shift": shift,
        "y": ("output", numel),
        "B": spec.batch,
        "ROWS": rows,
        "K": spec.k,
        "N": spec.n,
        "x_batch_stride": x_stride,
        "y_batch_stride": y_stride,
    }
    assert list(args) == [a.name for a in FAMILIES["linear"].args]
    strides = {}
    if spec.x_gap:
        strides["x"] = x_stride
    if spec.y_gap:
        strides["y"] = y_stride
    return _case(
        spec,
        "linear",
        args,
        {"x": x.shape, "w": w.shape, "scale": scale.shape, "shift": shift.shape, "y": want.shape},
        strides,
        programs + 3,
        expected.ravel()[:numel],
        block_n * rows + block_m * spec.k + spec.n,
    )


def matmul_case(spec: MatmulSpec, rng: np.random.Generator) -> Case:
    a = rng.standard_normal(spec.a).astype(np.float32)
    b = (rng.standard_normal(spec.b) / np.sqrt(spec.a[-1])).astype(np.float32)
    y = np.matmul(a.astype(np.float64), b.astype(np.float64))
    m, k, n = spec.a[-2], spec.a[-1], spec.b[-1]
    scale = rng.uniform(0.5, 1.5, n).astype(np.float32)
    shift = rng.standard_normal(n).astype(np.float32)
    want = _epilogue(y, scale, shift, spec.activation)
    none = BatchGroup(1, False, 0, 0)
    outer, inner = ([none] * 2 + collapse_batch(spec.a, spec.b, y.shape))[-2:]
    block_m, block_n, _ = spec.block
    matrices = outer.static * inner.static
    programs = matrices * math.ceil(m / block_m) * math.ceil(n / block_n)
    args: dict[str, Any] = {
        "a": a.ravel(),
        "b": b.ravel(),
        "scale": scale,
        "shift": shift,
        "y": ("output", want.size),
        "M": m,
        "N": n,
        "K": k,
        "G0": outer.static,
        "G1": inner.static,
        "a_stride0": outer.a_stride,
        "a_stride1": inner.a_stride,
        "b_stride0": outer.b_stride,
        "b_stride1": inner.b_stride,
    }
    assert list(args) == [arg.name for arg in FAMILIES["matmul"].args]
    return _case(
        spec,
        "matmul",
        args,
        {"a": a.shape, "b": b.shape, "scale": scale.shape, "shift": shift.shape, "y": want.shape},
        {},
        programs + 2,
        want.ravel(),
        block_m * n + block_n,
    )


def all_linear_specs() -> list[LinearSpec]:
    """Odd extents everywhere (row, column and K tails), batch 1 and 3, views."""
    specs: list[LinearSpec] = []
    base = LinearSpec(1, (), 37, 19, (16, 16, 16))  # K = 37 (3 K steps), N = 19
    for batch in (1, 3):
        one = replace(base, batch=batch)
        specs += [
            one,
            replace(one, activation="relu", x_gap=5),
            replace(one, activation="silu", y_gap=3),
            replace(one, rows=(5,), k=21, n=33, block=(32, 32, 16), activation="relu"),
            replace(one, rows=(2, 3), k=45, n=17, activation="tanh", x_gap=4, y_gap=7),
        ]
    # Every num_warps the launch config gives (and 1), each at its tiles.
    for warps in sorted({1, *CONFIG_WARPS}):
        block = WARP_TILES.get(warps, (16, 16, 16))
        specs.append(
            LinearSpec(3, (47,), 150, 130, block, "relu", warps, x_gap=2, y_gap=9)
            if warps == 8
            else LinearSpec(3, (7,), 29, 23, block, "silu", warps, x_gap=3, y_gap=1)
        )
    return specs


def all_matmul_specs() -> list[MatmulSpec]:
    small = (16, 16, 16)
    specs = [
        MatmulSpec((1, 19, 21), (21, 13), small),  # batch 1, one matrix
        MatmulSpec((3, 19, 21), (21, 13), small, "relu"),  # rank-2 rhs over batch 3
        MatmulSpec((3, 4, 9, 17), (4, 17, 5), small),  # two groups (rhs stride 0 outer)
        MatmulSpec((1, 4, 9, 17), (4, 17, 5), small),
        MatmulSpec((7, 20), (3, 2, 20, 18), (16, 16, 16), "silu"),  # rank-2 lhs
        MatmulSpec((3, 1, 5, 6), (1, 2, 6, 35), (16, 32, 16)),  # lhs and rhs both broadcast
        MatmulSpec((3, 2, 33, 19), (3, 2, 19, 21), (32, 16, 16)),  # merged groups
    ]
    for warps in sorted({1, *CONFIG_WARPS}):
        block = WARP_TILES.get(warps, (16, 16, 16))
        shape = ((2, 130, 40), (40, 131)) if warps == 8 else ((3, 2, 21, 19), (2, 19, 37))
        specs.append(MatmulSpec(*shape, block, "relu", warps))
    return specs


LINEAR_SPECS = all_linear_specs()
MATMUL_SPECS = all_matmul_specs()
CASES = [linear_case(spec, np.random.default_rng(i)) for i, spec in enumerate(LINEAR_SPECS)] + [
    matmul_case(spec, np.random.default_rng(100 + i)) for i, spec in enumerate(MATMUL_SPECS)
]


HARNESS_CASES = CASES
"""What the `results` fixture (tests/conftest.py) runs, in one interpreter process."""


def test_cases_cover_the_brief() -> None:
    assert {s.batch for s in LINEAR_SPECS} == {1, 3}
    assert {s.num_warps for s in LINEAR_SPECS} >= set(CONFIG_WARPS)
    assert {s.num_warps for s in MATMUL_SPECS} >= set(CONFIG_WARPS)
    assert {s.batch for s in LINEAR_SPECS if s.x_gap} == {1, 3}
    assert {s.batch for s in LINEAR_SPECS if s.y_gap} == {1, 3}
    assert {s.a[0] for s in MATMUL_SPECS if len(s.a) > 2} >= {1, 3}
    for spec in LINEAR_SPECS:
        block_m, block_n, block_k = spec.block
        rows = spec.batch * math.prod(spec.rows)
        assert rows % block_m and spec.n % block_n and spec.k % block_k, spec.id
    for mm in MATMUL_SPECS:
        block_m, block_n, block_k = mm.block
        assert mm.a[-2] % block_m and mm.b[-1] % block_n and mm.a[-1] % block_k, mm.id


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_kernel_matches_the_reference(case: Case, results: Results) -> None:
    """Canaries intact, the gaps between the output's images unwritten, every
    output element written, the values within the tolerance rule."""
    assert problems(case, results) == []


# ---------------------------------------------------------------- the validator


def _batch(case: Case) -> int:
    return case.tensors["y"][0][0]


def test_cases_are_valid_launches() -> None:
    for case in CASES:
        validator.validate(case.contract(), batches=(_batch(case),))


def test_the_validator_refuses_wrong_linear_launches() -> None:
    strided = next(
        c
        for c in CASES
        if c.family == "linear" and c.tensors["x"][1] != math.prod(c.tensors["x"][0][1:])
    )
    batch = _batch(strided)
    image = math.prod(strided.tensors["x"][0][1:])
    with pytest.raises(validator.ContractError, match="argument 'x_batch_stride'"):
        validator.validate(strided.contract(x_batch_stride=str(image)), batches=(batch,))
    with pytest.raises(validator.ContractError, match="argument 'K'"):
        validator.validate(strided.contract(K=str(strided.arg("K") + 1)), batches=(batch,))
    short = replace(strided, grid=needed(strided) - 1)
    with pytest.raises(validator.ContractError, match="tile model"):
        validator.validate(short.contract(), batches=(batch,))


def test_the_validator_refuses_a_matmul_reaching_past_its_operand() -> None:
    case = next(c for c in CASES if c.family == "matmul" and c.arg("a_stride0"))
    stride = str(case.arg("a_stride0") + 1)
    with pytest.raises(validator.ContractError, match="argument 'a' may touch"):
        validator.validate(case.contract(a_stride0=stride), batches=(_batch(case),))
    with pytest.raises(validator.ContractError, match="argument 'N'"):
        validator.validate(case.contract(N=str(case.arg("N") + 1)), batches=(1,))


# ---------------------------------------------------------------- AOT


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("warps", CONFIG_WARPS)
@pytest.mark.parametrize("family", ["linear", "matmul"])
def test_variants_compile_ahead_of_time(
    family: str, warps: int, arch: int, tmp_path: Path, triton_cache: None
) -> None:
    """At each num_warps the launch config gives, with the tiles that give it."""
    block = WARP_TILES[warps]
    constexprs = _constexprs(block, "silu")
    path = tmp_path / f"{family}_0.py"
    path.write_text(render(FAMILIES[family], path.stem, constexprs))
    num_warps, num_stages = tiles.launch_config(*block[:2])
    assert num_warps == warps
    variant = aot.compile_variant(
        path, path.stem, FAMILIES[family], constexprs, arch, num_warps, num_stages
    )
    assert f".target sm_{arch}" in variant.ptx and variant.cubin[:4] == b"\x7fELF"
    aot.check_shared(variant)
    if arch == 90 and block[0] >= 64:
        assert "wgmma" in variant.ptx
    else:
        assert "mma.sync" in variant.ptx or "wgmma" in variant.ptx


# ---------------------------------------------------------------- fusion and lowering


def _lenet_weights() -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    return load_file(LENET / "lenet.safetensors")


def test_lenet_fuses_each_linear_with_its_bias_and_relu(tmp_path: Path) -> None:
    module = teeny_ir.parse_module((LENET / "lenet.mlir").read_text(), filename="lenet.mlir")
    teeny_ir.PassManager.parse("split-bias,fuse-conv-bn-act").run(module)
    linears = [op for op in module.walk() if isinstance(op, LinearOp)]
    assert [op.activation for op in linears] == ["relu", "relu", "none"]
    assert all(op.bias is not None for op in linears)
    assert not [op for op in module.walk() if op.name == "graph.relu"][2:]  # the convs' relus
    out = tmp_path / "lenet"
    module = teeny_ir.parse_module((LENET / "lenet.mlir").read_text(), filename="lenet.mlir")
    teeny_ir.PassManager.parse(f"teeny-inference,emit-triton{{out-dir={out}}}").run(module)
    launches = [op for op in module.walk() if isinstance(op, LaunchOp)]
    linear = [op for op in launches if op.family == "linear"]
    assert [op.constexpr_values["ACTIVATION"] for op in linear] == ["relu", "relu", "none"]
    assert [dict(op.arg_bindings)["x"] for op in linear] == ["in0"] * 3
    assert [len(op.operands) for op in linear] == [1, 1, 1]  # weights are slots
    plan = json.loads((out / "plan.json").read_text())
    sources = [
        [s["op"] for s in launch["sources"]]
        for launch in plan["launches"]
        if launch["kernel"].startswith("linear")
    ]
    assert sources == [["graph.linear", "graph.relu"]] * 2 + [["graph.linear"]]
    derivations = [p["derivation"] for p in plan["params"]]
    assert {"kind": "identity", "shape": [120, 400], "sources": ["fc1.weight"]} in derivations
    assert {"kind": "identity", "shape": [10], "sources": ["fc3.bias"]} in derivations


LINEAR_GRAPH = """\
func.func @forward(%x: tensor<?x5x24xf32>, %v: tensor<?x24xf32>) -> (tensor<?x5x9xf32>, tensor<?x9xf32>) {
  %w = graph.param "w" : tensor<9x24xf32>
  %b = graph.param "b" : tensor<9xf32>
  %y = graph.linear %x, %w : (tensor<?x5x24xf32>, tensor<9x24xf32>) -> tensor<?x5x9xf32>
  %s = graph.silu %y : tensor<?x5x9xf32>
  %z = graph.linear %v, %w : (tensor<?x24xf32>, tensor<9x24xf32>) -> tensor<?x9xf32>
  %zb = graph.bias_add %z, %b : (tensor<?x9xf32>, tensor<9xf32>) -> tensor<?x9xf32>
  %t = graph.tanh %zb : tensor<?x9xf32>
  func.return %s, %t : tensor<?x5x9xf32>, tensor<?x9xf32>
}
"""

MATMUL_GRAPH = """\
func.func @forward(%a: tensor<?x4x8x16xf32>, %c: tensor<?x19xf32>) -> (tensor<?x4x8x5xf32>, tensor<?x7xf32>) {
  %b = graph.param "b" : tensor<4x16x5xf32>
  %y = graph.matmul %a, %b : (tensor<?x4x8x16xf32>, tensor<4x16x5xf32>) -> tensor<?x4x8x5xf32>
  %r = graph.relu %y : tensor<?x4x8x5xf32>
  %d = graph.param "d" : tensor<19x7xf32>
  %z = graph.matmul %c, %d : (tensor<?x19xf32>, tensor<19x7xf32>) -> tensor<?x7xf32>
  func.return %r, %z : tensor<?x4x8x5xf32>, tensor<?x7xf32>
}
"""


def _run_graph(
    text: str, weights: dict[str, np.ndarray], inputs: list[tuple[int, ...]], out: Path
) -> list[str]:
    """Compile ``text`` through emission, run it at batch 1 and 3 against the
    reference; the launch families."""
    graph = teeny_ir.parse_module(text, filename="graph.mlir")
    kernels = teeny_ir.parse_module(text, filename="graph.mlir")
    teeny_ir.PassManager.parse(f"teeny-inference,emit-triton{{out-dir={out}}}").run(kernels)
    executable = runtime.load(out)
    rng = np.random.default_rng(7)
    for batch in (1, 3):
        xs = [rng.standard_normal((batch, *shape)).astype(np.float32) for shape in inputs]
        got = executable.run(xs, weights)
        want = reference.run(graph, weights, xs)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.shape[0] == batch
            assert_close(g.astype(np.float64), w, REDUCTION_TOL)
    return [op.family for op in kernels.walk() if isinstance(op, LaunchOp)]


def test_linear_graph_end_to_end(tmp_path: Path) -> None:
    """A rank-3 linear with silu, and a rank-2 one with a split bias and tanh."""
    rng = np.random.default_rng(3)
    weights = {
        "w": (rng.standard_normal((9, 24)) / 5).astype(np.float32),
        "b": rng.standard_normal(9).astype(np.float32),
    }
    families = _run_graph(LINEAR_GRAPH, weights, [(5, 24), (24,)], tmp_path / "linear")
    assert families == ["linear", "linear"]


def test_matmul_graph_end_to_end(tmp_path: Path) -> None:
    """Weights as operands (materialised by the driver), broadcast batch, rank 2."""
    rng = np.random.default_rng(4)
    weights = {
        "b": rng.standard_normal((4, 16, 5)).astype(np.float32),
        "d": rng.standard_normal((19, 7)).astype(np.float32),
    }
    families = _run_graph(MATMUL_GRAPH, weights, [(4, 8, 16), (19,)], tmp_path / "matmul")
    # fuse-conv-bn-act folds the relu into the first matmul (ACTIVATION relu).
    assert families == ["matmul", "matmul"]


@pytest.mark.parametrize("batch", [1, 3])
def test_lenet_end_to_end(batch: int, tmp_path: Path) -> None:
    text = (LENET / "lenet.mlir").read_text()
    graph = teeny_ir.parse_module(text, filename="lenet.mlir")
    kernels = teeny_ir.parse_module(text, filename="lenet.mlir")
    out = tmp_path / "lenet"
    teeny_ir.PassManager.parse(f"teeny-inference,emit-triton{{out-dir={out}}}").run(kernels)
    weights = _lenet_weights()
    x = np.random.default_rng(batch).standard_normal((batch, 1, 28, 28)).astype(np.float32)
    (got,) = runtime.load(out).run([x], weights)
    (want,) = reference.run(graph, weights, [x])
    assert got.shape == want.shape == (batch, 10)
    assert_close(got.astype(np.float64), want, REDUCTION_TOL)


def test_unlowerable_linear_and_matmul_are_located_errors() -> None:
    text = """\
func.func @forward(%x: tensor<3x1x2x6x4xf32>, %y: tensor<1x5x1x4x2xf32>, %v: tensor<?x4xf32>, %w: tensor<3x4xf32>) -> (tensor<3x5x2x6x2xf32>, tensor<?x3xf32>) {
  %m = graph.matmul %x, %y : (tensor<3x1x2x6x4xf32>, tensor<1x5x1x4x2xf32>) -> tensor<3x5x2x6x2xf32>
  %l = graph.linear %v, %w : (tensor<?x4xf32>, tensor<3x4xf32>) -> tensor<?x3xf32>
  func.return %m, %l : tensor<3x5x2x6x2xf32>, tensor<?x3xf32>
}
"""
    module = teeny_ir.parse_module(text, filename="bad.mlir")
    with pytest.raises(teeny_ir.DiagnosticError) as caught:
        teeny_ir.PassManager.parse("lower-graph-to-kernel").run(module)
    message = str(caught.value)
    assert (
        "bad.mlir:2:8: error: cannot lower 'graph.matmul' to a kernel: its batch dimensions "
        "broadcast in 3 separate groups (the matmul kernel addresses at most 2)" in message
    )
    assert (
        "bad.mlir:3:8: error: cannot lower 'graph.linear' to a kernel: "
        "its weight is not a graph.param" in message
    )


VIEWS_GRAPH = """\
func.func @forward(%x: tensor<?x8xf32>) -> tensor<?x10xf32> {
  %w1 = graph.param "w1" : tensor<4x3xf32>
  %w2 = graph.param "w2" : tensor<6x5xf32>
  %w3 = graph.param "w3" : tensor<10x10xf32>
  %a, %b = graph.split %x axis 1 sizes [3, 5] : (tensor<?x8xf32>) -> (tensor<?x3xf32>, tensor<?x5xf32>)
  %p = graph.linear %a, %w1 : (tensor<?x3xf32>, tensor<4x3xf32>) -> tensor<?x4xf32>
  %pr = graph.relu %p : tensor<?x4xf32>
  %q = graph.linear %b, %w2 : (tensor<?x5xf32>, tensor<6x5xf32>) -> tensor<?x6xf32>
  %c = graph.concat %pr, %q axis 1 : (tensor<?x4xf32>, tensor<?x6xf32>) -> tensor<?x10xf32>
  %y = graph.linear %c, %w3 : (tensor<?x10xf32>, tensor<10x10xf32>) -> tensor<?x10xf32>
  func.return %y : tensor<?x10xf32>
}
"""


def test_linear_reads_and_writes_views_end_to_end(tmp_path: Path) -> None:
    """The split's parts are views (x_batch_stride 8) and the first two linears
    write straight into the concat's buffer (y_batch_stride 10): no copies."""
    rng = np.random.default_rng(6)
    weights = {
        "w1": rng.standard_normal((4, 3)).astype(np.float32),
        "w2": rng.standard_normal((6, 5)).astype(np.float32),
        "w3": (rng.standard_normal((10, 10)) / 3).astype(np.float32),
    }
    out = tmp_path / "views"
    families = _run_graph(VIEWS_GRAPH, weights, [(8,)], out)
    assert families == ["linear"] * 3
    plan = json.loads((out / "plan.json").read_text())
    strides = [[a.get("expr") for a in launch["args"][-2:]] for launch in plan["launches"]]
    assert strides == [["8", "10"], ["8", "10"], ["10", "10"]]
    assert len(plan["views"]) == 4
