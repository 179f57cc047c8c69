"""ONNX's backend node tests through `import_onnx` and the reference interpreter.

The cases are onnx's own (``onnx.backend.test``): read from the wheel's
``onnx/backend/test/data/node/*/`` (``model.onnx``, ``test_data_set_0/``) when it
ships them, else generated in memory by ``onnx.backend.test.case.node``, which is
what writes those files. Each case is imported and run, and classified:

- ``pass``: every output within the tolerance rule of the expected one;
- ``refused``: `import_onnx` raised one located `DiagnosticError` naming the op;
- ``wrong``: it ran, and an output differs;
- ``crash``: any other exception (a bug: the importer must refuse instead).

Inputs the importer needs at import time (shapes, axes, split sizes, scales,
pads: onnx-mlir's CONSTANT_INPUT mode) are fed as initializers: every input that
is not float32 (a graph argument is a float32 tensor), and each float input the
importer asks for as a constant (its refusal names it; the case is imported again).
The comparison is the caller's (``teeny_ir.testing.compare``: the frontend sits
below the test library), as is running a compiled plan.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from teeny_ir import reference
from teeny_ir.core.diagnostics import DiagnosticError
from teeny_ir.frontend.imported import ImportedModel
from teeny_ir.frontend.onnx.importer import import_onnx

TOLERANCE = 1e-4
"""The conformance rule: ``|got - ref| <= 1e-4 * max(1, max |ref|)``."""

_CONSTANT_NEEDED = re.compile(r"input (\d+) \(.*\) must be a constant known at import time")
_NODE = re.compile(r":node (\d+)")
_SCALAR_INPUT = re.compile(r":input '([^']*)'(?: of \w+)?: error: scalar inputs are not supported")


@dataclass(frozen=True)
class Case:
    """One node test: its name, model, input values and expected outputs."""

    name: str
    model: onnx.ModelProto
    inputs: list[np.ndarray]
    outputs: list[np.ndarray]

    @property
    def op_type(self) -> str:
        """The op the case tests (its last node's, as onnx names the cases)."""
        return self.model.graph.node[-1].op_type if self.model.graph.node else "?"


@dataclass(frozen=True)
class Result:
    """How a case went: ``status`` (pass, refused, wrong, crash) and why."""

    case: Case
    status: str
    detail: str = ""
    imported: ImportedModel | None = None
    feeds: tuple[np.ndarray, ...] = ()


def without_specials(
    got: Sequence[np.ndarray], want: Sequence[np.ndarray]
) -> tuple[str | None, list[np.ndarray], list[np.ndarray]]:
    """Why the NaN and infinities of ``got`` differ from ``want``'s (None when each
    sits where the other's does), and both with those elements zeroed in float64:
    what the tolerance rule then compares (it takes finite values only)."""
    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}", [], []
    got_finite, want_finite = [], []
    for index, (g, w) in enumerate(zip(got, want, strict=True)):
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        if g.size != w.size:
            return f"output {index}: {g.size} elements, expected {w.size}", [], []
        g, w = g.reshape(w.shape), w
        specials = ~np.isfinite(w) | ~np.isfinite(g)
        same = (np.isnan(g) & np.isnan(w)) | (g == w)
        if np.any(specials & ~same):
            first = int(np.flatnonzero((specials & ~same).reshape(-1))[0])
            return (
                f"output {index}: element {first} is {g.reshape(-1)[first]}, expected "
                f"{w.reshape(-1)[first]}",
                [],
                [],
            )
        got_finite.append(np.where(specials, 0.0, g))
        want_finite.append(np.where(specials, 0.0, w))
    return None, got_finite, want_finite


def data_dir() -> Path:
    """Where the wheel keeps its node tests (which it may not ship)."""
    return Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data" / "node"


def _read(path: Path) -> np.ndarray:
    tensor = onnx.TensorProto()
    tensor.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(tensor)


def _from_disk(root: Path, names: set[str] | None) -> Iterator[Case]:
    for directory in sorted(p for p in root.iterdir() if (p / "model.onnx").is_file()):
        if names is not None and directory.name not in names:
            continue
        data = directory / "test_data_set_0"
        inputs = [_read(p) for p in sorted(data.glob("input_*.pb"), key=_index)]
        outputs = [_read(p) for p in sorted(data.glob("output_*.pb"), key=_index)]
        yield Case(directory.name, onnx.load(str(directory / "model.onnx")), inputs, outputs)


def _index(path: Path) -> int:
    return int(path.stem.rsplit("_", 1)[1])


def _generated(names: set[str] | None) -> Iterator[Case]:
    import warnings

    from onnx.backend.test.case import node

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # the generators divide by zero on purpose
        cases = node.collect_testcases(None)
    for case in sorted(cases, key=lambda c: c.name):
        if names is not None and case.name not in names:
            continue
        if case.model is None or not case.data_sets:
            continue
        inputs, outputs = case.data_sets[0]
        yield Case(case.name, case.model, _arrays(inputs), _arrays(outputs))


def _arrays(values: Sequence[object]) -> list[np.ndarray]:
    """The generators' values as arrays (some give a ``TensorProto``, e.g. for
    element types numpy lacks); sequences and optionals stay as they are."""
    return [
        numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else v  # type: ignore[misc]
        for v in values
    ]


def cases(names: Sequence[str] | None = None) -> Iterator[Case]:
    """The node tests (all, or those named), in name order."""
    wanted = set(names) if names is not None else None
    root = data_dir()
    return _from_disk(root, wanted) if root.is_dir() else _generated(wanted)


def _with_constants(case: Case, constant: set[int]) -> onnx.ModelProto:
    """The case's model with graph inputs ``constant`` turned into initializers."""
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    graph = model.graph
    # The input stays declared (IR versions before 4 require it of an initializer);
    # the importer passes only inputs without one. A sequence or optional value
    # is left an input, which the importer refuses.
    for index, value_info in enumerate(graph.input):
        value = case.inputs[index] if index < len(case.inputs) else None
        if index in constant and isinstance(value, np.ndarray | np.generic):
            graph.initializer.append(numpy_helper.from_array(np.asarray(value), value_info.name))
    return model


def _needed_input(case: Case, err: DiagnosticError) -> int | None:
    """The graph input a refusal asks to be a constant, if it is one: an input a
    node reads as a constant, or a scalar (the graph has no scalar arguments: a
    scalar is a bound or a coefficient, ``Clip``'s ``min``)."""
    text = str(err)
    names = [value_info.name for value_info in case.model.graph.input]
    scalar = _SCALAR_INPUT.search(text)
    if scalar is not None and scalar.group(1) in names:
        return names.index(scalar.group(1))
    needed, where = _CONSTANT_NEEDED.search(text), _NODE.search(text)
    if needed is None or where is None:
        return None
    node = case.model.graph.node[int(where.group(1))]
    name = node.input[int(needed.group(1))]
    return names.index(name) if name in names else None


def run_case(
    case: Case,
    close: Callable[[list[np.ndarray], list[np.ndarray]], str | None],
    *,
    weights: bool = False,
) -> Result:
    """Import ``case`` and run it in the reference interpreter; ``close(got, want)``
    is None when the outputs agree, else why not. With ``weights``, every input
    after the first is fed as a constant too: the weights of a convolution or a
    batch norm, which a compiler takes as parameters, not as data."""
    graph_inputs = case.model.graph.input
    constant = {
        i
        for i, value_info in enumerate(graph_inputs)
        if value_info.type.tensor_type.elem_type != onnx.TensorProto.FLOAT
        or (weights and i > 0)
    }
    try:
        while True:
            try:
                imported = import_onnx(_with_constants(case, constant))
                break
            except DiagnosticError as err:
                index = _needed_input(case, err)
                if index is None or index in constant:
                    return Result(case, "refused", " ".join(str(err).split()))
                constant.add(index)
        feeds = tuple(
            np.asarray(value, np.float32)
            for i, value in enumerate(case.inputs)
            if i not in constant
        )
        got = reference.run(imported.module, imported.weights, list(feeds))
    except Exception as err:  # noqa: BLE001 - a crash is what is being counted
        return Result(case, "crash", f"{type(err).__name__}: {' '.join(str(err).split())[:300]}")
    why = close(got, case.outputs)
    if why is not None:
        return Result(case, "wrong", why, imported, feeds)
    return Result(case, "pass", "", imported, feeds)
