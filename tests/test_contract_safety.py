"""The one contract validator refuses every unsafe launch, in kernel IR and in plans.

Each mutation class gets its own case. Kernel IR cases go through `teeny-opt`
in-process: a one-line located error and exit 1, no traceback. Plan cases
tamper with a real emission of the slice model and go through `teeny-run`
in-process with the worker forbidden: refused before any launch, exit 1, one
line. The validator itself is also exercised directly at batches above 64.
"""

from __future__ import annotations

import dataclasses
import io
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from teeny_ir.backend.plan import PlanError, check_at_batch, load_plan
from teeny_ir.driver import opt
from teeny_ir.driver import run as run_cli
from teeny_ir.kernels import validator
from teeny_ir.runtime.backends import interpreter

ROOT = Path(__file__).resolve().parent.parent
SLICE = ROOT / "examples" / "slice" / "slice.mlir"
WEIGHTS = ROOT / "examples" / "slice" / "slice.safetensors"


def teeny_opt(*argv: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = opt.run(list(argv), io.BytesIO(), stdout, stderr)
    return code, stdout.getvalue(), stderr.getvalue()


GRAPHS = {
    "elementwise": """
func.func @forward(%x: tensor<?x5x3x3xf32>) -> tensor<?x5x3x3xf32> {
  %y = graph.relu %x : tensor<?x5x3x3xf32>
  func.return %y : tensor<?x5x3x3xf32>
}
""",
    "conv1x1_gemm": """
func.func @forward(%x: tensor<?x5x3x3xf32>) -> tensor<?x6x3x3xf32> {
  %w = graph.param "conv.weight" : tensor<6x5x1x1xf32>
  %b = graph.param "conv.bias" : tensor<6xf32>
  %c = graph.conv2d %x, %w, %b : (tensor<?x5x3x3xf32>, tensor<6x5x1x1xf32>, tensor<6xf32>) -> tensor<?x6x3x3xf32>
  %y = graph.silu %c : tensor<?x6x3x3xf32>
  func.return %y : tensor<?x6x3x3xf32>
}
""",
}


@pytest.fixture(scope="module")
def kernel_ir(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One lowered single-launch module per family."""
    lowered: dict[str, str] = {}
    for family, text in GRAPHS.items():
        directory = tmp_path_factory.mktemp(family)
        (directory / "graph.mlir").write_text(text)
        out = directory / "kernel.mlir"
        code, _, err = teeny_opt(
            str(directory / "graph.mlir"), "-p", "teeny-inference", "-o", str(out)
        )
        assert code == 0, err
        lowered[family] = out.read_text()
    return lowered


@pytest.fixture(scope="module")
def emitted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("plan") / "slice"
    code, _, err = teeny_opt(
        str(SLICE), "-p", f"teeny-inference,emit-triton{{out-dir={out}}}", "-o", "/dev/null"
    )
    assert code == 0, err
    return out


def _mutate(text: str, change: Callable[[str], str]) -> str:
    lines = text.splitlines()
    (index,) = [i for i, line in enumerate(lines) if "kernel.launch" in line]
    changed = change(lines[index])
    assert changed != lines[index], "the mutation did not apply"
    lines[index] = changed
    return "\n".join(lines) + "\n"


def _shrink_result(text: str) -> str:
    """The result one channel smaller than the kernel writes, consistently in the
    launch, the return and the signature (the whole module)."""
    result = "x5x3x3xf32" if "x6x3x3xf32" not in text else "x6x3x3xf32"
    smaller = result.replace("x5x", "x4x", 1).replace("x6x", "x5x", 1)
    if result == "x5x3x3xf32":  # elementwise: the input keeps its type
        lines = text.splitlines()
        out = []
        for line in lines:
            if "kernel.launch" in line:
                head, _, tail = line.rpartition("-> ")
                line = head + "-> " + tail.replace(result, smaller)
            elif "func.return" in line:
                line = line.replace(result, smaller)
            elif line.startswith("func.func") or "func.func" in line:
                head, _, tail = line.rpartition("-> ")
                line = head + "-> " + tail.replace(result, smaller)
            out.append(line)
        return "\n".join(out) + "\n"
    return text.replace(result, smaller)


def _binding(name: str, value: str) -> Callable[[str], str]:
    def change(line: str) -> str:
        return re.sub(rf'\b{name} = "[^"]*"', f'{name} = "{value}"', line, count=1)

    return change


def _constexpr(name: str, value: str) -> Callable[[str], str]:
    def change(line: str) -> str:
        return re.sub(rf"\b{name} = [0-9]+", f"{name} = {value}", line, count=1)

    return change


def _param_shape(line: str) -> str:
    """The weight slot smaller than C_OUT x C_IN (its derivation made to fit)."""
    line = line.replace("w : tensor<6x5xf32>", "w : tensor<5x5xf32>", 1)
    return line.replace(": [6, 5]>", ": [5, 5]>", 1)


KERNEL_IR_MUTATIONS: list[tuple[str, str, Callable[[str], str] | None, str]] = [
    ("result smaller than numel", "elementwise", None, "imply"),
    ("gemm result smaller", "conv1x1_gemm", None, "imply"),
    ("numel beyond the tensors", "elementwise", _binding("numel", "B * 50"), "imply"),
    ("stride reaching past x", "elementwise", _binding("x_stride2", "90"), "imply"),
    ("stride reaching past y", "elementwise", _binding("y_stride3", "64"), "imply"),
    ("C_IN beyond x", "conv1x1_gemm", _binding("C_IN", "7"), "imply"),
    (
        "batch stride past y",
        "conv1x1_gemm",
        _binding("y_batch_stride", "64"),
        "argument 'y_batch_stride' = '64' is 64 at B = 1, but 'out0' (bound to 'y') has batch "
        "stride 54",
    ),
    (
        "batch stride short of x",
        "conv1x1_gemm",
        _binding("x_batch_stride", "44"),
        "argument 'x_batch_stride' = '44' is 44 at B = 1, but 'in0' (bound to 'x') has batch "
        "stride 45",
    ),
    (
        "residual read without a residual",
        "conv1x1_gemm",
        _binding("HAS_RESIDUAL", "1"),
        "argument 'r' may touch 54 elements at B = 1 "
        "(HAS_RESIDUAL * ((B - 1) * r_batch_stride + C_OUT * M)), but 'in0' holds 45",
    ),
    ("weight slot too small", "conv1x1_gemm", _param_shape, "may touch"),
    ("block of 2**21", "elementwise", _constexpr("BLOCK", str(2**21)), "above Triton's limit"),
    ("gemm block too large", "conv1x1_gemm", _constexpr("BLOCK_K", "32768"), "above Triton's"),
    ("grid short", "elementwise", lambda s: re.sub(r'grid \["[^"]*"', 'grid ["0"', s), "grid"),
    ("warps 3", "elementwise", lambda s: s.replace("warps 4", "warps 3"), "power of two"),
    ("stages 0", "elementwise", lambda s: s.replace("stages 1", "stages 0"), "num_stages"),
]


@pytest.mark.parametrize(
    ("family", "change", "expected"),
    [m[1:] for m in KERNEL_IR_MUTATIONS],
    ids=[m[0] for m in KERNEL_IR_MUTATIONS],
)
def test_mutated_kernel_ir_is_refused_with_a_located_error(
    kernel_ir: dict[str, str],
    tmp_path: Path,
    family: str,
    change: Callable[[str], str] | None,
    expected: str,
) -> None:
    path = tmp_path / "mutated.mlir"
    text = kernel_ir[family]
    path.write_text(_shrink_result(text) if change is None else _mutate(text, change))
    code, _, err = teeny_opt(str(path), "-o", str(tmp_path / "out.mlir"))
    assert code == 1, err
    assert "Traceback" not in err
    first = err.splitlines()[0]
    assert re.match(rf"{re.escape(str(path))}:\d+:\d+: error: ", first), first
    assert expected in err, err
    assert not (tmp_path / "out.mlir").exists()


@pytest.mark.parametrize("family", sorted(GRAPHS))
def test_the_unmutated_kernel_ir_verifies(
    kernel_ir: dict[str, str], tmp_path: Path, family: str
) -> None:
    path = tmp_path / "kernel.mlir"
    path.write_text(kernel_ir[family])
    code, _, err = teeny_opt(str(path), "-o", "/dev/null")
    assert code == 0, err


# Tampered plans


def _edit(key_path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        *parents, last = key_path.split("/")
        target: Any = data
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        target[int(last) if isinstance(target, list) else last] = value

    return change


def _kernel(data: dict[str, Any], family: str) -> int:
    return next(i for i, k in enumerate(data["kernels"]) if k["family"] == family)


def _launch(data: dict[str, Any], family: str) -> int:
    names = {k["name"] for k in data["kernels"] if k["family"] == family}
    return next(i for i, launch in enumerate(data["launches"]) if launch["kernel"] in names)


def _set_constexpr(family: str, name: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        data["kernels"][_kernel(data, family)]["constexprs"][name] = value

    return change


def _set_launch(family: str, field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        data["launches"][_launch(data, family)][field] = value

    return change


def _set_arg(family: str, index: int, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        data["launches"][_launch(data, family)]["args"][index] = value

    return change


def _shrink_buffer(data: dict[str, Any]) -> None:
    data["buffers"][0]["shape"][1] = 36


PLAN_TAMPERING: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("BLOCK_M below the minimum", _set_constexpr("conv1x1_gemm", "BLOCK_M", 8), "minimum 16"),
    ("BLOCK of 2**21", _set_constexpr("elementwise", "BLOCK", 2**21), "above Triton's limit"),
    ("grid of ones", _set_launch("elementwise", "grid", ["1", "1", "1"]), "needs"),
    ("gemm grid of ones", _set_launch("conv1x1_gemm", "grid", ["1", "1", "1"]), "needs"),
    ("warps 3", _set_launch("elementwise", "num_warps", 3), "power of two"),
    ("buffer smaller than numel", _shrink_buffer, "imply"),
    ("numel edited", _set_arg("elementwise", 3, {"expr": "B * 9999"}), "imply"),
    ("stride edited", _set_arg("elementwise", 7, {"expr": "B * 4000"}), "imply"),
    ("M edited", _set_arg("conv1x1_gemm", 9, {"expr": "64"}), "imply"),
    (
        "batch stride edited",
        _set_arg("conv1x1_gemm", 12, {"expr": "B * 2331"}),
        "argument 'y_batch_stride' = 'B * 2331' is 4662 at B = 2, but 't0' (bound to 'y') has "
        "batch stride 2331",
    ),
    (
        "residual flag of 2",
        _set_arg("conv1x1_gemm", 13, {"expr": "2"}),
        "argument 'r' may touch 4662 elements at B = 1 "
        "(HAS_RESIDUAL * ((B - 1) * r_batch_stride + C_OUT * M)), but 'in0' holds 2331",
    ),
]


def _tampered(emitted: Path, tmp_path: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    directory = tmp_path / "plan"
    shutil.copytree(emitted, directory)
    data = json.loads((directory / "plan.json").read_text())
    change(data)
    (directory / "plan.json").write_text(json.dumps(data))
    return directory


def _teeny_run(directory: Path, tmp_path: Path, batch: int = 2) -> tuple[int, str]:
    x = tmp_path / "x.npy"
    np.save(x, np.ones((batch, 37, 7, 9), np.float32))
    stdout, stderr = io.StringIO(), io.StringIO()
    argv = [str(directory), "--weights", str(WEIGHTS), "--input", str(x)]
    code = run_cli.run([*argv, "-o", str(tmp_path / "out.npz")], stdout, stderr)
    return code, stderr.getvalue()


@pytest.fixture
def no_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if any launch could happen (no worker may start)."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a worker was started")

    monkeypatch.setattr(interpreter, "_start_worker", refuse)


@pytest.mark.parametrize(
    ("change", "expected"), [t[1:] for t in PLAN_TAMPERING], ids=[t[0] for t in PLAN_TAMPERING]
)
def test_tampered_plan_is_refused_before_any_launch(
    emitted: Path,
    tmp_path: Path,
    no_worker: None,
    change: Callable[[dict[str, Any]], None],
    expected: str,
) -> None:
    directory = _tampered(emitted, tmp_path, change)
    code, err = _teeny_run(directory, tmp_path)
    assert code == 1, err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert expected in err, err
    assert not (tmp_path / "out.npz").exists()


def test_kernel_file_edited_with_its_hash_updated_is_refused(
    emitted: Path, tmp_path: Path, no_worker: None
) -> None:
    import hashlib

    directory = tmp_path / "plan"
    shutil.copytree(emitted, directory)
    data = json.loads((directory / "plan.json").read_text())
    kernel = data["kernels"][_kernel(data, "elementwise")]
    source = directory / kernel["file"]
    source.write_text(source.read_text().replace("mask=mask)", "mask=None)"))
    kernel["source_sha256"] = hashlib.sha256(source.read_bytes()).hexdigest()
    (directory / "plan.json").write_text(json.dumps(data))
    code, err = _teeny_run(directory, tmp_path)
    assert code == 1 and "differs from the rendering" in err, err


def test_kernel_file_that_is_a_symlink_is_refused(
    emitted: Path, tmp_path: Path, no_worker: None
) -> None:
    directory = tmp_path / "plan"
    shutil.copytree(emitted, directory)
    data = json.loads((directory / "plan.json").read_text())
    source = directory / data["kernels"][0]["file"]
    real = source.with_name("real.py")
    shutil.move(source, real)
    source.symlink_to(real)
    with pytest.raises(PlanError, match="not a regular file"):
        load_plan(directory)


def test_the_untampered_plan_loads(emitted: Path) -> None:
    load_plan(emitted)


def test_checks_are_redone_at_the_actual_batch(emitted: Path) -> None:
    plan = load_plan(emitted)
    check_at_batch(plan, 1000)
    # 37 * 63 * B elements overflow an i32 numel once B passes 921,368.
    with pytest.raises(PlanError, match=r"outside \[0, 2147483647\]"):
        check_at_batch(plan, 1_000_000)


def test_validation_is_memoised_per_contract() -> None:
    contract = validator.LaunchContract(
        "elementwise",
        (("BLOCK", 1024), ("OP", "relu")),
        (
            ("x", "a"),
            ("y", "a"),
            ("out", "o"),
            ("numel", "B * 64"),
            ("size1", "1"),
            ("size2", "B"),
            ("size3", "4"),
            ("size4", "4"),
            ("size5", "4"),
            ("x_stride0", "B * 64"),
            ("x_stride1", "B * 64"),
            ("x_stride2", "64"),
            ("x_stride3", "16"),
            ("x_stride4", "4"),
            ("x_stride5", "1"),
            ("y_stride0", "B * 64"),
            ("y_stride1", "B * 64"),
            ("y_stride2", "64"),
            ("y_stride3", "16"),
            ("y_stride4", "4"),
            ("y_stride5", "1"),
        ),
        (("a", ("B", 4, 4, 4)), ("o", ("B", 4, 4, 4))),
        ("cdiv(B * 64, 1024)", "1", "1"),
        4,
        1,
    )
    validator.validate(contract)
    before = validator._validate.cache_info().hits
    validator.validate(contract)
    assert validator._validate.cache_info().hits == before + 1
    # The same launch under other tensor names (as the plan names what the IR
    # calls SSA values), with a tensor no pointer binds: the same proof.
    renamed = dataclasses.replace(
        contract,
        args=tuple((arg, {"a": "t7", "o": "v2"}.get(key, key)) for arg, key in contract.args),
        tensors=(("v2", ("B", 4, 4, 4)), ("t7", ("B", 4, 4, 4)), ("unused", (3,))),
    )
    assert validator.canonical(renamed) == validator.canonical(contract)
    validator.validate(renamed)
    assert validator._validate.cache_info().hits == before + 2
    # A failing launch is reported under its own names, not the canonical ones.
    small = dataclasses.replace(
        renamed, tensors=(("v2", ("B - 1", 4, 4, 4)), ("t7", ("B", 4, 4, 4)))
    )
    with pytest.raises(validator.ContractError, match=r"tensor 'v2' has shape \[0, 4, 4, 4\]"):
        validator.validate(small)
