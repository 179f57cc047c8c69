"""``python -m teeny_ir.reference``: run a ``.mlir`` model on ``.npy`` inputs, and
its errors (located diagnostics or one line, exit 1, never a traceback)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

import teeny_ir
from teeny_ir import GraphBuilder, reference
from teeny_ir.reference.__main__ import run

REPO = Path(__file__).resolve().parent.parent
LENET = REPO / "examples" / "lenet"


@pytest.fixture
def case(tmp_path: Path) -> Path:
    """``model.mlir`` (two inputs, two outputs), ``w.safetensors``, ``a.npy`` and
    ``b.npy`` (batch 3)."""
    b = GraphBuilder()
    x = b.input([None, 2, 4, 4])
    y = b.input([None, 2, 1, 1])
    with b.scope("conv"):
        conv = b.conv2d(x, b.param("weight", [3, 2, 3, 3]), b.param("bias", [3]))
    b.output(b.relu(conv), b.mul(x, y))
    (tmp_path / "model.mlir").write_text(teeny_ir.print_module(b.build()))
    rng = np.random.default_rng(0)
    weights = {
        "conv.weight": rng.standard_normal((3, 2, 3, 3)).astype(np.float32),
        "conv.bias": rng.standard_normal(3).astype(np.float32),
    }
    save_file(weights, str(tmp_path / "w.safetensors"))
    np.save(tmp_path / "a.npy", rng.standard_normal((3, 2, 4, 4)).astype(np.float32))
    np.save(tmp_path / "b.npy", rng.standard_normal((3, 2, 1, 1)).astype(np.float32))
    return tmp_path


def argv(case: Path, *inputs: str, output: str = "out.npz") -> list[str]:
    names = inputs or ("a.npy", "b.npy")
    return [
        str(case / "model.mlir"),
        "--weights",
        str(case / "w.safetensors"),
        *(arg for name in names for arg in ("--input", str(case / name))),
        "-o",
        str(case / output),
    ]


def cli(args: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(args, out, err)
    assert "Traceback" not in err.getvalue()
    return code, err.getvalue()


def test_writes_the_outputs_in_return_order(case: Path) -> None:
    code, err = cli(argv(case))
    assert (code, err) == (0, "")
    module = teeny_ir.parse_module((case / "model.mlir").read_text())
    weights = load_file(str(case / "w.safetensors"))
    inputs = [np.load(case / "a.npy"), np.load(case / "b.npy")]
    want = reference.run(module, weights, inputs)
    with np.load(case / "out.npz", allow_pickle=False) as data:
        assert sorted(data.files) == ["output_0", "output_1"]
        for index, expected in enumerate(want):
            np.testing.assert_array_equal(data[f"output_{index}"], expected)


def test_runs_as_a_module_in_a_real_process(tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", np.ones((2, 1, 28, 28), np.float32))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "teeny_ir.reference",
            str(LENET / "lenet.mlir"),
            "--weights",
            str(LENET / "lenet.safetensors"),
            "--input",
            str(tmp_path / "x.npy"),
            "-o",
            str(tmp_path / "out.npz"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (result.returncode, result.stderr) == (0, "")
    with np.load(tmp_path / "out.npz") as data:
        assert data["output_0"].shape == (2, 10)


def test_inputs_that_do_not_fit_are_located_errors(case: Path) -> None:
    np.save(case / "c.npy", np.zeros((3, 2, 5, 4), np.float32))
    np.save(case / "d.npy", np.zeros((2, 2, 1, 1), np.int64))
    code, err = cli(argv(case, "c.npy", "d.npy"))
    assert code == 1
    lines = err.splitlines()
    assert lines[0].endswith(
        "model.mlir:2:3: error: input 0 has shape [3, 2, 5, 4], expected [?, 2, 4, 4]"
    )
    assert lines[1].startswith("  func.func @forward(") and lines[2] == "  ^"
    assert "error: input 1 has dtype int64, expected float32" in err
    assert not (case / "out.npz").exists()


def test_a_wrong_input_count_is_an_error(case: Path) -> None:
    code, err = cli(argv(case, "a.npy"))
    assert code == 1
    assert "error: @forward takes 2 inputs, got 1" in err


def test_missing_weights_are_all_listed_at_their_params(case: Path) -> None:
    save_file({"other": np.zeros(1, np.float32)}, str(case / "w.safetensors"))
    code, err = cli(argv(case))
    assert code == 1
    assert "model.mlir:3:" in err and "error: weight 'conv.weight' is missing" in err
    assert "model.mlir:4:" in err and "error: weight 'conv.bias' is missing" in err


def test_a_bad_model_is_a_located_parse_error(case: Path) -> None:
    (case / "model.mlir").write_text("func.func @forward() {\n  %0 = graph.nope\n}\n")
    code, err = cli(argv(case))
    assert code == 1
    assert err.startswith(f"{case / 'model.mlir'}:2:")


def npz_bytes() -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, x=np.zeros(1))
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c: (c / "model.mlir").unlink(), "cannot read '"),
        (lambda c: (c / "w.safetensors").write_bytes(b"junk"), "cannot read weights '"),
        (lambda c: (c / "a.npy").write_bytes(b"junk"), "cannot read input '"),
        (
            lambda c: (c / "a.npy").write_bytes(npz_bytes()),
            "is an .npz archive; give one .npy array per --input",
        ),
    ],
)
def test_unreadable_files_are_one_line(case: Path, change: object, message: str) -> None:
    change(case)  # type: ignore[operator]
    code, err = cli(argv(case))
    assert code == 1
    assert err.startswith("teeny_ir.reference: error: ") and message in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("target", ["model.mlir", "w.safetensors", "a.npy"])
def test_output_equal_to_an_input_is_refused(case: Path, target: str) -> None:
    before = (case / target).read_bytes()
    code, err = cli(argv(case, output=target))
    assert code == 1
    assert f"refusing to overwrite the input file '{case / target}'" in err
    assert (case / target).read_bytes() == before


def test_an_existing_output_survives_a_failed_run(case: Path) -> None:
    (case / "out.npz").write_bytes(b"previous")
    code, _ = cli(argv(case, "b.npy", "a.npy"))
    assert code == 1
    assert (case / "out.npz").read_bytes() == b"previous"
    assert cli(argv(case))[0] == 0
    assert (case / "out.npz").read_bytes() != b"previous"
    assert sorted(p.name for p in case.iterdir() if p.name.startswith(".teeny-")) == []


def test_usage_errors_exit_1(case: Path) -> None:
    code, err = cli([str(case / "model.mlir")])
    assert code == 1
    assert err.startswith("teeny_ir.reference: error: the following arguments are required")
