"""emit-triton refusals: an out-dir the file system will not make, and anything
the plan schema would refuse, are located errors at pass time (exit 1 from
teeny-opt), never an internal error, and nothing is written.

The schema's limits are read from `teeny_ir.backend.plan.SCHEMA` here, as the
pass reads them, so no number is duplicated.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

import teeny_ir
from teeny_ir.backend.plan import SCHEMA

TEXT_LIMIT: int = SCHEMA["properties"]["weights"]["items"]["properties"]["name"]["maxLength"]
_LAUNCH = SCHEMA["properties"]["launches"]["items"]["oneOf"][0]  # a kernel launch (or a collective)
GRID_LIMIT: int = _LAUNCH["properties"]["grid"]["items"]["maxLength"]
MIN_OUTPUTS: int = SCHEMA["properties"]["outputs"]["minItems"]

ARGS = (
    'args [x = in0, y = in0, out = out0, numel = "{numel}", size1 = "1", size2 = "B", '
    'size3 = "8", size4 = "3", size5 = "4", x_stride0 = "B*96", x_stride1 = "B*96", '
    'x_stride2 = "96", x_stride3 = "12", x_stride4 = "4", x_stride5 = "1", '
    'y_stride0 = "B*96", y_stride1 = "B*96", y_stride2 = "96", y_stride3 = "12", '
    'y_stride4 = "4", y_stride5 = "1"]'
)


def kernel_ir(
    weight: str = "w", grid: str = "cdiv(B*96, 128)", numel: str = "B*96", returns: bool = True
) -> str:
    """@forward: one relu launch on ``tensor<?x8x3x4xf32>``, one weight declared."""
    t = "tensor<?x8x3x4xf32>"
    result = f" -> {t}" if returns else ""
    ret = f"func.return %z : {t}" if returns else "func.return"
    return f"""func.func @forward(%x: {t}){result} {{
  kernel.weight "{weight}" : tensor<8xf32>
  %z = kernel.launch "elementwise" (%x) {{OP = "relu", BLOCK = 128}}
      {ARGS.format(numel=numel)}
      grid ["{grid}", "1", "1"] warps 4 stages 1 : ({t}) -> {t}
  {ret}
}}
"""


def emit(out_dir: Path | str, text: str | None = None) -> None:
    module = teeny_ir.parse_module(kernel_ir() if text is None else text)
    teeny_ir.PassManager.parse(f"emit-triton{{out-dir={out_dir}}}").run(module)


def refusal(out_dir: Path | str, text: str | None = None) -> list[str]:
    """The headers of the located errors emit-triton gives."""
    with pytest.raises(teeny_ir.DiagnosticError) as info:
        emit(out_dir, text)
    return [d.header() for d in info.value.diagnostics]


def run_opt(args: list[str], text: str) -> tuple[int, str]:
    import io

    from teeny_ir.driver.opt import run

    out, err = io.StringIO(), io.StringIO()
    code = run(args, io.BytesIO(text.encode()), out, err)
    return code, err.getvalue()


def test_the_fixture_emits(tmp_path: Path) -> None:
    emit(tmp_path / "out")
    assert (tmp_path / "out" / "plan.json").is_file()


# --- out-dir that cannot be made --------------------------------------------


def test_out_dir_under_a_regular_file_is_a_located_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("mine")
    for target in (tmp_path / "file" / "sub", tmp_path / "file" / "sub" / "deeper"):
        (header,) = refusal(target)
        assert header == (
            f"<string>:1:1: error: cannot create out-dir '{target}': "
            f"'{tmp_path / 'file'}' is not a directory"
        )
    assert (tmp_path / "file").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_out_dir_under_a_file_through_teeny_opt_is_exit_1(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("mine")
    code, stderr = run_opt(
        ["-", "-p", f"emit-triton{{out-dir={tmp_path / 'file' / 'sub'}}}", "-o", "/dev/null"],
        kernel_ir(),
    )
    assert code == 1
    assert "error: cannot create out-dir" in stderr and "is not a directory" in stderr
    assert "internal error" not in stderr and "Traceback" not in stderr


def test_out_dir_name_too_long(tmp_path: Path) -> None:
    target = tmp_path / ("x" * 300)
    (header,) = refusal(target)
    assert header.startswith("<string>:1:1: error: cannot write out-dir '")
    assert header.endswith(os_reason(errno.ENAMETOOLONG))
    assert list(tmp_path.iterdir()) == []


def test_out_dir_path_too_long(tmp_path: Path) -> None:
    target = tmp_path / "/".join(["d" * 200] * 30)
    (header,) = refusal(target)
    assert header.endswith(os_reason(errno.ENAMETOOLONG))
    assert list(tmp_path.iterdir()) == []


def test_out_dir_permission_denied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Simulated (the tests may run as root, whom chmod does not stop).
    def refuse(*args: Any, **kwargs: Any) -> str:
        raise PermissionError(errno.EACCES, os_reason(errno.EACCES), str(tmp_path))

    monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    (header,) = refusal(tmp_path / "out")
    assert header == (
        f"<string>:1:1: error: cannot write out-dir '{tmp_path / 'out'}': "
        f"Permission denied ('{tmp_path}')"
    )


def test_a_write_failing_midway_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from teeny_ir.backend import emit

    def full(directory: Any, plan: Any) -> None:
        raise OSError(errno.ENOSPC, os_reason(errno.ENOSPC))

    monkeypatch.setattr(emit, "write_plan", full)
    (header,) = refusal(tmp_path / "out")
    assert header.endswith(f"cannot write out-dir '{tmp_path / 'out'}': No space left on device")
    assert list(tmp_path.iterdir()) == []


def test_out_dir_with_a_nul_character(tmp_path: Path) -> None:
    from passes.emit_triton import EmitTritonPass

    module = teeny_ir.parse_module(kernel_ir())
    with pytest.raises(teeny_ir.DiagnosticError, match="must not contain a NUL"):
        EmitTritonPass(out_dir=f"{tmp_path}/a\0b").apply(None, module)  # type: ignore[arg-type]


def os_reason(code: int) -> str:
    import os

    return os.strerror(code)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
@pytest.mark.parametrize("make", ["fifo", "dev-zero"])
def test_out_dir_whose_plan_json_is_not_a_regular_file(tmp_path: Path, make: str) -> None:
    """A previous emission's plan.json replaced by a FIFO or a /dev/zero symlink
    makes the out-dir no previous emission: refused, never read to the end or
    waited on (teeny-opt in a process of its own, so a regression fails)."""
    out = tmp_path / "out"
    emit(out)
    (out / "plan.json").unlink()
    if make == "fifo":
        os.mkfifo(out / "plan.json")
    else:
        (out / "plan.json").symlink_to("/dev/zero")
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("teeny-opt")),
            "-",
            "-p",
            f"emit-triton{{out-dir={out}}}",
        ],
        input=kernel_ir(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert f"error: refusing to replace out-dir '{out}': it is not empty" in done.stderr
    assert "Traceback" not in done.stderr


# --- what the plan schema would refuse --------------------------------------


def test_weight_name_over_the_schema_limit(tmp_path: Path) -> None:
    name = "w" * 2000
    text = kernel_ir(weight=name)
    (header,) = refusal(tmp_path / "out", text)
    assert header.startswith("<string>:2:3: error: emit-triton: weight name 'www")
    assert f"is 2000 characters long, but the launch plan holds at most {TEXT_LIMIT}" in header
    assert header.endswith("(plan schema at weights/0/name)")
    assert list(tmp_path.iterdir()) == []


def test_weight_name_at_the_schema_limit_is_emitted(tmp_path: Path) -> None:
    emit(tmp_path / "out", kernel_ir(weight="w" * TEXT_LIMIT))
    assert (tmp_path / "out" / "plan.json").is_file()


def test_canonical_grid_expression_over_the_schema_limit(tmp_path: Path) -> None:
    # Under the parser's limit as written; over the schema's once canonical (spaced).
    grid = "cdiv(B*96,128)" + "+B-B" * (GRID_LIMIT // 5)
    assert len(grid) <= GRID_LIMIT
    (header,) = refusal(tmp_path / "out", kernel_ir(grid=grid))
    assert header.startswith("<string>:3:8: error: emit-triton: grid[0] expression 'cdiv(B * 96")
    assert f"but the launch plan holds at most {GRID_LIMIT}" in header
    assert header.endswith("(plan schema at launches/0/grid/0)")
    assert list(tmp_path.iterdir()) == []


def test_canonical_argument_expression_over_the_schema_limit(tmp_path: Path) -> None:
    numel = "B*96" + "+B-B" * (GRID_LIMIT // 5)
    (header,) = refusal(tmp_path / "out", kernel_ir(numel=numel))
    assert header.startswith("<string>:3:8: error: emit-triton: argument 'numel' expression")
    assert header.endswith("(plan schema at launches/0/args/3/expr)")


def test_every_schema_refusal_is_reported(tmp_path: Path) -> None:
    text = kernel_ir(weight="w" * 2000, grid="cdiv(B*96,128)" + "+B-B" * (GRID_LIMIT // 5))
    headers = refusal(tmp_path / "out", text)
    assert [h.split(":")[1] for h in headers] == ["2", "3"]


def test_function_without_results(tmp_path: Path) -> None:
    text = """func.func @forward(%x: tensor<?x4xf32>) {
  func.return
}
"""
    (header,) = refusal(tmp_path / "out", text)
    assert header == (
        "<string>:2:3: error: emit-triton: @forward returns no results, but a launch plan "
        f"needs at least {MIN_OUTPUTS} output"
    )
    assert list(tmp_path.iterdir()) == []


def test_function_with_two_blocks(tmp_path: Path) -> None:
    text = """func.func @forward(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  func.return %x : tensor<?x4xf32>
^bb1:
  func.return %x : tensor<?x4xf32>
}
"""
    (header,) = refusal(tmp_path / "out", text)
    assert header == (
        "<string>:1:1: error: emit-triton expects @forward to have a single block, found 2 "
        "(a launch plan is one straight-line sequence)"
    )


def test_schema_refusals_through_teeny_opt_are_exit_1(tmp_path: Path) -> None:
    code, stderr = run_opt(
        ["-", "-p", f"emit-triton{{out-dir={tmp_path / 'out'}}}", "-o", "/dev/null"],
        kernel_ir(weight="w" * 2000),
    )
    assert code == 1
    assert stderr.startswith("-:2:3: error: emit-triton: weight name")
    assert "internal error" not in stderr and "Traceback" not in stderr
    assert list(tmp_path.iterdir()) == []


def test_a_parameter_returned_as_it_is_is_a_located_error_not_an_internal_one(
    tmp_path: Path,
) -> None:
    """Kernel IR that returns a parameter no launch writes (lower-graph-to-kernel
    copies a returned constant or weight; hand-written kernel IR may not): exit 1
    at the return, never a PlanError crash."""
    text = (
        "func.func @forward(%x: tensor<?x3xf32>) -> (tensor<?x3xf32>, tensor<2xf32>) {\n"
        "  %c = kernel.param #derive.param<literal(1.0, 2.0) : [2]> : tensor<2xf32>\n"
        "  func.return %x, %c : tensor<?x3xf32>, tensor<2xf32>\n"
        "}\n"
    )
    code, err = run_opt(["-", "-p", f"emit-triton{{out-dir={tmp_path / 'd'}}}"], text)
    assert code == 1, err
    assert err.startswith("-:3:3: error: result #1 of @forward is a parameter itself"), err
    assert not (tmp_path / "d").exists()
