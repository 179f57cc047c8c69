"""The ``pool2d`` and ``upsample_nearest2d`` kernel families, run in Triton's
interpreter against the reference semantics, compiled ahead of time, and end
to end through ``teeny-inference``, ``emit-triton`` and the runtime.

Each case is one graph op, written as IR with a dynamic batch and lowered by
the family's own ``@lowers`` rule: the launch's constexprs, dims and grid are
what the compiler emits, evaluated at the case's batch. The kernels run in one
harness process (`teeny_ir.testing.kernels.run_cases`), with NaN-padded inputs
and canary-padded, NaN-filled outputs; some grids launch
more programs than the tile model needs. The expected values come from
`teeny_ir.reference`.

Batch-strided views: some cases pass ``x`` as channels ``[c0, c0 + C)`` of a
larger NaN-filled ``[B, Ct, H, W]`` buffer (data from element ``c0 * H * W`` on,
``x_batch_stride = Ct * H * W``: a read outside the view is NaN and poisons the
pool), or write ``y`` into such a view (its images must equal the reference,
the gaps between them stay NaN). The stride dims are rebound as the view
formation does, and every case is a launch the validator accepts. Each family
runs at every ``num_warps`` its tiles emit and at 1, 2, 4 and 8.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import TensorType

import teeny_ir
from dialects.kernel import LaunchOp
from teeny_ir import reference, runtime
from teeny_ir.backend import aot
from teeny_ir.kernels import validator
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.pool2d import tiles as pool_tiles
from teeny_ir.kernels.render import render
from teeny_ir.kernels.upsample_nearest2d import tiles as upsample_tiles
from teeny_ir.testing import ELEMENTWISE_TOL, REDUCTION_TOL, assert_close
from teeny_ir.testing.kernels import Case, Results, View, launch_case, lowered, problems


def _shape(shape: tuple[int | str, ...]) -> str:
    return "x".join(str(d) for d in shape)


def _module(op: str, x_shape: tuple[int, ...]) -> tuple[Any, LaunchOp, tuple[int, ...]]:
    """A one-op graph over ``tensor<?xCxHxW>`` (``op`` is its text between the
    operand and the type), the op's launch from its lowering rule, and its
    result shape (batch first, as given)."""
    module, launch = lowered(_graph_text(op, x_shape))
    result = launch.outputs[0].type
    assert isinstance(result, TensorType)
    return module, launch, (x_shape[0], *result.get_shape()[1:])


def _graph_text(op: str, x_shape: tuple[int, ...]) -> str:
    """The graph, its result type inferred by the op's own shape rule."""
    from dialects.graph import pool

    kind, _, options = op.partition(" ")
    words = dict(_options(options))
    dims = list(x_shape)
    if kind == "upsample_nearest2d":
        out = pool.infer_upsample_nearest2d_shape(dims, words["scales"])
    elif kind == "global_avg_pool2d":
        out = pool.infer_global_avg_pool2d_shape(dims)
    else:
        kernel = words["kernel"]
        out = pool.infer_pool2d_shape(
            dims,
            kernel,
            words.get("strides", kernel),
            words.get("padding", [0, 0, 0, 0]),
            words.get("dilation", [1, 1]),
            "ceil_mode" in words,
        )
    source = f"tensor<?x{_shape(x_shape[1:])}xf32>"
    result = f"tensor<?x{_shape(tuple(out[1:]))}xf32>"
    return (
        f"func.func @forward(%x: {source}) -> {result} {{\n"
        f"  %y = graph.{kind} %x {options} : ({source}) -> {result}\n"
        f"  func.return %y : {result}\n}}\n"
    )


def _options(text: str) -> Iterator[tuple[str, list[int]]]:
    """``kernel [3, 3] ceil_mode`` -> ("kernel", [3, 3]), ("ceil_mode", [])."""
    rest = text.strip()
    while rest:
        word, _, rest = rest.partition(" ")
        rest = rest.strip()
        if rest.startswith("["):
            values, _, rest = rest[1:].partition("]")
            yield word, [int(v) for v in values.split(",")]
            rest = rest.strip()
        else:
            yield word, []


def pool_case(
    op: str,
    x_shape: tuple[int, ...],
    rng: np.random.Generator,
    extra_programs: int = 0,
    nans: int = 0,
    x_view: View | None = None,
    y_view: View | None = None,
    num_warps: int | None = None,
) -> Case:
    """One launch of ``graph.<op>`` on a random [N, C, H, W] input (``nans`` of its
    elements NaN, some infinities), expected to equal the reference; ``x_view`` and
    ``y_view`` make the input and the output batch-strided channel slices, and
    ``num_warps`` overrides the lowering's."""
    module, launch, out_shape = _module(op, x_shape)
    batch = x_shape[0]
    x = (rng.standard_normal(x_shape) * 3).astype(np.float32)
    if x.size >= 4:
        x.flat[rng.choice(x.size, 2, replace=False)] = [np.inf, -np.inf] if nans else [50.0, -50.0]
    if nans:
        x.flat[rng.choice(x.size, nans, replace=False)] = np.nan
    (want,) = reference.run(module, {}, [x])
    assert want.shape == out_shape
    constexprs = launch.constexpr_values
    family = launch.family
    tol = (
        ELEMENTWISE_TOL
        if family == "upsample_nearest2d" or constexprs.get("IS_MAX")
        else REDUCTION_TOL
    )
    warps = launch.num_warps if num_warps is None else num_warps
    case_id = (
        f"{op.replace(' ', '').replace(',', '_')}-{_shape(x_shape)}"
        + (f"-grid+{extra_programs}" if extra_programs else "")
        + ("-nan" if nans else "")
        + (f"-x@{x_view[1]}of{x_view[0]}" if x_view else "")
        + (f"-y@{y_view[1]}of{y_view[0]}" if y_view else "")
        + (f"-warps{warps}" if warps != launch.num_warps else "")
    )
    views = {name: view for name, view in (("x", x_view), ("y", y_view)) if view is not None}
    return launch_case(
        case_id,
        launch,
        batch,
        [x],
        [want],
        # An unmasked store reaches at most BLOCK elements past the end per program.
        pad=int(constexprs["BLOCK"]) * (1 + extra_programs),
        tol=tol,
        views=views,
        extra_programs=extra_programs,
        num_warps=warps,
    )


SPPF = "max_pool2d kernel [5, 5] strides [1, 1] padding [2, 2, 2, 2]"
LENET_MAX = "max_pool2d kernel [2, 2] strides [2, 2]"
CEIL_MAX = "max_pool2d kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] ceil_mode"
DILATED = "max_pool2d kernel [3, 3] strides [1, 1] padding [1, 1, 1, 1] dilation [2, 2]"
DILATED_CEIL = (
    "max_pool2d kernel [3, 2] strides [2, 3] padding [1, 0, 1, 1] dilation [2, 3] ceil_mode"
)
AVG_INCLUDE = "avg_pool2d kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] ceil_mode"
AVG_EXCLUDE = "avg_pool2d kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] ceil_mode exclude_pad"
AVG_EXCLUDE_FLOOR = "avg_pool2d kernel [2, 3] strides [1, 2] padding [1, 1, 0, 1] exclude_pad"
LENET_AVG = "avg_pool2d kernel [2, 2]"
GLOBAL = "global_avg_pool2d"
UP2 = "upsample_nearest2d scales [2, 2]"
UP23 = "upsample_nearest2d scales [2, 3]"
UP31 = "upsample_nearest2d scales [3, 1]"


def all_cases() -> list[Case]:
    rng = np.random.default_rng(5)
    cases = []
    for batch in (1, 3):
        cases += [
            pool_case(SPPF, (batch, 5, 13, 11), rng),
            pool_case(LENET_MAX, (batch, 3, 13, 11), rng),
            pool_case(CEIL_MAX, (batch, 2, 10, 7), rng),
            pool_case(DILATED, (batch, 3, 9, 10), rng),
            pool_case(AVG_INCLUDE, (batch, 2, 10, 7), rng),
            pool_case(AVG_EXCLUDE, (batch, 2, 10, 7), rng),
            pool_case(LENET_AVG, (batch, 3, 13, 11), rng),
            pool_case(GLOBAL, (batch, 5, 7, 9), rng),
            pool_case(UP2, (batch, 4, 5, 7), rng),
            pool_case(UP23, (batch, 3, 5, 7), rng),
            # Batch-strided views: the input, the output, both.
            pool_case(SPPF, (batch, 5, 13, 11), rng, x_view=(8, 2)),
            pool_case(CEIL_MAX, (batch, 3, 10, 7), rng, y_view=(5, 1)),
            pool_case(AVG_EXCLUDE, (batch, 2, 10, 7), rng, x_view=(3, 1), y_view=(4, 2)),
            pool_case(GLOBAL, (batch, 5, 7, 9), rng, x_view=(6, 0), y_view=(9, 4)),
            pool_case(UP23, (batch, 3, 5, 7), rng, x_view=(7, 4)),
            pool_case(UP2, (batch, 4, 5, 7), rng, x_view=(5, 1), y_view=(6, 0)),
        ]
    cases += [
        pool_case(DILATED_CEIL, (3, 2, 11, 13), rng),
        pool_case(AVG_EXCLUDE_FLOOR, (3, 2, 9, 8), rng),
        pool_case(GLOBAL, (3, 7, 23, 19), rng),  # 437 per plane: two BLOCK_HW = 256 blocks
        pool_case(GLOBAL, (2, 40, 1, 3), rng),  # 80 planes: three programs of 32 planes
        pool_case(UP31, (1, 2, 4, 5), rng),
        # More programs than the tile model needs; more than one program of outputs.
        pool_case(SPPF, (3, 16, 13, 11), rng, extra_programs=2),
        pool_case(AVG_EXCLUDE, (3, 37, 10, 7), rng, extra_programs=1),
        pool_case(GLOBAL, (1, 3, 5, 5), rng, extra_programs=2),
        pool_case(UP2, (3, 33, 5, 7), rng, extra_programs=1),
        pool_case(
            DILATED_CEIL, (3, 2, 11, 13), rng, extra_programs=1, x_view=(3, 1), y_view=(5, 3)
        ),
        pool_case(GLOBAL, (3, 7, 23, 19), rng, x_view=(9, 2), y_view=(8, 1)),
        pool_case(GLOBAL, (2, 40, 1, 3), rng, extra_programs=1, x_view=(41, 1), y_view=(43, 3)),
        pool_case(UP2, (3, 9, 5, 7), rng, extra_programs=1, x_view=(11, 2), y_view=(10, 0)),
        # NaN propagation (and infinities) through the max; an average sums them.
        pool_case(CEIL_MAX, (3, 2, 10, 7), rng, nans=6),
        pool_case(SPPF, (1, 2, 13, 11), rng, nans=3),
        pool_case(AVG_INCLUDE, (1, 2, 10, 7), rng, nans=2),
        pool_case(UP2, (1, 2, 5, 7), rng, nans=3),
        pool_case(CEIL_MAX, (3, 2, 10, 7), rng, nans=6, x_view=(4, 1), y_view=(3, 0)),
    ]
    emitted = {case.num_warps for case in cases}
    # Every num_warps the tiles emit and 1, 2, 4, 8: each variant kind, strided, batch 3.
    for warps in sorted(emitted | {1, 2, 4, 8}):
        if warps in emitted:
            continue
        cases += [
            pool_case(SPPF, (3, 5, 13, 11), rng, x_view=(7, 1), y_view=(6, 1), num_warps=warps),
            pool_case(AVG_EXCLUDE, (3, 3, 10, 7), rng, x_view=(4, 0), num_warps=warps),
            pool_case(GLOBAL, (3, 7, 23, 19), rng, y_view=(9, 2), num_warps=warps),
            pool_case(UP23, (3, 3, 5, 7), rng, x_view=(5, 2), y_view=(4, 1), num_warps=warps),
        ]
    return cases


def mutants() -> dict[str, Case]:
    """Cases run on kernels that address images as if contiguous (``C * H * W``
    apart), to show the strided cases are not vacuous."""
    rng = np.random.default_rng(6)
    pool_x = ("x + image * x_batch_stride", "x + image * (C * H * W)")
    pool_y = ("image * y_batch_stride + within", "image * outputs + within")
    global_x = ("image * x_batch_stride + channel * spatial", "image * (C * spatial) + channel")
    global_y = ("image * y_batch_stride + channel", "image * C + channel")
    up_x = ("image * x_batch_stride", "image * (C * H * W)")
    up_y = ("image * y_batch_stride", "image * outputs")
    found = {
        "max-x": (pool_case(SPPF, (3, 5, 13, 11), rng, x_view=(6, 1)), pool_x),
        "max-y": (pool_case(SPPF, (3, 5, 13, 11), rng, y_view=(6, 1)), pool_y),
        "global-x": (pool_case(GLOBAL, (3, 5, 7, 9), rng, x_view=(6, 1)), global_x),
        "global-y": (pool_case(GLOBAL, (3, 5, 7, 9), rng, y_view=(6, 1)), global_y),
        "upsample-x": (pool_case(UP23, (3, 3, 5, 7), rng, x_view=(4, 1)), up_x),
        "upsample-y": (pool_case(UP23, (3, 3, 5, 7), rng, y_view=(4, 1)), up_y),
    }
    return {
        what: replace(case, id=f"mutant-{what}", mutation=mutation)
        for what, (case, mutation) in found.items()
    }


CASES = all_cases()
MUTANTS = mutants()
WARPS = sorted({case.num_warps for case in CASES})


HARNESS_CASES = [*CASES, *MUTANTS.values()]
"""What the `results` fixture (tests/conftest.py) runs, in one interpreter process."""


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_kernel_matches_the_reference(case: Case, results: Results) -> None:
    """Canaries intact, NaN and infinities where the reference has them (the
    gaps of a strided output stay NaN), the finite values within ``case.tol``."""
    assert problems(case, results) == []


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_every_case_is_a_valid_launch(case: Case) -> None:
    """The harness runs only launches the validator accepts (stride dims included)."""
    validator.validate(case.contract())


def test_the_checks_catch_images_addressed_as_contiguous(results: Results) -> None:
    """Reading a strided input as contiguous reads the NaN between its images;
    writing a strided output as contiguous leaves images unwritten and writes gaps."""
    for what, case in MUTANTS.items():
        found = " ".join(problems(case, results))
        if what.endswith("-x"):
            assert "NaN or infinite where the reference is finite" in found, what
        else:
            assert "not NaN where it must stay NaN" in found, what


def test_nan_cases_really_have_nans_and_finite_values() -> None:
    """The NaN cases are not vacuous: some outputs are NaN, most are finite."""
    for case in CASES:
        if "-nan" in case.id and "-y@" not in case.id:
            (want,) = case.expected.values()
            assert 0 < np.isnan(want).sum() < want.size // 2, case.id


def test_cases_cover_the_brief() -> None:
    ids = " ".join(case.id for case in CASES)
    for word in ("ceil_mode", "dilation", "exclude_pad", "global", "scales[2_3]", "-nan"):
        assert word in ids, word
    for family in ("pool2d", "upsample_nearest2d"):
        mine = [case for case in CASES if case.family == family]
        assert {case.tensors["x"][0][0] for case in mine} >= {1, 3}, family
        for pointer in ("x", "y"):
            assert any(
                case.tensors[pointer][1] != math.prod(case.tensors[pointer][0][1:]) for case in mine
            ), (family, pointer)
    for case in CASES:
        assert case.family in ("pool2d", "upsample_nearest2d")


def test_every_num_warps_the_tiles_emit_is_run() -> None:
    """The tiles choose 4 warps for every variant; each family also runs at 1, 2, 4
    and 8 (an Inductor bug once gave wrong convolutions at 8 warps only)."""
    assert pool_tiles.launch_config() == (4, 1)
    assert upsample_tiles.launch_config()[1:] == (4, 1)
    for family in ("pool2d", "upsample_nearest2d"):
        warps = {case.num_warps for case in CASES if case.family == family}
        assert warps == {1, 2, 4, 8}, family
    # Windowed max and average and global pools each run at every warps count.
    for word in ("max_pool2d", "avg_pool2d", "global_avg_pool2d"):
        warps = {case.num_warps for case in CASES if case.id.startswith(word)}
        assert warps == set(WARPS), word


@pytest.mark.parametrize(
    ("spatial", "tiles"),
    [
        (1, (4096, 1)),
        (2, (2048, 2)),
        (63, (64, 64)),
        (64, (64, 64)),
        (65, (32, 128)),
        (256, (16, 256)),
        (437, (16, 256)),
        (10**6, (16, 256)),
    ],
)
def test_global_tiles(spatial: int, tiles: tuple[int, int]) -> None:
    assert pool_tiles.global_tiles(spatial) == tiles
    block, block_hw = tiles
    assert block * block_hw == pool_tiles.GLOBAL_TILE


def test_contract_rejects_inconsistent_shapes() -> None:
    from teeny_ir.kernels.validator import ContractError, LaunchContract, validate

    _, launch, _ = _module(SPPF, (1, 5, 13, 11))
    good = LaunchContract(
        family="pool2d",
        constexprs=tuple(launch.constexpr_values.items()),
        args=tuple(launch.arg_bindings),
        tensors=(("in0", ("B", 5, 13, 11)), ("out0", ("B", 5, 13, 11))),
        grid=launch.grid,
        num_warps=4,
        num_stages=1,
    )
    validate(good)
    wrong_h = tuple((n, "14" if n == "H" else b) for n, b in launch.arg_bindings)
    with pytest.raises(ContractError, match="argument 'H' = '14' is 14"):
        validate(LaunchContract(**{**good.__dict__, "args": wrong_h}))
    short_grid = ("cdiv(B * 5 * 143, 2048)", "1", "1")
    with pytest.raises(ContractError, match="tile model of 'pool2d' needs"):
        validate(LaunchContract(**{**good.__dict__, "grid": short_grid}))


def _rebound(launch: LaunchOp, strides: dict[str, int], **changes: str) -> Any:
    """``launch``'s contract with some tensors batch-strided and some dims rebound."""
    contract = launch.contract()
    args = tuple((name, changes.get(name, value)) for name, value in contract.args)
    return replace(contract, args=args, strides=tuple(strides.items()))


@pytest.mark.parametrize("op", [SPPF, GLOBAL, UP2])
def test_the_validator_holds_the_stride_dims_to_the_layouts(
    op: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A view's stride must reach the kernel, and only a pointer that takes a
    batch stride may be bound to a view."""
    _, launch, out_shape = _module(op, (1, 5, 13, 11))
    x_image, y_image = 5 * 13 * 11, math.prod(out_shape[1:])
    x_view, y_view = 8 * 13 * 11, y_image + 17
    validator.validate(launch.contract())
    validator.validate(_rebound(launch, {"in0": x_view}, x_batch_stride=str(x_view)))
    validator.validate(_rebound(launch, {"out0": y_view}, y_batch_stride=str(y_view)))
    family = launch.family
    for strides, changes, message in (
        (
            {"in0": x_view},
            {},
            f"argument 'x_batch_stride' = '{x_image}' is {x_image} at B = 1, but 'in0' "
            f"\\(bound to 'x'\\) has batch stride {x_view}",
        ),
        (
            {"out0": y_view},
            {"y_batch_stride": str(y_view - 1)},
            f"'y_batch_stride' = '{y_view - 1}' is {y_view - 1} at B = 1, but 'out0'",
        ),
        # A contiguous tensor's stride is its image.
        (
            {},
            {"x_batch_stride": str(x_view)},
            f"'in0' \\(bound to 'x'\\) has batch stride {x_image}",
        ),
        ({}, {"y_batch_stride": f"B * {y_image}"}, "is .* at B = 2, but 'out0'"),
        ({"in0": x_image - 1}, {}, f"batch stride {x_image - 1}, less than its image"),
    ):
        with pytest.raises(validator.ContractError, match=message):
            validator.validate(_rebound(launch, strides, **changes))
    contiguous = f"{family}_contiguous_x"
    strided_only_y = {"y": FAMILIES[family].batch_strides["y"]}
    monkeypatch.setitem(
        FAMILIES,
        contiguous,
        replace(FAMILIES[family], name=contiguous, batch_strides=strided_only_y),
    )
    view = replace(_rebound(launch, {"in0": x_view}, x_batch_stride=str(x_view)), family=contiguous)
    with pytest.raises(
        validator.ContractError,
        match=f"argument 'x' of family '{contiguous}' takes only contiguous tensors, but "
        f"'in0' is a batch-strided view \\(batch stride {x_view}\\)",
    ):
        validator.validate(view)


def test_a_strided_launch_in_ir_is_verified() -> None:
    """The kernel dialect's verifier holds a launch's stride dims to its operand's
    ``#kernel.batch_stride`` type (through the validator)."""
    module, _, _ = _module(SPPF, (1, 5, 13, 11))
    teeny_ir.PassManager.parse("teeny-inference").run(module)
    text = teeny_ir.print_module(module)
    contiguous = "tensor<?x5x13x11xf32>"
    strided = "tensor<?x5x13x11xf32, #kernel.batch_stride<2860>>"
    assert text.count(f"%x: {contiguous}") == 1 and text.count(f": ({contiguous}) ->") == 1
    viewed = text.replace(f"%x: {contiguous}", f"%x: {strided}").replace(
        f": ({contiguous}) ->", f": ({strided}) ->"
    )
    with pytest.raises(
        teeny_ir.DiagnosticError,
        match=r"argument 'x_batch_stride' = '715' is 715 at B = 1, but 'in0' \(bound to 'x'\) "
        r"has batch stride 2860",
    ):
        teeny_ir.parse_module(viewed)
    assert 'x_batch_stride = "715"' in viewed
    teeny_ir.parse_module(viewed.replace('x_batch_stride = "715"', 'x_batch_stride = "2860"'))


# ---------------------------------------------------------------- AOT

ARCHS = (80, 90)
VARIANTS = {
    "max": SPPF,
    "max-ceil-dilated": DILATED_CEIL,
    "avg-include": AVG_INCLUDE,
    "avg-exclude": AVG_EXCLUDE_FLOOR,
    "global": GLOBAL,
    "upsample": UP23,
}
EVERY_WARPS = ("max-ceil-dilated", "global", "upsample")
"""The variants also compiled at every num_warps in `WARPS`: one per code path
(windowed, global, upsample), the cheapest to compile."""
AOT = [
    (variant, warps)
    for variant in VARIANTS
    for warps in (WARPS if variant in EVERY_WARPS else [pool_tiles.NUM_WARPS])
]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize(("variant", "warps"), AOT)
def test_compiles_ahead_of_time(
    variant: str, warps: int, arch: int, tmp_path: Path, triton_cache: None
) -> None:
    _, launch, _ = _module(VARIANTS[variant], (1, 3, 23, 19))
    family = FAMILIES[launch.family]
    name = f"{launch.family}_0"
    path = tmp_path / f"{name}.py"
    path.write_text(render(family, name, launch.constexpr_values))
    compiled = aot.compile_variant(
        path, name, family, launch.constexpr_values, arch, warps, launch.num_stages
    )
    assert f".target sm_{arch}" in compiled.ptx
    assert compiled.cubin[:4] == b"\x7fELF"
    assert compiled.num_warps == warps
    assert re.search(rf"\.reqntid {32 * warps}\b", compiled.ptx)  # threads per block
    params = entry_parameters(compiled.ptx, name)
    assert len(params) == len(family.args) + 2  # plus Triton's global and profile scratch
    aot.check_shared(compiled)


def entry_parameters(ptx: str, name: str) -> list[str]:
    import re

    match = re.search(rf"\.entry\s+{name}\s*\((.*?)\)", ptx, re.DOTALL)
    assert match is not None, "no .entry in the PTX"
    return re.findall(r"\.param\s+\.\w+\s+(?:\.ptr\s+\S+\s+)?(?:\.align\s+\d+\s+)?(\w+)", match[1])


# ---------------------------------------------------------------- end to end

T = "tensor<?x3x13x11xf32>"
E2E = f"""\
func.func @forward(%x: {T}) -> (tensor<?x3x26x22xf32>, tensor<?x3x7x6xf32>, tensor<?x3x1x1xf32>, tensor<?x6x13x11xf32>) {{
  %m = graph.max_pool2d %x kernel [5, 5] strides [1, 1] padding [2, 2, 2, 2] : ({T}) -> {T}
  %n = graph.max_pool2d %m kernel [5, 5] strides [1, 1] padding [2, 2, 2, 2] : ({T}) -> {T}
  %u = graph.upsample_nearest2d %m scales [2, 2] : ({T}) -> tensor<?x3x26x22xf32>
  %a = graph.avg_pool2d %m kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] ceil_mode exclude_pad : ({T}) -> tensor<?x3x7x6xf32>
  %g = graph.global_avg_pool2d %a : (tensor<?x3x7x6xf32>) -> tensor<?x3x1x1xf32>
  %c = graph.concat %m, %n axis 1 : ({T}, {T}) -> tensor<?x6x13x11xf32>
  func.return %u, %a, %g, %c : tensor<?x3x26x22xf32>, tensor<?x3x7x6xf32>, tensor<?x3x1x1xf32>, tensor<?x6x13x11xf32>
}}
"""
"""An SPPF-like chain: the concat of two pools is formed in place, so both pools
write batch-strided views of its buffer, and the second pool, the upsample and
the average pool read one."""


def test_end_to_end_matches_the_reference(tmp_path: Path) -> None:
    graph = teeny_ir.parse_module(E2E, filename="pools.mlir")
    kernels = teeny_ir.parse_module(E2E, filename="pools.mlir")
    teeny_ir.PassManager.parse(f"teeny-inference,emit-triton{{out-dir={tmp_path / 'out'}}}").run(
        kernels
    )
    launches = [o for o in kernels.walk() if isinstance(o, LaunchOp)]
    families = sorted(o.family for o in launches)
    assert families == ["pool2d", "pool2d", "pool2d", "pool2d", "upsample_nearest2d"]
    assert sum(o.name == "kernel.concat" for o in kernels.walk()) == 1
    # The views' stride (6 channels of 13 x 11) reaches each pointer bound to one.
    strided = 6 * 13 * 11
    first, second, upsample, average = launches[:4]
    assert dict(first.arg_bindings)["y_batch_stride"] == str(strided)
    assert dict(second.arg_bindings)["x_batch_stride"] == str(strided)
    assert dict(second.arg_bindings)["y_batch_stride"] == str(strided)
    assert dict(upsample.arg_bindings)["x_batch_stride"] == str(strided)
    assert dict(average.arg_bindings)["x_batch_stride"] == str(strided)
    executable = runtime.load(tmp_path / "out")
    rng = np.random.default_rng(0)
    for batch in (1, 3):
        x = rng.standard_normal((batch, 3, 13, 11)).astype(np.float32)
        got = executable.run([x], {})
        want = reference.run(graph, {}, [x])
        assert [g.shape for g in got] == [w.shape for w in want]
        assert want[0].shape == (batch, 3, 26, 22)
        assert_close(got, want, REDUCTION_TOL)


def test_block_limits() -> None:
    """Every block the tiles emit is within Triton's limit."""
    for profile in ("gpu", "interpreter"):
        assert math.prod(pool_tiles.window_tiles(profile)) <= 2**20
    assert pool_tiles.window_tiles("interpreter")[0] > pool_tiles.window_tiles()[0]
    with pytest.raises(ValueError, match="unknown tile profile"):
        pool_tiles.window_tiles("cpu")
    assert math.prod(pool_tiles.global_tiles(10**6)) <= 2**20
