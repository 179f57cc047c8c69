"""Zero-copy splits and concats (teeny_ir/kernels/views.py, docs/views.md): which
become views and which stay copies, the plan's views and their checks, the
numerics of a C2f-like block compiled with views, and provenance."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import teeny_ir
from teeny_ir import reference, runtime
from teeny_ir.backend.plan import PlanError, load_plan
from teeny_ir.testing import REDUCTION_TOL, assert_close

# A C2f block as YOLOv8n builds it: cv1, a channel split in halves, a bottleneck
# with a residual add on the second half, a concat of both halves and the
# bottleneck, cv2. Odd spatial sizes; the bottleneck is a 3x3 implicit GEMM.
C2F = """
func.func @forward(%x: tensor<?x6x9x7xf32>) -> tensor<?x10x9x7xf32> {
  %w1 = graph.param "cv1.weight" : tensor<8x6x1x1xf32>
  %c1 = graph.conv2d %x, %w1 : (tensor<?x6x9x7xf32>, tensor<8x6x1x1xf32>) -> tensor<?x8x9x7xf32>
  %s1 = graph.silu %c1 : tensor<?x8x9x7xf32>
  %a, %b = graph.split %s1 axis 1 sizes [4, 4] : (tensor<?x8x9x7xf32>) -> (tensor<?x4x9x7xf32>, tensor<?x4x9x7xf32>)
  %wm = graph.param "m.weight" : tensor<4x4x3x3xf32>
  %bm = graph.param "m.bias" : tensor<4xf32>
  %cm = graph.conv2d %b, %wm, %bm padding [1, 1, 1, 1] : (tensor<?x4x9x7xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<?x4x9x7xf32>
  %sm = graph.silu %cm : tensor<?x4x9x7xf32>
  %r = graph.add %b, %sm : (tensor<?x4x9x7xf32>, tensor<?x4x9x7xf32>) -> tensor<?x4x9x7xf32>
  %cat = graph.concat %a, %b, %r axis 1 : (tensor<?x4x9x7xf32>, tensor<?x4x9x7xf32>, tensor<?x4x9x7xf32>) -> tensor<?x12x9x7xf32>
  %w2 = graph.param "cv2.weight" : tensor<10x12x1x1xf32>
  %c2 = graph.conv2d %cat, %w2 : (tensor<?x12x9x7xf32>, tensor<10x12x1x1xf32>) -> tensor<?x10x9x7xf32>
  func.return %c2 : tensor<?x10x9x7xf32>
}
"""


def _weights(text: str, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    module = teeny_ir.parse_module(text)
    weights: dict[str, np.ndarray] = {}
    for op in module.walk():
        if op.name == "graph.param":
            shape = op.results[0].type.get_shape()  # type: ignore[attr-defined]
            name = op.param_name.data  # type: ignore[attr-defined]
            weights[name] = (0.4 * rng.standard_normal(shape)).astype(np.float32)
    return weights


def _lower(text: str, pipeline: str = "teeny-inference") -> str:
    module = teeny_ir.parse_module(text)
    teeny_ir.PassManager.parse(pipeline).run(module)
    return teeny_ir.print_module(module)


def _count(ir: str, name: str) -> int:
    return sum(f"= {name} " in line or line.strip().startswith(name) for line in ir.splitlines())


def test_c2f_split_and_concat_become_views() -> None:
    ir = _lower(C2F)
    assert _count(ir, "kernel.launch") == 3, ir  # cv1, the bottleneck (add fused), cv2
    assert _count(ir, "kernel.concat") == 1 and _count(ir, "kernel.slice") == 1, ir
    # cv1 writes into the first 8 channels of the 12-channel concat buffer.
    assert "tensor<?x8x9x7xf32, #kernel.batch_stride<756>>" in ir, ir


def test_views_false_keeps_the_copies() -> None:
    ir = _lower(
        C2F, "split-bias,fuse-conv-bn-act,select-conv-algorithm,lower-graph-to-kernel{views=false}"
    )
    assert _count(ir, "kernel.launch") == 5, ir
    assert "kernel.slice" not in ir and "kernel.concat" not in ir and "batch_stride<" not in ir


def _split_then(consumer: str, returned: str = "%q") -> str:
    return f"""
func.func @forward(%x: tensor<?x6x5x5xf32>) -> tensor<?x3x5x5xf32> {{
  %p, %q = graph.split %x axis 1 sizes [3, 3] : (tensor<?x6x5x5xf32>) -> (tensor<?x3x5x5xf32>, tensor<?x3x5x5xf32>)
  {consumer}
  func.return {returned} : tensor<?x3x5x5xf32>
}}
"""


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (
            _split_then("%y = graph.relu %p : tensor<?x3x5x5xf32>", "%y"),
            "elementwise reads only contiguous",
        ),
        (
            _split_then(
                "%y = graph.max_pool2d %p kernel [2, 2] strides [1, 1] padding [1, 1, 1, 1] : (tensor<?x3x5x5xf32>) -> tensor<?x3x6x6xf32>"
            ),
            "a part is returned",
        ),
    ],
)
def test_split_copies_where_a_view_is_unsafe(text: str, why: str) -> None:
    # Without fuse-pointwise: a lone relu runs on the elementwise family.
    ir = _lower(text, "split-bias,fuse-epilogues,select-conv-algorithm,lower-graph-to-kernel")
    assert "kernel.slice" not in ir, why
    assert '"split"' in ir, why


def test_a_lone_pointwise_op_reads_a_part_in_place() -> None:
    """teeny-inference's fuse-pointwise makes a lone op on a split's part a
    fused_elementwise launch, which reads the part through its batch stride."""
    ir = _lower(_split_then("%y = graph.relu %p : tensor<?x3x5x5xf32>", "%y"))
    assert _count(ir, "kernel.slice") == 2 and '"split"' not in ir, ir
    assert '"fused_elementwise"' in ir and "in0_batch_stride = \"150\"" in ir, ir


def test_concat_of_a_function_argument_copies() -> None:
    text = """
func.func @forward(%x: tensor<?x3x5x5xf32>) -> tensor<?x6x5x5xf32> {
  %m = graph.max_pool2d %x kernel [3, 3] strides [1, 1] padding [1, 1, 1, 1] : (tensor<?x3x5x5xf32>) -> tensor<?x3x5x5xf32>
  %c = graph.concat %m, %x axis 1 : (tensor<?x3x5x5xf32>, tensor<?x3x5x5xf32>) -> tensor<?x6x5x5xf32>
  func.return %c : tensor<?x6x5x5xf32>
}
"""
    ir = _lower(text)
    assert "kernel.concat" not in ir and '"concat"' in ir, ir


def test_concat_of_pools_is_written_in_place() -> None:
    text = """
func.func @forward(%x: tensor<?x3x5x5xf32>) -> tensor<?x6x5x5xf32> {
  %m = graph.max_pool2d %x kernel [3, 3] strides [1, 1] padding [1, 1, 1, 1] : (tensor<?x3x5x5xf32>) -> tensor<?x3x5x5xf32>
  %n = graph.max_pool2d %m kernel [3, 3] strides [1, 1] padding [1, 1, 1, 1] : (tensor<?x3x5x5xf32>) -> tensor<?x3x5x5xf32>
  %c = graph.concat %m, %n axis 1 : (tensor<?x3x5x5xf32>, tensor<?x3x5x5xf32>) -> tensor<?x6x5x5xf32>
  func.return %c : tensor<?x6x5x5xf32>
}
"""
    ir = _lower(text)
    assert _count(ir, "kernel.launch") == 2 and "kernel.concat" in ir, ir


def _emit(tmp_path: Path, text: str) -> Path:
    out = tmp_path / "plan"
    module = teeny_ir.parse_module(text, "c2f.mlir")
    teeny_ir.PassManager.parse(f"teeny-inference,emit-triton{{out-dir={out}}}").run(module)
    return out


@pytest.mark.parametrize("batch", [1, 3])
def test_c2f_with_views_matches_the_reference(tmp_path: Path, batch: int) -> None:
    out = _emit(tmp_path, C2F)
    plan = load_plan(out)
    assert len(plan.launches) == 3 and len(plan.views) >= 3
    weights = _weights(C2F)
    x = np.random.default_rng(batch).standard_normal((batch, 6, 9, 7)).astype(np.float32)
    got = runtime.load(out).run([x], weights)
    want = reference.run(teeny_ir.parse_module(C2F), weights, [x])
    assert_close(got, want, REDUCTION_TOL, dtype=np.float32)


def test_provenance_lists_the_fused_graph_ops(tmp_path: Path) -> None:
    plan = json.loads((_emit(tmp_path, C2F) / "plan.json").read_text())
    ops = [[s["op"] for s in launch["sources"]] for launch in plan["launches"]]
    assert len(ops) == 3
    assert ops[0] == ["graph.conv2d", "graph.silu"], ops
    assert {"graph.conv2d", "graph.bias_add", "graph.silu", "graph.add"} <= set(ops[1]), ops
    for launch in plan["launches"]:
        for source in launch["sources"]:
            assert source["loc"].startswith("c2f.mlir:"), source
    assert any(s["op"] == "graph.split" for v in plan["views"] for s in v["sources"]), plan["views"]


def _edited(tmp_path: Path, edit: object) -> Path:
    source = _emit(tmp_path, C2F)
    copy = tmp_path / "edited"
    shutil.copytree(source, copy)
    data = json.loads((copy / "plan.json").read_text())
    edit(data)  # type: ignore[operator]
    (copy / "plan.json").write_text(json.dumps(data))
    return copy


def _first_view(data: dict) -> dict:  # type: ignore[type-arg]
    return data["views"][0]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: _first_view(d).update(offset=10**6), "covers elements"),
        (lambda d: _first_view(d).update(batch_stride=7), "has batch stride 7"),
        (lambda d: _first_view(d).update(base="p0"), "is not an input or a buffer of the plan"),
        (lambda d: _first_view(d).update(shape=[3, 4, 9, 7]), "does not keep the batch"),
        (lambda d: _first_view(d).update(shape=["B", 40, 9, 7]), "covers elements"),
        (lambda d: d["launches"].pop(1), "before launches have written all of it"),
        (lambda d: d["outputs"][0].update(tensor="p0"), "is not an input, or a buffer or view"),
    ],
)
def test_edited_views_are_refused(tmp_path: Path, edit: object, message: str) -> None:
    with pytest.raises(PlanError, match=message):
        load_plan(_edited(tmp_path, edit))


FLATTEN = """
func.func @forward(%x: tensor<?x3x5x5xf32>) -> tensor<?x75xf32> {
  %m = graph.max_pool2d %x kernel [3, 3] strides [1, 1] padding [1, 1, 1, 1] : (tensor<?x3x5x5xf32>) -> tensor<?x3x5x5xf32>
  %f = graph.flatten %m : (tensor<?x3x5x5xf32>) -> tensor<?x75xf32>
  func.return %f : tensor<?x75xf32>
}
"""


def test_flatten_is_a_view_with_no_launch(tmp_path: Path) -> None:
    ir = _lower(FLATTEN)
    assert _count(ir, "kernel.launch") == 1 and "kernel.reshape" in ir, ir
    out = _emit(tmp_path, FLATTEN)
    plan = load_plan(out)
    assert len(plan.launches) == 1 and plan.outputs == (plan.views[0].name,)
    x = np.random.default_rng(0).standard_normal((3, 3, 5, 5)).astype(np.float32)
    (got,) = runtime.load(out).run([x], {})
    (want,) = reference.run(teeny_ir.parse_module(FLATTEN), {}, [x])
    assert_close([got], [want], REDUCTION_TOL, dtype=np.float32)


def test_flatten_of_a_concat_part_keeps_its_stride() -> None:
    text = """
func.func @forward(%x: tensor<?x3x5x5xf32>) -> (tensor<?x6x5x5xf32>, tensor<?x75xf32>) {
  %m = graph.max_pool2d %x kernel [3, 3] strides [1, 1] padding [1, 1, 1, 1] : (tensor<?x3x5x5xf32>) -> tensor<?x3x5x5xf32>
  %n = graph.max_pool2d %m kernel [3, 3] strides [1, 1] padding [1, 1, 1, 1] : (tensor<?x3x5x5xf32>) -> tensor<?x3x5x5xf32>
  %c = graph.concat %m, %n axis 1 : (tensor<?x3x5x5xf32>, tensor<?x3x5x5xf32>) -> tensor<?x6x5x5xf32>
  %f = graph.flatten %m : (tensor<?x3x5x5xf32>) -> tensor<?x75xf32>
  %p = graph.max_pool2d %c kernel [1, 1] : (tensor<?x6x5x5xf32>) -> tensor<?x6x5x5xf32>
  func.return %p, %f : tensor<?x6x5x5xf32>, tensor<?x75xf32>
}
"""
    ir = _lower(text)
    # %m is placed in the concat, so its flatten is not contiguous: the flatten
    # is returned, which a strided view cannot be, so the concat copies.
    assert '"concat"' in ir and "kernel.reshape" in ir, ir


def test_reshape_folding_a_static_batch_is_a_copy() -> None:
    text = """
func.func @forward(%x: tensor<2x3x5x5xf32>) -> tensor<6x25xf32> {
  %r = graph.reshape %x shape [6, 25] : (tensor<2x3x5x5xf32>) -> tensor<6x25xf32>
  func.return %r : tensor<6x25xf32>
}
"""
    ir = _lower(text)  # not a view: the reshape_copy family's launch
    assert '"reshape_copy"' in ir and "kernel.reshape" not in ir, ir


def test_a_strided_function_argument_is_a_located_error(tmp_path: Path) -> None:
    module = teeny_ir.parse_module(FLATTEN, "m.mlir")
    teeny_ir.PassManager.parse("teeny-inference").run(module)
    text = teeny_ir.print_module(module)
    strided = "tensor<?x3x5x5xf32, #kernel.batch_stride<150>>"
    text = text.replace("%x: tensor<?x3x5x5xf32>", f"%x: {strided}", 1)
    text = text.replace(
        "(tensor<?x3x5x5xf32>) -> tensor<?x3x5x5xf32>", f"({strided}) -> tensor<?x3x5x5xf32>", 1
    )
    text = text.replace('x_batch_stride = "75"', 'x_batch_stride = "150"', 1)
    edited = teeny_ir.parse_module(text, "k.mlir")
    with pytest.raises(
        teeny_ir.DiagnosticError, match="an input is a whole contiguous array"
    ) as caught:
        teeny_ir.PassManager.parse(f"emit-triton{{out-dir={tmp_path / 'out'}}}").run(edited)
    assert caught.value.diagnostics[0].location is not None
    assert not (tmp_path / "out").exists()
