"""The ``attention`` kernel family: Triton's interpreter against the reference
semantics, the validator's view of its launches, the tile rules, AOT
compilation, and one graph end to end through ``teeny-inference``,
``emit-triton`` and the runtime.

Each case is one ``graph.attention``, written as IR (dimension 0 the dynamic
batch, except one static rank-2 case) and lowered by the family's own
``@lowers`` rule: the launch's dims, strides and grid are what the compiler
emits, evaluated at the case's batch. The shapes are not multiples of any
tile (N = 37 queries, M = 53 keys, Dk = 20, Dv = 36: every mask tail), with 1
and 4 heads, batch 1 and 3, every operand in both layouts, and some cases
shrink ``BLOCK_M`` and ``BLOCK_N`` (the grid then follows the tile model) so
that many query blocks and many key blocks are used, or launch more programs
than the tile model needs. The kernels run in one harness process
(`teeny_ir.testing.kernels.run_cases`) with NaN-padded inputs and
canary-padded, NaN-filled outputs; the expected values are the reference's,
in float64. Mutated kernels (no key mask; programs past the last matrix not
held back) show that the checks catch what they are for.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest

import teeny_ir
from dialects.graph.attention import AttentionOp, infer_attention_shapes, stored_shape
from dialects.kernel import LaunchOp
from teeny_ir import runtime
from teeny_ir.kernels import validator
from teeny_ir.kernels.attention import contract, tiles
from teeny_ir.kernels.contract import MAX_BLOCK_ELEMENTS
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.lowering import Unlowerable
from teeny_ir.reference import SEMANTICS
from teeny_ir.testing import REDUCTION_TOL, assert_close
from teeny_ir.testing import kernels as harness
from teeny_ir.testing.aot_probe import probe
from teeny_ir.testing.kernels import Case, Results, launch_case, problems

FAMILY = FAMILIES["attention"]


def _type(shape: tuple[int | str, ...]) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}f32>"


@dataclass(frozen=True)
class Spec:
    """One attention: ``heads`` are the batch dimensions after the dynamic batch
    (None: rank-2 operands, no batch at all), ``n`` queries, ``m`` keys, heads of
    ``dk`` and ``dv`` features, the layout flags, and the data's spread."""

    heads: tuple[int, ...] | None
    n: int
    m: int
    dk: int
    dv: int
    transposed: tuple[int, int, int, int] = (0, 0, 0, 0)
    scale: float = 0.25
    spread: float = 1.0

    def batch_dims(self) -> list[int | str]:
        return [] if self.heads is None else ["?", *self.heads]

    def stored(self) -> list[tuple[int | str, ...]]:
        """The stored types of q, k and v (``?`` for the batch)."""
        tq, tk, tv, _ = self.transposed
        logical = ((self.n, self.dk, tq), (self.m, self.dk, tk), (self.m, self.dv, tv))
        return [
            (*self.batch_dims(), *stored_shape((rows, features), flag))
            for rows, features, flag in logical
        ]

    def text(self) -> str:
        q, k, v = self.stored()
        sized = [tuple(-1 if d == "?" else int(d) for d in shape) for shape in (q, k, v)]
        o, lse = infer_attention_shapes(*sized, self.transposed)
        o_t, lse_t = (_type(tuple("?" if d == -1 else d for d in s)) for s in (o, lse))
        types = [_type(shape) for shape in (q, k, v)]
        flags = "" if self.transposed == (0, 0, 0, 0) else f" transposed {list(self.transposed)}"
        return (
            f"func.func @forward(%q: {types[0]}, %k: {types[1]}, %v: {types[2]})"
            f" -> ({o_t}, {lse_t}) {{\n"
            f"  %o, %lse = graph.attention %q, %k, %v scale {self.scale}{flags}"
            f" : ({', '.join(types)}) -> ({o_t}, {lse_t})\n"
            f"  func.return %o, %lse : {o_t}, {lse_t}\n}}\n"
        )

    def data(self, batch: int, rng: np.random.Generator) -> list[np.ndarray]:
        shapes = [tuple(batch if d == "?" else int(d) for d in shape) for shape in self.stored()]
        return [(rng.standard_normal(shape) * self.spread).astype(np.float32) for shape in shapes]


def lowered(spec: Spec, profile: str = "gpu") -> tuple[AttentionOp, LaunchOp]:
    """The graph op of ``spec`` and the launch its own lowering rule builds."""
    module, launch = harness.lowered(spec.text(), profile=profile)
    (op,) = (o for o in module.walk() if isinstance(o, AttentionOp))
    assert [r.type for r in op.results] == [r.type for r in launch.results]
    return op, launch


def reference(op: AttentionOp, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """``o`` and ``lse`` in float64 (the semantics, without `reference.run`'s rounding)."""
    semantics = SEMANTICS.lookup(AttentionOp)
    assert callable(semantics)
    return list(semantics(op, [x.astype(np.float64) for x in inputs], {}))


def kernel_case(
    case_id: str,
    spec: Spec,
    batch: int,
    rng: np.random.Generator,
    *,
    blocks: tuple[int, int] | None = None,
    extra_programs: int = 0,
    profile: str = "gpu",
    nan_at: tuple[tuple[int, tuple[int, ...]], ...] = (),
) -> Case:
    """One launch of ``spec`` at ``batch``; ``blocks`` overrides ``(BLOCK_M,
    BLOCK_N)`` (the grid then is what the tile model needs); ``nan_at`` puts NaN
    at (input, index) places."""
    op, launch = lowered(spec, profile)
    inputs = spec.data(batch, rng)
    for which, index in nan_at:
        inputs[which][index] = np.nan
    return launch_case(
        case_id,
        launch,
        batch,
        inputs,
        reference(op, inputs),
        pad=256,
        tol=REDUCTION_TOL,
        constexprs=None
        if blocks is None
        else dict(zip(("BLOCK_M", "BLOCK_N"), blocks, strict=True)),
        extra_programs=extra_programs,
        spec=(spec, blocks, extra_programs, profile),
    )


ODD = {"n": 37, "m": 53, "dk": 20, "dv": 36}
"""Extents off every tile: a partial query block, key block and both head blocks."""
LAYOUTS = ((0, 0, 0, 0), (1, 1, 1, 1), (1, 0, 0, 1), (0, 1, 1, 0))
"""The logical layout, YOLO11 C2PSA's (all transposed) and two mixed ones (each
operand in each layout once among them)."""


def all_cases() -> list[Case]:
    rng = np.random.default_rng(11)
    cases = []
    for flags in LAYOUTS:
        tag = "".join(map(str, flags))
        for batch in (1, 3):
            cases.append(
                kernel_case(f"h4-t{tag}-b{batch}", Spec((4,), **ODD, transposed=flags), batch, rng)
            )
    cases += [
        # One head (rank 3: the batch alone) and no batch at all (rank 2, G = 1).
        kernel_case("h1-t1111-b3", Spec((), **ODD, transposed=(1, 1, 1, 1)), 3, rng),
        kernel_case("rank2", Spec(None, 21, 9, 5, 40, scale=0.5), 1, rng),
        # Two batch dimensions after the batch: G = B * 6.
        kernel_case("h2x3-b1", Spec((2, 3), 17, 19, 16, 64), 1, rng),
        # Many query and key blocks: 7 x 10 blocks of 16 (and the tails 4 and 6).
        kernel_case("many-blocks", Spec((1,), 100, 150, 20, 36), 1, rng, blocks=(16, 16)),
        kernel_case(
            "many-blocks-t1111",
            Spec((2,), 100, 150, 32, 17, transposed=(1, 1, 1, 1)),
            1,
            rng,
            blocks=(32, 16),
        ),
        # Scores of several hundred: exp would overflow without the running max.
        kernel_case(
            "large-scores", Spec((2,), **ODD, scale=2.0, spread=3.0), 3, rng, blocks=(16, 16)
        ),
        # NaN in a key poisons its matrix (o and lse); in a value, one column of o.
        # (NaN in a query would make a row of NaN scores, on which the
        # interpreter's tl.max, np.nanmax, warns.)
        kernel_case(
            "nan-k-v",
            Spec((2,), **ODD),
            3,
            rng,
            blocks=(16, 16),
            nan_at=((1, (0, 0, 50, 3)), (2, (2, 1, 7, 4))),
        ),
        # More programs than the tile model needs: the extra ones write nothing.
        kernel_case("grid+3", Spec((4,), **ODD), 3, rng, extra_programs=3),
        kernel_case("grid+5-blocks", Spec((1,), **ODD), 1, rng, blocks=(16, 16), extra_programs=5),
        # The interpreter profile's own tiles.
        kernel_case(
            "interpreter-tiles",
            Spec((4,), **ODD, transposed=(1, 1, 1, 1)),
            3,
            rng,
            profile="interpreter",
        ),
    ]
    return cases


def mutants() -> dict[str, Case]:
    """Cases run on mutated kernels: without the key mask, the keys past M (loaded
    as 0) count with score 0; without the matrix bound on the rows, programs past
    the last matrix store past the outputs."""
    rng = np.random.default_rng(12)
    found = {
        "no-key-mask": (
            kernel_case("m1", Spec((1,), **ODD), 1, rng, blocks=(16, 16)),
            ('s = tl.where(mask_n[None, :], s, float("-inf"))', "s = s"),
        ),
        # Small matrices: the stray program's reads and writes stay in the padding.
        "rows-past-last-matrix": (
            kernel_case("m2", Spec((1,), 7, 9, 12, 20), 1, rng, extra_programs=1),
            ("n_end = tl.where(valid, N, 0)", "n_end = N"),
        ),
    }
    return {
        what: replace(case, id=f"mutant-{what}", mutation=mutation)
        for what, (case, mutation) in found.items()
    }


CASES = all_cases()
MUTANTS = mutants()
HARNESS_CASES = [*CASES, *MUTANTS.values()]
"""What the `results` fixture (tests/conftest.py) runs, in one interpreter process."""


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_kernel_matches_the_reference(case: Case, results: Results) -> None:
    """Canaries intact, every element of ``o`` and ``lse`` written, within the
    reduction tolerance of the float64 reference."""
    assert problems(case, results) == []


def test_the_checks_catch_mutated_kernels(results: Results) -> None:
    wrong = " ".join(problems(MUTANTS["no-key-mask"], results))
    assert "above bound" in wrong
    stray = " ".join(problems(MUTANTS["rows-past-last-matrix"], results))
    assert "canaries after the view overwritten" in stray


def test_every_case_is_a_valid_launch() -> None:
    for case in [*CASES, *MUTANTS.values()]:
        validator.validate(case.contract(), batches=(case.tensors["q"][0][0],))


def test_cases_cover_the_brief() -> None:
    """Every mask tail, both layouts of each operand, batch 1 and 3, 1 and 4
    heads, many blocks of each kind, a grid past the tile model."""
    layouts = set()
    heads = set()
    batches = set()
    many = extra = tails = False
    for case in CASES:
        spec, _, extra_programs, _ = case.spec
        block_m, block_n = int(case.constexprs["BLOCK_M"]), int(case.constexprs["BLOCK_N"])
        assert spec.n % block_m and spec.m % block_n, case.id
        layouts |= {(name, flag) for name, flag in zip("qkvo", spec.transposed, strict=True)}
        heads.add(math.prod(spec.heads or (1,)))
        batches.add(case.tensors["q"][0][0] if spec.heads is not None else 0)
        many |= math.ceil(spec.n / block_m) >= 5 and math.ceil(spec.m / block_n) >= 5
        extra |= extra_programs > 0
        assert spec.dk != spec.dv, case.id
        tails |= spec.dk % 16 != 0 and spec.dv % 16 != 0
    nan = next(c for c in CASES if c.id == "nan-k-v").expected
    assert np.isnan(nan["lse"]).sum() == 37 and np.isnan(nan["o"]).sum() == 37 * 36 + 37
    assert tails and layouts == {(name, flag) for name in "qkvo" for flag in (0, 1)}
    assert {1, 4} <= heads and {1, 3} <= batches and many and extra


# ---------------------------------------------------------------- lowering and validation


def test_the_launch_as_lowered() -> None:
    """Strides for each layout, G over the batch, the scale slot, one program per
    query block of each matrix; valid for every batch 1..64."""
    _, launch = lowered(Spec((4,), **ODD, transposed=(1, 0, 0, 1)))
    args = dict(launch.arg_bindings)
    assert (args["G"], args["N"], args["M"], args["DK"], args["DV"]) == (
        "B * 4",
        "37",
        "53",
        "20",
        "36",
    )
    assert (args["q_sr"], args["q_sd"], args["k_sr"], args["k_sd"]) == ("1", "37", "20", "1")
    assert (args["v_sr"], args["v_sd"], args["o_sr"], args["o_sd"]) == ("36", "1", "1", "37")
    assert launch.constexpr_values == {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_DK": 32, "BLOCK_DV": 64}
    assert launch.grid == ("B * 4 * cdiv(37, 64)", "1", "1")
    (slot,) = launch.param_slots
    assert (slot.name, tuple(slot.shape), slot.derivation.kind, slot.derivation.value) == (
        "scale",
        (1,),
        "fill",
        0.25,
    )
    assert (launch.num_warps, launch.num_stages) == (4, 2)
    validator.validate(launch.contract())
    _, static = lowered(Spec(None, 21, 9, 5, 40))
    assert dict(static.arg_bindings)["G"] == "1" and static.grid == ("cdiv(21, 32)", "1", "1")
    validator.validate(static.contract())


def test_the_validator_refuses_an_overflowing_launch(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stride that would carry ``o`` past its tensor is refused: by the dims the
    shapes imply, and by the footprint alone where no shapes imply anything."""
    _, launch = lowered(Spec((4,), **ODD, transposed=(1, 1, 1, 1)))
    good = launch.contract()
    bad = replace(good, args=tuple((n, "38" if n == "o_sd" else b) for n, b in good.args))
    with pytest.raises(validator.ContractError, match=r"argument 'o_sd' = '38' is 38 .* imply 37"):
        validator.validate(bad)
    monkeypatch.setitem(FAMILIES, "attention", dataclasses.replace(FAMILY, implied=None))
    validator.validate(good)
    with pytest.raises(
        validator.ContractError,
        match=r"argument 'o' may touch 5363 elements at B = 1 .* holds 5328",
    ):
        validator.validate(bad)
    short = replace(good, grid=("B * 2", "1", "1"))
    with pytest.raises(validator.ContractError, match="tile model of 'attention' needs"):
        validator.validate(short)


def test_implied_reads_every_consistent_layout() -> None:
    """The flags are not in the shapes: each consistent reading is an alternative
    (two when N == Dk makes q's layout ambiguous), none for shapes that do not fit."""
    shapes = {
        "q": (2, 8, 5),
        "k": (2, 5, 7),
        "v": (2, 7, 3),
        "o": (2, 8, 3),
        "lse": (2, 8),
        "scale": (1,),
    }
    (only,) = contract.implied(shapes)
    assert only == {
        "G": 2, "N": 8, "M": 7, "DK": 5, "DV": 3,
        "q_sr": 5, "q_sd": 1, "k_sr": 1, "k_sd": 7, "v_sr": 3, "v_sd": 1, "o_sr": 3, "o_sd": 1,
    }  # fmt: skip
    square = contract.implied(shapes | {"q": (2, 8, 8), "k": (2, 7, 8)})
    assert sorted((d["q_sr"], d["q_sd"]) for d in square) == [(1, 8), (8, 1)]
    assert contract.implied(shapes | {"lse": (2, 9)}) == []
    assert contract.implied(shapes | {"v": (3, 7, 3)}) == []


def test_head_dimensions_above_256_are_refused() -> None:
    with pytest.raises(
        Unlowerable, match="head dimension Dk = 300 exceeds the attention kernel's 256"
    ):
        lowered(Spec((2,), 10, 12, 300, 16))
    with pytest.raises(Unlowerable, match="head dimension Dv = 257 exceeds"):
        lowered(Spec((2,), 10, 12, 16, 257, transposed=(1, 1, 1, 1)))
    lowered(Spec((2,), 10, 12, 256, 256))
    with pytest.raises(teeny_ir.DiagnosticError, match="head dimension Dk = 300 exceeds"):
        module = teeny_ir.parse_module(Spec((2,), 10, 12, 300, 16).text(), filename="a.mlir")
        teeny_ir.PassManager.parse("teeny-inference").run(module)


# ---------------------------------------------------------------- tiles


@pytest.mark.parametrize(
    ("extents", "gpu", "interpreter"),
    [
        ((37, 53, 20, 36), (64, 64, 32, 64), (64, 64, 32, 64)),
        ((400, 400, 32, 64), (64, 64, 32, 64), (512, 512, 32, 64)),
        ((1600, 1600, 32, 64), (64, 64, 32, 64), (1024, 512, 32, 64)),
        ((5, 3, 1, 8), (16, 16, 16, 16), (16, 16, 16, 16)),
        ((400, 400, 100, 128), (64, 32, 128, 128), (512, 512, 128, 128)),
        ((400, 30, 256, 64), (32, 32, 256, 64), (512, 32, 256, 64)),
        ((2000, 10, 16, 16), (64, 16, 16, 16), (1024, 16, 16, 16)),
    ],
)
def test_tiles(
    extents: tuple[int, int, int, int],
    gpu: tuple[int, int, int, int],
    interpreter: tuple[int, int, int, int],
) -> None:
    assert tiles.attention_tiles(*extents) == gpu
    assert tiles.attention_tiles(*extents, "interpreter") == interpreter
    for found in (gpu, interpreter):
        values = dict(zip(("BLOCK_M", "BLOCK_N", "BLOCK_DK", "BLOCK_DV"), found, strict=True))
        validator.check_constexprs(FAMILY, values)
        assert all(
            math.prod(values[n] for n in block) <= MAX_BLOCK_ELEMENTS for block in FAMILY.blocks
        )
    assert tiles.launch_config(gpu[2], gpu[3]) == ((4 if max(gpu[2:]) <= 64 else 8), 2)
    assert tiles.launch_config(gpu[2], gpu[3], "interpreter") == (4, 1)


def test_tile_rules_refuse_bad_extents() -> None:
    with pytest.raises(ValueError, match=r"head dimension must be in 1\.\.256, got 257"):
        tiles.head_block(257)
    with pytest.raises(ValueError, match="extent m must be >= 1"):
        tiles.attention_tiles(4, 0, 8, 8)
    with pytest.raises(ValueError, match="unknown tile profile"):
        tiles.attention_tiles(4, 4, 8, 8, "cpu")


# ---------------------------------------------------------------- AOT

AOT_VARIANTS = [(5, 3, 1, 8), (400, 400, 32, 64), (400, 400, 256, 256)]
"""The gpu profile's smallest tiles (16 everywhere), YOLO11 C2PSA's (64 x 64
blocks, heads of 32 and 64, 4 warps) and the widest heads' (32 x 32 blocks of
256-wide heads, 8 warps)."""


@pytest.mark.slow
def test_compiles_ahead_of_time(tmp_path: Path, triton_cache: None) -> None:
    """The lowering's variants for sm_80 and sm_90, in one process of their own:
    the ABI's parameters, tensor-core products, shared memory within each target."""
    variants = []
    for extents in AOT_VARIANTS:
        found = tiles.attention_tiles(*extents)
        constexprs = dict(zip(("BLOCK_M", "BLOCK_N", "BLOCK_DK", "BLOCK_DV"), found, strict=True))
        warps, stages = tiles.launch_config(found[2], found[3])
        variants += [(constexprs, warps, stages, arch) for arch in (80, 90)]
    compiled = probe("attention", variants, tmp_path)
    assert [(c["arch"], c["warps"], c["stages"]) for c in compiled] == [
        (arch, warps, stages) for _, warps, stages, arch in variants
    ]
    for result in compiled:
        assert result["target"] and result["elf"] and result["mma"], result
        assert result["params"] == len(FAMILY.args) + 2, result  # + global and profile scratch


# ---------------------------------------------------------------- end to end

E2E = Spec((2,), 37, 53, 20, 36, transposed=(1, 1, 1, 1), scale=0.2236)


def test_end_to_end_matches_the_reference(tmp_path: Path) -> None:
    """C2PSA's layout through teeny-inference, emit-triton and the interpreter
    runtime: one launch, both results."""
    kernels = teeny_ir.parse_module(E2E.text(), filename="attention.mlir")
    out = tmp_path / "out"
    teeny_ir.PassManager.parse(f"teeny-inference,emit-triton{{out-dir={out}}}").run(kernels)
    assert [o.family for o in kernels.walk() if isinstance(o, LaunchOp)] == ["attention"]
    inputs = E2E.data(3, np.random.default_rng(5))
    got = runtime.load(out).run(inputs, {})
    graph = teeny_ir.parse_module(E2E.text())
    (op,) = (o for o in graph.walk() if isinstance(o, AttentionOp))
    assert_close(got, reference(op, inputs), REDUCTION_TOL)
