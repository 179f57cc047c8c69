"""The ``pool2d`` and ``upsample_nearest2d`` kernel families, run in Triton's
interpreter against the reference semantics, compiled ahead of time, and end
to end through ``teeny-inference``, ``emit-triton`` and the runtime.

Each case is one graph op, written as IR with a dynamic batch and lowered by
the family's own ``@lowers`` rule: the launch's constexprs, dims and grid are
what the compiler emits, evaluated at the case's batch. The kernels run in one
`kernel_harness.py` subprocess (as in test_kernel_templates.py), with NaN-padded
inputs and canary-padded, NaN-filled outputs; some grids launch more programs
than the tile model needs. The expected values come from `teeny_ir.reference`.
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import teeny_ir
from dialects.kernel import LaunchOp
from teeny_ir import reference, runtime
from teeny_ir.backend import aot
from teeny_ir.core import expressions
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.lowering import lowering_for, tensor_type
from teeny_ir.kernels.pool2d import tiles as pool_tiles
from teeny_ir.kernels.render import render
from teeny_ir.kernels.upsample_nearest2d import tiles as upsample_tiles
from teeny_ir.testing import ELEMENTWISE_TOL, REDUCTION_TOL, assert_close


def _sibling(name: str) -> ModuleType:
    """Load another test module by path (``tests`` is not an importable package)."""
    spec = importlib.util.spec_from_file_location(f"_teeny_{name}", Path(__file__).with_name(name))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


templates = _sibling("test_kernel_templates.py")


def _shape(shape: tuple[int | str, ...]) -> str:
    return "x".join(str(d) for d in shape)


def _module(op: str, x_shape: tuple[int, ...]) -> tuple[Any, LaunchOp, tuple[int, ...]]:
    """A one-op graph over ``tensor<?xCxHxW>`` (``op`` is its text between the
    operand and the type), the op's launch from its lowering rule, and its
    result shape (batch first, as given)."""
    module = teeny_ir.parse_module(_graph_text(op, x_shape))
    graph_op = next(o for o in module.walk() if o.name.startswith("graph."))
    rule = lowering_for(type(graph_op))
    assert not isinstance(rule, str), rule
    launch = rule(graph_op)
    result = tensor_type(graph_op.results[0]).get_shape()
    return module, launch, (x_shape[0], *result[1:])


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


def _evaluate(text: str, batch: int) -> int:
    return expressions.compile_expr(expressions.parse_cached(text))({"B": batch})


def pool_case(
    op: str,
    x_shape: tuple[int, ...],
    rng: np.random.Generator,
    extra_programs: int = 0,
    nans: int = 0,
) -> Any:
    """One launch of ``graph.<op>`` on a random [N, C, H, W] input (``nans`` of its
    elements NaN, some infinities), expected to equal the reference."""
    module, launch, out_shape = _module(op, x_shape)
    batch = x_shape[0]
    x = (rng.standard_normal(x_shape) * 3).astype(np.float32)
    if x.size >= 4:
        x.flat[rng.choice(x.size, 2, replace=False)] = [np.inf, -np.inf] if nans else [50.0, -50.0]
    if nans:
        x.flat[rng.choice(x.size, nans, replace=False)] = np.nan
    (want,) = reference.run(module, {}, [x])
    assert want.shape == out_shape
    args: dict[str, Any] = {}
    for name, binding in launch.arg_bindings:
        if binding == "in0":
            args[name] = x
        elif binding == "out0":
            args[name] = ("output", want.size)
        else:
            args[name] = _evaluate(binding, batch)
    constexprs = launch.constexpr_values
    family = launch.family
    block = int(constexprs["BLOCK"])
    tol = (
        ELEMENTWISE_TOL
        if family == "upsample_nearest2d" or constexprs.get("IS_MAX")
        else REDUCTION_TOL
    )
    case_id = (
        f"{op.replace(' ', '').replace(',', '_')}-{_shape(x_shape)}"
        + (f"-grid+{extra_programs}" if extra_programs else "")
        + ("-nan" if nans else "")
    )
    return templates.Case(
        id=case_id,
        family=family,
        constexprs=constexprs,
        args=args,
        grid=_evaluate(launch.grid[0], batch) + extra_programs,
        # An unmasked store reaches at most BLOCK elements past the end per program.
        pad=block * (1 + extra_programs),
        tol=tol,
        expected={"y": want.astype(np.float64).ravel()},
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


def all_cases() -> list[Any]:
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
        # NaN propagation (and infinities) through the max; an average sums them.
        pool_case(CEIL_MAX, (3, 2, 10, 7), rng, nans=6),
        pool_case(SPPF, (1, 2, 13, 11), rng, nans=3),
        pool_case(AVG_INCLUDE, (1, 2, 10, 7), rng, nans=2),
        pool_case(UP2, (1, 2, 5, 7), rng, nans=3),
    ]
    return cases


CASES = all_cases()


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    return dict(templates.run_harness(CASES, tmp_path_factory.mktemp("pool-kernels")))


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_kernel_matches_the_reference(case: Any, results: dict[str, np.ndarray]) -> None:
    (want,) = case.expected.values()
    buffer = results[f"{case.id}/y"]
    assert templates.corruption(buffer, case.pad) == []
    got = buffer[case.pad : len(buffer) - case.pad].astype(np.float64)
    assert got.shape == want.shape
    special = ~np.isfinite(want)
    # NaN where the reference has NaN (a NaN tap wins a max), infinities with their sign.
    np.testing.assert_array_equal(got[special], want[special])
    assert np.isfinite(got[~special]).all(), "a finite output is NaN/inf (unwritten?)"
    assert_close(got[~special], want[~special], case.tol)


def test_nan_cases_really_have_nans_and_finite_values() -> None:
    """The NaN cases are not vacuous: some outputs are NaN, most are finite."""
    for case in CASES:
        if case.id.endswith("-nan"):
            (want,) = case.expected.values()
            assert 0 < np.isnan(want).sum() < want.size // 2, case.id


def test_cases_cover_the_brief() -> None:
    ids = " ".join(case.id for case in CASES)
    for word in ("ceil_mode", "dilation", "exclude_pad", "global", "scales[2_3]", "-nan"):
        assert word in ids, word
    for case in CASES:
        assert case.family in ("pool2d", "upsample_nearest2d")


def test_every_num_warps_the_tiles_emit_is_run() -> None:
    """The tiles choose 4 warps for every variant; the harness launches with 4."""
    assert pool_tiles.launch_config() == (4, 1)
    assert upsample_tiles.launch_config()[1:] == (4, 1)


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


@pytest.fixture(scope="module")
def triton_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    saved = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = str(tmp_path_factory.mktemp("triton-cache"))
    yield
    if saved is None:
        del os.environ["TRITON_CACHE_DIR"]
    else:
        os.environ["TRITON_CACHE_DIR"] = saved


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_compiles_ahead_of_time(
    variant: str, arch: int, tmp_path: Path, triton_cache: None
) -> None:
    _, launch, _ = _module(VARIANTS[variant], (1, 3, 23, 19))
    family = FAMILIES[launch.family]
    name = f"{launch.family}_0"
    path = tmp_path / f"{name}.py"
    path.write_text(render(family, name, launch.constexpr_values))
    compiled = aot.compile_variant(
        path, name, family, launch.constexpr_values, arch, launch.num_warps, launch.num_stages
    )
    assert f".target sm_{arch}" in compiled.ptx
    assert compiled.cubin[:4] == b"\x7fELF"
    params = entry_parameters(compiled.ptx, name)
    assert len(params) == len(family.args) + 2  # plus Triton's global and profile scratch
    aot.check_shared(compiled)


def entry_parameters(ptx: str, name: str) -> list[str]:
    import re

    match = re.search(rf"\.entry\s+{name}\s*\((.*?)\)", ptx, re.DOTALL)
    assert match is not None, "no .entry in the PTX"
    return re.findall(r"\.param\s+\.\w+\s+(?:\.ptr\s+\S+\s+)?(?:\.align\s+\d+\s+)?(\w+)", match[1])


# ---------------------------------------------------------------- end to end

E2E = """\
func.func @forward(%x: tensor<?x3x13x11xf32>) -> (tensor<?x3x26x22xf32>, tensor<?x3x7x6xf32>, tensor<?x3x1x1xf32>) {
  %m = graph.max_pool2d %x kernel [5, 5] strides [1, 1] padding [2, 2, 2, 2] : (tensor<?x3x13x11xf32>) -> tensor<?x3x13x11xf32>
  %u = graph.upsample_nearest2d %m scales [2, 2] : (tensor<?x3x13x11xf32>) -> tensor<?x3x26x22xf32>
  %a = graph.avg_pool2d %m kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] ceil_mode exclude_pad : (tensor<?x3x13x11xf32>) -> tensor<?x3x7x6xf32>
  %g = graph.global_avg_pool2d %a : (tensor<?x3x7x6xf32>) -> tensor<?x3x1x1xf32>
  func.return %u, %a, %g : tensor<?x3x26x22xf32>, tensor<?x3x7x6xf32>, tensor<?x3x1x1xf32>
}
"""


def test_end_to_end_matches_the_reference(tmp_path: Path) -> None:
    graph = teeny_ir.parse_module(E2E, filename="pools.mlir")
    kernels = teeny_ir.parse_module(E2E, filename="pools.mlir")
    teeny_ir.PassManager.parse(f"teeny-inference,emit-triton{{out-dir={tmp_path / 'out'}}}").run(
        kernels
    )
    families = sorted(o.family for o in kernels.walk() if isinstance(o, LaunchOp))
    assert families == ["pool2d", "pool2d", "pool2d", "upsample_nearest2d"]
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
    assert pool_tiles.window_tiles()[0] * pool_tiles.window_tiles()[1] <= 2**20
    assert math.prod(pool_tiles.global_tiles(10**6)) <= 2**20
