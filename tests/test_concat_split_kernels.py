"""The ``concat`` and ``split`` kernel families: Triton's interpreter against numpy,
the validator's view of their launches, AOT compilation, and a split -> silu ->
concat graph end to end against the reference interpreter.

Kernels run in one harness process (`teeny_ir.testing.kernels.run_cases`). Every
output is canary-padded on both sides and starts as NaN: a write past the view
changes a canary, an element never written stays NaN. Unused part pointers are bound to an all-NaN input (concat: a read of it
would poison the result) or to a one-element output that must stay NaN (split:
a write to it would show). Shapes are odd, batches 1 and 3, BLOCK 128 so that
every launch has several programs and a tail, some grids with extra programs.

Batch-strided views: an input is passed as channels ``[c0, c0 + C)`` of a larger
NaN-filled ``[B, Ct, ...]`` buffer (its data from element ``c0 * plane`` on, batch
stride ``Ct * plane``), so a read outside the view is NaN and poisons the copy; a
strided output must equal the reference in its images and stay NaN in the gaps
between them (never written). Every case is a launch the validator accepts
(`Case.contract`), and runs at every ``num_warps`` in `WARPS`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import teeny_ir
from dialects.kernel import LaunchOp
from teeny_ir.backend import aot
from teeny_ir.kernels import validator
from teeny_ir.kernels.concat import lowering as concat_lowering
from teeny_ir.kernels.concat.rows import MAX_PARTS
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.render import render
from teeny_ir.testing import assert_close
from teeny_ir.testing.kernels import Case, Results, View, channel_slice, problems

BLOCK = 128
WARPS = sorted({concat_lowering.NUM_WARPS, 1, 2, 4, 8})
"""Every num_warps the lowering emits (4, for both families), and 1, 2, 4, 8."""


def _inner(shape: tuple[int, ...], axis: int) -> int:
    return math.prod(shape[axis:])


def _parts(whole: tuple[int, ...], sizes: list[int], axis: int) -> list[tuple[int, ...]]:
    return [(*whole[:axis], s, *whole[axis + 1 :]) for s in sizes]


def _suffix(views: Mapping[str, View], extra: int, num_warps: int) -> str:
    text = "".join(f"-{name}@{first}of{total}" for name, (total, first) in views.items())
    text += f"-grid+{extra}" if extra else ""
    return text + (f"-warps{num_warps}" if num_warps != concat_lowering.NUM_WARPS else "")


def concat_case(
    whole: tuple[int, ...],
    sizes: list[int],
    axis: int,
    rng: np.random.Generator,
    extra: int = 0,
    views: Mapping[str, View] | None = None,
    num_warps: int = concat_lowering.NUM_WARPS,
) -> Case:
    """``views`` makes pointers (``x<k>``, ``out``) batch-strided channel slices."""
    views = dict(views or {})
    shapes = _parts(whole, sizes, axis)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    inputs[0].flat[0] = -0.0  # the sign of zero survives the copy
    out = np.concatenate(inputs, axis=axis)
    unused = np.full((1, 7), np.nan, np.float32)
    parts = [
        (inputs[k], views.get(f"x{k}")) if k < len(inputs) else (unused, None)
        for k in range(MAX_PARTS)
    ]
    datas = [channel_slice(x, view) for x, view in parts]
    expected, out_stride = channel_slice(out, views.get("out"))
    numel = out.size
    args: list[tuple[str, Any]] = [(f"x{k}", datas[k][0]) for k in range(MAX_PARTS)]
    args += [("out", ("output", expected.size)), ("numel", numel)]
    args += [("INNER_OUT", _inner(whole, axis))]
    args += [
        (f"INNER{k}", _inner(shapes[k], axis) if k < len(shapes) else 0) for k in range(MAX_PARTS)
    ]
    args += [("IMAGE_OUT", math.prod(whole[1:]))]
    args += [(f"IMAGE{k}", math.prod(parts[k][0].shape[1:])) for k in range(MAX_PARTS)]
    args += [(f"x{k}_batch_stride", datas[k][1]) for k in range(MAX_PARTS)]
    args += [("out_batch_stride", out_stride)]
    tensors = {f"x{k}": (parts[k][0].shape, datas[k][1]) for k in range(MAX_PARTS)}
    tensors["out"] = (out.shape, out_stride)
    return Case(
        id=f"concat-{'x'.join(map(str, whole))}-axis{axis}-{'+'.join(map(str, sizes))}"
        + _suffix(views, extra, num_warps),
        family="concat",
        constexprs={"N_INPUTS": len(sizes), "BLOCK": BLOCK},
        args=args,
        grid=math.ceil(numel / BLOCK) + extra,
        pad=BLOCK * (1 + extra),
        expected={"out": expected},
        tensors=tensors,
        num_warps=num_warps,
    )


def split_case(
    whole: tuple[int, ...],
    sizes: list[int],
    axis: int,
    rng: np.random.Generator,
    extra: int = 0,
    views: Mapping[str, View] | None = None,
    num_warps: int = concat_lowering.NUM_WARPS,
) -> Case:
    """``views`` makes pointers (``x``, ``y<k>``) batch-strided channel slices."""
    views = dict(views or {})
    shapes = _parts(whole, sizes, axis)
    x = rng.standard_normal(whole).astype(np.float32)
    x.flat[-1] = -0.0
    pieces = np.split(x, np.cumsum(sizes)[:-1], axis=axis)
    # An unused output slot: one element that must stay NaN (never written).
    outs = [pieces[k] if k < len(sizes) else np.full((1, 1), np.nan) for k in range(MAX_PARTS)]
    datas = [channel_slice(y, views.get(f"y{k}")) for k, y in enumerate(outs)]
    source, x_stride = channel_slice(x, views.get("x"))
    args: list[tuple[str, Any]] = [("x", source)]
    args += [(f"y{k}", ("output", datas[k][0].size)) for k in range(MAX_PARTS)]
    args += [("numel", x.size), ("INNER_IN", _inner(whole, axis))]
    args += [
        (f"INNER{k}", _inner(shapes[k], axis) if k < len(shapes) else 0) for k in range(MAX_PARTS)
    ]
    args += [("IMAGE_IN", math.prod(whole[1:]))]
    args += [(f"IMAGE{k}", math.prod(outs[k].shape[1:])) for k in range(MAX_PARTS)]
    args += [("x_batch_stride", x_stride)]
    args += [(f"y{k}_batch_stride", datas[k][1]) for k in range(MAX_PARTS)]
    tensors = {"x": (x.shape, x_stride)}
    tensors |= {f"y{k}": (outs[k].shape, datas[k][1]) for k in range(MAX_PARTS)}
    return Case(
        id=f"split-{'x'.join(map(str, whole))}-axis{axis}-{'+'.join(map(str, sizes))}"
        + _suffix(views, extra, num_warps),
        family="split",
        constexprs={"N_OUTPUTS": len(sizes), "BLOCK": BLOCK},
        args=args,
        grid=math.ceil(x.size / BLOCK) + extra,
        pad=BLOCK * (1 + extra),
        expected={f"y{k}": datas[k][0] for k in range(MAX_PARTS)},
        tensors=tensors,
        num_warps=num_warps,
    )


def all_cases() -> list[Case]:
    rng = np.random.default_rng(3)
    cases: list[Case] = []
    for batch in (1, 3):
        cases.append(concat_case((batch, 8, 5, 7), [3, 5], 1, rng))
        cases.append(concat_case((batch, 10, 3, 5), [2, 7, 1], 1, rng))
        cases.append(concat_case((batch, 13, 3, 3), [4, 1, 5, 3], 1, rng))
        cases.append(concat_case((batch, 3, 9, 5), [4, 5], 2, rng))
        cases.append(split_case((batch, 10, 5, 7), [5, 5], 1, rng))
        cases.append(split_case((batch, 9, 3, 5), [2, 6, 1], 1, rng))
        cases.append(split_case((batch, 3, 5, 11), [3, 1, 7], 3, rng))
        # Batch-strided views: inputs, outputs, both; along channels and other axes.
        cases.append(concat_case((batch, 8, 5, 7), [3, 5], 1, rng, views={"x0": (7, 2)}))
        cases.append(
            concat_case((batch, 10, 3, 5), [2, 7, 1], 1, rng, views={"x1": (9, 0), "x2": (3, 2)})
        )
        cases.append(concat_case((batch, 9, 3, 5), [4, 5], 1, rng, views={"out": (13, 3)}))
        cases.append(
            concat_case((batch, 3, 9, 5), [4, 5], 2, rng, views={"x0": (5, 1), "out": (4, 1)})
        )
        cases.append(split_case((batch, 10, 5, 7), [5, 5], 1, rng, views={"x": (13, 2)}))
        cases.append(
            split_case((batch, 9, 3, 5), [2, 6, 1], 1, rng, views={"y0": (5, 3), "y2": (2, 0)})
        )
        cases.append(
            split_case((batch, 3, 5, 11), [3, 1, 7], 3, rng, views={"x": (4, 1), "y1": (7, 4)})
        )
    cases.append(concat_case((3, 2, 5, 7), [3, 4], 3, rng, extra=2))
    cases.append(concat_case((5, 11), [2, 3], 0, rng))
    cases.append(concat_case((3, 6, 5), [6], 1, rng))
    cases.append(split_case((3, 12, 5, 7), [1, 4, 2, 5], 1, rng, extra=2))
    cases.append(split_case((7, 6), [4, 3], 0, rng))
    cases.append(split_case((2, 6, 5), [6], 1, rng))
    # Along the batch itself: each image of a strided part is a column range of the one row.
    cases.append(
        concat_case((5, 3, 4), [2, 3], 0, rng, views={"x0": (5, 1), "x1": (4, 0), "out": (7, 3)})
    )
    cases.append(split_case((5, 2, 3), [3, 2], 0, rng, views={"x": (3, 1), "y1": (5, 2)}))
    cases.append(
        concat_case(
            (3, 13, 3, 3), [4, 1, 5, 3], 1, rng, extra=1, views={"x3": (4, 1), "out": (14, 1)}
        )
    )
    cases.append(
        split_case((3, 12, 5, 7), [1, 4, 2, 5], 1, rng, extra=1, views={"x": (15, 3), "y3": (6, 1)})
    )
    # Every num_warps, each with strided inputs and outputs, batch 3, a tail.
    for warps in WARPS:
        if warps == concat_lowering.NUM_WARPS:
            continue
        views = {"x1": (9, 4), "out": (12, 2)}
        cases.append(concat_case((3, 9, 3, 5), [4, 5], 1, rng, views=views, num_warps=warps))
        views = {"x": (11, 1), "y0": (3, 1)}
        cases.append(split_case((3, 9, 3, 5), [2, 7], 1, rng, views=views, num_warps=warps))
    return cases


def mutants() -> dict[str, Case]:
    """Cases run on mutated kernels, by what each mutation breaks: they show that
    the checks are not vacuous."""
    rng = np.random.default_rng(11)
    no_mask = {
        "concat": ("value, mask=mask)", "value)"),
        "split": ("value, mask=inside)", "value)"),
    }
    address = "(logical // image).to(tl.int64) * stride"
    contiguous = (address, "(logical // image).to(tl.int64) * image")
    found = {
        "concat-no-store-mask": concat_case((3, 8, 5, 7), [3, 5], 1, rng),
        "split-no-store-mask": split_case((3, 9, 3, 5), [2, 7], 1, rng),
        "concat-strided-input-read-contiguous": concat_case(
            (3, 8, 5, 7), [3, 5], 1, rng, views={"x1": (7, 1)}
        ),
        "concat-strided-output-written-contiguous": concat_case(
            (3, 8, 5, 7), [3, 5], 1, rng, views={"out": (9, 1)}
        ),
        "split-strided-input-read-contiguous": split_case(
            (3, 9, 3, 5), [2, 7], 1, rng, views={"x": (10, 0)}
        ),
        "split-strided-output-written-contiguous": split_case(
            (3, 9, 3, 5), [2, 7], 1, rng, views={"y0": (5, 3)}
        ),
    }
    for what, case in found.items():
        mutation = no_mask[case.family] if "no-store-mask" in what else contiguous
        found[what] = replace(case, id=f"mutant-{what}", mutation=mutation)
    return found


CASES = all_cases()
MUTANTS = mutants()


HARNESS_CASES = [*CASES, *MUTANTS.values()]
"""What the `results` fixture (tests/conftest.py) runs, in one interpreter process."""


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_every_case_is_a_valid_launch(case: Case) -> None:
    """The harness runs only launches the validator accepts (stride dims included)."""
    validator.validate(case.contract())


def test_cases_cover_the_brief() -> None:
    ids = " ".join(case.id for case in CASES)
    for family in ("concat", "split"):
        mine = [case for case in CASES if case.family == family]
        assert {case.num_warps for case in mine} == set(WARPS), family
        for pointer in ("x0", "out") if family == "concat" else ("x", "y0"):
            assert any(
                case.tensors[pointer][1] != math.prod(case.tensors[pointer][0][1:]) for case in mine
            ), (family, pointer)
        assert {case.tensors[mine[0].args[0][0]][0][0] for case in mine} >= {1, 3}
    assert "axis0-2+3-x0@" in ids and "axis0-3+2-x@" in ids


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_kernel_matches_numpy(case: Case, results: Results) -> None:
    """A copy is exact, down to the sign of zero (``tol`` 0: bit for bit)."""
    assert problems(case, results) == []


# ---------------------------------------------------------------- lowering and validation

C2F = """func.func @forward(%x: tensor<?x6x5x7xf32>)
    -> (tensor<?x10x5x7xf32>, tensor<?x10x5x4xf32>, tensor<?x10x5x3xf32>) {
  %a, %b = graph.split %x axis 1 sizes [2, 4]
      : (tensor<?x6x5x7xf32>) -> (tensor<?x2x5x7xf32>, tensor<?x4x5x7xf32>)
  %c = graph.silu %b : tensor<?x4x5x7xf32>
  %y = graph.concat %a, %b, %c axis 1 : (tensor<?x2x5x7xf32>, tensor<?x4x5x7xf32>,
      tensor<?x4x5x7xf32>) -> tensor<?x10x5x7xf32>
  %p, %q, %r = graph.split %y axis 3 sizes [1, 4, 2] : (tensor<?x10x5x7xf32>)
      -> (tensor<?x10x5x1xf32>, tensor<?x10x5x4xf32>, tensor<?x10x5x2xf32>)
  %z = graph.concat %r, %p axis 3
      : (tensor<?x10x5x2xf32>, tensor<?x10x5x1xf32>) -> tensor<?x10x5x3xf32>
  func.return %y, %q, %z : tensor<?x10x5x7xf32>, tensor<?x10x5x4xf32>, tensor<?x10x5x3xf32>
}
"""


def _lowered(text: str) -> Any:
    """Lowered without fuse-pointwise, whose fused silu would read the split's part
    in place: these tests are of the copy families."""
    module = teeny_ir.parse_module(text)
    pipeline = "split-bias,fuse-epilogues,select-conv-algorithm,lower-graph-to-kernel"
    teeny_ir.PassManager.parse(pipeline).run(module)
    return module


def _launches(module: Any) -> list[LaunchOp]:
    return [op for op in module.walk() if isinstance(op, LaunchOp)]


def test_one_launch_per_concat_and_split() -> None:
    launches = _launches(_lowered(C2F))
    assert [op.family for op in launches] == ["split", "elementwise", "concat", "split", "concat"]
    first_split, _, first_concat, second_split, _ = launches
    assert len(first_split.results) == 2 and len(second_split.results) == 3
    assert first_split.constexpr_values == {"N_OUTPUTS": 2, "BLOCK": 1024}
    assert first_concat.constexpr_values == {"N_INPUTS": 3, "BLOCK": 1024}
    bindings = dict(first_concat.arg_bindings)
    assert (bindings["x3"], bindings["INNER3"], bindings["INNER_OUT"]) == ("in0", "0", "350")
    # An unused slot has its bound tensor's image and batch stride (the validator checks both).
    assert (bindings["IMAGE3"], bindings["x3_batch_stride"]) == ("70", "70")
    assert (bindings["IMAGE_OUT"], bindings["out_batch_stride"]) == ("350", "350")
    split_bindings = dict(second_split.arg_bindings)
    assert split_bindings["INNER_IN"] == "7"
    assert [split_bindings[f"y{k}_batch_stride"] for k in range(4)] == ["50", "200", "100", "50"]
    assert [split_bindings[f"IMAGE{k}"] for k in range(4)] == ["50", "200", "100", "50"]
    # Each split result feeds its own users: %b reaches both silu and the concat.
    assert list(first_concat.operands)[1] is first_split.results[1]


def test_more_than_four_parts_is_refused() -> None:
    t = "tensor<?x1x2x2xf32>"
    text = f"""func.func @forward(%x: {t}) -> tensor<?x5x2x2xf32> {{
  %y = graph.concat %x, %x, %x, %x, %x axis 1 : ({t}, {t}, {t}, {t}, {t}) -> tensor<?x5x2x2xf32>
  func.return %y : tensor<?x5x2x2xf32>
}}
"""
    with pytest.raises(teeny_ir.DiagnosticError, match="5 inputs exceed the concat family's 4"):
        _lowered(text)


def _contract(
    launch: LaunchOp, strides: Mapping[str, int] | None = None, **changes: str
) -> validator.LaunchContract:
    """``launch``'s contract with some dims rebound and some tensors batch-strided."""
    contract = launch.contract()
    args = tuple((name, changes.get(name, value)) for name, value in contract.args)
    return replace(contract, args=args, strides=tuple((strides or {}).items()))


def test_the_validator_holds_the_dims_to_the_shapes() -> None:
    _, _, concat, split, _ = _launches(_lowered(C2F))
    for launch in (concat, split):
        validator.validate(launch.contract())
    for launch, changes, message in (
        (concat, {"INNER1": "141"}, "argument 'INNER1' = '141' is 141 .* imply 140"),
        (concat, {"INNER3": "70"}, "argument 'INNER3' = '70' is 70 .* imply 0"),
        (split, {"INNER_IN": "6"}, "argument 'INNER_IN' = '6' is 6 .* imply 7"),
        (split, {"numel": "B * 351"}, "argument 'numel'"),
    ):
        with pytest.raises(validator.ContractError, match=message):
            validator.validate(_contract(launch, **changes))
    # Shapes that are no concatenation imply nothing.
    no_concat = dict(concat.contract().tensors) | {"out0": ("B", 11, 5, 7)}
    contract = concat.contract()
    bad = validator.LaunchContract(
        contract.family,
        contract.constexprs,
        contract.args,
        tuple(no_concat.items()),
        contract.grid,
        contract.num_warps,
        contract.num_stages,
    )
    with pytest.raises(validator.ContractError, match="cannot take tensors of shapes"):
        validator.validate(bad)


def test_the_validator_holds_the_stride_dims_to_the_layouts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A batch-strided tensor needs every pointer bound to it to carry its stride
    (an unused slot bound to the same tensor too), and a pointer that takes one."""
    _, _, concat, split, _ = _launches(_lowered(C2F))
    # %b [?, 4, 5, 7] as channels of a 9-channel buffer; %a [?, 2, 5, 7] of a 6-channel one.
    validator.validate(_contract(concat, {"in1": 315}, x1_batch_stride="315"))
    validator.validate(
        _contract(concat, {"in0": 210}, x0_batch_stride="210", x3_batch_stride="210")
    )
    validator.validate(_contract(concat, {"out0": 420}, out_batch_stride="420"))
    validator.validate(_contract(split, {"in0": 420}, x_batch_stride="420"))
    validator.validate(
        _contract(
            split,
            {"out0": 100, "out2": 150},
            y0_batch_stride="100",
            y3_batch_stride="100",
            y2_batch_stride="150",
        )
    )
    for launch, strides, changes, message in (
        (
            concat,
            {"in1": 315},
            {},
            r"'x1_batch_stride' = '140' is 140 at B = 1, but 'in1' \(bound "
            r"to 'x1'\) has batch stride 315",
        ),
        (concat, {"in0": 210}, {"x0_batch_stride": "210"}, "'x3_batch_stride' = '70' is 70"),
        (concat, {"out0": 420}, {}, "'out_batch_stride' = '350' is 350 .* batch stride 420"),
        (
            concat,
            {},
            {"x2_batch_stride": "B * 140"},
            "'x2_batch_stride' = 'B \\* 140' is 280 at B = 2",
        ),
        (split, {"in0": 420}, {"x_batch_stride": "350"}, "'x_batch_stride' = '350' is 350"),
        (split, {"out0": 100}, {"y0_batch_stride": "100"}, "'y3_batch_stride' = '50' is 50"),
        (split, {"out1": 100}, {"y1_batch_stride": "100"}, "batch stride 100, less than its image"),
    ):
        with pytest.raises(validator.ContractError, match=message):
            validator.validate(_contract(launch, strides, **changes))
    # A family whose inputs take only contiguous tensors refuses the same views.
    for launch, pointer, key in ((concat, "x1", "in1"), (split, "y1", "out1")):
        family = FAMILIES[launch.family]
        strides = {k: v for k, v in family.batch_strides.items() if k != pointer}
        name = f"{launch.family}_contiguous_{pointer}"
        monkeypatch.setitem(FAMILIES, name, replace(family, name=name, batch_strides=strides))
        stride_arg = family.batch_strides[pointer]
        contract = replace(_contract(launch, {key: 315}, **{stride_arg: "315"}), family=name)
        with pytest.raises(
            validator.ContractError,
            match=f"argument '{pointer}' of family '{name}' takes only contiguous tensors, "
            f"but '{key}' is a batch-strided view \\(batch stride 315\\)",
        ):
            validator.validate(contract)


# ---------------------------------------------------------------- end to end


@pytest.mark.parametrize("batch", [1, 3])
def test_split_silu_concat_end_to_end(tmp_path: Path, batch: int) -> None:
    module = teeny_ir.parse_module(C2F)
    out_dir = tmp_path / "plan"
    teeny_ir.PassManager.parse(f"teeny-inference,emit-triton{{out-dir={out_dir}}}").run(module)
    x = np.random.default_rng(batch).standard_normal((batch, 6, 5, 7)).astype(np.float32)
    got = teeny_ir.runtime.load(out_dir).run([x], {})
    want = teeny_ir.reference.run(teeny_ir.parse_module(C2F), {}, [x])
    assert len(got) == len(want) == 3
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        assert_close(g, w, 1e-5)


# ---------------------------------------------------------------- AOT

ARCHS = (80, 90)
VARIANTS = [
    (family, count, warps)
    for family in ("concat", "split")
    for count in (2, 4)
    for warps in (WARPS if count == 4 else [concat_lowering.NUM_WARPS])
]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize(("family", "count", "warps"), VARIANTS)
def test_compiles_ahead_of_time(
    tmp_path: Path, family: str, count: int, warps: int, arch: int
) -> None:
    """Variants the lowering emits (2 and 4 parts, num_warps 4, 1 stage) compile;
    the largest also at every num_warps in `WARPS`."""
    monkey = pytest.MonkeyPatch()
    monkey.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    try:
        counter = "N_INPUTS" if family == "concat" else "N_OUTPUTS"
        constexprs: dict[str, int | str] = {counter: count, "BLOCK": concat_lowering.BLOCK}
        name = f"{family}_0"
        path = tmp_path / f"{name}.py"
        path.write_text(render(FAMILIES[family], name, constexprs))
        variant = aot.compile_variant(
            path,
            name,
            FAMILIES[family],
            constexprs,
            arch=arch,
            num_warps=warps,
            num_stages=concat_lowering.NUM_STAGES,
        )
    finally:
        monkey.undo()
    assert f".target sm_{arch}" in variant.ptx
    assert variant.cubin[:4] == b"\x7fELF"
    assert variant.num_warps == warps
    assert re.search(rf"\.reqntid {32 * warps}\b", variant.ptx)  # threads per block
    entry = variant.ptx[variant.ptx.index(f".entry {name}") :]
    params = entry[: entry.index(")")].count(".param")
    assert params == len(FAMILIES[family].args) + 2  # plus Triton's global and profile scratch
    aot.check_shared(variant)


def test_the_checks_catch_mutated_kernels(results: Results) -> None:
    """Without its store mask, concat's masked-off lanes (their index clamped to
    0, their value +0.0) overwrite the destination's first element, -0.0, and split
    writes each element into every part. A kernel that addresses every tensor as
    contiguous reads the NaN between a strided input's images, and writes a
    strided output's images into its gaps."""
    found = {what: problems(case, results) for what, case in MUTANTS.items()}
    (concat,) = found["concat-no-store-mask"]
    assert concat.startswith("out: 1 of ") and "bit for bit (the first at element 0:" in concat
    split = found["split-no-store-mask"]
    assert [text.split(":")[0] for text in split] == ["y0", "y1"], split
    assert all("bit for bit" in text for text in split), split
    for what, texts in found.items():
        text = " ".join(texts)
        if "input-read-contiguous" in what:
            assert "NaN or infinite where the reference is finite" in text, what
        if "output-written-contiguous" in what:
            assert "not NaN where it must stay NaN" in text, what
