"""The ``transpose`` kernel family and the structural canonicalization patterns.

Transpose: Triton's interpreter against numpy in one harness process
(`teeny_ir.testing.kernels`: NaN-padded inputs, outputs canary-padded and
NaN-filled, exact copies), on odd
shapes at batch 1 and 3, every permutation of rank 3 and 4, rank 6 and the
ranks between, the input as a batch-strided channel slice of a NaN-filled
buffer, grids with extra programs and every num_warps in `WARPS`; the
validator's view of the launches; the view rule (`is_view`) and the refusals;
AOT compilation for sm_80 and sm_90; and graphs end to end through
``teeny-inference,emit-triton`` and the runtime against the reference.

Canonicalize: the patterns of `dialects.graph.canonicalize` on built graphs
(what goes, what stays, types and locations), and reference outputs before and
after ``canonicalize`` on random graphs built from the patterns' shapes.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType, f32
from xdsl.ir import Block

import teeny_ir
from dialects.graph.structure import ConcatOp, ReshapeOp, SplitOp, TransposeOp
from dialects.kernel import LaunchOp, SliceOp
from dialects.kernel import ReshapeOp as KernelReshapeOp
from teeny_ir import reference, runtime
from teeny_ir.backend import aot
from teeny_ir.kernels import validator
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.lowering import Unlowerable
from teeny_ir.kernels.render import render
from teeny_ir.kernels.transpose import lowering as transpose_lowering
from teeny_ir.kernels.transpose.contract import MAX_RANK
from teeny_ir.testing import assert_close
from teeny_ir.testing.kernels import Case, Results, channel_slice, lower_op, problems

BLOCK = 128
WARPS = sorted({transpose_lowering.NUM_WARPS, 1, 2, 4, 8})
"""Every num_warps the lowering emits (4) and 1, 2, 4, 8."""


# ---------------------------------------------------------------- kernel cases


def _logical_strides(shape: tuple[int, ...], perm: tuple[int, ...]) -> list[int]:
    """Output dim k reads input dim perm[k]: its row-major stride in the input,
    padded with 0 to the family's rank (independent of the lowering's helper)."""
    strides = [math.prod(shape[k + 1 :]) for k in range(len(shape))]
    return [strides[perm[k]] if k < len(perm) else 0 for k in range(MAX_RANK)]


def transpose_case(
    shape: tuple[int, ...],
    perm: tuple[int, ...],
    rng: np.random.Generator,
    view: tuple[int, int] | None = None,
    extra: int = 0,
    num_warps: int = transpose_lowering.NUM_WARPS,
) -> Case:
    """``y = x.transpose(perm)``; ``view`` makes ``x`` channels ``[first, first + C)``
    of a NaN-filled ``[B, total, ...]`` buffer (its batch stride ``total * plane``)."""
    x = rng.standard_normal(shape).astype(np.float32)
    x.flat[-1] = -0.0  # the sign of zero survives the copy
    y = np.ascontiguousarray(np.transpose(x, perm))
    data, stride = channel_slice(x, view)
    sizes = list(y.shape) + [1] * (MAX_RANK - len(shape))
    args: list[tuple[str, Any]] = [("x", data), ("y", ("output", y.size)), ("numel", x.size)]
    args += [("IMAGE_IN", math.prod(shape[1:]))]
    args += [(f"size{k}", sizes[k]) for k in range(1, MAX_RANK)]
    args += [(f"x_stride{k}", s) for k, s in enumerate(_logical_strides(shape, perm))]
    args += [("x_batch_stride", stride)]
    name = f"transpose-{'x'.join(map(str, shape))}-perm{''.join(map(str, perm))}"
    name += f"-x@{view[1]}of{view[0]}" if view else ""
    name += f"-grid+{extra}" if extra else ""
    name += f"-warps{num_warps}" if num_warps != transpose_lowering.NUM_WARPS else ""
    return Case(
        id=name,
        family="transpose",
        constexprs={"BLOCK": BLOCK},
        args=args,
        grid=math.ceil(x.size / BLOCK) + extra,
        pad=BLOCK * (1 + extra),
        expected={"y": y.ravel()},
        tensors={"x": (x.shape, stride), "y": (y.shape, math.prod(y.shape[1:]))},
        num_warps=num_warps,
    )


def all_cases() -> list[Case]:
    rng = np.random.default_rng(5)
    cases: list[Case] = []
    for batch in (1, 3):
        for perm in itertools.permutations(range(3)):
            cases.append(transpose_case((batch, 5, 7), perm, rng))
        for perm in itertools.permutations(range(4)):
            cases.append(transpose_case((batch, 3, 5, 7), perm, rng))
        # The input as a channel slice of a larger buffer.
        cases.append(transpose_case((batch, 3, 5, 7), (0, 2, 3, 1), rng, view=(7, 2)))
        cases.append(transpose_case((batch, 5, 7), (0, 2, 1), rng, view=(6, 0)))
        cases.append(transpose_case((batch, 3, 5, 7), (3, 1, 0, 2), rng, view=(4, 1)))
        # Rank 6, and the ranks between.
        cases.append(transpose_case((batch, 2, 3, 1, 5, 3), (0, 4, 2, 5, 1, 3), rng))
        cases.append(transpose_case((batch, 3, 2, 5, 1, 3), (5, 3, 0, 4, 2, 1), rng, view=(5, 1)))
        cases.append(transpose_case((batch, 3, 2, 5, 3), (0, 4, 3, 1, 2), rng, extra=1))
        cases.append(transpose_case((batch, 9), (1, 0), rng))
        cases.append(transpose_case((batch * 5,), (0,), rng))
    cases.append(transpose_case((3, 3, 5, 7), (0, 3, 2, 1), rng, extra=3))
    cases.append(transpose_case((3, 4, 3, 5, 1, 2), (0, 5, 3, 1, 4, 2), rng, view=(6, 2), extra=2))
    for warps in WARPS:
        if warps != transpose_lowering.NUM_WARPS:
            cases.append(
                transpose_case((3, 3, 5, 7), (0, 2, 3, 1), rng, view=(5, 1), num_warps=warps)
            )
    return cases


def mutants() -> dict[str, Case]:
    """Cases on mutated kernels: without the store mask, and reading the input as
    if contiguous; they show that the checks are not vacuous."""
    rng = np.random.default_rng(9)
    found = {
        "no-store-mask": replace(
            transpose_case((3, 3, 5, 7), (0, 3, 1, 2), rng),
            mutation=("tl.store(y + flat, value, mask=mask)", "tl.store(y + flat, value)"),
        ),
        "strided-input-read-contiguous": replace(
            transpose_case((3, 3, 5, 7), (0, 3, 1, 2), rng, view=(5, 1)),
            mutation=(".to(tl.int64) * x_batch_stride", ".to(tl.int64) * IMAGE_IN"),
        ),
    }
    return {what: replace(case, id=f"mutant-{what}") for what, case in found.items()}


CASES = all_cases()
MUTANTS = mutants()


HARNESS_CASES = [*CASES, *MUTANTS.values()]
"""What the `results` fixture (tests/conftest.py) runs, in one interpreter process."""


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_every_case_is_a_valid_launch(case: Case) -> None:
    validator.validate(case.contract())


def test_cases_cover_the_brief() -> None:
    def perm(case: Any) -> tuple[int, ...]:
        found = re.search(r"-perm(\d+)", case.id)
        assert found is not None, case.id
        return tuple(int(d) for d in found[1])

    covered = {(c.tensors["x"][0][0], perm(c)) for c in CASES}
    for batch in (1, 3):
        for rank in (3, 4):
            for order in itertools.permutations(range(rank)):
                assert (batch, order) in covered, (batch, order)
    assert {len(c.tensors["x"][0]) for c in CASES} == set(range(1, MAX_RANK + 1))
    assert {c.num_warps for c in CASES} == set(WARPS)
    assert any(c.tensors["x"][1] != math.prod(c.tensors["x"][0][1:]) for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_kernel_matches_numpy(case: Case, results: Results) -> None:
    assert problems(case, results) == []


def test_the_checks_catch_mutated_kernels(results: Results) -> None:
    """Without its store mask the tail lanes write past the output (into the
    canaries); a kernel that ignores the batch stride reads the NaN channels
    around a strided input."""
    found = {what: problems(case, results) for what, case in MUTANTS.items()}
    (store,) = found["no-store-mask"]
    assert store.startswith("y: 69 of the 128 canaries after the view overwritten"), store
    (read,) = found["strided-input-read-contiguous"]
    assert read.startswith("y: 105 of 315 elements NaN or infinite where the reference is finite")


# ---------------------------------------------------------------- lowering


def _lowered(text: str, pipeline: str = "teeny-inference") -> Any:
    module = teeny_ir.parse_module(text)
    teeny_ir.PassManager.parse(pipeline).run(module)
    return module


def _ops(module: Any, kind: type) -> list[Any]:
    return [op for op in module.walk() if isinstance(op, kind)]


def _function(args: str, results: str, body: str) -> str:
    return f"func.func @forward({args}) -> ({results}) {{\n{body}\n}}\n"


def test_a_permutation_lowers_to_one_launch() -> None:
    text = _function(
        "%x: tensor<?x3x5x7xf32>",
        "tensor<?x7x3x5xf32>",
        "  %y = graph.transpose %x perm [0, 3, 1, 2] : (tensor<?x3x5x7xf32>) -> tensor<?x7x3x5xf32>\n"
        "  func.return %y : tensor<?x7x3x5xf32>",
    )
    (launch,) = _ops(_lowered(text), LaunchOp)
    assert launch.family == "transpose"
    assert launch.constexpr_values == {"BLOCK": transpose_lowering.BLOCK}
    bindings = dict(launch.arg_bindings)
    assert (bindings["x"], bindings["y"], bindings["numel"]) == ("in0", "out0", "B * 105")
    assert [bindings[f"size{k}"] for k in range(1, 6)] == ["7", "3", "5", "1", "1"]
    assert [bindings[f"x_stride{k}"] for k in range(6)] == ["105", "1", "35", "7", "0", "0"]
    assert (bindings["IMAGE_IN"], bindings["x_batch_stride"]) == ("105", "105")
    assert (launch.num_warps, launch.num_stages) == (
        transpose_lowering.NUM_WARPS,
        transpose_lowering.NUM_STAGES,
    )
    validator.validate(launch.contract())


@pytest.mark.parametrize(
    ("shape", "perm", "view"),
    [
        ((DYNAMIC_INDEX, 3, 5), (0, 1, 2), True),
        ((DYNAMIC_INDEX, 1, 5), (0, 2, 1), True),
        ((DYNAMIC_INDEX, 3, 1, 5, 1), (0, 2, 1, 4, 3), True),
        ((DYNAMIC_INDEX, 1, 1, 5), (0, 2, 1, 3), True),
        ((DYNAMIC_INDEX, 3, 1, 5), (0, 3, 2, 1), False),
        ((DYNAMIC_INDEX, 3, 5), (0, 2, 1), False),
        ((1, 1, 5), (1, 0, 2), True),
        ((1, 4, 5), (1, 0, 2), False),  # row-major order kept, but dimension 0 changes
        ((4, 1), (1, 0), False),
    ],
)
def test_the_view_rule(shape: tuple[int, ...], perm: tuple[int, ...], view: bool) -> None:
    assert transpose_lowering.is_view(shape, perm) is view


def test_views_and_copies_in_one_graph() -> None:
    """A permutation of size-1 dimensions is a kernel.reshape (no launch); a
    transpose of a split's part reads it as a view (kernel.slice) through its
    batch stride."""
    text = _function(
        "%x: tensor<?x6x1x5xf32>",
        "tensor<?x1x6x5xf32>, tensor<?x5x2x1xf32>",
        "  %v = graph.transpose %x perm [0, 2, 1, 3] : (tensor<?x6x1x5xf32>) -> tensor<?x1x6x5xf32>\n"
        "  %a, %b = graph.split %x axis 1 sizes [4, 2]"
        " : (tensor<?x6x1x5xf32>) -> (tensor<?x4x1x5xf32>, tensor<?x2x1x5xf32>)\n"
        "  %t = graph.transpose %b perm [0, 3, 1, 2] : (tensor<?x2x1x5xf32>) -> tensor<?x5x2x1xf32>\n"
        "  func.return %v, %t : tensor<?x1x6x5xf32>, tensor<?x5x2x1xf32>",
    )
    module = _lowered(text)
    (launch,) = _ops(module, LaunchOp)
    assert len(_ops(module, KernelReshapeOp)) == 1
    assert isinstance(launch.operands[0].owner, SliceOp)
    bindings = dict(launch.arg_bindings)
    assert (bindings["IMAGE_IN"], bindings["x_batch_stride"]) == ("10", "30")
    validator.validate(launch.contract())


def test_a_rank_7_copy_is_refused_at_its_location() -> None:
    t_in, t_out = "tensor<?x2x1x3x1x2x2xf32>", "tensor<?x2x2x3x1x2x1xf32>"
    text = _function(
        f"%x: {t_in}",
        t_out,
        f"  %y = graph.transpose %x perm [0, 6, 5, 3, 4, 1, 2] : ({t_in}) -> {t_out}\n"
        f"  func.return %y : {t_out}",
    )
    with pytest.raises(teeny_ir.DiagnosticError) as raised:
        _lowered(text)
    assert re.search(
        r":2:8: error: .*a transpose of rank 7 exceeds the transpose family's 6", str(raised.value)
    ), str(raised.value)


def test_moving_the_dynamic_batch_is_refused() -> None:
    """The verifier already refuses it; the lowering rule names the limit too, for
    an op that reaches it unverified."""
    text = _function(
        "%x: tensor<?x5x7xf32>",
        "tensor<5x?x7xf32>",
        "  %y = graph.transpose %x perm [1, 0, 2] : (tensor<?x5x7xf32>) -> tensor<5x?x7xf32>\n"
        "  func.return %y : tensor<5x?x7xf32>",
    )
    with pytest.raises(teeny_ir.DiagnosticError):
        teeny_ir.parse_module(text)
    block = Block(arg_types=[TensorType(f32, [DYNAMIC_INDEX, 5, 7])])
    op = TransposeOp(block.args[0], [1, 0, 2], TensorType(f32, [5, DYNAMIC_INDEX, 7]))
    with pytest.raises(Unlowerable, match=r"moves the dynamic batch out of dimension 0.*one batch"):
        lower_op(op)


def test_the_validator_holds_the_strides_to_the_permutation() -> None:
    text = _function(
        "%x: tensor<?x3x5x7xf32>",
        "tensor<?x7x3x5xf32>",
        "  %y = graph.transpose %x perm [0, 3, 1, 2] : (tensor<?x3x5x7xf32>) -> tensor<?x7x3x5xf32>\n"
        "  func.return %y : tensor<?x7x3x5xf32>",
    )
    (launch,) = _ops(_lowered(text), LaunchOp)
    contract = launch.contract()
    for name, value, message in (
        ("x_stride1", "7", "argument 'x_stride1' = '7' is 7 .* imply 1"),
        ("size2", "5", "argument 'size2'"),
        ("IMAGE_IN", "104", "argument 'IMAGE_IN'"),
        ("x_batch_stride", "210", "'x_batch_stride' = '210' is 210 .* batch stride 105"),
    ):
        args = tuple((n, value if n == name else v) for n, v in contract.args)
        with pytest.raises(validator.ContractError, match=message):
            validator.validate(replace(contract, args=args))
    # Shapes that no permutation relates imply nothing.
    tensors = dict(contract.tensors) | {"out0": ("B", 7, 3, 6)}
    with pytest.raises(validator.ContractError, match="cannot take tensors of shapes"):
        validator.validate(replace(contract, tensors=tuple(tensors.items())))


# ---------------------------------------------------------------- end to end

END_TO_END = """func.func @forward(%x: tensor<?x6x5x7xf32>)
    -> (tensor<?x7x6x5xf32>, tensor<?x5x4x7xf32>, tensor<?x1x6x5x7xf32>,
        tensor<?x7x2x1x3x5x2xf32>, tensor<?x7x5x4x1xf32>) {
  %y = graph.transpose %x perm [0, 3, 1, 2] : (tensor<?x6x5x7xf32>) -> tensor<?x7x6x5xf32>
  %a, %b = graph.split %x axis 1 sizes [2, 4]
      : (tensor<?x6x5x7xf32>) -> (tensor<?x2x5x7xf32>, tensor<?x4x5x7xf32>)
  %t = graph.transpose %b perm [0, 2, 1, 3] : (tensor<?x4x5x7xf32>) -> tensor<?x5x4x7xf32>
  %b5 = graph.reshape %b shape [0, 4, 1, 5, 7] : (tensor<?x4x5x7xf32>) -> tensor<?x4x1x5x7xf32>
  %bv = graph.transpose %b5 perm [0, 2, 1, 3, 4] : (tensor<?x4x1x5x7xf32>) -> tensor<?x1x4x5x7xf32>
  %bt = graph.transpose %bv perm [0, 4, 3, 2, 1] : (tensor<?x1x4x5x7xf32>) -> tensor<?x7x5x4x1xf32>
  %r = graph.reshape %x shape [0, 6, 1, 5, 7] : (tensor<?x6x5x7xf32>) -> tensor<?x6x1x5x7xf32>
  %v = graph.transpose %r perm [0, 2, 1, 3, 4] : (tensor<?x6x1x5x7xf32>) -> tensor<?x1x6x5x7xf32>
  %s = graph.silu %x : tensor<?x6x5x7xf32>
  %u = graph.reshape %s shape [0, 2, 3, 5, 1, 7] : (tensor<?x6x5x7xf32>) -> tensor<?x2x3x5x1x7xf32>
  %w = graph.transpose %u perm [0, 5, 1, 4, 2, 3] : (tensor<?x2x3x5x1x7xf32>) -> tensor<?x7x2x1x3x5xf32>
  %c = graph.concat %w, %w axis 5 : (tensor<?x7x2x1x3x5xf32>, tensor<?x7x2x1x3x5xf32>) -> tensor<?x7x2x1x3x10xf32>
  %z = graph.reshape %c shape [0, 7, 2, 1, 3, 5, 2] : (tensor<?x7x2x1x3x10xf32>) -> tensor<?x7x2x1x3x5x2xf32>
  func.return %y, %t, %v, %z, %bt : tensor<?x7x6x5xf32>, tensor<?x5x4x7xf32>, tensor<?x1x6x5x7xf32>,
      tensor<?x7x2x1x3x5x2xf32>, tensor<?x7x5x4x1xf32>
}
"""


@pytest.mark.parametrize("batch", [1, 3])
def test_end_to_end(tmp_path: Path, batch: int) -> None:
    module = teeny_ir.parse_module(END_TO_END)
    out_dir = tmp_path / "plan"
    teeny_ir.PassManager.parse(f"teeny-inference,emit-triton{{out-dir={out_dir}}}").run(module)
    transposes = [op for op in _ops(module, LaunchOp) if op.family == "transpose"]
    assert len(transposes) == 4
    # The split is views: two launches read its second part through its batch stride.
    assert not any(op.family == "split" for op in _ops(module, LaunchOp))
    layouts = sorted(
        (dict(op.arg_bindings)["IMAGE_IN"], dict(op.arg_bindings)["x_batch_stride"])
        for op in transposes
    )
    assert layouts == [("140", "210"), ("140", "210"), ("210", "210"), ("210", "210")], layouts
    x = np.random.default_rng(batch).standard_normal((batch, 6, 5, 7)).astype(np.float32)
    got = runtime.load(out_dir).run([x], {})
    want = reference.run(teeny_ir.parse_module(END_TO_END), {}, [x])
    assert len(got) == len(want) == 5
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        assert_close(g, w, 1e-5)


def test_end_to_end_static_shapes(tmp_path: Path) -> None:
    """A static dimension 0 may move; a transpose of a weight reads the parameter."""
    text = """func.func @forward(%x: tensor<4x3x5xf32>) -> (tensor<5x4x3xf32>, tensor<3x4xf32>) {
  %y = graph.transpose %x perm [2, 0, 1] : (tensor<4x3x5xf32>) -> tensor<5x4x3xf32>
  %w = graph.param "w" : tensor<4x3xf32>
  %t = graph.transpose %w perm [1, 0] : (tensor<4x3xf32>) -> tensor<3x4xf32>
  func.return %y, %t : tensor<5x4x3xf32>, tensor<3x4xf32>
}
"""
    module = teeny_ir.parse_module(text)
    out_dir = tmp_path / "plan"
    teeny_ir.PassManager.parse(f"teeny-inference,emit-triton{{out-dir={out_dir}}}").run(module)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    weights = {"w": rng.standard_normal((4, 3)).astype(np.float32)}
    got = runtime.load(out_dir).run([x], weights)
    want = reference.run(teeny_ir.parse_module(text), weights, [x])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


# ---------------------------------------------------------------- AOT

ARCHS = (80, 90)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("warps", WARPS)
def test_compiles_ahead_of_time(tmp_path: Path, warps: int, arch: int) -> None:
    monkey = pytest.MonkeyPatch()
    monkey.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    try:
        constexprs: dict[str, int | str] = {"BLOCK": transpose_lowering.BLOCK}
        name = "transpose_0"
        path = tmp_path / f"{name}.py"
        path.write_text(render(FAMILIES["transpose"], name, constexprs))
        variant = aot.compile_variant(
            path,
            name,
            FAMILIES["transpose"],
            constexprs,
            arch=arch,
            num_warps=warps,
            num_stages=transpose_lowering.NUM_STAGES,
        )
    finally:
        monkey.undo()
    assert f".target sm_{arch}" in variant.ptx
    assert variant.cubin[:4] == b"\x7fELF"
    assert variant.num_warps == warps
    assert re.search(rf"\.reqntid {32 * warps}\b", variant.ptx)
    entry = variant.ptx[variant.ptx.index(f".entry {name}") :]
    params = entry[: entry.index(")")].count(".param")
    assert params == len(FAMILIES["transpose"].args) + 2  # plus Triton's scratch pointers
    aot.check_shared(variant)


# ---------------------------------------------------------------- canonicalize


def _canonicalized(module: Any) -> Any:
    teeny_ir.PassManager.parse("canonicalize").run(module)
    return module


def _names(module: Any) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("graph.")]


def test_patterns_keep_types_and_locations() -> None:
    text = """func.func @forward(%x: tensor<?x6x5xf32>) -> (tensor<?x6x5xf32>, tensor<?x4x5xf32>) {
  %s = graph.silu %x : tensor<?x6x5xf32>
  %r = graph.reshape %s shape [0, 6, 5] : (tensor<?x6x5xf32>) -> tensor<?x6x5xf32>
  %a, %b = graph.split %r axis 1 sizes [2, 4] : (tensor<?x6x5xf32>) -> (tensor<?x2x5xf32>, tensor<?x4x5xf32>)
  %c = graph.concat %a, %b axis 1 : (tensor<?x2x5xf32>, tensor<?x4x5xf32>) -> tensor<?x6x5xf32>
  %t = graph.transpose %c perm [0, 1, 2] : (tensor<?x6x5xf32>) -> tensor<?x6x5xf32>
  %one = graph.concat %b axis 2 : (tensor<?x4x5xf32>) -> tensor<?x4x5xf32>
  func.return %t, %one : tensor<?x6x5xf32>, tensor<?x4x5xf32>
}
"""
    module = teeny_ir.parse_module(text)
    silu = next(op for op in module.walk() if op.name == "graph.silu")
    location = silu.location
    _canonicalized(module)
    assert _names(module) == ["graph.silu", "graph.split"]
    (ret,) = [op for op in module.walk() if op.name == "func.return"]
    split = next(op for op in module.walk() if isinstance(op, SplitOp))
    assert list(ret.operands) == [silu.results[0], split.results[1]]
    assert silu.location == location
    assert [str(v.type) for v in ret.operands] == ["tensor<?x6x5xf32>", "tensor<?x4x5xf32>"]


def _random_graph(
    rng: np.random.Generator,
) -> tuple[str, tuple[int, ...], dict[str, np.ndarray]]:
    """A graph mixing the patterns' shapes (identity reshapes and transposes, size-1
    swaps, single concats and splits, split-then-concat in order) with ops they
    must leave alone (real transposes, reordered concats, dead params)."""
    b = teeny_ir.GraphBuilder()
    c, h, w = (int(v) for v in rng.integers(2, 6, size=3))
    shape = (3, c, h, w)
    x = b.input((None, c, h, w))
    values = [x]
    weights: dict[str, np.ndarray] = {}
    for step in range(int(rng.integers(4, 10))):
        v = values[int(rng.integers(len(values)))]
        t = v.type
        assert isinstance(t, TensorType)
        dims = list(t.get_shape())
        choice = int(rng.integers(9))
        if choice == 0:
            new = b.reshape(v, [0, *dims[1:]])
        elif choice == 1:
            new = b.transpose(v, list(range(len(dims))))
        elif choice == 2:
            new = b.concat([v], int(rng.integers(1, len(dims))))
        elif choice == 3 and dims[1] >= 2:
            cut = int(rng.integers(1, dims[1]))
            parts = b.split(v, [cut, dims[1] - cut], 1)
            new = b.concat(parts if rng.random() < 0.7 else parts[::-1], 1)
        elif choice == 4:
            perm = [0, *(1 + rng.permutation(len(dims) - 1))]
            new = b.transpose(v, [int(p) for p in perm])
        elif choice == 5:
            with_one = b.reshape(v, [0, 1, *dims[1:]])
            new = b.transpose(with_one, [0, 2, 1, *range(3, len(dims) + 1)])
            new = b.reshape(new, [0, *dims[1:]]) if rng.random() < 0.5 else new
        elif choice == 6:
            b.param(f"dead{step}", [2, 3])
            weights[f"dead{step}"] = rng.standard_normal((2, 3)).astype(np.float32)
            new = b.silu(v)
        elif choice == 7:
            new = b.split(v, [dims[1]], 1)[0]
        else:
            new = b.silu(v)
        values.append(new)
    b.output(values[-1], values[int(rng.integers(len(values)))])
    return teeny_ir.print_module(b.build()), shape, weights


@pytest.mark.parametrize("seed", range(12))
def test_canonicalize_keeps_the_reference_outputs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    text, shape, weights = _random_graph(rng)
    x = rng.standard_normal(shape).astype(np.float32)
    before = reference.run(teeny_ir.parse_module(text), weights, [x])
    module = _canonicalized(teeny_ir.parse_module(text))
    after = reference.run(module, weights, [x])
    assert len(before) == len(after)
    for old, new in zip(before, after, strict=True):
        assert old.shape == new.shape
        np.testing.assert_array_equal(old, new)
    names = _names(module)
    assert "graph.param" not in names
    for op in module.walk():
        if isinstance(op, ReshapeOp):
            assert op.result.type != op.input.type, text
        if isinstance(op, TransposeOp) and op.result.type == op.input.type:
            assert not transpose_lowering.is_view(op.input.type.get_shape(), op.perm), text
        if isinstance(op, ConcatOp):
            assert len(op.inputs) > 1, text
