"""emit-triton: kernel IR -> kernel files + plan.json, and the plan run by the runtime.

The kernel IR is written by hand here (a fused 1x1 conv + BN + SiLU, then a
broadcasting add), with weight names from the security bar: they must stay
JSON data and never reach Python source or a file name.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

import teeny_ir
from teeny_ir import runtime
from teeny_ir.backend.plan import load_plan
from teeny_ir.testing import REDUCTION_TOL, assert_close

INJECTION = 'x"); import os; os.system("id'
TRAVERSAL = "../../etc/passwd"


def _literal(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def kernel_ir(conv: str = INJECTION, gamma: str = TRAVERSAL, second_block: int = 1024) -> str:
    """@forward: ``y = silu(bn(conv1x1(x)))``, ``z = y + b``, ``u = z + b``; returns (u, y)."""
    bn = f"{_literal(gamma)}, {_literal('bn.bias')}, {_literal('bn.mean')}, {_literal('bn.var')}"
    add_args = (
        'args [x = in0, y = in1, out = out0, numel = "B*320", size1 = "1", size2 = "B", '
        'size3 = "16", size4 = "4", size5 = "5", x_stride0 = "B*320", x_stride1 = "B*320", '
        'x_stride2 = "320", x_stride3 = "20", x_stride4 = "5", x_stride5 = "1", '
        'y_stride0 = "16", y_stride1 = "16", y_stride2 = "0", y_stride3 = "1", '
        'y_stride4 = "0", y_stride5 = "0"]'
    )
    t_out, t_b = "tensor<?x16x4x5xf32>", "tensor<16x1x1xf32>"
    return f"""
func.func @forward(%x: tensor<?x8x4x5xf32>, %b: {t_b}) -> ({t_out}, {t_out}) {{
  kernel.weight {_literal(conv)} : tensor<16x8x1x1xf32>
  kernel.weight {_literal(gamma)} : tensor<16xf32>
  kernel.weight "bn.bias" : tensor<16xf32>
  kernel.weight "bn.mean" : tensor<16xf32>
  kernel.weight "bn.var" : tensor<16xf32>
  %y = kernel.launch "conv1x1_gemm" (%x) {{BLOCK_M = 16, BLOCK_N = 16, BLOCK_K = 16, GROUP_M = 8, ACTIVATION = "silu"}}
      params [w : tensor<16x8xf32> = #derive.param<reshape({_literal(conv)}) : [16, 8]>,
              scale : tensor<16xf32> = #derive.param<bn_scale({_literal(gamma)}, "bn.var") eps 0.001 : [16]>,
              shift : tensor<16xf32> = #derive.param<bn_shift({bn}) eps 0.001 : [16]>]
      args [x = in0, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out0,
            B = "B", C_IN = "8", C_OUT = "16", M = "20",
            x_batch_stride = "160", r_batch_stride = "160", y_batch_stride = "320", HAS_RESIDUAL = "0"]
      grid ["B * cdiv(20, 16) * cdiv(16, 16)", "1", "1"] warps 4 stages 2
      : (tensor<?x8x4x5xf32>) -> {t_out}
  %z = kernel.launch "elementwise" (%y, %b) {{OP = "add", BLOCK = 1024}} {add_args}
      grid ["cdiv(B*320, 1024)", "1", "1"] warps 4 stages 1 : ({t_out}, {t_b}) -> {t_out}
  %u = kernel.launch "elementwise" (%z, %b) {{OP = "add", BLOCK = {second_block}}} {add_args}
      grid ["cdiv(B*320, {second_block})", "1", "1"] warps 4 stages 1 : ({t_out}, {t_b}) -> {t_out}
  func.return %u, %y : {t_out}, {t_out}
}}
"""


def emit(directory: Path, text: str | None = None, archs: str = "") -> str:
    """Run emit-triton on the IR; returns the IR printed afterwards."""
    module = teeny_ir.parse_module(kernel_ir() if text is None else text)
    option = f" archs={archs}" if archs else ""
    teeny_ir.PassManager.parse(f"emit-triton{{out-dir={directory}{option}}}").run(module)
    return teeny_ir.print_module(module)


def _weights(rng: np.random.Generator) -> dict[str, np.ndarray]:
    f32 = np.float32
    return {
        INJECTION: rng.standard_normal((16, 8, 1, 1)).astype(f32),
        TRAVERSAL: rng.uniform(0.5, 1.5, 16).astype(f32),
        "bn.bias": rng.standard_normal(16).astype(f32),
        "bn.mean": rng.standard_normal(16).astype(f32),
        "bn.var": rng.uniform(0.5, 1.5, 16).astype(f32),
    }


def _reference(x: np.ndarray, b: np.ndarray, w: dict[str, np.ndarray]) -> list[np.ndarray]:
    scale = w[TRAVERSAL] / np.sqrt(w["bn.var"].astype(np.float64) + 1e-3)
    shift = w["bn.bias"] - scale * w["bn.mean"]
    conv = np.einsum("oi,bihw->bohw", w[INJECTION][:, :, 0, 0].astype(np.float64), x)
    v = conv * scale[None, :, None, None] + shift[None, :, None, None]
    y = v / (1 + np.exp(-v))
    return [y + 2 * b, y]


def _tree(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def test_emits_files_and_plan_and_leaves_the_ir_unchanged(tmp_path: Path) -> None:
    before = teeny_ir.print_module(teeny_ir.parse_module(kernel_ir()))
    assert emit(tmp_path / "out") == before
    plan = load_plan(tmp_path / "out")
    assert sorted(_tree(tmp_path / "out")) == [
        "kernels/conv1x1_gemm_0.py",
        "kernels/elementwise_0.py",
        "plan.json",
    ]
    assert [k.name for k in plan.kernels] == ["conv1x1_gemm_0", "elementwise_0"]
    assert [launch.kernel for launch in plan.launches] == [
        "conv1x1_gemm_0",
        "elementwise_0",
        "elementwise_0",
    ]
    assert [t.name for t in plan.inputs] == ["in0", "in1"]
    assert plan.inputs[1].shape == (16, 1, 1)
    assert [p.name for p in plan.params] == ["p0", "p1", "p2"]
    assert plan.outputs == ("t2", "t0")
    assert plan.launches[1].grid == ("cdiv(B * 320, 1024)", "1", "1")  # canonical text
    assert [w.name for w in plan.weights][:2] == [INJECTION, TRAVERSAL]


def test_hostile_weight_names_stay_json_data(tmp_path: Path) -> None:
    emit(tmp_path / "out")
    for path in (tmp_path / "out").rglob("*"):
        assert INJECTION not in path.name and "passwd" not in str(path)
        if path.suffix == ".py":
            source = path.read_text()
            assert INJECTION not in source and TRAVERSAL not in source
            assert "os.system" not in source and "passwd" not in source
    assert not (tmp_path / "etc").exists()
    data = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert data["params"][0]["derivation"]["sources"] == [INJECTION]


@pytest.mark.parametrize("batch", [1, 3])
def test_emitted_plan_runs_in_the_interpreter(tmp_path: Path, batch: int) -> None:
    emit(tmp_path / "out")
    rng = np.random.default_rng(batch)
    weights = _weights(rng)
    x = rng.standard_normal((batch, 8, 4, 5)).astype(np.float32)
    b = rng.standard_normal((16, 1, 1)).astype(np.float32)
    got = runtime.load(tmp_path / "out").run([x, b], weights)
    assert_close(got, _reference(x, b, weights), REDUCTION_TOL)


def test_variants_are_deduplicated_by_family_and_constexprs(tmp_path: Path) -> None:
    emit(tmp_path / "out", kernel_ir(second_block=512))
    plan = load_plan(tmp_path / "out")
    assert [k.name for k in plan.kernels] == ["conv1x1_gemm_0", "elementwise_0", "elementwise_1"]
    assert plan.kernels[2].constexprs == {"BLOCK": 512, "OP": "add"}


def test_emission_is_deterministic_with_aot(tmp_path: Path) -> None:
    emit(tmp_path / "a", archs="80")
    emit(tmp_path / "b", archs="80")
    first, second = _tree(tmp_path / "a"), _tree(tmp_path / "b")
    assert first == second
    assert "kernels/conv1x1_gemm_0.sm80.cubin" in first
    compiled = load_plan(tmp_path / "a").kernels[0].compiled
    assert [(c.arch, c.num_warps, c.num_stages) for c in compiled] == [(80, 4, 2)]
    cubin = first["kernels/conv1x1_gemm_0.sm80.cubin"]
    assert compiled[0].cubin_sha256 == hashlib.sha256(cubin).hexdigest()


def test_shared_memory_over_the_limit_is_a_located_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from teeny_ir.backend import aot

    def huge(*args: object) -> aot.CompiledVariant:
        return aot.CompiledVariant(86, "k", 4, 2, 10**6, b"", "", "0" * 64)

    monkeypatch.setattr(aot, "compile_variant", huge)
    with pytest.raises(teeny_ir.DiagnosticError) as info:  # in this process, uncached
        emit(tmp_path / "out", archs="86 jobs=1 cache=off")
    message = info.value.diagnostics[0].header()
    assert message.startswith("<string>:8:8: error:")  # the variant's first launch
    assert "kernel variant 'conv1x1_gemm_0' for sm_86" in message
    assert "needs 1000000 bytes of shared memory" in message
    assert list(tmp_path.iterdir()) == []  # no plan, no temporary directory


def test_previous_emission_is_replaced(tmp_path: Path) -> None:
    emit(tmp_path / "out", kernel_ir(second_block=512))
    pycache = tmp_path / "out" / "kernels" / "__pycache__"  # as a bytecode-writing import leaves
    pycache.mkdir()
    (pycache / "elementwise_1.cpython-311.pyc").write_bytes(b"")
    emit(tmp_path / "out")
    assert sorted(_tree(tmp_path / "out")) == [
        "kernels/conv1x1_gemm_0.py",
        "kernels/elementwise_0.py",
        "plan.json",
    ]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


@pytest.mark.parametrize(
    ("prepare", "message"),
    [
        (lambda d: (d / "notes.txt").write_text("mine"), "refusing to replace out-dir"),
        (lambda d: (d / "plan.json").write_text("{}"), "refusing to replace out-dir"),
        (lambda d: (d / "plan.json").write_text('{"format": 1'), "refusing to replace out-dir"),
    ],
)
def test_user_directories_are_never_replaced(tmp_path: Path, prepare: object, message: str) -> None:
    target = tmp_path / "out"
    target.mkdir()
    prepare(target)  # type: ignore[operator]
    before = _tree(target)
    with pytest.raises(teeny_ir.DiagnosticError, match=message):
        emit(target)
    assert _tree(target) == before


def test_previous_emission_with_a_user_file_is_not_replaced(tmp_path: Path) -> None:
    emit(tmp_path / "out")
    (tmp_path / "out" / "kernels" / "my_notes.txt").write_text("mine")
    with pytest.raises(teeny_ir.DiagnosticError, match="refusing to replace out-dir"):
        emit(tmp_path / "out")
    assert (tmp_path / "out" / "kernels" / "my_notes.txt").read_text() == "mine"


def test_out_dir_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("x")
    with pytest.raises(teeny_ir.DiagnosticError, match="exists and is not a directory"):
        emit(tmp_path / "out")


def test_graph_ops_in_forward_are_located_errors(tmp_path: Path) -> None:
    text = """func.func @forward(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %y = graph.silu %x : tensor<?x4xf32>
  %z = graph.silu %y : tensor<?x4xf32>
  func.return %z : tensor<?x4xf32>
}
"""
    with pytest.raises(teeny_ir.DiagnosticError) as info:
        emit(tmp_path / "out", text)
    headers = [d.header() for d in info.value.diagnostics]
    assert len(headers) == 2
    assert headers[0].startswith("<string>:2:8: error: emit-triton expects only kernel.weight")
    assert "found 'graph.silu' (run lower-graph-to-kernel first)" in headers[0]
    assert not (tmp_path / "out").exists()


def test_slice_end_to_end_matches_the_reference(tmp_path: Path) -> None:
    """examples/slice through teeny-opt's passes, emit-triton and the interpreter."""
    from safetensors.numpy import load_file

    from teeny_ir import reference

    example = Path(__file__).resolve().parent.parent / "examples" / "slice"
    text = (example / "slice.mlir").read_text()
    graph = teeny_ir.parse_module(text, filename="slice.mlir")
    kernels = teeny_ir.parse_module(text, filename="slice.mlir")
    teeny_ir.PassManager.parse(
        "split-bias,fuse-conv-bn-act,select-conv-algorithm,lower-graph-to-kernel,"
        f"emit-triton{{out-dir={tmp_path / 'slice'}}}"
    ).run(kernels)
    weights = load_file(str(example / "slice.safetensors"))
    executable = runtime.load(tmp_path / "slice")
    rng = np.random.default_rng(0)
    for batch in (1, 3):
        x = rng.standard_normal((batch, 37, 7, 9)).astype(np.float32)
        got = executable.run([x], weights)
        want = reference.run(graph, weights, [x])
        assert len(got) == len(want) == 2
        assert all(r.shape == (batch, 37, 7, 9) for r in want)
        assert_close(got, want, REDUCTION_TOL)
