"""`examples/yolov8n/make_yolov8n.py --size N --out DIR` writes the model at another
input size into DIR and nowhere else."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

import teeny_ir

SCRIPT = Path(__file__).resolve().parent.parent / "examples" / "yolov8n" / "make_yolov8n.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_make_yolov8n", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_size_and_out_write_only_into_the_directory(tmp_path: Path) -> None:
    committed = {p: p.stat().st_mtime_ns for p in SCRIPT.parent.iterdir()}
    out = tmp_path / "y96"
    assert _script().main(["--size", "96", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["yolov8n.mlir", "yolov8n.safetensors"]
    assert {p: p.stat().st_mtime_ns for p in SCRIPT.parent.iterdir()} == committed
    module = teeny_ir.parse_module((out / "yolov8n.mlir").read_text())
    text = teeny_ir.print_module(module)
    assert "tensor<?x3x96x96xf32>" in text
    assert "tensor<?x144x12x12xf32>" in text  # P3 at stride 8


@pytest.mark.parametrize("size", ["70", "0", "-32"])
def test_sizes_that_are_not_multiples_of_32_are_refused(tmp_path: Path, size: str) -> None:
    with pytest.raises(SystemExit) as info:
        _script().main(["--size", size, "--out", str(tmp_path / "x")])
    assert info.value.code == 2
    assert not (tmp_path / "x").exists()
