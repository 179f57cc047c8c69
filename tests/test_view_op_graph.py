"""view-op-graph and teeny-opt's --view-op-graph flags: the DOT they write (checked
by a small reader of our own: quotes, braces, record fields, ports, edges), the
options, escaping, the before/after points, outputs and their refusals."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

from teeny_ir.core.diagnostics import DiagnosticError, SourceFile
from teeny_ir.driver.pass_manager import PassManager
from teeny_ir.ir.context import make_context
from teeny_ir.ir.parsing import parse_source, print_module

from .conftest import run_opt

ROOT = Path(__file__).resolve().parent.parent
YOLOV8N = ROOT / "examples" / "yolov8n" / "yolov8n.mlir"
DOT = shutil.which("dot")

DECODE = """\
func.func @decode(%a: tensor<?x2x84xf32>, %b: tensor<1x2x84xf32>, %s: tensor<1x84xf32>) -> tensor<?x2x84xf32> {
  %d = graph.sub %a, %b : (tensor<?x2x84xf32>, tensor<1x2x84xf32>) -> tensor<?x2x84xf32>
  %m = graph.mul %d, %s : (tensor<?x2x84xf32>, tensor<1x84xf32>) -> tensor<?x2x84xf32>
  %y = graph.silu %m : tensor<?x2x84xf32>
  func.return %y : tensor<?x2x84xf32>
}
func.func @weights() -> tensor<4xf32> {
  %w = graph.param "a.very.long.parameter.name" : tensor<4xf32>
  func.return %w : tensor<4xf32>
}
"""

CONV_CHAIN = """\
func.func @forward(%x: tensor<?x8x4x4xf32>, %t: tensor<1x16x1x1xf32>) -> tensor<?x16x4x4xf32> {
  %w = graph.param "m.conv.weight" : tensor<16x8x1x1xf32>
  %g = graph.param "m.bn.weight" : tensor<16xf32>
  %b = graph.param "m.bn.bias" : tensor<16xf32>
  %m = graph.param "m.bn.running_mean" : tensor<16xf32>
  %v = graph.param "m.bn.running_var" : tensor<16xf32>
  %c = graph.conv2d %x, %w : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  %n = graph.batch_norm %c, %g, %b, %m, %v eps 1.0e-3 : (tensor<?x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x16x4x4xf32>
  %a = graph.silu %n : tensor<?x16x4x4xf32>
  %s = graph.sub %a, %t : (tensor<?x16x4x4xf32>, tensor<1x16x1x1xf32>) -> tensor<?x16x4x4xf32>
  %y = graph.exp %s : tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}
"""

HOSTILE_NAME = 'we"ird{|}<>\\\nname'
"""A function name with every character DOT or a record label treats specially."""

HOSTILE = """\
func.func @"we\\22ird{|}<>\\\\\\0Aname"(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %w = graph.param "p\\22{|}<>\\\\\\0A" : tensor<4xf32>
  %y = graph.add %x, %w : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32> \
loc(fused["a\\22b{c}|<d>\\0Ae\\\\"("x\\22{}|<>.mlir":1:2), "graph.silu"("f.mlir":3:4)])
  func.return %y : tensor<?x4xf32>
}
"""


# --- a small DOT reader ----------------------------------------------------------------------


@dataclass
class Graph:
    """One ``digraph`` as view-op-graph writes it."""

    label: str = ""
    nodes: dict[str, tuple[str, str]] = field(default_factory=dict[str, tuple[str, str]])
    """Node id -> (label as DOT reads it, shape)."""
    ports: dict[str, set[str]] = field(default_factory=dict[str, set[str]])
    edges: list[tuple[str, str, str, str, str]] = field(
        default_factory=list[tuple[str, str, str, str, str]]
    )
    """(tail, tail port, head, head port, style)."""
    clusters: list[str] = field(default_factory=list[str])

    def ops(self) -> dict[str, str]:
        """Node id -> text of the op nodes (records)."""
        return {n: text for n, (text, shape) in self.nodes.items() if shape == "Mrecord"}


FIELD = "\x1f"
"""Stands for a record's field separator (an unescaped ``|``) in a label's text."""

_NODE = re.compile(r"^\s*(v\d+) \[(.*)\];$")
_EDGE = re.compile(r"^\s*(v\d+)(?::(\w+):s)? -> (v\d+)(?::(\w+):n)? \[(.*)\];$")
_ATTR = re.compile(r'(\w+) = ("(?:[^"\\]|\\.)*"|[^,\]]+)')


def _unquote(value: str) -> str:
    """A quoted DOT string's content (only ``\\"`` is an escape of the DOT language)."""
    assert value.startswith('"') and value.endswith('"'), value
    return value[1:-1].replace('\\"', '"')


def _record(label: str) -> tuple[str, set[str]]:
    """Check a record label's fields (braces balanced, ``<port>`` names unescaped);
    return its text (escapes resolved, ``\\l`` as a newline, `FIELD` between fields)
    and ports."""
    depth, text, ports, index = 0, [], set[str](), 0
    while index < len(label):
        char = label[index]
        if char == "\\":
            following = label[index + 1]
            text.append("\n" if following == "l" else following)
            index += 2
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            assert depth >= 0, label
        elif char == "<":
            end = label.index(">", index)
            port = label[index + 1 : end]
            assert re.fullmatch(r"\w+", port), port
            ports.add(port)
            index = end + 1
            continue
        elif char == "|":
            text.append(FIELD)
        else:
            text.append(char)
        index += 1
    assert depth == 0, label
    return "".join(text), ports


def _plain(label: str) -> str:
    text, index = [], 0
    while index < len(label):
        if label[index] == "\\":
            following = label[index + 1]
            text.append("\n" if following == "l" else following)
            index += 2
        else:
            text.append(label[index])
            index += 1
    return "".join(text)


def _balanced(text: str) -> None:
    """Quotes closed (``\\`` escapes inside), braces balanced outside them."""
    depth, quoted, index = 0, False, 0
    while index < len(text):
        char = text[index]
        if quoted:
            if char == "\\":
                index += 1
            elif char == '"':
                quoted = False
            else:
                assert char != "\n", "a line break inside a quoted string"
        elif char == '"':
            quoted = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            assert depth >= 0
        index += 1
    assert not quoted and depth == 0


def read_dot(text: str) -> list[Graph]:
    """Every graph of ``text``, each checked: balanced, every statement one of ours,
    every edge between drawn nodes and ports their records have."""
    _balanced(text)
    graphs: list[Graph] = []
    graph: Graph | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped == "digraph G {":
            assert graph is None
            graph = Graph()
            continue
        assert graph is not None, line
        if line == "}":
            graphs.append(graph)
            graph = None
        elif stripped in ("compound = true;", "labelloc = t;", "}"):
            pass
        elif stripped.startswith("subgraph cluster_"):
            graph.clusters.append(stripped)
        elif stripped.startswith("label = "):
            label = _plain(_unquote(stripped[len("label = ") : -1]))
            if line.startswith("  label"):
                graph.label = label
        elif node := _NODE.match(line):
            attrs = dict(_ATTR.findall(node.group(2)))
            shape, label = attrs["shape"], _unquote(attrs["label"])
            if shape == "Mrecord":
                label, ports = _record(label)
                graph.ports[node.group(1)] = ports
            else:
                label = _plain(label)
            graph.nodes[node.group(1)] = (label, shape)
        elif edge := _EDGE.match(line):
            tail, tail_port, head, head_port, listed = edge.groups()
            style = dict(_ATTR.findall(listed))["style"]
            graph.edges.append((tail, tail_port or "", head, head_port or "", style))
        else:
            raise AssertionError(f"not a statement view-op-graph writes: {line!r}")
    assert graph is None, "an unclosed digraph"
    for one in graphs:
        for tail, tail_port, head, head_port, _ in one.edges:
            assert tail in one.nodes and head in one.nodes
            assert not tail_port or tail_port in one.ports[tail]
            assert not head_port or head_port in one.ports[head]
    return graphs


def _module(text: str, filename: str = "m.mlir") -> ModuleOp:
    return parse_source(SourceFile(text, filename), make_context())


def _draw(options: str, text: str = DECODE) -> Graph:
    result = run_opt(["-", "-p", f"view-op-graph{{{options}}}", "-o", "/dev/null"], text)
    assert result.code == 0, result.stderr
    (graph,) = read_dot(result.stderr)
    return graph


# --- options -----------------------------------------------------------------------------------


def test_default_graph_has_a_node_per_op_and_an_edge_per_operand() -> None:
    graph = _draw("")
    assert graph.label == "view-op-graph (input)"
    assert len(graph.clusters) == 2  # one per function
    ops = graph.ops()
    assert len(ops) == 6
    names = [text.split("\n")[0].split(FIELD)[-1] for text in ops.values()]
    decode = ["graph.sub", "graph.mul", "graph.silu", "func.return"]
    assert names == [*decode, "graph.param", "func.return"]
    arguments = [text for text, shape in graph.nodes.values() if shape == "ellipse"]
    assert arguments == [
        "%a : tensor<?x2x84xf32>",
        "%b : tensor<1x2x84xf32>",
        "%s : tensor<1x84xf32>",
    ]
    assert len(graph.edges) == 7 and {e[4] for e in graph.edges} == {"solid"}
    sub = next(n for n, text in ops.items() if "graph.sub" in text)
    assert graph.ports[sub] == {"in0", "in1", "out0"}
    assert [(e[1], e[3]) for e in graph.edges if e[2] == sub] == [("", "in0"), ("", "in1")]
    param = next(text for text in ops.values() if "graph.param" in text)
    assert 'param_name: "a.very.long.paramet...' in param  # cut at 20 characters, as mlir


def test_options_change_the_graph_as_documented() -> None:
    default = _draw("")
    bare = _draw("print-attrs=false print-result-types=false")
    assert all("param_name" not in text and "tensor<" not in text for text in bare.ops().values())
    assert [t for t, s in bare.nodes.values() if s == "ellipse"] == ["%a", "%b", "%s"]
    assert "function_type" not in "".join(bare.clusters) and bare.edges == default.edges

    wide = _draw("max-label-len=80")
    assert any('param_name: "a.very.long.parameter.name"\n' in t for t in wide.ops().values())
    short = _draw("max-label-len=0")
    assert any("param_name: ...\n" in t for t in short.ops().values())
    assert any(t.endswith(f"{FIELD} %w ...") for t in short.ops().values())

    control = _draw("print-data-flow-edges=false print-control-flow-edges=true")
    assert {e[4] for e in control.edges} == {"dashed"}
    assert len(control.edges) == (4 - 1) + (2 - 1)  # consecutive ops of each block
    both = _draw("print-control-flow-edges=true")
    assert sorted(e[4] for e in both.edges) == ["dashed"] * 4 + ["solid"] * 7


def test_the_same_ir_gives_the_same_bytes_and_the_ir_is_unchanged() -> None:
    first = run_opt(["-", "-p", "fuse-pointwise,view-op-graph"], DECODE)
    second = run_opt(["-", "-p", "fuse-pointwise,view-op-graph"], DECODE)
    assert first.code == second.code == 0
    assert first.stderr == second.stderr and first.stdout == second.stdout
    assert run_opt(["-", "-p", "fuse-pointwise"], DECODE).stdout == first.stdout
    module = _module(DECODE)
    before = print_module(module)
    PassManager.parse("view-op-graph{out=/dev/null}").run(module)
    assert print_module(module) == before


# --- escaping ----------------------------------------------------------------------------------


def test_strings_from_the_ir_are_escaped(tmp_path: Path) -> None:
    source = tmp_path / 'in"put{|}<>\\.mlir'
    source.write_text(HOSTILE)
    out = tmp_path / "h.dot"
    result = run_opt([str(source), "-p", f"view-op-graph{{max-label-len=80 out={out}}}"])
    assert result.code == 0, result.stderr
    text = out.read_text()
    (graph,) = read_dot(text)  # balanced: no quote, brace or bar left unescaped
    assert all(line.endswith((";", "{", "}")) for line in text.splitlines())  # no IR line break
    function = text.splitlines()[5]
    assert _plain(_unquote(function.strip()[len("label = ") : -1])).startswith(
        "func.func @" + HOSTILE_NAME.replace("\n", "\\n") + "\n"
    )
    add = next(t for t in graph.ops().values() if "graph.add" in t)
    assert 'a"b{c}|<d>\\ne\\ at x"{}|<>.mlir:1:2' in add  # the absorbed op, verbatim
    param = next(t for t in graph.ops().values() if "graph.param" in t)
    assert 'param_name: "p\\22{|}<>\\\\\\0A"' in param  # the IR's spelling, verbatim
    if DOT is not None:
        svg = subprocess.run([DOT, "-Tsvg"], input=text.encode(), capture_output=True)
        assert svg.returncode == 0, svg.stderr
        assert b"we&quot;ird{|}&lt;&gt;\\\\nname" in svg.stdout


# --- YOLOv8n -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def yolo_graph(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, ModuleOp]:
    folder = tmp_path_factory.mktemp("yolo")
    out = folder / "yolov8n.dot"
    kernel_ir = folder / "kernel.mlir"
    pipeline = ["-p", "teeny-inference", f"--view-op-graph=out={out}"]
    result = run_opt([str(YOLOV8N), *pipeline, "-o", str(kernel_ir), "--mlir-print-debuginfo"])
    assert result.code == 0, result.stderr
    kernel = _module(kernel_ir.read_text(), str(YOLOV8N))
    return out.read_text(), kernel


def test_yolov8n_has_a_node_per_op_and_fused_ops_list_what_they_absorbed(
    yolo_graph: tuple[str, ModuleOp],
) -> None:
    text, module = yolo_graph
    (graph,) = read_dot(text)
    assert graph.label == "view-op-graph (after lower-graph-to-kernel)"
    forward = next(op for op in module.ops if isinstance(op, FuncOp))
    ops = [op for op in forward.walk() if op is not forward]
    nodes = list(graph.ops().values())
    assert len(nodes) == len(ops) > 300
    operands = sum(len(op.operands) for op in ops)
    assert len(graph.edges) == operands
    launches = [t for t in nodes if t.split("\n")[0].endswith("kernel.launch")]
    assert len(launches) == sum(op.name == "kernel.launch" for op in ops)
    assert all("\nfamily: " in t and "\ngrid: [" in t for t in launches)
    fused = [t for t in launches if "\nabsorbed " in t]
    assert len(fused) >= 50
    for label in fused:
        found = re.search(r"\nabsorbed (\d+):", label)
        assert found is not None
        count = int(found.group(1))
        absorbed = re.findall(r"\n  (graph\.\w+) at .*yolov8n\.mlir:\d+:\d+", label)
        assert len(absorbed) == count >= 2 and absorbed[0] == "graph.conv2d", label
    # In the IR each fused launch names the same ops, in the same order.
    by_location = [op for op in ops if op.name == "kernel.launch" and "fused[" in str(op.location)]
    assert len(by_location) == len(fused)


@pytest.mark.skipif(DOT is None, reason="Graphviz's dot is not installed")
def test_yolov8n_renders_with_dot(yolo_graph: tuple[str, ModuleOp]) -> None:
    assert DOT is not None
    done = subprocess.run([DOT, "-Tsvg"], input=yolo_graph[0].encode(), capture_output=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.lstrip().startswith(b"<?xml")


# --- before / after ----------------------------------------------------------------------------


def test_graphs_before_and_after_fusion_on_stderr() -> None:
    result = run_opt(
        [
            "-",
            "-p",
            "fuse-epilogues,fuse-pointwise",
            "--view-op-graph-before=fuse-epilogues",
            "--view-op-graph-after",
            "fuse-pointwise",
            "-o",
            "/dev/null",
        ],
        CONV_CHAIN,
    )
    assert result.code == 0, result.stderr
    before, after = read_dot(result.stderr)
    assert before.label == "before fuse-epilogues"
    assert after.label == "after fuse-pointwise"
    first = [t.split("\n")[0].split(FIELD)[-1] for t in before.ops().values()]
    assert first.count("graph.param") == 5
    computed = [n for n in first if n not in ("graph.param", "func.return")]
    assert computed == ["graph.conv2d", "graph.batch_norm", "graph.silu", "graph.sub", "graph.exp"]
    last = {t.split("\n")[0].split(FIELD)[-1]: t for t in after.ops().values()}
    assert "graph.fused_conv2d" in last and "graph.fused_pointwise" in last
    conv = last["graph.fused_conv2d"]
    assert re.findall(r"\n  (graph\.\w+) at -:\d+:\d+", conv) == [
        "graph.conv2d",
        "graph.batch_norm",
        "graph.silu",
    ]
    pointwise = last["graph.fused_pointwise"]
    assert "\nprogram:\n  $0 = sub %0 %1\n  $1 = exp $0\n" in pointwise
    assert re.findall(r"\n  (graph\.\w+) at ", pointwise) == ["graph.sub", "graph.exp"]


def test_graphs_in_a_pipeline_and_at_points_go_to_files(tmp_path: Path) -> None:
    a, b, plan = tmp_path / "a.dot", tmp_path / "b.dot", tmp_path / "plan.dot"
    result = run_opt(
        [
            "-",
            "-p",
            f"fuse-epilogues,view-op-graph{{out={a}}},fuse-pointwise,view-op-graph{{out={b}}},"
            "func.func(cse)",
            f"--view-op-graph=out={plan} print-attrs=false",
            "--view-op-graph-after=fuse-pointwise,cse",
            "--view-op-graph-before=cse",
        ],
        CONV_CHAIN,
    )
    assert result.code == 0, result.stderr
    assert result.stderr == ""
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == [
        "a.dot",
        "b.dot",
        "plan.after-cse.forward.dot",
        "plan.after-fuse-pointwise.dot",
        "plan.before-cse.forward.dot",
        "plan.dot",
    ]
    titles = {p.name: read_dot(p.read_text())[0].label for p in tmp_path.iterdir()}
    assert titles == {
        "a.dot": "view-op-graph (after fuse-epilogues)",
        "b.dot": "view-op-graph (after fuse-pointwise)",
        "plan.after-cse.forward.dot": "after cse ('func.func' operation: @forward)",
        "plan.after-fuse-pointwise.dot": "after fuse-pointwise",
        "plan.before-cse.forward.dot": "before cse ('func.func' operation: @forward)",
        "plan.dot": "view-op-graph (after cse)",
    }
    a_ops = " ".join(read_dot(a.read_text())[0].ops().values())
    b_ops = " ".join(read_dot(b.read_text())[0].ops().values())
    assert "graph.fused_conv2d" in a_ops and "graph.fused_pointwise" not in a_ops
    assert "graph.fused_pointwise" in b_ops and "graph.sub\n" not in b_ops
    assert "scale:" not in plan.read_text() and "scale:" in a.read_text()


def test_the_flag_alone_keeps_the_input_and_dash_is_stdout(tmp_path: Path) -> None:
    source = tmp_path / "m.mlir"
    source.write_text(DECODE)
    result = run_opt(["--view-op-graph", str(source), "-o", "/dev/null"])
    assert result.code == 0, result.stderr
    assert read_dot(result.stderr)[0].label == "view-op-graph (input)"
    to_stdout = run_opt(["--view-op-graph=out=-", str(source), "-o", "/dev/null"])
    assert to_stdout.code == 0 and to_stdout.stderr == ""
    assert read_dot(to_stdout.stdout)[0].ops() == read_dot(result.stderr)[0].ops()


# --- outputs and their refusals ----------------------------------------------------------------


def test_svg_without_dot_is_a_located_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    source = tmp_path / "m.mlir"
    source.write_text(DECODE)
    result = run_opt([str(source), "-p", f"view-op-graph{{out={tmp_path / 'g.svg'}}}"])
    assert result.code == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("teeny-opt: error: view-op-graph: rendering ")
    for install in ("apt-get install graphviz", "brew install graphviz", "conda install graphviz"):
        assert install in result.stderr
    # Run as a pass (no driver to check first): the error is located at the module's first op.
    module = _module(DECODE, str(source))
    with pytest.raises(DiagnosticError) as caught:
        PassManager.parse(f"view-op-graph{{out={tmp_path / 'g.png'}}}").run(module)
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.location is not None and diagnostic.location.line == 1
    assert "needs Graphviz's 'dot' on PATH" in diagnostic.message
    assert not (tmp_path / "g.svg").exists() and not (tmp_path / "g.png").exists()
    # DOT itself needs no Graphviz.
    assert run_opt([str(source), f"--view-op-graph=out={tmp_path / 'g.dot'}"]).code == 0
    read_dot((tmp_path / "g.dot").read_text())


@pytest.mark.skipif(DOT is None, reason="Graphviz's dot is not installed")
def test_svg_and_png_are_rendered(tmp_path: Path) -> None:
    svg, png = tmp_path / "g.svg", tmp_path / "g.png"
    result = run_opt(
        ["-", "-p", f"view-op-graph{{out={svg}}},fuse-pointwise,view-op-graph{{out={png}}}"],
        DECODE,
    )
    assert result.code == 0, result.stderr
    assert b"<svg" in svg.read_bytes() and png.read_bytes().startswith(b"\x89PNG")


def test_one_file_twice_in_one_run_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "g.dot"
    pipeline = f"view-op-graph{{out={out}}},fuse-pointwise,view-op-graph{{out={out}}}"
    result = run_opt(["-", "-p", pipeline], DECODE)
    assert result.code == 1 and not out.exists()  # refused when the pipeline is built
    assert "two graphs of the pipeline write" in result.stderr
    module = _module(DECODE)
    with pytest.raises(DiagnosticError, match="already written by an earlier graph"):
        PassManager.parse(pipeline).run(module)
    read_dot(out.read_text())  # the first graph stays whole


def test_help_lists_the_flags_and_the_options_flag_is_given_once() -> None:
    result = run_opt(["--help"])
    assert result.code == 0
    for flag in (
        "--view-op-graph [OPTIONS]",
        "--view-op-graph-before PASS",
        "--view-op-graph-after PASS",
    ):
        assert flag in result.stdout, flag
    listing = run_opt(["--list-passes"]).stdout
    assert "view-op-graph" in listing and "max-label-len=int (default: 20)" in listing
    twice = run_opt(["-", "--view-op-graph", "--view-op-graph=print-attrs=false"], DECODE)
    assert twice.code == 1
    assert twice.stderr == "teeny-opt: error: --view-op-graph may only occur once\n"
