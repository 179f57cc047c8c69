"""teeny-run --compare-reference: the divergence finder names the first launch
whose output leaves the reference, with the graph ops and locations behind it.

The planted bug lives in a copy of the package (the plan loader checks that each
kernel file is exactly its family's rendering, so a bug must be in the family
source itself, on both sides): the compiler and the runtime run from the copy in
their own processes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

ROOT = Path(__file__).resolve().parent.parent
MODEL = """func.func @forward(%x: tensor<?x3x7x6xf32>) -> tensor<?x5x7x6xf32> {
  %w1 = graph.param "w1" : tensor<4x3x1x1xf32>
  %c1 = graph.conv2d %x, %w1 : (tensor<?x3x7x6xf32>, tensor<4x3x1x1xf32>) -> tensor<?x4x7x6xf32>
  %s1 = graph.silu %c1 : tensor<?x4x7x6xf32>
  %p = graph.max_pool2d %s1 kernel [3, 3] strides [1, 1] padding [1, 1, 1, 1] : (tensor<?x4x7x6xf32>) -> tensor<?x4x7x6xf32>
  %w2 = graph.param "w2" : tensor<5x4x1x1xf32>
  %c2 = graph.conv2d %p, %w2 : (tensor<?x4x7x6xf32>, tensor<5x4x1x1xf32>) -> tensor<?x5x7x6xf32>
  func.return %c2 : tensor<?x5x7x6xf32>
}
"""
PLANTED = (
    "        if IS_MAX:\n            result = acc\n",
    "        if IS_MAX:\n            result = acc * 1.5\n",
)


def _package(tmp_path: Path, planted: bool) -> Path:
    root = tmp_path / ("planted" if planted else "clean")
    for name in ("teeny_ir", "dialects", "passes"):
        shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    if planted:
        kernel = root / "teeny_ir" / "kernels" / "pool2d" / "kernel.py"
        text = kernel.read_text()
        assert text.count(PLANTED[0]) == 1
        kernel.write_text(text.replace(*PLANTED))
    return root


def _run(root: Path, tool: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(root))
    code = f"import sys; from teeny_ir.driver.{tool} import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )


def _compile_and_compare(tmp_path: Path, planted: bool) -> subprocess.CompletedProcess[str]:
    root = _package(tmp_path, planted)
    model, plan = tmp_path / "model.mlir", tmp_path / f"plan-{planted}"
    model.write_text(MODEL)
    rng = np.random.default_rng(0)
    weights = tmp_path / "w.safetensors"
    save_file(
        {
            "w1": rng.standard_normal((4, 3, 1, 1)).astype(np.float32),
            "w2": rng.standard_normal((5, 4, 1, 1)).astype(np.float32),
        },
        str(weights),
    )
    np.save(tmp_path / "x.npy", rng.standard_normal((3, 3, 7, 6)).astype(np.float32))
    pipeline = f"teeny-inference,emit-triton{{out-dir={plan}}}"
    compiled = _run(root, "opt", [str(model), "-p", pipeline, "-o", os.devnull])
    assert compiled.returncode == 0, compiled.stderr
    return _run(
        root,
        "run",
        [
            *(str(plan), "--weights", str(weights), "--input", str(tmp_path / "x.npy")),
            *("-o", str(tmp_path / "out.npz"), "--compare-reference", str(model)),
        ],
    )


def test_a_planted_template_bug_is_named_by_its_launch(tmp_path: Path) -> None:
    result = _compile_and_compare(tmp_path, planted=True)
    assert result.returncode == 1, result.stderr
    (line,) = [line for line in result.stderr.splitlines() if "diverges" in line]
    assert "launch 1 ('pool2d_0', family pool2d) diverges from the reference at output 0" in line
    assert f"it implements graph.max_pool2d at {tmp_path / 'model.mlir'}:5:8" in line


def test_a_correct_plan_has_no_divergence(tmp_path: Path) -> None:
    result = _compile_and_compare(tmp_path, planted=False)
    assert result.returncode == 0, result.stderr
    assert "no launch diverges from the reference: 3 compared" in result.stderr
    assert (tmp_path / "out.npz").is_file()


def test_a_bad_reference_module_is_a_located_error(tmp_path: Path) -> None:
    from teeny_ir.driver import run

    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @forward(%x: tensor<?x3xf32>) {\n  %y = graph.nope %x\n}\n")
    plan = tmp_path / "plan"
    import teeny_ir

    module = teeny_ir.parse_module(MODEL)
    teeny_ir.PassManager.parse(f"teeny-inference,emit-triton{{out-dir={plan}}}").run(module)
    np.save(tmp_path / "x.npy", np.zeros((1, 3, 7, 6), np.float32))
    save_file(
        {"w1": np.zeros((4, 3, 1, 1), np.float32), "w2": np.zeros((5, 4, 1, 1), np.float32)},
        str(tmp_path / "w.safetensors"),
    )
    import io

    stderr = io.StringIO()
    code = run.run(
        [
            str(plan),
            "--weights",
            str(tmp_path / "w.safetensors"),
            "--input",
            str(tmp_path / "x.npy"),
            "-o",
            str(tmp_path / "o.npz"),
            "--compare-reference",
            str(bad),
        ],
        io.StringIO(),
        stderr,
    )
    assert code == 1
    assert stderr.getvalue().startswith(f"{bad}:2:"), stderr.getvalue()


def test_a_source_location_is_read_with_ascii_digits_only() -> None:
    # str.isdigit() holds for "²" and "\u0663"; int() refuses the first and reads the second.
    from teeny_ir.runtime.divergence import _position

    assert _position("m.mlir:12:8") == (12, 8)
    for loc in ("m.mlir:\u00b2:8", "m.mlir:12:\u0663", "m.mlir:\uff11:1", "m.mlir:x:1", "m.mlir"):
        assert _position(loc) is None, loc
