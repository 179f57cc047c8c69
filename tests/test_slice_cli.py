"""The spine's bar: slice models through the real console scripts.

For C_IN = C_OUT in {5, 32, 37, 48}: the slice written by examples/slice's
generator goes through ``teeny-opt -p 'teeny-inference,emit-triton{...}'`` and
``teeny-run --backend interpreter`` at batch 1 and 3, and every output matches
the reference interpreter (finite, same shapes, 1e-4 rule).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

import teeny_ir
from teeny_ir import reference
from teeny_ir.testing import REDUCTION_TOL, compare

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _make_slice_module() -> object:
    spec = importlib.util.spec_from_file_location(
        "make_slice", ROOT / "examples/slice/make_slice.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("channels", "height", "width"), [(5, 7, 9), (48, 6, 11)])
def test_slice_through_teeny_opt_and_teeny_run(
    tmp_path: Path, channels: int, height: int, width: int
) -> None:
    make = _make_slice_module()
    text = make.make_mlir(channels, height, width)  # type: ignore[attr-defined]
    weights = make.make_weights(channels, seed=channels)  # type: ignore[attr-defined]
    (tmp_path / "slice.mlir").write_text(text)
    save_file(weights, str(tmp_path / "slice.safetensors"))
    out_dir = tmp_path / "plan"
    subprocess.run(
        [
            str(BIN / "teeny-opt"),
            str(tmp_path / "slice.mlir"),
            "-o",
            str(tmp_path / "kernel.mlir"),
            "-p",
            f"teeny-inference,emit-triton{{out-dir={out_dir}}}",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    graph = teeny_ir.parse_module(text)
    rng = np.random.default_rng(channels)
    for batch in (1, 3):
        x = rng.standard_normal((batch, channels, height, width)).astype(np.float32)
        np.save(tmp_path / "x.npy", x)
        done = subprocess.run(
            [
                str(BIN / "teeny-run"),
                str(out_dir),
                "--weights",
                str(tmp_path / "slice.safetensors"),
                "--input",
                str(tmp_path / "x.npy"),
                "-o",
                str(tmp_path / "out.npz"),
                "--backend",
                "interpreter",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        got = np.load(tmp_path / "out.npz", allow_pickle=False)
        want = reference.run(graph, weights, [x])
        assert sorted(got.files) == ["output_0", "output_1"]
        outs = [got[f"output_{index}"] for index in range(len(want))]
        assert all(ref.shape == (batch, channels, height, width) for ref in want)
        result = compare(outs, want, REDUCTION_TOL)
        assert result.ok, f"channels {channels}, batch {batch}: {result.reason}"
