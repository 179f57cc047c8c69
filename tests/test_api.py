"""The Python API: parse_module, print_module, PassManager, DiagnosticError."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp

import teeny_ir
from teeny_ir.core.diagnostics import Severity

GOOD = """\
func.func @f(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  %1 = arith.addi %a, %a : i32
  %2 = arith.muli %0, %1 : i32
  func.return %2 : i32
}
"""


def test_parse_records_name_token_locations() -> None:
    module = teeny_ir.parse_module(GOOD, filename="model.mlir")
    assert isinstance(module, ModuleOp)
    ops = {op.name: op for op in module.walk()}
    loc = ops["arith.muli"].location
    assert isinstance(loc, FileLineColLoc)
    assert (loc.filename.data, loc.line.data, loc.column.data) == ("model.mlir", 4, 8)
    func_loc = ops["func.func"].location
    assert isinstance(func_loc, FileLineColLoc) and func_loc.column.data == 1


def test_explicit_locations_are_kept() -> None:
    module = teeny_ir.parse_module(
        'func.func @f() {\n  func.return loc("orig.py":7:3)\n}\n', filename="x.mlir"
    )
    ret = next(op for op in module.walk() if op.name == "func.return")
    assert isinstance(ret.location, FileLineColLoc) and ret.location.filename.data == "orig.py"


def test_parse_accepts_bytes_and_empty_input() -> None:
    assert len(teeny_ir.parse_module(GOOD.encode()).ops) == 1
    assert len(teeny_ir.parse_module("").ops) == 0
    assert len(teeny_ir.parse_module("// only a comment\n").ops) == 0


def test_print_round_trips() -> None:
    module = teeny_ir.parse_module(GOOD)
    text = teeny_ir.print_module(module)
    assert teeny_ir.parse_module(text).is_structurally_equivalent(module)


def test_pass_manager_mutates_in_place_and_returns_none() -> None:
    module = teeny_ir.parse_module(GOOD)
    result = teeny_ir.PassManager.parse("builtin.module(func.func(cse))").run(module)
    assert result is None
    assert teeny_ir.print_module(module).count("arith.addi") == 1


def test_parse_error_is_located() -> None:
    with pytest.raises(teeny_ir.DiagnosticError) as info:
        teeny_ir.parse_module("func.func @f() {\n  %0 = arith.addi\n}\n", filename="bad.mlir")
    (diagnostic,) = info.value.diagnostics
    assert diagnostic.severity is Severity.ERROR
    assert diagnostic.location is not None
    assert (diagnostic.location.filename, diagnostic.location.line) == ("bad.mlir", 3)


def test_every_verifier_error_is_carried() -> None:
    text = """\
func.func @f(%x: tensor<2x3xf32>, %y: tensor<4x5xf32>) -> tensor<2x3xf32> {
  %a = "graph.silu"(%x) : (tensor<2x3xf32>) -> tensor<2x4xf32>
  %b = "graph.silu"(%y) : (tensor<4x5xf32>) -> tensor<4x6xf32>
  func.return %x : tensor<2x3xf32>
}
"""
    with pytest.raises(teeny_ir.DiagnosticError) as info:
        teeny_ir.parse_module(text, filename="two.mlir")
    lines = sorted(d.location.line for d in info.value.diagnostics if d.location)
    assert lines == [2, 3]
    assert all("'graph.silu' op" in d.message for d in info.value.diagnostics)
    assert "two.mlir:2:8: error: 'graph.silu' op" in str(info.value)


def test_bad_pipeline_raises_diagnostic_error() -> None:
    with pytest.raises(teeny_ir.DiagnosticError, match="did you mean 'cse'"):
        teeny_ir.PassManager.parse("builtin.module(csee)")


def test_lazy_package_exports() -> None:
    assert set(teeny_ir.__all__) <= set(dir(teeny_ir))
    with pytest.raises(AttributeError):
        _ = teeny_ir.no_such_name  # type: ignore[attr-defined]


def test_non_ascii_strings_round_trip_through_generic_form() -> None:
    text = (
        "func.func @f() -> tensor<2xf32> {\n"
        '  %w = graph.param "café.wéight" : tensor<2xf32>\n'
        "  func.return %w : tensor<2xf32>\n}\n"
    )
    module = teeny_ir.parse_module(text)
    generic = teeny_ir.print_module(module, generic=True)
    again = teeny_ir.parse_module(generic)
    assert again.is_structurally_equivalent(module)
    param = next(op for op in again.walk() if op.name == "graph.param")
    assert param.properties["param_name"].data == "café.wéight"  # type: ignore[attr-defined]


def test_readme_python_examples_run(capsys: pytest.CaptureFixture[str]) -> None:
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    api, builder = re.findall(r"```python\n(.*?)```", readme, re.S)
    exec(compile(api, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert out.count("graph.silu") == 1  # cse merged the duplicate
    assert "error: operand expected" in out
    exec(compile(builder, "README.md", "exec"), {})
    assert capsys.readouterr().out == "(2, 8, 4, 4)\n"


def test_reference_and_runtime_are_reachable_as_attributes() -> None:
    import subprocess
    import sys

    script = (
        "import teeny_ir, sys\n"
        "assert callable(teeny_ir.runtime.load) and callable(teeny_ir.reference.run)\n"
        "assert 'triton' not in sys.modules and 'torch' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
