"""Conventions that keep the codebase uniform (each one checked, not hoped for)."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest
from xdsl.ir import Operation

from teeny_ir.driver import pass_registry
from teeny_ir.ir.context import DIALECTS

ROOT = Path(__file__).resolve().parent.parent


def test_registry_key_is_pass_name() -> None:
    for name in pass_registry.names():
        entry = pass_registry.lookup(name)
        assert entry is not None
        assert entry.load().name == name


def test_every_registered_pass_has_a_lit_file_and_summary() -> None:
    for name in pass_registry.names():
        assert (ROOT / "lit_tests" / "passes" / f"{name}.mlir").is_file(), name
        entry = pass_registry.lookup(name)
        assert entry is not None and entry.summary(), name


def test_pass_aliases_name_passes_and_have_a_lit_file_running_them() -> None:
    """An alias (a pass's old name) names a registered pass, is no pass name
    itself, and ``lit_tests/passes/<alias>.mlir`` runs it."""
    for alias, target in pass_registry.ALIASES.items():
        assert alias not in pass_registry.names(), alias
        entry = pass_registry.lookup(alias)
        assert entry is not None and entry is pass_registry.lookup(target), alias
        assert entry.load().name == target, alias
        lit = ROOT / "lit_tests" / "passes" / f"{alias}.mlir"
        runs = [line for line in lit.read_text().splitlines() if line.startswith("// RUN:")]
        assert any(alias in line for line in runs), alias


def _teeny_pass_modules() -> list[str]:
    return sorted(p.stem for p in (ROOT / "passes").glob("*.py") if p.stem != "__init__")


def test_teeny_passes_follow_naming_rules() -> None:
    registered = {
        name: entry.load()
        for name in pass_registry.names()
        if (entry := pass_registry.lookup(name)) is not None and entry.foreign_anchors is None
    }
    modules = {cls.__module__ for cls in registered.values()}
    assert modules == {f"passes.{stem}" for stem in _teeny_pass_modules()}
    for name, cls in registered.items():
        assert cls.__name__.endswith("Pass"), cls
        assert cls.__module__ == "passes." + name.replace("-", "_"), cls
        assert cls.__doc__ and not cls.__doc__.startswith(cls.__name__ + "("), cls
        assert (ROOT / "lit_tests" / "passes" / f"{name}-invalid.mlir").is_file(), name


def _dialect_modules() -> dict[str, Path]:
    """Dialect name -> the file that must end with its `Dialect(...)` object: a
    module ``dialects/<name>.py``, or a package's ``dialects/<name>/__init__.py``."""
    modules = {p.stem: p for p in (ROOT / "dialects").glob("*.py") if p.stem != "__init__"}
    packages = {p.parent.name: p for p in (ROOT / "dialects").glob("*/__init__.py")}
    assert not modules.keys() & packages.keys()
    return dict(sorted({**modules, **packages}.items()))


def test_op_classes_end_in_op_and_dialect_object_is_last() -> None:
    for name, path in _dialect_modules().items():
        module = importlib.import_module(f"dialects.{name}")
        dialects = [v for v in vars(module).values() if type(v).__name__ == "Dialect"]
        assert len(dialects) == 1, path
        for op in dialects[0].operations:
            assert op.__name__.endswith("Op"), op
            assert inspect.getdoc(op), op
            assert vars(op).get("__doc__"), op  # its own docstring, not a base class's
        tree = ast.parse(path.read_text())
        last = tree.body[-1]
        assert isinstance(last, ast.Assign | ast.AnnAssign), path
        assert "Dialect(" in ast.unparse(last), path


def test_teeny_dialects_are_registered_lazily() -> None:
    for name in _dialect_modules():
        assert name in DIALECTS, name


def test_dialects_have_round_trip_and_invalid_lit_files() -> None:
    for name in _dialect_modules():
        assert (ROOT / "lit_tests" / "dialects" / f"{name}.mlir").is_file(), name
        assert (ROOT / "lit_tests" / "dialects" / f"{name}-invalid.mlir").is_file(), name


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)\n```", readme, re.S)
    test_commands = [b for b in blocks if "pytest" in b]
    assert len(test_commands) == 1
    assert test_commands[0] in (ROOT / ".ci" / "run").read_text()


def test_no_file_named_benchmarks_or_tests_package() -> None:
    # xdsl installs top-level `tests`, `docs` and `benchmarks` packages.
    assert not (ROOT / "benchmarks").exists()
    assert not (ROOT / "tests" / "__init__.py").exists()


# One op = one place: every graph op has every facet, or a reasoned opt-out.


def _graph_ops() -> list[type[Operation]]:
    from dialects.graph import Graph

    return list(Graph.operations)


@pytest.mark.parametrize("op", _graph_ops(), ids=lambda op: op.name)
def test_every_graph_op_has_a_lowering_or_a_reason(op: type[Operation]) -> None:
    from teeny_ir.kernels.lowering import LOWERINGS

    assert LOWERINGS.covers(op), (
        f"'{op.name}' has no @lowers rule, is not in the pointwise table, and declares "
        "no no_kernel(...) reason"
    )
    assert not (op in LOWERINGS.rules() and op in LOWERINGS.opt_outs()), op.name


def test_every_op_a_backward_or_an_optimizer_emits_runs_on_a_kernel() -> None:
    """The ops that only insert-backward and apply-optimizer make (those with
    no VJP of their own: second order is not supported) all have a lowering,
    so a training graph never stops at lower-graph-to-kernel; the weights and
    the unfused convolution, which earlier passes rewrite, have a reason."""
    from dialects.graph.conv import Conv2dOp
    from dialects.graph.param import ParamOp
    from teeny_ir.autodiff.registry import VJPS
    from teeny_ir.kernels.lowering import LOWERINGS

    opted_out = LOWERINGS.opt_outs()
    assert {ParamOp, Conv2dOp} <= set(opted_out)
    for op in _graph_ops():
        if op is not ParamOp and op in VJPS.opt_outs():
            assert op not in opted_out, f"'{op.name}' is made by training but has no kernel"


def test_the_pointwise_table_is_well_formed() -> None:
    """A bad entry is this named failure, never an import crash of every tool."""
    from teeny_ir.core import pointwise

    assert pointwise.check_table() == []


@pytest.mark.parametrize("op", _graph_ops(), ids=lambda op: op.name)
def test_every_graph_op_has_reference_semantics_or_a_reason(op: type[Operation]) -> None:
    from teeny_ir.reference import SEMANTICS

    found = SEMANTICS.lookup(op)
    assert callable(found) or op.name == "graph.param", f"'{op.name}': {found}"


@pytest.mark.parametrize("op", _graph_ops(), ids=lambda op: op.name)
def test_every_graph_op_has_a_vjp_rule_or_a_reason(op: type[Operation]) -> None:
    from teeny_ir.autodiff.registry import VJPS

    assert VJPS.covers(op), (
        f"'{op.name}' has no @vjp rule, is not in the pointwise table, and declares no "
        "not_differentiable(...) reason"
    )
    assert not (op in VJPS.rules() and op in VJPS.opt_outs()), op.name


def test_pointwise_entries_name_graph_ops() -> None:
    from teeny_ir.core import pointwise

    names = {op.name for op in _graph_ops()}
    for entry in pointwise.TABLE:
        assert entry.op in names, f"pointwise entry '{entry.op}' names no graph op"


def test_kernel_families_are_complete_subpackages() -> None:
    from teeny_ir.kernels.families import FAMILIES, FAMILY_PACKAGES

    assert sorted(FAMILIES) == sorted(FAMILY_PACKAGES)
    for name, family in FAMILIES.items():
        package = ROOT / "teeny_ir" / "kernels" / name
        assert family.package == package, name
        for part in ("__init__.py", "contract.py", "kernel.py", "lowering.py"):
            assert (package / part).is_file(), (name, part)
        tree = ast.parse(family.source())
        functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert family.kernel_function in functions, name
        for constexpr in family.constexprs:
            assert constexpr.type != "pointwise" or constexpr.slot in functions, constexpr
