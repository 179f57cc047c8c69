"""Import layering and start-up cost.

The layers, lowest first (a module may import its own layer and the ones below):

0. ``teeny_ir.core``: the standard library only at module level.
1. ``teeny_ir.ir`` and the kernel contracts (``teeny_ir.kernels`` except the
   family lowerings and the Triton sources), the tile rules among them
   (``teeny_ir.kernels.tiles`` and each family's ``tiles``: the standard library only).
2. ``dialects``.
3. ``teeny_ir.reference``, ``teeny_ir.frontend``, the family lowerings
   (``teeny_ir.kernels.<family>.lowering``, ``teeny_ir.kernels.lowering``,
   ``teeny_ir.kernels.opt_outs``, ``teeny_ir.kernels.views``) and
   ``teeny_ir.backend`` (plan, rendering, AOT), which the emit pass calls.
4. ``passes``.
5. ``teeny_ir.runtime``, ``teeny_ir.driver``, ``teeny_ir.testing`` (the tests'
   and benches' shared checks), ``__main__`` entry points and the package itself.

Registries that load lower layers' plug-ins by name (the context's dialects,
the pass registry) import them with `importlib`, as MLIR tools register
dialects: the layer that names a plug-in never imports it statically.

Checked on the source (every import, including ones inside functions), and by
running a fresh interpreter to see what parsing and printing really import.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import dialects
import passes

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("numpy", "networkx", "torch", "triton")
OURS = ("teeny_ir", "dialects", "passes")


def _imports(path: Path, *, top_level_only: bool = False) -> set[str]:
    """Every module a file imports (``from pkg import mod`` counts as ``pkg.mod``)."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] in OURS:
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
            else:
                found.add(node.module)
    return found


def _source_modules() -> dict[str, Path]:
    return {
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
        for package in OURS
        for p in sorted((ROOT / package).rglob("*.py"))
    }


MODULES = _source_modules()


def _is_triton_source(module: str) -> bool:
    """A family's Triton kernel file, or the shared ``@triton.jit`` helpers: read
    as text and rendered into emitted kernels, never imported by teeny_ir."""
    parts = module.split(".")
    return module == "teeny_ir.kernels.triton_helpers" or (
        parts[:2] == ["teeny_ir", "kernels"] and parts[-1] == "kernel"
    )


def layer(module: str) -> int:
    """The layer of one of our modules (or of a name imported from one)."""
    while module not in MODULES and "." in module:
        module = module.rsplit(".", 1)[0]  # `from pkg.mod import Name`
    parts = module.split(".")
    if parts[0] == "dialects":
        return 2
    if parts[0] == "passes":
        return 4
    if module == "teeny_ir":
        return 5
    sub = parts[1]
    if sub == "core":
        return 0
    if sub == "ir":
        return 1
    if sub == "kernels":
        return 3 if parts[-1] in ("lowering", "opt_outs", "views") else 1
    if parts[-1] == "__main__":
        return 5  # a command-line entry point (python -m ...)
    if sub in ("reference", "frontend", "backend", "autodiff"):
        return 3
    if sub in ("runtime", "driver", "testing"):
        return 5
    raise AssertionError(f"module '{module}' is in no layer")


def test_every_module_is_in_a_layer() -> None:
    for module in MODULES:
        layer(module)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not _is_triton_source(m)))
def test_imports_point_down(module: str) -> None:
    own = layer(module)
    for name in _imports(MODULES[module]):
        if name.split(".")[0] not in OURS:
            continue
        assert not _is_triton_source(name), f"{module} imports the Triton source {name}"
        assert layer(name) <= own, f"{module} (layer {own}) imports {name} (layer {layer(name)})"


def test_triton_sources_import_only_triton_and_the_helpers() -> None:
    for module in filter(_is_triton_source, MODULES):
        for name in _imports(MODULES[module]):
            top = name.split(".")[0]
            if top in OURS:
                assert name.startswith("teeny_ir.kernels.triton_helpers."), (module, name)
            else:
                assert top in ("triton", "__future__"), (module, name)


@pytest.mark.parametrize(
    "module",
    sorted(m for m in MODULES if layer(m) <= 2 and not _is_triton_source(m)),
)
def test_lower_layers_import_nothing_heavy_at_module_level(module: str) -> None:
    # numpy only inside evaluators (start-up: parsing never imports numpy).
    for name in _imports(MODULES[module], top_level_only=True):
        assert name.split(".")[0] not in HEAVY, (module, name)


def test_tile_rules_import_only_the_standard_library() -> None:
    # Pure functions of ints, which select-conv-algorithm and the lowerings ask:
    # a tile rule never loads the IR.
    tiles = sorted(m for m in MODULES if m.startswith("teeny_ir.kernels.") and m.endswith(".tiles"))
    assert "teeny_ir.kernels.tiles" in tiles
    for module in tiles:
        assert layer(module) == 1, module
        for name in _imports(MODULES[module]):
            if name.split(".")[0] in OURS:
                assert name.startswith("teeny_ir.kernels.tiles."), (module, name)
            else:
                assert name.split(".")[0] in sys.stdlib_module_names, (module, name)


def test_core_imports_only_the_standard_library_and_core() -> None:
    for module, path in MODULES.items():
        if module.startswith("teeny_ir.core"):
            for name in _imports(path, top_level_only=True):
                if name.split(".")[0] in OURS:
                    assert name.startswith("teeny_ir.core"), (module, name)
                else:
                    assert name.split(".")[0] in sys.stdlib_module_names, (module, name)


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


KERNEL_ONLY = """\
func.func @f(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %y = kernel.launch "elementwise" (%x) {OP = "relu", BLOCK = 1024} args [x = in0, y = in0, \
out = out0, numel = "B * 4", size1 = "1", size2 = "1", size3 = "1", size4 = "B", size5 = "4", \
x_stride0 = "B * 4", x_stride1 = "B * 4", x_stride2 = "B * 4", x_stride3 = "B * 4", \
x_stride4 = "4", x_stride5 = "1", y_stride0 = "B * 4", y_stride1 = "B * 4", y_stride2 = "B * 4", \
y_stride3 = "B * 4", y_stride4 = "4", y_stride5 = "1"] grid ["cdiv(B * 4, 1024)", "1", "1"] warps 4 stages 1 \
: (tensor<?x4xf32>) -> tensor<?x4xf32>
  func.return %y : tensor<?x4xf32>
}
"""


def test_kernel_dialect_loads_no_graph_module() -> None:
    script = (
        "import sys, teeny_ir\n"
        f"m = teeny_ir.parse_module({KERNEL_ONLY!r})\n"
        "teeny_ir.print_module(m)\n"
        "graph = sorted(n for n in sys.modules if n.startswith('dialects.graph'))\n"
        "assert not graph, graph\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=ROOT)
