"""view-op-graph: the module as a Graphviz DOT graph, as mlir-opt's pass of that name.

The same options, spelt as mlir-opt spells them (``max-label-len``,
``print-attrs``, ``print-control-flow-edges``, ``print-data-flow-edges``,
``print-result-types``), and the DOT shape of its ``PrintOpGraphPass``: a
``digraph G`` in compound mode, one ``Mrecord`` node per op with a port per
operand on top (``in<i>``) and per result below (``out<i>``), solid data-flow
edges from the result's port to the operand's, dashed control-flow edges
between consecutive ops of a block, a cluster (``subgraph cluster_<n>``) per
op with regions, each with an invisible anchor node for the edges that
start or end at it (``ltail`` / ``lhead``). Nodes are filled with one colour
per op name.

In teeny_ir's terms:

- each function is a cluster labelled ``func.func @name`` (with its attributes);
  its arguments are ``ellipse`` nodes; a block of a region with several blocks
  is a cluster of its own (``^bb<k>``);
- a label reads: operands, the op's name, what teeny_ir adds, the attributes
  (properties and discardable attributes, sorted by name, each value printed
  as in the IR, elided as mlir does - ``[...]`` for an array of more than 16
  elements - and cut to ``max-label-len`` characters with ``...``), results
  with their types (cut the same way);
- teeny_ir adds, never cut: the ops an op absorbed, from its location
  (`teeny_ir.core.diagnostics.provenance`: a fused op's location names every
  op it fuses, a lowered op's the op it came from), one line each with its
  source location; a ``graph.fused_pointwise``'s program, a step per line
  (``$j = <entry> <operands>``, ``%k`` its inputs); a ``kernel.launch``'s
  family and grid;
- every string taken from the IR is escaped for DOT: quotes, backslashes and,
  in record labels, ``{}|<>``; control characters are shown as escapes
  (``\\n``), never as line breaks;
- the graph's ``label`` says when it was drawn (``view-op-graph (after
  fuse-pointwise)``; ``before cse`` for teeny-opt's ``--view-op-graph-before``).

The same IR gives the same bytes. The IR is never changed.

Output: stderr by default (several graphs follow each other, one ``digraph``
each, as ``dot`` reads them); ``out=FILE`` writes FILE instead, replaced
atomically (`teeny_ir.core.files`); a FILE ending ``.svg`` or ``.png`` is
rendered by Graphviz's ``dot`` (a located error says how to install it when it
is not on PATH); ``out=-`` is stdout. FILE is never the input file, and one
run writes each FILE once: a second graph to the same FILE in one pipeline is
refused (teeny-opt refuses it when it builds the pipeline).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, TextIO

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, DenseIntOrFPElementsAttr, ModuleOp, StringAttr
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from teeny_ir.core.diagnostics import (
    Diagnostic,
    DiagnosticError,
    Severity,
    loc_of,
    provenance,
)
from teeny_ir.core.files import OutputError, check_output, write_bytes

if TYPE_CHECKING:
    from teeny_ir.ir.parsing import TeenyPrinter

LARGE_ELEMENTS = 16
"""Arrays and dense elements with more entries than this are elided (mlir's default)."""

RENDERED = {".svg": "svg", ".png": "png"}
"""Output suffixes rendered through Graphviz's ``dot`` (-> its ``-T`` format)."""

INSTALL_GRAPHVIZ = "apt-get install graphviz, brew install graphviz or conda install graphviz"

SINK_ATTR = "_teeny_view_op_graph"
"""The context attribute holding the run's `GraphSink`."""

_UNREGISTERED = "builtin.unregistered"
_UNREGISTERED_NAME = "op_name__"
_LINE_STYLE_DATA = "solid"
_LINE_STYLE_CONTROL = "dashed"
_RECORD_SPECIALS = frozenset('\\"{}|<>')
_TEXT_SPECIALS = frozenset('\\"')
_VISIBLE = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


@dataclass
class GraphSink:
    """Where the graphs of one pipeline run go: the streams (None: the process's),
    the title of the next graph, and the files written so far."""

    stderr: TextIO | None = None
    stdout: TextIO | None = None
    title: str = "view-op-graph"
    written: set[str] = field(default_factory=set[str])


def sink_of(ctx: Context) -> GraphSink:
    """The run's `GraphSink` (made on first use)."""
    sink = getattr(ctx, SINK_ATTR, None)
    if not isinstance(sink, GraphSink):
        sink = GraphSink()
        setattr(ctx, SINK_ATTR, sink)
    return sink


def missing_dot(out: str) -> str:
    """The message for a rendered output without Graphviz."""
    return (
        f"view-op-graph: rendering '{out}' needs Graphviz's 'dot' on PATH; install "
        f"Graphviz ({INSTALL_GRAPHVIZ}) or write a .dot file"
    )


def point_path(out: str, tag: str) -> str:
    """``out`` with ``.tag`` before its extension: ``plan.dot`` -> ``plan.after-cse.dot``."""
    folder, name = os.path.split(out)
    stem, ext = os.path.splitext(name)
    return os.path.join(folder, f"{stem}.{tag}{ext}")


def file_tag(text: str) -> str:
    """``text`` made safe for a file name: letters, digits, ``_.-``; others ``_``."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "_.-") else "_" for c in text)


# --- escaping ---------------------------------------------------------------------------------


def _visible(text: str) -> str:
    """Control characters as visible escapes (a newline reads ``\\n``, not a break)."""
    if text.isprintable():
        return text
    return "".join(
        _VISIBLE.get(c, f"\\x{ord(c):02x}" if ord(c) < 0x20 or ord(c) == 0x7F else c) for c in text
    )


def escape(text: str, *, record: bool) -> str:
    """``text`` for a DOT quoted label: backslashes and quotes escaped, and in a
    record label the field syntax ``{}|<>`` too; control characters visible."""
    specials = _RECORD_SPECIALS if record else _TEXT_SPECIALS
    return "".join("\\" + c if c in specials else c for c in _visible(text))


def _quote(text: str) -> str:
    return f'"{text}"'


def _lines(lines: Sequence[str], *, record: bool) -> str:
    """Left-justified label lines (DOT's ``\\l`` ends each), every line escaped."""
    return "".join(escape(line, record=record) + "\\l" for line in lines)


# --- the graph --------------------------------------------------------------------------------


@dataclass
class _Node:
    """A DOT node; ``cluster`` when it is the anchor of a cluster."""

    id: int
    cluster: int | None = None
    ports: bool = False
    """Whether it is a record with ``in<i>`` / ``out<i>`` ports."""


@dataclass
class _Drawing:
    """One graph being written (`ViewOpGraphPass.draw`)."""

    options: ViewOpGraphPass
    printer: TeenyPrinter
    lines: list[str] = field(default_factory=list[str])
    edges: list[str] = field(default_factory=list[str])
    flows: list[tuple[SSAValue, _Node, int]] = field(
        default_factory=list[tuple[SSAValue, _Node, int]]
    )
    nodes: dict[SSAValue, tuple[_Node, int]] = field(
        default_factory=dict[SSAValue, tuple[_Node, int]]
    )
    colours: dict[str, str] = field(default_factory=dict[str, str])
    texts: dict[Attribute, str] = field(default_factory=dict[Attribute, str])
    """Attributes printed so far (types repeat across a model)."""
    counter: int = 0
    depth: int = 1

    # Output.

    def emit(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def node(self, label: str, shape: str, colour: str = "", ports: bool = False) -> _Node:
        self.counter += 1
        attrs = {"label": _quote(label), "shape": shape}
        if colour:
            attrs["style"] = "filled"
            attrs["fillcolor"] = _quote(colour)
        self.emit(f"v{self.counter} {_attr_list(attrs)};")
        return _Node(self.counter, ports=ports)

    def cluster(self, label: str, body: Callable[[], None], anchor: bool) -> _Node:
        """A cluster; ``body`` emits its contents."""
        self.counter += 1
        cluster = self.counter
        self.emit(f"subgraph cluster_{cluster} {{")
        self.depth += 1
        node = _Node(0, cluster)
        if anchor:  # edges end at an invisible node, clipped at the cluster's border
            node.id = self.node(" ", "plain").id
        self.emit(f"label = {_quote(label)};")
        body()
        self.depth -= 1
        self.emit("}")
        return node

    def edge(self, tail: _Node, head: _Node, style: str, out: int = -1, in_: int = -1) -> None:
        attrs = {"style": style}
        if tail.cluster is not None:
            attrs["ltail"] = f"cluster_{tail.cluster}"
        if head.cluster is not None:
            attrs["lhead"] = f"cluster_{head.cluster}"
        source = f"v{tail.id}" + (f":out{out}:s" if tail.ports and out >= 0 else "")
        target = f"v{head.id}" + (f":in{in_}:n" if head.ports and in_ >= 0 else "")
        self.edges.append(f"{source} -> {target} {_attr_list(attrs)};")

    # Text of the IR.

    def name(self, value: SSAValue) -> str:
        found = self.printer._ssa_values.get(value)  # names as the printed IR spells them
        return f"%{found}" if found is not None else "%?"

    def printed(self, attr: Attribute) -> str:
        """``attr`` as the IR prints it."""
        try:
            return self.texts[attr]
        except KeyError:
            pass
        except TypeError:  # an attribute holding unhashable data: printed each time
            return _print_attribute(attr)
        text = self.texts[attr] = _print_attribute(attr)
        return text

    def attribute(self, attr: Attribute) -> str:
        """An attribute's value in a label: large arrays and elements elided, the
        rest printed and cut (as mlir's ``emitMlirAttr``)."""
        if (
            isinstance(attr, DenseIntOrFPElementsAttr)
            and len(attr) > LARGE_ELEMENTS
            and not attr.is_splat()
        ):
            rank = len(attr.get_shape())
            return f"{'[' * rank}...{']' * rank} : {self.printed(attr.type)}"
        if isinstance(attr, ArrayAttr) and len(attr.data) > LARGE_ELEMENTS:
            return "[...]"
        return self.options.cut(self.printed(attr))

    def result_types(self, op: Operation) -> str:
        return self.options.cut(", ".join(self.printed(r.type) for r in op.results))

    def attribute_lines(self, op: Operation, skip: Sequence[str] = ()) -> list[str]:
        if not self.options.print_attrs:
            return []
        named = {**op.properties, **op.attributes}
        if op.name == _UNREGISTERED:
            named.pop(_UNREGISTERED_NAME, None)
        return [f"{k}: {self.attribute(named[k])}" for k in sorted(named) if k not in skip]

    # Walking the IR.

    def op(self, op: Operation) -> _Node:
        if op.regions:
            node = self.cluster(self.cluster_label(op), lambda: self.regions(op), anchor=True)
        else:
            node = self.node(
                self.record_label(op), "Mrecord", self.colours.get(op_name(op), ""), ports=True
            )
        for index, operand in enumerate(op.operands):
            self.flows.append((operand, node, index))
        for index, result in enumerate(op.results):
            self.nodes[result] = (node, index)
        return node

    def function(self, op: Operation) -> None:
        self.cluster(self.cluster_label(op), lambda: self.regions(op), anchor=False)

    def regions(self, op: Operation) -> None:
        """Each block of ``op``'s regions; a block of a region with several is a cluster."""
        for region in op.regions:
            blocks = list(region.blocks)
            for block in blocks:
                if len(blocks) == 1:
                    self.block(block)
                else:
                    label = _lines([f"^{self.printer._blocks.get(block, '?')}"], record=False)
                    self.cluster(label, functools.partial(self.block, block), anchor=False)

    def block(self, block: Block) -> None:
        for argument in block.args:
            self.nodes[argument] = (self.node(self.argument_label(argument), "ellipse"), -1)
        previous: _Node | None = None
        for child in block.ops:
            node = self.op(child)
            if self.options.print_control_flow_edges and previous is not None:
                self.edge(previous, node, _LINE_STYLE_CONTROL)
            previous = node

    # Labels.

    def argument_label(self, argument: BlockArgument) -> str:
        text = self.name(argument)
        if self.options.print_result_types:
            text += " : " + self.options.cut(self.printed(argument.type))
        return escape(text, record=False)

    def cluster_label(self, op: Operation) -> str:
        symbol = op.properties.get("sym_name") or op.attributes.get("sym_name")
        head = op_name(op)
        if isinstance(symbol, StringAttr):
            head += f" @{symbol.data}"
        elif self.options.print_result_types:
            head += f" : ({self.result_types(op)})"
        return _lines([head, *self.teeny_lines(op), *self.attribute_lines(op)], record=False)

    def record_label(self, op: Operation) -> str:
        fields: list[str] = []
        if op.operands:
            ports = (
                f"<in{i}> {escape(self.name(v), record=True)}" for i, v in enumerate(op.operands)
            )
            fields.append("{" + "|".join(ports) + "}")
        teeny = self.teeny_lines(op)
        skip = _SHOWN_APART.get(op.name, ())
        attributes = self.attribute_lines(op, skip)
        body = [op_name(op), *teeny]
        if attributes:
            body += ["", *attributes]  # a blank line between the name and the attributes
        fields.append(_lines(body, record=True))
        if op.results:
            results: list[str] = []
            for index, result in enumerate(op.results):
                text = self.name(result)
                if self.options.print_result_types:
                    text += " " + self.options.cut(self.printed(result.type))
                results.append(f"<out{index}> {escape(text, record=True)}")
            fields.append("{" + "|".join(results) + "}")
        return "{" + "|".join(fields) + "}"

    def teeny_lines(self, op: Operation) -> list[str]:
        """What teeny_ir shows of an op beyond mlir's label (never cut)."""
        lines: list[str] = []
        if op.name == "kernel.launch":
            family = op.properties.get("family")
            if isinstance(family, StringAttr):
                lines.append(f"family: {family.data}")
            grid = op.properties.get("grid")
            if isinstance(grid, ArrayAttr):
                cells = [g.data if isinstance(g, StringAttr) else str(g) for g in grid.data]
                lines.append(f"grid: [{', '.join(cells)}]")
        program = op.properties.get("program")
        if op.name == "graph.fused_pointwise" and isinstance(program, StringAttr):
            lines.append("program:")
            steps = [s.strip() for s in program.data.split(";")]
            lines += [f"  ${index} = {step}" for index, step in enumerate(steps)]
        own = op_name(op)
        sources = provenance(op, own)
        if len(sources) > 1 or any(name != own for name, _ in sources):
            lines.append(f"absorbed {len(sources)}:" if len(sources) > 1 else "from:")
            lines += [f"  {name}" + (f" at {where}" if where else "") for name, where in sources]
        return lines

    def finish(self) -> None:
        if self.options.print_data_flow_edges:
            for value, node, index in self.flows:
                found = self.nodes.get(value)
                if found is not None:
                    self.edge(found[0], node, _LINE_STYLE_DATA, found[1], index)
        self.lines += ["  " + e for e in self.edges]


_SHOWN_APART: dict[str, tuple[str, ...]] = {
    "kernel.launch": ("family", "grid"),
    "graph.fused_pointwise": ("program",),
}
"""Attributes teeny_ir shows in full (`_Drawing.teeny_lines`), not among the others."""


def op_name(op: Operation) -> str:
    """The op's name as the IR spells it (an unregistered op's own, not ``builtin.unregistered``)."""
    if op.name == _UNREGISTERED:
        spelt = op.attributes.get(_UNREGISTERED_NAME)
        if isinstance(spelt, StringAttr):
            return spelt.data
    return op.name


def _print_attribute(attr: Attribute) -> str:
    from io import StringIO

    from teeny_ir.ir.parsing import TeenyPrinter

    stream = StringIO()
    TeenyPrinter(stream=stream).print_attribute(attr)
    return stream.getvalue()


def _attr_list(attrs: dict[str, str]) -> str:
    return "[" + ", ".join(f"{k} = {attrs[k]}" for k in sorted(attrs)) + "]"


def _colours(ops: Iterable[Operation]) -> dict[str, str]:
    """One fill colour per op name, hues spread in order of first appearance."""
    names: list[str] = []
    for op in ops:
        if op_name(op) not in names:
            names.append(op_name(op))
    return {name: f"{i / len(names):.6f} 0.35 1.0" for i, name in enumerate(names)}


def _located(op: Operation) -> Operation:
    """The first op at or inside ``op`` with a known location in its source (for
    diagnostics; an implicit module sits at line 0)."""
    for inner in op.walk():
        where = loc_of(inner)
        if where is not None and where.line > 0:
            return inner
    return op


def _error(message: str, where: Operation) -> DiagnosticError:
    return DiagnosticError([Diagnostic(Severity.ERROR, message, loc_of(_located(where)))])


def _input_files(op: Operation) -> set[str]:
    """The source files the IR's locations name (outputs never replace them)."""
    files: set[str] = set()
    for inner in op.walk():
        where = loc_of(inner)
        if where is not None:
            files.add(where.filename)
            if len(files) > 4:
                break
    return files


@dataclass(frozen=True)
class ViewOpGraphPass(ModulePass):
    """Draw the module as a Graphviz DOT graph (stderr, or out=FILE); the IR is unchanged.

    mlir-opt's ``view-op-graph``: options ``max-label-len`` (default 20:
    attribute values and types longer than that are cut, ending ``...``),
    ``print-attrs`` (true), ``print-control-flow-edges`` (false: dashed edges
    between consecutive ops), ``print-data-flow-edges`` (true: solid edges from a
    result's port ``out<i>`` to an operand's ``in<i>``) and
    ``print-result-types`` (true). ``out=FILE`` (teeny_ir's) writes FILE instead
    of stderr, rendered by Graphviz's ``dot`` when it ends ``.svg`` or ``.png``
    (``-`` is stdout). One ``Mrecord`` node per op, a cluster per function, its
    arguments as ellipses; fused ops list the ops they absorbed, a
    ``graph.fused_pointwise`` its program, a ``kernel.launch`` its family and grid.
    See docs/op-graph.md.
    """

    name = "view-op-graph"
    anchors: ClassVar[tuple[str, ...]] = ("builtin.module",)

    max_label_len: int = 20
    print_attrs: bool = True
    print_control_flow_edges: bool = False
    print_data_flow_edges: bool = True
    print_result_types: bool = True
    out: str = ""
    """FILE to write (``.svg``/``.png`` rendered by ``dot``; ``-``: stdout); "" is stderr."""

    def cut(self, text: str) -> str:
        """``text`` cut to ``max-label-len`` characters, ending ``...`` (as mlir)."""
        limit = max(self.max_label_len, 0)
        return text if len(text) <= limit else text[:limit] + "..."

    def draw(self, op: Operation, title: str = "") -> str:
        """The DOT text of ``op`` (a module or a function), labelled ``title``."""
        from io import StringIO

        from teeny_ir.ir.parsing import TeenyPrinter

        printer = TeenyPrinter(stream=StringIO())
        printer.print_op(op)  # names every value and block as the printed IR does
        drawing = _Drawing(self, printer)
        drawing.emit("compound = true;")
        if title:
            drawing.emit(f"label = {_quote(escape(title, record=False))};")
            drawing.emit("labelloc = t;")
        inner = [o for o in op.walk() if not o.regions]
        drawing.colours = _colours(inner)
        if isinstance(op, ModuleOp):
            for child in op.body.block.ops:
                if child.name == "func.func":
                    drawing.function(child)
                else:
                    drawing.op(child)
        elif op.name == "func.func":
            drawing.function(op)
        else:
            drawing.op(op)
        drawing.finish()
        return "digraph G {\n" + "\n".join(drawing.lines) + "\n}\n"

    def write(self, text: str, ctx: Context, where: Operation, out: str | None = None) -> None:
        """Write one graph to ``out`` (default: the pass's), or to the run's stderr.
        Raises `DiagnosticError` located at ``where`` when it cannot."""
        out = self.out if out is None else out
        sink = sink_of(ctx)
        if not out:
            stream = sink.stderr or sys.stderr
            stream.write(text)
            stream.flush()
            return
        if out == "-":
            stream = sink.stdout or sys.stdout
            stream.write(text)
            stream.flush()
            return
        path = os.path.abspath(out)
        if path in sink.written:
            raise _error(
                f"view-op-graph: '{out}' was already written by an earlier graph of this "
                "pipeline; give each view-op-graph its own out=FILE",
                where,
            )
        try:
            for source in sorted(_input_files(where)):
                _check_not_input(out, source)
            check_output(out)
            data = self._render(text, out, where)
            write_bytes(out, data, sink.stdout or sys.stdout)
        except OutputError as err:
            message = str(err)
            prefix = "" if message.startswith("view-op-graph:") else "view-op-graph: "
            raise _error(prefix + message, where) from None
        sink.written.add(path)

    def _render(self, text: str, out: str, where: Operation) -> bytes:
        """``text`` as the bytes of ``out``: DOT, or rendered by ``dot`` for ``.svg``/``.png``."""
        kind = RENDERED.get(os.path.splitext(out)[1].lower())
        if kind is None:
            return text.encode("utf-8")
        dot = shutil.which("dot")
        if dot is None:
            raise _error(missing_dot(out), where)
        try:
            done = subprocess.run(
                [dot, f"-T{kind}"], input=text.encode("utf-8"), capture_output=True, timeout=600
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            raise _error(
                f"view-op-graph: cannot run '{dot}' to render '{out}': {err}", where
            ) from None
        if done.returncode != 0:
            reason = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
            raise _error(
                f"view-op-graph: Graphviz's dot failed to render '{out}' (exit "
                f"{done.returncode}): {reason[0] if reason else 'no message'}",
                where,
            )
        return done.stdout

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.max_label_len < 0:
            raise _error(
                f"view-op-graph: max-label-len must be at least 0, got {self.max_label_len}", op
            )
        if os.path.splitext(self.out)[1].lower() in RENDERED and shutil.which("dot") is None:
            raise _error(missing_dot(self.out), op)
        self.write(self.draw(op, sink_of(ctx).title), ctx, op)

    # For drivers (which load the pass by name, never import it).

    @staticmethod
    def route(ctx: Context, stderr: TextIO, stdout: TextIO, title: str) -> None:
        """Send the run's graphs to these streams; the next one is titled ``title``."""
        sink = sink_of(ctx)
        sink.stderr, sink.stdout, sink.title = stderr, stdout, title

    @staticmethod
    def point_path(out: str, tag: str) -> str:
        """``out`` with ``.tag`` before its extension (`point_path`)."""
        return point_path(out, tag)

    @staticmethod
    def file_tag(text: str) -> str:
        return file_tag(text)

    @staticmethod
    def check_outputs(
        graphs: Sequence[ViewOpGraphPass], input_path: str, output_path: str, split: bool
    ) -> None:
        """Refuse, before anything runs, the outputs of a pipeline's view-op-graph
        passes that would go wrong: one FILE twice, the input or ``-o`` file, a
        folder that does not exist, ``.svg``/``.png`` without Graphviz, any FILE
        with ``--split-input-file`` (each chunk would replace it). Raises `OutputError`."""
        seen: dict[str, str] = {}
        for graph in graphs:
            out = graph.out
            if not out or out == "-":
                continue
            if split:
                raise OutputError(
                    f"view-op-graph: out={out} with --split-input-file would be replaced by "
                    "each chunk's graph; draw to stderr (no out=) or split the file"
                )
            path = os.path.abspath(out)
            if path in seen:
                raise OutputError(
                    f"view-op-graph: two graphs of the pipeline write '{out}'; give each "
                    "view-op-graph its own out=FILE"
                )
            seen[path] = out
            _check_not_input(out, input_path)
            if output_path != "-" and _same_file(out, output_path):
                raise OutputError(
                    f"view-op-graph: out={out} is the -o file '{output_path}' the IR is written to"
                )
            try:
                check_output(out)
            except OutputError as err:
                raise OutputError(f"view-op-graph: {err}") from None
            if os.path.splitext(out)[1].lower() in RENDERED and shutil.which("dot") is None:
                raise OutputError(missing_dot(out))


def _check_not_input(out: str, input_path: str) -> None:
    """Refuse ``out=`` naming the input file (compared by identity, not spelling)."""
    if input_path not in ("", "-") and _same_file(out, input_path):
        raise OutputError(
            f"view-op-graph: refusing to overwrite the input file '{input_path}' with out={out}"
        )


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)
