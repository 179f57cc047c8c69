"""Conventions that keep the codebase uniform (each one checked, not hoped for)."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

from teeny_ir import registry
from teeny_ir.context import DIALECTS

ROOT = Path(__file__).resolve().parent.parent


def test_registry_key_is_pass_name() -> None:
    for name in registry.names():
        entry = registry.lookup(name)
        assert entry is not None
        assert entry.load().name == name


def test_every_registered_pass_has_a_lit_file_and_summary() -> None:
    for name in registry.names():
        assert (ROOT / "lit_tests" / "passes" / f"{name}.mlir").is_file(), name
        entry = registry.lookup(name)
        assert entry is not None and entry.summary(), name


def _teeny_pass_modules() -> list[str]:
    return sorted(p.stem for p in (ROOT / "passes").glob("*.py") if p.stem != "__init__")


def test_teeny_passes_follow_naming_rules() -> None:
    registered = {
        name: entry.load()
        for name in registry.names()
        if (entry := registry.lookup(name)) is not None and entry.foreign_anchors is None
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
