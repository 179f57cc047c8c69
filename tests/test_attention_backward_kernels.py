"""The ``attention_backward`` kernel family: Triton's interpreter against the
reference semantics (and once against torch autograd), the validator's view of
its launches, its tiles, refusals and AOT compilation.

Each case is one ``graph.attention_backward``, written as IR (a dynamic batch
unless the operands are rank 2) and lowered by the family's own ``@lowers``
rule: the launch's dims and grid are what the compiler emits, evaluated at the
case's batch. Its ``o`` and ``lse`` come from `teeny_ir.reference` running a
``graph.attention`` on the same ``q``, ``k`` and ``v`` (so they are consistent,
as in training), ``do`` is random, and the expected gradients are the
reference's (float64, the plain formula over the whole score matrix). Extents
are odd (N = 37, M = 53 and the other way round, heads below 16) so every tail
is masked; some cases shrink ``BLOCK_M`` / ``BLOCK_N`` to 16 or 32 so many key
blocks and query blocks of both roles run (and some programs of a role find
their block past N or M), and some launch more programs than the tile model
needs on both grid axes. All cases run in one harness process
(`teeny_ir.testing.kernels.run_cases`) with NaN-padded inputs and
canary-padded, NaN-filled outputs.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import teeny_ir
from dialects.graph.attention import stored_shape
from teeny_ir import reference
from teeny_ir.backend import aot
from teeny_ir.kernels import validator
from teeny_ir.kernels.attention_backward import tiles
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.lowering import Unlowerable
from teeny_ir.kernels.render import render
from teeny_ir.testing import REDUCTION_TOL, compare
from teeny_ir.testing import kernels as harness
from teeny_ir.testing.kernels import Case, Results, launch_case, problems, tile_grid

FAMILY = FAMILIES["attention_backward"]


def _type(shape: tuple[int | str, ...]) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}f32>"


@dataclass(frozen=True)
class Spec:
    """One attention problem: batch dimensions ``batch`` (none: rank 2;
    ``dynamic``: dimension 0 is the batch ``?``, ``batch[0]`` when run), N
    queries, M keys, head dimensions ``dk`` and ``dv``, the four layout flags
    and the scale."""

    batch: tuple[int, ...]
    n: int
    m: int
    dk: int
    dv: int
    flags: tuple[int, int, int, int] = (0, 0, 0, 0)
    scale: float = 0.3
    dynamic: bool = True

    def stored(self) -> dict[str, tuple[int, ...]]:
        """Each operand's stored shape at the run's batch."""
        b, (tq, tk, tv, to) = self.batch, self.flags
        return {
            "q": stored_shape((*b, self.n, self.dk), tq),
            "k": stored_shape((*b, self.m, self.dk), tk),
            "v": stored_shape((*b, self.m, self.dv), tv),
            "o": stored_shape((*b, self.n, self.dv), to),
            "lse": (*b, self.n),
        }

    def types(self) -> dict[str, str]:
        """Each operand's IR type (dimension 0 ``?`` when dynamic)."""
        return {
            name: _type(("?", *shape[1:]) if self.dynamic and self.batch else shape)
            for name, shape in self.stored().items()
        }

    def options(self) -> str:
        return f"scale {self.scale!r} transposed {list(self.flags)}"

    def forward_text(self) -> str:
        t = self.types()
        operands = f"({t['q']}, {t['k']}, {t['v']})"
        results = f"({t['o']}, {t['lse']})"
        return (
            f"func.func @forward(%q: {t['q']}, %k: {t['k']}, %v: {t['v']}) -> {results} {{\n"
            f"  %o, %lse = graph.attention %q, %k, %v {self.options()} : {operands} -> {results}\n"
            f"  func.return %o, %lse : {t['o']}, {t['lse']}\n}}\n"
        )

    def backward_text(self) -> str:
        t = self.types()
        names = ("q", "k", "v", "o", "lse", "do")
        types = [t[name] for name in names[:5]] + [t["o"]]
        args = ", ".join(f"%{name}: {ty}" for name, ty in zip(names, types, strict=True))
        results = f"({t['q']}, {t['k']}, {t['v']})"
        return (
            f"func.func @forward({args}) -> {results} {{\n"
            f"  %dq, %dk, %dv = graph.attention_backward %q, %k, %v, %o, %lse, %do "
            f"{self.options()} : ({', '.join(types)}) -> {results}\n"
            f"  func.return %dq, %dk, %dv : {t['q']}, {t['k']}, {t['v']}\n}}\n"
        )

    def data(self, seed: int) -> list[np.ndarray]:
        """``q``, ``k``, ``v``, ``o``, ``lse``, ``do``: o and lse the reference
        forward's on q, k and v."""
        rng = np.random.default_rng(seed)
        shapes = self.stored()
        q, k, v = (rng.standard_normal(shapes[n]).astype(np.float32) for n in "qkv")
        o, lse = reference.run(teeny_ir.parse_module(self.forward_text()), {}, [q, k, v])
        do = rng.standard_normal(shapes["o"]).astype(np.float32)
        return [q, k, v, o, lse, do]


def kernel_case(
    spec: Spec,
    *,
    seed: int,
    profile: str = "gpu",
    blocks: tuple[int, int] | None = None,
    extra: tuple[int, int] = (0, 0),
) -> Case:
    """``spec`` lowered with tile profile ``profile`` and bound at its batch;
    ``blocks`` overrides ``(BLOCK_M, BLOCK_N)``, ``extra`` adds programs on grid
    axes 0 and 1 beyond what the tile model needs."""
    module, launch = harness.lowered(spec.backward_text(), profile=profile)
    inputs = spec.data(seed)
    expected = reference.run(module, {}, inputs)
    constexprs = None if blocks is None else dict(zip(("BLOCK_M", "BLOCK_N"), blocks, strict=True))
    case_id = (
        f"{'x'.join(map(str, spec.batch)) or 'rank2'}-n{spec.n}-m{spec.m}-dk{spec.dk}-dv{spec.dv}"
        f"-t{''.join(map(str, spec.flags))}-{profile}"
        + (f"-b{blocks[0]}x{blocks[1]}" if blocks else "")
        + (f"-grid+{extra[0]}+{extra[1]}" if any(extra) else "")
    )
    case = launch_case(
        case_id,
        launch,
        spec.batch[0] if spec.dynamic and spec.batch else 1,
        inputs,
        expected,
        pad=256,
        tol=REDUCTION_TOL,
        constexprs=constexprs,
        spec=(spec, inputs),
    )
    needed = tile_grid(FAMILY, dict(case.args), case.constexprs)
    assert case.grid3()[:2] == needed or blocks is not None, (case.id, case.grid, needed)
    return replace(case, grid=(needed[0] + extra[0], needed[1] + extra[1]))


def all_cases() -> list[Case]:
    return [
        # Logical layouts, 4 heads, batch 3; BLOCK_M = 32, BLOCK_N = 16: role 0's 4 key
        # blocks each loop over 2 query blocks, role 1's 2 query blocks over 4 key
        # blocks (its programs for blocks 2 and 3 find nothing to do).
        kernel_case(Spec((3, 4), 37, 53, 24, 40), seed=1, blocks=(32, 16)),
        # The same launch at batch 1.
        kernel_case(Spec((1, 4), 37, 53, 24, 40), seed=2, blocks=(32, 16)),
        # C2PSA's layout (all transposed), one head, N > M, Dv below 16; 16 x 16 tiles
        # and more programs than needed on both axes.
        kernel_case(
            Spec((3,), 53, 37, 20, 8, (1, 1, 1, 1), scale=0.25),
            seed=3,
            blocks=(16, 16),
            extra=(2, 1),
        ),
        # A mixed layout, 4 heads, the lowering's own (gpu) tiles, a bigger grid.
        kernel_case(Spec((3, 4), 37, 37, 40, 24, (0, 1, 1, 0)), seed=4, extra=(3, 0)),
        # Rank 2 (one static matrix), another mixed layout, the interpreter's tiles.
        kernel_case(
            Spec((), 20, 70, 8, 33, (1, 0, 0, 1), scale=-0.7),
            seed=5,
            profile="interpreter",
        ),
        # Two static batch dimensions (G = 6) in the interpreter's tiles, N > M.
        kernel_case(
            Spec((2, 3), 45, 19, 30, 17, (0, 0, 1, 1), dynamic=False), seed=6, profile="interpreter"
        ),
    ]


def mutants() -> dict[str, Case]:
    """Cases run on mutated kernels: role 0 reading ``q`` without its query mask
    reads the NaN past the last matrix (``0 * NaN`` poisons ``dk``); role 1
    addressing ``q`` as if untransposed reads the wrong elements of a
    transposed ``q``; without the guard past the last matrix, the extra
    programs of role 1 write past ``dq`` (into its canaries)."""
    found = {
        "q-no-query-mask": (
            kernel_case(Spec((1, 4), 37, 53, 8, 40), seed=7, blocks=(16, 16)),
            ("mask=mask_dk[:, None] & mask_m[None, :],", "mask=mask_dk[:, None],"),
        ),
        "q-as-untransposed": (
            kernel_case(Spec((1,), 37, 20, 16, 16, (1, 0, 0, 0)), seed=8, blocks=(16, 16)),
            (
                "q_offsets = q_matrix + queries[:, None] * q_sr + d_k[None, :] * q_sd",
                "q_offsets = q_matrix + queries[:, None] * DK + d_k[None, :]",
            ),
        ),
        "no-guard-past-the-last-matrix": (
            kernel_case(Spec((1,), 5, 7, 3, 2), seed=9, extra=(1, 0)),
            ("n_end = tl.where(matrix < G, N, 0)", "n_end = N"),
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
    """Canaries intact, every gradient element written, within the reduction tolerance."""
    assert problems(case, results) == []


def test_the_checks_catch_mutated_kernels(results: Results) -> None:
    caught = {
        "q-no-query-mask": "dk: .* NaN or infinite where the reference is finite",
        "q-as-untransposed": "dq: max",
        "no-guard-past-the-last-matrix": "dq: .* canaries after the view overwritten",
    }
    for what, case in MUTANTS.items():
        assert re.search(caught[what], " ".join(problems(case, results))), what


def test_cases_cover_the_brief() -> None:
    specs = [case.spec[0] for case in CASES]
    assert {s.flags for s in specs} >= {(0, 0, 0, 0), (1, 1, 1, 1)}
    assert any(len(set(s.flags)) == 2 for s in specs)  # a mixed layout
    assert {s.batch[0] for s in specs if s.dynamic and s.batch} == {1, 3}
    assert any(s.n > s.m for s in specs) and any(s.n < s.m for s in specs)
    assert all(s.dk != s.dv for s in specs)
    assert {len(s.batch) for s in specs} == {0, 1, 2}  # rank 2, one head, heads
    assert any(len(s.batch) == 2 and s.batch[1] == 4 for s in specs)
    blocks = []
    for case in CASES:
        args, tile = dict(case.args), case.constexprs
        for dim, name in (
            ("N", "BLOCK_M"),
            ("M", "BLOCK_N"),
            ("DK", "BLOCK_DK"),
            ("DV", "BLOCK_DV"),
        ):
            assert args[dim] % tile[name], (case.id, dim)  # a tail everywhere
        blocks.append(
            (math.ceil(args["N"] / tile["BLOCK_M"]), math.ceil(args["M"] / tile["BLOCK_N"]))
        )
    assert any(min(b) >= 3 and b[0] != b[1] for b in blocks), blocks  # idle blocks in a role
    needed = [tile_grid(FAMILY, dict(c.args), c.constexprs) for c in CASES]
    assert any(c.grid3()[0] > n[0] for c, n in zip(CASES, needed, strict=True))
    assert any(c.grid3()[1] > n[1] for c, n in zip(CASES, needed, strict=True))


def test_against_torch_autograd(results: Results) -> None:
    """One case's kernel gradients against torch's scaled_dot_product_attention
    differentiated in float64."""
    torch = pytest.importorskip("torch")
    case = next(c for c in CASES if c.spec[0].flags == (0, 1, 1, 0))
    spec, (q, k, v, _, _, do) = case.spec

    def logical(x: np.ndarray, flag: int) -> Any:
        t = torch.from_numpy(x.astype(np.float64))
        return t.transpose(-1, -2) if flag else t

    tq, tk, tv, to = spec.flags
    leaves = [logical(x, f).requires_grad_() for x, f in ((q, tq), (k, tk), (v, tv))]
    out = torch.nn.functional.scaled_dot_product_attention(*leaves, scale=spec.scale)
    out.backward(logical(do, to))
    worst = 0.0
    for name, leaf, flag in zip(("dq", "dk", "dv"), leaves, (tq, tk, tv), strict=True):
        grad = leaf.grad.transpose(-1, -2) if flag else leaf.grad
        got = case.got(results, name).reshape(grad.shape)
        comparison = compare(got, grad.numpy(), REDUCTION_TOL)
        assert comparison.ok, (name, comparison.reason)
        worst = max(worst, comparison.max_error)
    assert worst > 0.0  # float32 kernels against float64 torch: not the same numbers


# ---------------------------------------------------------------- the validator


def test_every_case_and_lowered_launch_is_valid() -> None:
    for case in CASES:
        validator.validate(case.contract(), batches=(case.tensors["q"][0][0],))
    for spec in {case.spec[0] for case in CASES}:
        for profile in ("gpu", "interpreter"):
            _, launch = harness.lowered(spec.backward_text(), profile=profile)
            validator.validate(launch.contract())  # batches 1..64


def test_the_validator_refuses_wrong_launches() -> None:
    case = next(c for c in CASES if c.spec[0].flags == (0, 1, 1, 0))
    batch = (case.tensors["q"][0][0],)
    matrices = case.arg("G")
    with pytest.raises(validator.ContractError, match="argument 'q' may touch"):
        validator.validate(case.contract(G=str(matrices + 1)), batches=batch)
    with pytest.raises(validator.ContractError, match=r"argument 'k_sd' = '1' is 1 .* imply 37"):
        validator.validate(case.contract(k_sd="1"), batches=batch)  # k read as untransposed
    with pytest.raises(validator.ContractError, match=r"argument 'N' .* imply"):
        validator.validate(case.contract(N=str(case.arg("N") - 1)), batches=batch)
    needed = tile_grid(FAMILY, dict(case.args), case.constexprs)
    for short in ((needed[0] - 1, 2), (needed[0], 1)):
        with pytest.raises(validator.ContractError, match="tile model of 'attention_backward'"):
            validator.validate(replace(case, grid=short).contract(), batches=batch)


def test_the_layouts_the_shapes_admit() -> None:
    """A square matrix fits both layouts; the strides of each are implied."""
    implied = FAMILY.implied
    assert implied is not None
    shapes = {
        "q": (2, 8, 8),
        "k": (2, 5, 8),
        "v": (2, 5, 3),
        "o": (2, 8, 3),
        "lse": (2, 8),
    }
    shapes |= {"do": shapes["o"], "dq": shapes["q"], "dk": shapes["k"], "dv": shapes["v"]}
    found = implied(shapes)
    assert sorted((d["q_sr"], d["q_sd"]) for d in found) == [(1, 8), (8, 1)]
    assert all((d["k_sr"], d["k_sd"], d["v_sr"], d["o_sr"]) == (8, 1, 3, 3) for d in found)
    assert implied(shapes | {"dq": (2, 8, 7)}) == []
    assert implied(shapes | {"lse": (2, 5)}) == []


# ---------------------------------------------------------------- tiles and refusals


@pytest.mark.parametrize(
    ("extents", "profile", "want", "warps"),
    [
        ((37, 53, 24, 40), "gpu", (32, 32, 32, 64), 8),
        ((4096, 4096, 32, 32), "gpu", (32, 32, 32, 32), 4),
        ((4096, 4096, 64, 64), "gpu", (32, 32, 64, 64), 8),
        ((4096, 4096, 128, 64), "gpu", (16, 16, 128, 64), 8),
        ((4096, 1000, 32, 256), "gpu", (16, 16, 32, 256), 8),
        ((5, 3, 1, 1), "gpu", (16, 16, 16, 16), 4),
        ((400, 400, 32, 64), "interpreter", (512, 512, 32, 64), 4),
        ((20, 70, 8, 33), "interpreter", (32, 128, 16, 64), 4),
        ((5000, 9, 256, 256), "interpreter", (512, 16, 256, 256), 4),
    ],
)
def test_tiles(
    extents: tuple[int, int, int, int], profile: str, want: tuple[int, ...], warps: int
) -> None:
    got = tiles.pick_tiles(*extents, profile)
    assert got == want
    block_m, block_n, block_dk, block_dv = got
    assert all(b >= 16 and b & (b - 1) == 0 for b in got)
    assert max(block_m * block_n, block_m * block_dk, block_n * block_dv) <= 2**20
    assert tiles.launch_config(block_dk, block_dv, profile) == (warps, 1)


def test_tile_extents_are_checked() -> None:
    with pytest.raises(ValueError, match=r"head dimension must be in 1\.\.256, got 257"):
        tiles.pick_tiles(8, 8, 257, 8)
    with pytest.raises(ValueError, match="queries must be >= 1"):
        tiles.pick_tiles(0, 8, 8, 8)


@pytest.mark.parametrize(("dk", "dv", "name"), [(300, 16, "Dk = 300"), (16, 257, "Dv = 257")])
def test_a_head_above_256_is_refused(dk: int, dv: int, name: str) -> None:
    spec = Spec((2,), 7, 5, dk, dv)
    with pytest.raises(Unlowerable, match=f"head dimension {name} exceeds 256"):
        harness.lowered(spec.backward_text())
    with pytest.raises(teeny_ir.DiagnosticError, match=f"a.mlir:2:.*head dimension {name}"):
        teeny_ir.PassManager.parse("lower-graph-to-kernel").run(
            teeny_ir.parse_module(spec.backward_text(), filename="a.mlir")
        )


# ---------------------------------------------------------------- AOT

AOT_VARIANTS = [(80, 32), (90, 64), (80, 128), (90, 256)]
"""(architecture, head) pairs: every row of the gpu profile's tile table
(`tiles.GPU_TILES`), each on one of the two targets, the smaller heads on
both between them."""


@pytest.mark.parametrize(("arch", "head"), AOT_VARIANTS)
def test_compiles_ahead_of_time(arch: int, head: int, tmp_path: Path, triton_cache: None) -> None:
    """The gpu profile's largest tiles for the head on a long sequence."""
    blocks = tiles.pick_tiles(4096, 4096, head, head)
    constexprs: dict[str, int | str] = dict(
        zip(("BLOCK_M", "BLOCK_N", "BLOCK_DK", "BLOCK_DV"), blocks, strict=True)
    )
    name = "attention_backward_0"
    path = tmp_path / f"{name}.py"
    path.write_text(render(FAMILY, name, constexprs))
    num_warps, num_stages = tiles.launch_config(head, head)
    compiled = aot.compile_variant(path, name, FAMILY, constexprs, arch, num_warps, num_stages)
    assert f".target sm_{arch}" in compiled.ptx and compiled.cubin[:4] == b"\x7fELF"
    assert compiled.num_warps == num_warps
    assert re.search(rf"\.reqntid {32 * num_warps}\b", compiled.ptx)
    assert "mma" in compiled.ptx
    entry = compiled.ptx[compiled.ptx.index(f".entry {name}") :]
    assert entry[: entry.index(")")].count(".param") == len(FAMILY.args) + 2
    aot.check_shared(compiled)


# ---------------------------------------------------------------- end to end


def test_end_to_end_matches_the_reference(tmp_path: Path) -> None:
    """teeny-inference and emit-triton make one launch; the runtime runs its plan."""
    from teeny_ir import runtime
    from teeny_ir.testing import assert_close

    spec = Spec((2, 3), 29, 41, 12, 20, (1, 1, 1, 1))
    kernels = teeny_ir.parse_module(spec.backward_text(), filename="attention.mlir")
    out = tmp_path / "out"
    teeny_ir.PassManager.parse(f"teeny-inference,emit-triton{{out-dir={out}}}").run(kernels)
    assert [o.name for o in kernels.walk() if o.name.startswith("kernel.")] == ["kernel.launch"]
    inputs = spec.data(10)
    got = runtime.load(out).run(inputs, {})
    want = reference.run(teeny_ir.parse_module(spec.backward_text()), {}, inputs)
    assert [g.shape for g in got] == [w.shape for w in want]
    assert_close(got, want, REDUCTION_TOL)
