"""Import layering and start-up cost.

Direction: teeny_ir utility modules <- dialects <- passes <- teeny_ir driver.
Checked on the source (every import, including ones inside functions), and by
running a fresh interpreter to see what parsing and printing really import.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import dialects
import passes

ROOT = Path(__file__).resolve().parent.parent

UTILITY = {
    "teeny_ir.diagnostics",
    "teeny_ir.derivations",
    "teeny_ir.expressions",
    "teeny_ir.heuristics",
    "teeny_ir.kernel_families",
}
"""teeny_ir modules that dialects and passes may import."""
EMISSION = {"teeny_ir.plan", "teeny_ir.aot", "teeny_ir.templates"}
"""teeny_ir modules that passes (emit-triton) may import besides the utilities:
the plan format and the AOT compiler, which imports triton only when called."""
HEAVY = ("numpy", "networkx", "torch", "triton")


def _imports(path: Path, *, top_level_only: bool = False) -> set[str]:
    """Every module a file imports (``from pkg import mod`` counts as ``pkg.mod``)."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module in ("teeny_ir", "dialects", "passes"):
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
            else:
                found.add(node.module)
    return found


def _modules(package: str) -> dict[str, set[str]]:
    return {
        ".".join(p.relative_to(ROOT).with_suffix("").parts): _imports(p)
        for p in sorted((ROOT / package).rglob("*.py"))
    }


def _top(name: str) -> str:
    return name.split(".")[0]


def test_dialects_import_only_utilities() -> None:
    for module, imports in _modules("dialects").items():
        for name in imports:
            assert _top(name) != "passes", (module, name)
            if _top(name) == "teeny_ir":
                assert name in UTILITY, (module, name)
            assert _top(name) not in HEAVY, (module, name)


def test_passes_do_not_import_the_driver() -> None:
    for module, imports in _modules("passes").items():
        for name in imports:
            if _top(name) == "teeny_ir":
                assert name in UTILITY | EMISSION, (module, name)
            assert _top(name) not in HEAVY, (module, name)


def test_utilities_import_neither_dialects_nor_passes() -> None:
    for module in UTILITY:
        path = ROOT / (module.replace(".", "/") + ".py")
        for name in _imports(path):
            assert _top(name) not in ("dialects", "passes"), (module, name)
            if _top(name) == "teeny_ir":
                assert name in UTILITY, (module, name)
        # numpy only inside evaluators (ARCHITECTURE.md "Start-up").
        for name in _imports(path, top_level_only=True):
            assert _top(name) not in HEAVY, (module, name)


def test_package_init_is_lazy() -> None:
    tree = ast.parse((ROOT / "teeny_ir" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            assert not node.module.startswith("teeny_ir"), node.module


def test_dialects_and_passes_resolve_inside_the_repository() -> None:
    for package in (dialects, passes):
        assert package.__file__ is not None
        assert Path(package.__file__).resolve().parent.parent == ROOT, package.__file__


def test_parse_and_print_import_nothing_heavy() -> None:
    script = (
        "import sys, teeny_ir\n"
        "assert 'xdsl' not in sys.modules\n"
        "m = teeny_ir.parse_module('func.func @f(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {\\n'\n"
        "  '  %y = graph.silu %x : tensor<?x4xf32>\\n  func.return %y : tensor<?x4xf32>\\n}\\n')\n"
        "teeny_ir.print_module(m)\n"
        f"heavy = [n for n in {HEAVY!r} if n in sys.modules]\n"
        "assert not heavy, heavy\n"
        "unused = [n for n in ('xdsl.dialects.arith', 'xdsl.transforms') if n in sys.modules]\n"
        "assert not unused, unused\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=ROOT)
