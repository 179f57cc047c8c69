"""The reference interpreter: executable numpy semantics for every graph op.

`run` executes ``func.func @forward`` op by op and is the oracle of every
numerics test. Each op computes in float64 and rounds its results to float32
once, so the reference is exact to float32 rounding per op. Values whose
declared element type is i64 (`graph.cross_entropy`'s targets) are int64
arrays instead, inputs included. Fused ops evaluate their recorded derivations
with `teeny_ir.core.derivations.evaluate`, the single implementation of the BN fold.

Bad input raises `teeny_ir.DiagnosticError`: a module without ``@forward``,
inputs of the wrong count, shape, batch or dtype, weights that are missing or
mis-shaped (a ``graph.param`` marked ``zero_default`` may be missing: it
reads as zeros), or that make a derivation non-finite (a negative running variance
under the BN fold; likewise for an inference `graph.batch_norm` reading a
``graph.param`` variance) - all of them listed in one error, each located at
the op that reads them - and ops the interpreter has no semantics for (named,
with their location). Extra weights are ignored.

`run` executes one rank of a data-parallel program: its ``collective``
argument performs the cross-rank reduction of each `graph.all_reduce`
(`teeny_ir.reference.collective`, which also simulates a process group with
threads); without one, only an all-reduce over a single rank runs.

Each op's semantics is a function registered with `semantics.semantics` in the
module of this package named like its dialect module (``conv.py`` for
``dialects/graph/conv.py``); the ops of the pointwise table share one rule that
evaluates the table. `SEMANTICS` (a `teeny_ir.core.facets.Facet`) says what
runs for an op class (or why nothing needs to); the modules are found
automatically, once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, TensorType, i64
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Operation, SSAValue

from dialects.graph.conv import FusedConv2dOp
from dialects.graph.norm import BatchNormOp
from dialects.graph.param import ParamOp
from teeny_ir.core.derivations import Derivation, DerivationError, evaluate
from teeny_ir.core.diagnostics import Diagnostic, DiagnosticError, Severity, loc_of
from teeny_ir.core.facets import OptOut
from teeny_ir.reference.collective import Collective, process_group
from teeny_ir.reference.common import Array, Weights
from teeny_ir.reference.common import error as _error
from teeny_ir.reference.semantics import SEMANTICS, missing, not_executed

__all__ = ["SEMANTICS", "run"]

not_executed("bound by `run` to its weight, checked against the weights up front", ParamOp)


def run(
    module: ModuleOp,
    weights: Weights,
    inputs: Sequence[Array],
    trace: Callable[[Operation, list[Array]], None] | None = None,
    *,
    collective: Collective | None = None,
) -> list[Array]:
    """Run ``@forward`` on ``inputs`` (in argument order: float32 arrays, int64
    for i64 arguments) with ``weights`` (state-dict name -> array); return its
    results in return order, as float32 arrays (int64 for i64 results).
    ``trace``, when given, is called with each executed op and its results
    (the divergence finder compares them with a plan's launches).
    ``collective`` runs the `graph.all_reduce` ops, as this run's rank of a
    process group (`teeny_ir.reference.collective`)."""
    from teeny_ir.ir.verifier import verify_ops

    errors = verify_ops(module)
    if errors:
        raise DiagnosticError(errors)
    forward = _find_forward(module)
    block = forward.body.block
    env: dict[SSAValue, Array] = dict(zip(block.args, _check_inputs(forward, inputs), strict=True))
    params = _check_weights(forward, weights)
    with process_group(collective):
        for op in block.ops:
            if isinstance(op, ReturnOp):
                return [
                    np.array(env[value], dtype=_dtype(value.type), order="C")
                    for value in op.arguments
                ]
            if isinstance(op, ParamOp):
                env[op.result] = params[op.param_name.data]
                continue
            semantics = SEMANTICS.lookup(type(op))
            if semantics is None or isinstance(semantics, OptOut):
                raise _error(missing(op.name) if semantics is None else semantics.reason, op)
            results = semantics(op, [env[value] for value in op.operands], weights)
            for result, value in zip(op.results, results, strict=True):
                # asarray, not ascontiguousarray, which makes rank-0 results rank 1
                env[result] = np.asarray(value, dtype=_dtype(result.type), order="C")
            if trace is not None:
                trace(op, [env[result] for result in op.results])
    raise _error("@forward has no func.return", forward)


def _find_forward(module: ModuleOp) -> FuncOp:
    for op in module.ops:
        if isinstance(op, FuncOp) and op.sym_name.data == "forward":
            if len(op.body.blocks) != 1:
                raise _error("@forward must have exactly one block", op)
            return op
    raise _error("the module has no func.func @forward to run", module)


def _dtype(type_: Attribute) -> type[np.generic]:
    """The numpy dtype of a value of IR type ``type_``: int64 for i64 tensors, else float32."""
    if isinstance(type_, TensorType) and type_.element_type == i64:
        return np.int64
    return np.float32


def _format(shape: Iterable[int]) -> str:
    return "[" + ", ".join("?" if d == DYNAMIC_INDEX else str(d) for d in shape) + "]"


def _check_inputs(forward: FuncOp, inputs: Sequence[Array]) -> list[Array]:
    """Every problem with the inputs (count, type, dtype, shape, batch) in one error."""
    types = forward.function_type.inputs.data
    if len(inputs) != len(types):
        raise _error(f"@forward takes {len(types)} inputs, got {len(inputs)}", forward)
    problems: list[str] = []
    batches: dict[int, int] = {}
    for index, (value, type_) in enumerate(zip(inputs, types, strict=True)):
        if not isinstance(type_, TensorType):
            problems.append(f"argument {index} of @forward is {type_}, not a tensor")
            continue
        expected = type_.get_shape()
        if not isinstance(value, np.ndarray):
            problems.append(f"input {index} is a {type(value).__name__}, not a numpy array")
            continue
        if value.dtype != _dtype(type_):
            problems.append(
                f"input {index} has dtype {value.dtype}, expected {np.dtype(_dtype(type_))}"
            )
        if len(value.shape) != len(expected) or any(
            want not in (DYNAMIC_INDEX, got)
            for want, got in zip(expected, value.shape, strict=True)
        ):
            problems.append(
                f"input {index} has shape {list(value.shape)}, expected {_format(expected)}"
            )
        elif expected and expected[0] == DYNAMIC_INDEX:
            if value.shape[0] < 1:
                problems.append(f"input {index} has batch size {value.shape[0]}, expected >= 1")
            else:
                batches[index] = value.shape[0]
    if len(set(batches.values())) > 1:
        sizes = ", ".join(f"input {i}: {b}" for i, b in batches.items())
        problems.append(f"inputs disagree on the batch size ({sizes})")
    if problems:
        raise DiagnosticError(Diagnostic(Severity.ERROR, p, loc_of(forward)) for p in problems)
    return [np.asarray(value) for value in inputs]


def _derivations(forward: FuncOp) -> list[tuple[Operation, Derivation]]:
    found: list[tuple[Operation, Derivation]] = []
    for op in forward.walk():
        if isinstance(op, FusedConv2dOp):
            found += [(op, op.scale.data), (op, op.shift.data)]
    return found


def _check_variance(
    op: BatchNormOp, params: dict[str, Array], problem: Callable[[str, Operation], None]
) -> None:
    """An inference batch norm whose running variance is a weight: ``var + eps``
    must be positive (the fused form's `evaluate` refuses the same weights)."""
    source = op.running_var.owner
    if not isinstance(source, ParamOp) or source.param_name.data not in params:
        return
    name = source.param_name.data
    var = params[name].astype(np.float64)
    with np.errstate(invalid="ignore"):
        bad = np.flatnonzero(~(var + op.eps > 0))
    if bad.size:
        problem(
            f"batch_norm reads running variance {name!r}, which is {var.reshape(-1)[bad[0]]:g} "
            f"at index {int(bad[0])} ({bad.size} of {var.size} entries): variance + eps "
            f"({op.eps:g}) must be positive",
            op,
        )


def _check_weights(forward: FuncOp, weights: Weights) -> dict[str, Array]:
    """The float32 array of each `graph.param` (zeros for a missing ``zero_default``
    one); every missing or mis-shaped weight (of a param or a derivation source)
    is listed in one error."""
    problems: dict[str, Diagnostic] = {}

    def problem(message: str, op: Operation) -> None:
        problems.setdefault(message, Diagnostic(Severity.ERROR, message, loc_of(op)))

    params: dict[str, Array] = {}
    for op in forward.walk():
        if not isinstance(op, ParamOp):
            continue
        name = op.param_name.data
        assert isinstance(op.result.type, TensorType)  # verified
        expected = op.result.type.get_shape()
        if name not in weights:
            if op.zero_default:  # state that starts at zero (an optimizer's)
                params[name] = np.zeros(expected, np.float32)
            else:
                problem(f"weight '{name}' is missing", op)
            continue
        value = np.asarray(weights[name])
        if value.dtype.kind != "f":
            problem(f"weight '{name}' has dtype {value.dtype}, expected float32", op)
        elif value.shape != expected:
            problem(f"weight '{name}' has shape {list(value.shape)}, expected {list(expected)}", op)
        else:
            params[name] = value.astype(np.float32)
    shapes = {name: np.shape(weights[name]) for name in weights}
    for op, derivation in _derivations(forward):
        sources = derivation.check_sources(shapes)
        for message in sources:
            problem(message, op)
        if not sources:
            try:
                evaluate(derivation, weights)  # a non-finite result names its weights
            except DerivationError as err:
                problem(str(err), op)
    for op in forward.walk():
        if isinstance(op, BatchNormOp) and not op.training:
            _check_variance(op, params, problem)
    if problems:
        raise DiagnosticError(problems.values())
    return params
