"""The ``softmax`` and ``reduce`` kernel families: Triton's interpreter against the
reference semantics, the validator's view of their launches, AOT compilation,
and small graphs end to end through ``teeny-inference``, ``emit-triton`` and the
runtime.

Each case is one graph op, written as IR with a dynamic batch and lowered by the
family's own ``@lowers`` rule: the launch's dims and grid are what the compiler
emits, evaluated at the case's batch; some cases shrink ``BLOCK_ROWS`` and
``BLOCK_R`` (rebinding the grid to their tile model) so that rows of 7 to 4099
elements span many chunks and many programs. The kernels run in one harness
process (`teeny_ir.testing.kernels.run_cases`), with NaN-padded inputs and canary-padded, NaN-filled outputs; some grids launch
more programs than the tile model needs. The expected values come from
`teeny_ir.reference`, computed in float64.

Batch-strided views: some cases pass ``x`` as channels ``[c0, c0 + C)`` of a
larger NaN-filled buffer (a read outside the view poisons its row), or write
``y`` into such a view (its gaps must stay NaN), with the stride dims rebound as
the view formation does; every case is a launch the validator accepts.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import teeny_ir
from dialects.graph.reduce import infer_reduce_shape
from dialects.kernel import LaunchOp
from teeny_ir import reference, runtime
from teeny_ir.backend import aot
from teeny_ir.kernels import validator
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.lowering import Unlowerable
from teeny_ir.kernels.render import render
from teeny_ir.kernels.softmax import tiles
from teeny_ir.testing import REDUCTION_TOL, assert_close
from teeny_ir.testing import kernels as harness
from teeny_ir.testing.kernels import Case, Results, View, launch_case, problems


def _type(shape: tuple[int | str, ...]) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}f32>"


def graph_text(op: str, x_shape: tuple[int, ...]) -> str:
    """A one-op graph over ``x`` with a dynamic batch; ``op`` is e.g.
    ``"softmax axis 1"`` or ``"reduce_sum axes [0, 2] keepdims"``."""
    kind, _, options = op.partition(" ")
    dims: list[int | str] = ["?", *x_shape[1:]]
    if kind.startswith("reduce"):
        axes = [int(a) for a in options.split("[")[1].split("]")[0].split(",")]
        out = list(infer_reduce_shape(list(x_shape), axes, "keepdims" in options))
        out_dims: list[int | str] = list(out) if 0 in axes else ["?", *out[1:]]
    else:
        out_dims = list(dims)
    source, result = _type(tuple(dims)), _type(tuple(out_dims))
    return (
        f"func.func @forward(%x: {source}) -> {result} {{\n"
        f"  %y = graph.{kind} %x {options} : ({source}) -> {result}\n"
        f"  func.return %y : {result}\n}}\n"
    )


def lowered(op: str, x_shape: tuple[int, ...]) -> tuple[Any, LaunchOp]:
    """The graph module and the launch its op's own lowering rule builds."""
    module, launch = harness.lowered(graph_text(op, x_shape))
    (graph_op,) = (o for o in module.walk() if o.name.startswith("graph."))
    assert graph_op.results[0].type == launch.results[0].type
    return module, launch


def _data(shape: tuple[int, ...], kind: str, rng: np.random.Generator) -> np.ndarray:
    """``normal`` (scale 3), ``large`` (scale 1e4: exp would overflow unshifted)
    or ``specials`` (NaN, +inf, -inf scattered, a few -inf runs)."""
    scale = 1e4 if kind == "large" else 3.0
    x = (rng.standard_normal(shape) * scale).astype(np.float32)
    if kind == "specials":
        flat = x.reshape(-1)
        count = max(1, flat.size // 40)
        flat[rng.choice(flat.size, count, replace=False)] = np.nan
        flat[rng.choice(flat.size, count, replace=False)] = np.inf
        flat[rng.choice(flat.size, 2 * count, replace=False)] = -np.inf
        flat[: min(3, flat.size)] = -np.inf
    return x


def kernel_case(
    op: str,
    x_shape: tuple[int, ...],
    rng: np.random.Generator,
    *,
    blocks: tuple[int, int] | None = None,
    kind: str = "normal",
    extra_programs: int = 0,
    x_view: View | None = None,
    y_view: View | None = None,
    num_warps: int | None = None,
) -> Case:
    """One launch of ``graph.<op>`` on ``x_shape`` data of ``kind``; ``blocks``
    overrides ``(BLOCK_ROWS, BLOCK_R)`` (the grid is then what the tile model
    needs), ``x_view``/``y_view`` make the input or the output a batch-strided
    channel slice, ``num_warps`` overrides the lowering's."""
    module, launch = lowered(op, x_shape)
    x = _data(x_shape, kind, rng)
    with np.errstate(all="ignore"):
        (want,) = reference.run(module, {}, [x])
    warps = launch.num_warps if num_warps is None else num_warps
    case_id = (
        f"{op.replace(' ', '').replace(',', '_')}-{'x'.join(map(str, x_shape))}"
        + (f"-b{blocks[0]}x{blocks[1]}" if blocks else "")
        + (f"-{kind}" if kind != "normal" else "")
        + (f"-grid+{extra_programs}" if extra_programs else "")
        + (f"-x@{x_view[1]}of{x_view[0]}" if x_view else "")
        + (f"-y@{y_view[1]}of{y_view[0]}" if y_view else "")
        + (f"-warps{warps}" if warps != launch.num_warps else "")
    )
    views = {name: view for name, view in (("x", x_view), ("y", y_view)) if view is not None}
    return launch_case(
        case_id,
        launch,
        x_shape[0],
        [x],
        [want],
        pad=256,
        tol=REDUCTION_TOL,
        views=views,
        constexprs=None
        if blocks is None
        else dict(zip(("BLOCK_ROWS", "BLOCK_R"), blocks, strict=True)),
        extra_programs=extra_programs,
        num_warps=warps,
    )


SOFTMAX_LENGTHS = (1, 7, 10, 1000, 4099)


def all_cases() -> list[Case]:
    rng = np.random.default_rng(7)
    cases: list[Case] = []
    for op in ("softmax", "log_softmax"):
        # Rows of every length along the last axis, in small chunks: many per row.
        for length in SOFTMAX_LENGTHS:
            small = (2, 4) if length < 100 else (4, 512)
            cases.append(kernel_case(f"{op} axis 2", (3, 3, length), rng, blocks=small))
        cases.append(kernel_case(f"{op} axis 1", (1, 1000), rng))
        # Every axis of a 4-D tensor, batch 1 and 3, the lowering's own tiles.
        for axis in range(4):
            cases.append(kernel_case(f"{op} axis {axis}", (3, 5, 6, 7), rng))
        cases.append(kernel_case(f"{op} axis {1 if op == 'softmax' else 0}", (1, 5, 6, 7), rng))
        cases.append(kernel_case(f"{op} axis 1", (3, 37, 2, 5), rng, blocks=(8, 8)))
        cases.append(kernel_case(f"{op} axis 0", (3, 4, 5), rng, blocks=(8, 1), extra_programs=2))
        # Stability and special values.
        cases.append(kernel_case(f"{op} axis 2", (3, 4, 300), rng, blocks=(2, 64), kind="large"))
        cases.append(kernel_case(f"{op} axis 1", (3, 50, 6), rng, blocks=(4, 16), kind="large"))
        cases.append(kernel_case(f"{op} axis 2", (3, 20, 9), rng, blocks=(16, 4), kind="specials"))
        cases.append(kernel_case(f"{op} axis 0", (3, 5, 7), rng, kind="specials"))
        # Batch-strided views along every kind of axis.
        cases.append(kernel_case(f"{op} axis 2", (3, 3, 10), rng, blocks=(2, 4), x_view=(5, 1)))
        cases.append(kernel_case(f"{op} axis 1", (3, 3, 10), rng, y_view=(6, 2)))
        cases.append(kernel_case(f"{op} axis 0", (3, 3, 10), rng, x_view=(4, 1), y_view=(5, 2)))
        cases.append(
            kernel_case(
                f"{op} axis 3",
                (3, 2, 3, 9),
                rng,
                blocks=(2, 4),
                extra_programs=1,
                x_view=(4, 2),
                y_view=(3, 1),
            )
        )
    for mean in ("reduce_sum", "reduce_mean"):
        for length in SOFTMAX_LENGTHS:
            small = (2, 4) if length < 100 else (4, 512)
            cases.append(kernel_case(f"{mean} axes [2]", (3, 3, length), rng, blocks=small))
        for axes in ("[1]", "[2, 3] keepdims", "[0]", "[0, 1] keepdims", "[0, 2]", "[3]"):
            cases.append(kernel_case(f"{mean} axes {axes}", (3, 5, 6, 7), rng))
        cases.append(kernel_case(f"{mean} axes [2, 3] keepdims", (1, 5, 6, 7), rng))
        cases.append(kernel_case(f"{mean} axes [0, 2]", (1, 5, 6, 7), rng))
        cases += [
            kernel_case(f"{mean} axes [1, 2]", (3, 9, 11, 2), rng, blocks=(2, 8)),
            kernel_case(f"{mean} axes [0, 1, 2, 3]", (3, 5, 6, 7), rng, blocks=(1, 16)),
            kernel_case(f"{mean} axes [1, 3]", (3, 4, 1, 6), rng),  # a size-1 axis between
            kernel_case(f"{mean} axes [2]", (3, 4, 1, 6), rng),  # only a size-1 axis
            kernel_case(f"{mean} axes [1]", (2, 4099), rng, blocks=(1, 512), extra_programs=2),
            kernel_case(f"{mean} axes [2]", (3, 20, 30), rng, blocks=(16, 8), kind="large"),
            kernel_case(f"{mean} axes [2]", (3, 20, 30), rng, blocks=(16, 8), kind="specials"),
            kernel_case(f"{mean} axes [0, 2]", (3, 8, 5), rng, kind="specials"),
            kernel_case(f"{mean} axes [2]", (3, 3, 10), rng, blocks=(2, 4), x_view=(5, 1)),
            kernel_case(f"{mean} axes [2, 3] keepdims", (3, 3, 4, 5), rng, y_view=(7, 3)),
            kernel_case(
                f"{mean} axes [3]", (3, 3, 4, 5), rng, blocks=(4, 2), x_view=(4, 1), y_view=(6, 2)
            ),
            kernel_case(f"{mean} axes [0, 2]", (3, 3, 10), rng, blocks=(2, 4), x_view=(6, 2)),
            kernel_case(f"{mean} axes [1]", (3, 3, 10), rng, x_view=(4, 0), y_view=(12, 1)),
        ]
    # The extrema (reduce_extremum family): NaN propagates, infinities win.
    for extremum in ("reduce_max", "reduce_min"):
        cases += [
            kernel_case(f"{extremum} axes [2]", (3, 3, 1000), rng, blocks=(2, 64)),
            kernel_case(f"{extremum} axes [1]", (3, 5, 6, 7), rng),
            kernel_case(f"{extremum} axes [0, 1] keepdims", (3, 5, 6, 7), rng),
            kernel_case(f"{extremum} axes [2, 3]", (1, 5, 6, 7), rng, blocks=(4, 8)),
            kernel_case(f"{extremum} axes [2]", (3, 20, 30), rng, blocks=(16, 8), kind="specials"),
            kernel_case(f"{extremum} axes [0, 2]", (3, 8, 5), rng, kind="specials"),
            kernel_case(
                f"{extremum} axes [3]",
                (3, 3, 4, 5),
                rng,
                blocks=(4, 2),
                x_view=(4, 1),
                y_view=(6, 2),
            ),
        ]
    emitted = {case.num_warps for case in cases}
    for warps in sorted({1, 2, 4, 8} - emitted):
        cases += [
            kernel_case("softmax axis 1", (3, 37, 5), rng, blocks=(4, 8), num_warps=warps),
            kernel_case(
                "log_softmax axis 2",
                (3, 3, 1000),
                rng,
                x_view=(4, 1),
                y_view=(5, 0),
                num_warps=warps,
            ),
            kernel_case("reduce_mean axes [0, 2]", (3, 7, 300), rng, num_warps=warps),
            kernel_case("reduce_sum axes [2]", (3, 3, 4099), rng, blocks=(2, 512), num_warps=warps),
        ]
    return cases


def mutants() -> dict[str, Case]:
    """Cases run on mutated kernels: with a load mask that keeps only the rows in
    range, the last row reads the NaN past the tensor's end; addressing images as contiguous reads the NaN between a strided
    input's images."""
    rng = np.random.default_rng(8)
    row_only = ("x + offsets, mask=mask,", "x + offsets, mask=row_mask[:, None],")
    contiguous = ("column = rb * x_batch_stride", "column = rb * (OUTER * R * INNER)")
    found = {
        "softmax-no-load-mask": (
            kernel_case("softmax axis 2", (3, 4, 10), rng, blocks=(2, 4)),
            row_only,
        ),
        "extremum-drops-nan": (
            kernel_case("reduce_max axes [2]", (3, 20, 30), rng, blocks=(16, 8), kind="specials"),
            ('float("nan"), total)', "total, total)"),
        ),
        "reduce-no-load-mask": (
            kernel_case("reduce_sum axes [2]", (3, 4, 10), rng, blocks=(2, 4)),
            row_only,
        ),
        "reduce-strided-batch-read-contiguous": (
            kernel_case("reduce_sum axes [0, 2]", (3, 4, 10), rng, x_view=(6, 1)),
            contiguous,
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
    """Canaries intact, NaN and infinities where the reference has them (the
    gaps of a strided output stay NaN), the finite values within ``case.tol``."""
    assert problems(case, results) == []


def test_every_case_is_a_valid_launch() -> None:
    """The harness runs only launches the validator accepts (stride dims included)."""
    for case in CASES:
        validator.validate(case.contract())


def test_the_checks_catch_mutated_kernels(results: Results) -> None:
    for what, case in MUTANTS.items():
        found = " ".join(problems(case, results))
        caught = (
            "not NaN where it must stay NaN"
            if what == "extremum-drops-nan"
            else ("NaN or infinite where the reference is finite")
        )
        assert caught in found, what


def test_special_cases_are_not_vacuous() -> None:
    """The specials cases have NaN, +inf and -inf outputs and finite ones."""
    for family in ("softmax", "reduce"):
        wants = [c.expected["y"] for c in CASES if c.family == family and "-specials" in c.id]
        values = np.concatenate([w.ravel() for w in wants])
        assert np.isnan(values).any() and np.isfinite(values).sum() >= 5, family
        if family == "reduce":
            assert np.isposinf(values).any() and np.isneginf(values).any()
        else:
            assert (values == 0).any() and np.isneginf(values).any()  # exp(-inf), log of it


def test_cases_cover_the_brief() -> None:
    ids = " ".join(case.id for case in CASES)
    for family in ("softmax", "reduce"):
        mine = [case for case in CASES if case.family == family]
        assert {case.num_warps for case in mine} == {1, 2, 4, 8}, family
        assert {case.tensors["x"][0][0] for case in mine} >= {1, 3}, family
        for pointer in ("x", "y"):
            assert any(
                case.tensors[pointer][1] != math.prod(case.tensors[pointer][0][1:]) for case in mine
            ), (family, pointer)
        lengths = {dict(case.args)["R"] * dict(case.args)["RB"] for case in mine}
        assert lengths >= set(SOFTMAX_LENGTHS), family
    for word in (
        "axis0",
        "axis1",
        "axis2",
        "axis3",
        "axes[0_2]",
        "keepdims",
        "-large",
        "-specials",
    ):
        assert word in ids, word


# ---------------------------------------------------------------- lowering and validation


@pytest.mark.parametrize(
    ("extent", "blocks"),
    [(1, (2048, 1)), (7, (256, 8)), (10, (128, 16)), (1000, (2, 1024)), (4099, (2, 1024))],
)
def test_row_tiles(extent: int, blocks: tuple[int, int]) -> None:
    assert tiles.row_tiles(extent) == blocks
    assert math.prod(blocks) <= 2**20
    assert tiles.launch_config() == (4, 1)
    for batch in (False, True):
        assert tiles.reduce_tiles(5, extent, batch) == blocks


@pytest.mark.parametrize(
    ("rows", "extent", "batch", "blocks"),
    [
        # LeNet's bias gradients: fc1 ([B, 120] over the batch), conv1 ([B, 6, 28, 28]).
        (120, 1, True, (128, 256)),
        (6, 784, True, (8, 4096)),
        (1, 1, True, (1, 2**14)),
        (5000, 3, True, (1024, 32)),
        (7, 1000, False, (32, 1024)),
        (7, 10**6, False, (2, 2**14)),
        (7, 1, False, (2**15, 1)),
    ],
)
def test_interpreter_reduce_tiles(
    rows: int, extent: int, batch: bool, blocks: tuple[int, int]
) -> None:
    assert tiles.reduce_tiles(rows, extent, batch, "interpreter") == blocks
    assert all(b & (b - 1) == 0 for b in blocks) and math.prod(blocks) <= 2**15
    with pytest.raises(ValueError, match="must be >= 1"):
        tiles.reduce_tiles(0, extent, batch, "interpreter")


def test_lowered_dims() -> None:
    """The row view of each kind of reduction, as the lowering binds it."""
    expected = {
        "softmax axis 2": ("B", "1", "5", "6", "7", None),
        "softmax axis 0": ("1", "B", "210", "1", "1", None),
        "reduce_sum axes [1, 2]": ("B", "1", "1", "30", "7", "7"),
        "reduce_mean axes [0, 2] keepdims": ("1", "B", "5", "6", "7", "35"),
        "reduce_sum axes [0, 1, 2, 3]": ("1", "B", "1", "210", "1", "1"),
    }
    for op, (n, rb, outer, r, inner, y_image) in expected.items():
        _, launch = lowered(op, (2, 5, 6, 7))
        dims = dict(launch.arg_bindings)
        assert (dims["N"], dims["RB"], dims["OUTER"], dims["R"], dims["INNER"]) == (
            n,
            rb,
            outer,
            r,
            inner,
        ), op
        assert dims.get("Y_IMAGE") == (y_image if launch.family == "reduce" else None), op
        validator.validate(launch.contract())


def test_non_contiguous_axes_are_refused_with_the_limit() -> None:
    _, launch = lowered("reduce_sum axes [1, 3]", (2, 5, 1, 7))  # a size-1 axis between: fine
    assert dict(launch.arg_bindings)["R"] == "35"
    with pytest.raises(Unlowerable, match=r"axes \[1, 3\] keep axis 2 of size 6 between 1 and 3"):
        lowered("reduce_sum axes [1, 3]", (2, 5, 6, 7))
    text = graph_text("reduce_mean axes [0, 1, 3]", (2, 5, 6, 7))
    with pytest.raises(teeny_ir.DiagnosticError, match="one contiguous run of the other axes"):
        teeny_ir.PassManager.parse("teeny-inference").run(
            teeny_ir.parse_module(text, filename="r.mlir")
        )


def test_the_validator_holds_the_dims_to_the_shapes() -> None:
    for op, name, wrong, message in (
        ("softmax axis 2", "R", "7", "but the bound tensors .* imply"),
        ("softmax axis 2", "INNER", "2", "but the bound tensors .* imply"),
        ("reduce_sum axes [2]", "Y_IMAGE", "8", "argument 'Y_IMAGE' = '8' is 8 .* imply 35"),
        ("reduce_sum axes [0, 2]", "RB", "1", "but the bound tensors .* imply"),
    ):
        _, launch = lowered(op, (2, 5, 6, 7))
        contract = launch.contract()
        args = tuple((n, wrong if n == name else b) for n, b in contract.args)
        with pytest.raises(validator.ContractError, match=message):
            validator.validate(replace(contract, args=args))
    _, launch = lowered("softmax axis 1", (2, 5, 6, 7))
    short = replace(launch.contract(), grid=("cdiv(B * 42, 2048)", "1", "1"))
    with pytest.raises(validator.ContractError, match="tile model of 'softmax' needs"):
        validator.validate(short)


@pytest.mark.parametrize("op", ["softmax axis 2", "log_softmax axis 0", "reduce_sum axes [0, 2]"])
def test_the_validator_holds_the_stride_dims_to_the_layouts(op: str) -> None:
    _, launch = lowered(op, (2, 5, 6, 7))
    contract = launch.contract()
    x_view = 8 * 6 * 7
    good = tuple((n, str(x_view) if n == "x_batch_stride" else b) for n, b in contract.args)
    validator.validate(replace(contract, args=good, strides=(("in0", x_view),)))
    with pytest.raises(validator.ContractError, match="'x_batch_stride' = '210' is 210"):
        validator.validate(replace(contract, strides=(("in0", x_view),)))


# ---------------------------------------------------------------- AOT

ARCHS = (80, 90)
VARIANTS = [
    (family, {flag: value}, tiles.NUM_WARPS, arch)
    for family, flag in (("softmax", "LOG"), ("reduce", "MEAN"))
    for value in (0, 1)
    for arch in ARCHS
]
VARIANTS += [("softmax", {"LOG": 1}, 8, 90), ("reduce", {"MEAN": 1}, 8, 80)]
"""Every variant the lowerings emit (4 warps, 1 stage; the long-row tiles) for
both targets; 8 warps (the most threads any test runs) once per family. The
interpreter cases run every family at 1, 2, 4 and 8 warps."""


@pytest.mark.parametrize(("family_name", "flag", "warps", "arch"), VARIANTS)
def test_compiles_ahead_of_time(
    family_name: str,
    flag: dict[str, int],
    warps: int,
    arch: int,
    tmp_path: Path,
    triton_cache: None,
) -> None:
    """The lowering's tiles for long rows (2 x 1024)."""
    block_rows, block_r = tiles.row_tiles(4099)
    constexprs: dict[str, int | str] = {**flag, "BLOCK_ROWS": block_rows, "BLOCK_R": block_r}
    family = FAMILIES[family_name]
    name = f"{family_name}_0"
    path = tmp_path / f"{name}.py"
    path.write_text(render(family, name, constexprs))
    compiled = aot.compile_variant(path, name, family, constexprs, arch, warps, tiles.NUM_STAGES)
    assert f".target sm_{arch}" in compiled.ptx
    assert compiled.cubin[:4] == b"\x7fELF"
    assert compiled.num_warps == warps
    assert re.search(rf"\.reqntid {32 * warps}\b", compiled.ptx)
    entry = compiled.ptx[compiled.ptx.index(f".entry {name}") :]
    assert entry[: entry.index(")")].count(".param") == len(family.args) + 2
    aot.check_shared(compiled)


# ---------------------------------------------------------------- end to end

E2E = """\
func.func @forward(%x: tensor<?x6x5x7xf32>) -> (tensor<?x3x5x7xf32>, tensor<?x6x5x7xf32>,
    tensor<?x12x5x1xf32>, tensor<1x6x1x7xf32>, tensor<?xf32>, tensor<f32>) {
  %a, %b = graph.split %x axis 1 sizes [3, 3]
      : (tensor<?x6x5x7xf32>) -> (tensor<?x3x5x7xf32>, tensor<?x3x5x7xf32>)
  %p = graph.softmax %b axis 3 : (tensor<?x3x5x7xf32>) -> tensor<?x3x5x7xf32>
  %l = graph.log_softmax %x axis 1 : (tensor<?x6x5x7xf32>) -> tensor<?x6x5x7xf32>
  %s = graph.reduce_sum %x axes [3] keepdims : (tensor<?x6x5x7xf32>) -> tensor<?x6x5x1xf32>
  %m = graph.reduce_mean %l axes [3] keepdims : (tensor<?x6x5x7xf32>) -> tensor<?x6x5x1xf32>
  %c = graph.concat %s, %m axis 1
      : (tensor<?x6x5x1xf32>, tensor<?x6x5x1xf32>) -> tensor<?x12x5x1xf32>
  %g = graph.reduce_mean %x axes [0, 2] keepdims : (tensor<?x6x5x7xf32>) -> tensor<1x6x1x7xf32>
  %t = graph.reduce_sum %p axes [1, 2, 3] : (tensor<?x3x5x7xf32>) -> tensor<?xf32>
  %z = graph.reduce_mean %x axes [0, 1, 2, 3] : (tensor<?x6x5x7xf32>) -> tensor<f32>
  func.return %p, %l, %c, %g, %t, %z : tensor<?x3x5x7xf32>, tensor<?x6x5x7xf32>,
      tensor<?x12x5x1xf32>, tensor<1x6x1x7xf32>, tensor<?xf32>, tensor<f32>
}
"""
"""A split part read by a softmax (a batch-strided input), two reductions written
in place into a concat (batch-strided outputs), a reduction over the batch and
the other axes, a softmax's rows summed (to 1 each), and the mean of everything
(a scalar)."""


def test_end_to_end_matches_the_reference(tmp_path: Path) -> None:
    kernels = teeny_ir.parse_module(E2E, filename="rows.mlir")
    out = tmp_path / "out"
    teeny_ir.PassManager.parse(f"teeny-inference,emit-triton{{out-dir={out}}}").run(kernels)
    launches = [o for o in kernels.walk() if isinstance(o, LaunchOp)]
    assert sorted(o.family for o in launches) == ["reduce"] * 5 + ["softmax"] * 2
    assert [o.name for o in kernels.walk()].count("kernel.concat") == 1
    assert "kernel.slice" in [o.name for o in kernels.walk()]
    bindings = [dict(o.arg_bindings) for o in launches]
    assert any(b["x_batch_stride"] == str(6 * 5 * 7) and b["R"] == "7" for b in bindings)
    assert sum(b["y_batch_stride"] == str(12 * 5) for b in bindings) == 2
    executable = runtime.load(out)
    # One batch: each run starts an interpreter worker; the kernel cases run batch 1 and 3.
    batch = 3
    x = (np.random.default_rng(0).standard_normal((batch, 6, 5, 7)) * 4).astype(np.float32)
    got = executable.run([x], {})
    want = reference.run(teeny_ir.parse_module(E2E), {}, [x])
    assert [g.shape for g in got] == [w.shape for w in want]
    assert_close(got, want, REDUCTION_TOL)
    np.testing.assert_allclose(got[4], 5 * 3 * np.ones(batch), rtol=1e-5)
