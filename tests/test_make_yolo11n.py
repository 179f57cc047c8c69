"""`examples/yolo11n/make_yolo11n.py`: the committed ``yolo11n.mlir`` and
``yolo11n.safetensors`` are what the script writes now, ``--size N --out DIR``
writes the model at another input size into DIR and nowhere else, bad options
are refused, and the bundled model runs in the reference interpreter.

Parity with ultralytics itself is bench/yolo11n_parity.py (ultralytics is not
a test dependency)."""

from __future__ import annotations

import collections
import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from safetensors.numpy import load, load_file

import teeny_ir
from teeny_ir import reference
from teeny_ir.testing import assert_round_trips

SCRIPT = Path(__file__).resolve().parent.parent / "examples" / "yolo11n" / "make_yolo11n.py"
FOLDER = SCRIPT.parent
ULTRALYTICS_TRAINABLE = 2624064
"""yolo11.yaml's scale-n summary: 2624080 parameters, of which 16 (the DFL's fixed
conv, not in the file) take no gradient."""


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_make_yolo11n", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_files_are_what_the_script_writes() -> None:
    text, weights = _script().make_files()
    assert text == (FOLDER / "yolo11n.mlir").read_text()
    assert_round_trips(teeny_ir.parse_module(text))
    made, committed = load(weights), load_file(str(FOLDER / "yolo11n.safetensors"))
    assert sorted(made) == sorted(committed)
    for key, value in made.items():
        assert (value.dtype, value.shape) == (committed[key].dtype, committed[key].shape), key
        assert value.tobytes() == committed[key].tobytes(), key
    assert weights == (FOLDER / "yolo11n.safetensors").read_bytes()


def test_weights_are_ultralytics_state_dict() -> None:
    weights = load_file(str(FOLDER / "yolo11n.safetensors"))
    learned = sum(
        v.size
        for k, v in weights.items()
        if v.dtype == np.float32 and not k.endswith(("running_mean", "running_var"))
    )
    assert learned == ULTRALYTICS_TRAINABLE
    counters = [k for k, v in weights.items() if v.dtype == np.int64]
    assert all(k.endswith(".bn.num_batches_tracked") and weights[k].shape == () for k in counters)
    assert len(counters) == sum(k.endswith(".bn.running_var") for k in weights)
    for key, shape in (
        ("model.10.m.0.attn.qkv.conv.weight", (256, 128, 1, 1)),
        ("model.10.m.0.attn.pe.conv.weight", (128, 1, 3, 3)),
        ("model.22.m.0.m.1.cv2.conv.weight", (64, 64, 3, 3)),
        ("model.23.cv3.0.0.0.conv.weight", (64, 1, 3, 3)),
        ("model.23.cv3.2.2.bias", (80,)),
    ):
        assert weights[key].shape == shape, key


def test_attention_is_written_decomposed() -> None:
    module = teeny_ir.parse_module((FOLDER / "yolo11n.mlir").read_text())
    ops = collections.Counter(op.name for op in module.walk())
    assert {
        name: ops[name]
        for name in ("graph.softmax", "graph.matmul", "graph.transpose", "graph.reshape")
    } == {"graph.softmax": 1, "graph.matmul": 2, "graph.transpose": 2, "graph.reshape": 3}
    assert ops["graph.constant"] == ops["graph.mul"] == 1


def test_reference_runs_the_bundled_model_at_batch_1() -> None:
    module = teeny_ir.parse_module((FOLDER / "yolo11n.mlir").read_text())
    weights = load_file(str(FOLDER / "yolo11n.safetensors"))
    x = np.random.default_rng(0).standard_normal((1, 3, 64, 64)).astype(np.float32)
    outputs = reference.run(module, weights, [x])
    assert [y.shape for y in outputs] == [(1, 144, 8, 8), (1, 144, 4, 4), (1, 144, 2, 2)]
    assert all(y.dtype == np.float32 and np.isfinite(y).all() for y in outputs)
    assert min(float(y.std()) for y in outputs) > 0.0


def test_size_and_out_write_only_into_the_directory(tmp_path: Path) -> None:
    committed = {p: p.stat().st_mtime_ns for p in FOLDER.iterdir()}
    out = tmp_path / "y96"
    assert _script().main(["--size", "96", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["yolo11n.mlir", "yolo11n.safetensors"]
    assert {p: p.stat().st_mtime_ns for p in FOLDER.iterdir()} == committed
    text = teeny_ir.print_module(teeny_ir.parse_module((out / "yolo11n.mlir").read_text()))
    assert "tensor<?x3x96x96xf32>" in text
    assert "tensor<?x144x12x12xf32>" in text  # P3 at stride 8
    assert "tensor<?x2x128x9xf32>" in text  # the attention's 3x3 tokens at stride 32
    assert (out / "yolo11n.safetensors").read_bytes() == (
        FOLDER / "yolo11n.safetensors"
    ).read_bytes()


@pytest.mark.parametrize("size", ["70", "0", "-32"])
def test_sizes_that_are_not_multiples_of_32_are_refused(tmp_path: Path, size: str) -> None:
    with pytest.raises(SystemExit) as info:
        _script().main(["--size", size, "--out", str(tmp_path / "x")])
    assert info.value.code == 2
    assert not (tmp_path / "x").exists()


def test_an_out_that_is_a_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "file"
    target.write_text("kept")
    with pytest.raises(SystemExit) as info:
        _script().main(["--out", str(target)])
    assert info.value.code == 2
    assert "exists and is not a directory" in capsys.readouterr().err
    assert target.read_text() == "kept"
