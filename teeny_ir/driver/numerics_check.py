"""``--verify-numerics-each``: the first pass that changes what the program computes.

As ``--verify-each`` checks that every pass leaves valid IR, `NumericsChecker`
checks that every pass leaves IR computing the same numbers (the idea of
Inductor's accuracy minifier). Before the first pass it draws inputs and
weights for ``@forward`` from a seed (`draw`) and runs the module in the numpy
reference interpreter (`teeny_ir.reference.run`) once, the baseline. After
each pass that changed the IR (its printed form differs from before it) it
runs the new module and compares its outputs with the outputs before the pass
and with the baseline under the project's tolerance rule (`teeny_ir.testing`:
``max|got - ref| <= tol * max(1, max|ref|)``, ``tol`` 1e-4 by default, the
models' tolerance). The first pass whose outputs leave it is an error::

    m.mlir:13:10: error: numerics changed by pass 'fuse-epilogues': max |diff| 0.31 > 0.0001 * 2.1 at output 0

located at the op whose results move first (a trace of the module before
the pass against a trace of the module after it, each op matched by its
provenance: a fused op stands for the last op it fuses), with notes naming
the ops the pass created, erased and modified (up to five), and the pipeline
stops there, as after a failed verification. Outputs a pass appends (the
gradients of insert-backward) are new: only the ones both sides have are
compared; a pass that drops outputs is an error.

The reference runs the graph dialect. After a pass whose output it cannot run
(lower-graph-to-kernel: kernel ops) the check stops, with one remark naming
that pass and the op; a module it cannot run before any pass is an error
saying why. Passes in `REBASELINE` change the computation by design
(train-mode: batch statistics); their outputs become the new baseline, with a
remark.

Costs: one interpretation per pass that changed the IR, none for a pass that
did not; the outputs are cached by the printed IR's hash, so IR seen before
is not run again. Reference runs are charged to ``(numerics check)`` rows
of ``--mlir-timing``.

Python API, beside the flags::

    from teeny_ir.driver.numerics_check import NumericsChecker
    from teeny_ir.driver.pass_manager import Instrumentation, PassManager

    checker = NumericsChecker(seed=0, tol=1e-4)
    PassManager.parse("fuse-epilogues,fuse-pointwise",
                      Instrumentation(extra=[checker])).run(module)
"""

from __future__ import annotations

import hashlib
import math
import time
import warnings
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, TensorType, i64
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation

from teeny_ir.core.diagnostics import (
    Diagnostic,
    DiagnosticError,
    Severity,
    engine_of,
    loc_of,
    provenance,
)
from teeny_ir.driver.instrumentation import (
    PassInstrumentation,
    PassRun,
    PipelineRun,
    _modified,
    _OpState,
)
from teeny_ir.driver.instrumentation import _state as _op_state
from teeny_ir.testing import REDUCTION_TOL, Comparison, compare

if TYPE_CHECKING:
    from teeny_ir.driver.instrumentation import Timing
    from teeny_ir.driver.pass_manager import PassInternalError

Array = np.ndarray[Any, np.dtype[Any]]
_T = TypeVar("_T")

DEFAULT_SEED = 0
DEFAULT_TOL = REDUCTION_TOL
"""The models' tolerance (1e-4): passes rewrite reductions (convolutions, norms)."""
DYNAMIC_BATCH = 2
"""The batch drawn for a ``?`` batch dimension (2: a batch bug shows, the run stays cheap)."""
MAX_CHANGED_NOTES = 5

REBASELINE: Mapping[str, str] = {
    "train-mode": "it puts batch norms in training form (batch statistics)",
}
"""Passes that change what the program computes by design, and why; the
checker takes their outputs as the new baseline instead of comparing them."""


class _Moved(Exception):
    """Stops the traced run at the first op whose results left the tolerance."""


# --- drawing inputs and weights ------------------------------------------------------------


def forward_of(module: Operation) -> FuncOp:
    """``func.func @forward`` of ``module`` (the function the reference runs); the
    error, when there is none, is located at the module's first op."""
    ops = list(module.regions[0].block.ops) if module.regions else []
    for op in ops:
        if isinstance(op, FuncOp) and op.sym_name.data == "forward":
            return op
    where = loc_of(ops[0]) if ops else None
    raise DiagnosticError.single(
        "the module has no func.func @forward to run", where or loc_of(module)
    )


def _weight_roles(forward: FuncOp) -> dict[str, str]:
    """Weight name -> its batch-norm role (gamma, beta, mean, var) or ``derived``,
    from the batch norms and the derivations of fused ops that read it."""
    from dialects.graph.conv import FusedConv2dOp
    from dialects.graph.norm import BatchNormOp
    from dialects.graph.param import ParamOp

    roles: dict[str, str] = {}
    for op in forward.walk():
        if isinstance(op, BatchNormOp):
            pairs = zip(
                ("gamma", "beta", "mean", "var"),
                (op.gamma, op.beta, op.running_mean, op.running_var),
                strict=True,
            )
            for role, value in pairs:
                if isinstance(value.owner, ParamOp):
                    roles[value.owner.param_name.data] = role
        elif isinstance(op, FusedConv2dOp):
            for attr in (op.scale, op.shift):
                for role, name in attr.data.roles().items():
                    roles.setdefault(name, role)
    return roles


def _declared_weights(forward: FuncOp) -> dict[str, tuple[int, ...]]:
    """Every weight ``@forward`` reads and its shape: its ``graph.param`` ops (not
    the ``zero_default`` ones, which read as zeros when absent: optimizer state)
    and the sources of fused ops' derivations (in the derivation's shape, which
    every kind of derivation accepts)."""
    from dialects.graph.conv import FusedConv2dOp
    from dialects.graph.param import ParamOp

    shapes: dict[str, tuple[int, ...]] = {}
    for op in forward.walk():
        if isinstance(op, ParamOp) and not op.zero_default:
            assert isinstance(op.result.type, TensorType)  # verified
            shapes.setdefault(op.param_name.data, tuple(op.result.type.get_shape()))
        elif isinstance(op, FusedConv2dOp):
            for attr in (op.scale, op.shift):
                derivation = attr.data
                for name in derivation.sources:
                    shapes.setdefault(name, derivation.shape)
    return shapes


def _rng(seed: int, label: str) -> np.random.Generator:
    """A generator for one weight or input: its values depend on the seed and its
    own name only, not on what else the module declares."""
    return np.random.default_rng([seed, zlib.crc32(label.encode("utf-8"))])


def _draw_weight(name: str, shape: tuple[int, ...], role: str | None, seed: int) -> Array:
    """Batch-norm scales and variances in [0.5, 1.5] (a variance must be
    positive); other tensors of rank 2 and up (convolution and linear weights)
    uniform with standard deviation 1/sqrt(fan-in), ``fan-in`` = the product of
    the dimensions after the first, which keeps activations of order one through
    a deep network; the rest (biases, shifts, means) in [-0.5, 0.5]."""
    rng = _rng(seed, name)
    if role in ("gamma", "var"):
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)
    if len(shape) >= 2:
        bound = math.sqrt(3.0 / max(1, math.prod(shape[1:])))
        return rng.uniform(-bound, bound, shape).astype(np.float32)
    return rng.uniform(-0.5, 0.5, shape).astype(np.float32)


def _class_count(forward: FuncOp, index: int) -> int:
    """How many classes an i64 argument indexes: the logits' last dimension of
    the cross entropies reading it as targets (the smallest), else 2."""
    from dialects.graph.reduce import CrossEntropyBackwardOp, CrossEntropyOp

    counts: list[int] = []
    for use in forward.body.block.args[index].uses:
        op = use.operation
        if isinstance(op, CrossEntropyOp | CrossEntropyBackwardOp) and use.index == 1:
            logits = op.logits.type
            if isinstance(logits, TensorType) and logits.get_shape()[-1] != DYNAMIC_INDEX:
                counts.append(logits.get_shape()[-1])
    return min(counts, default=2)


def _draw_inputs(forward: FuncOp, seed: int, batch: int) -> list[Array]:
    """One array per ``@forward`` argument: a ``?`` batch dimension is ``batch``;
    f32 inputs standard normal, i64 ones class indices in ``[0, classes)``."""
    inputs: list[Array] = []
    for index, type_ in enumerate(forward.function_type.inputs.data):
        if not isinstance(type_, TensorType):
            raise DiagnosticError.single(
                f"argument {index} of @forward is {type_}, not a tensor: cannot draw it",
                loc_of(forward),
            )
        shape = list(type_.get_shape())
        for dim, size in enumerate(shape):
            if size != DYNAMIC_INDEX:
                continue
            if dim != 0:
                raise DiagnosticError.single(
                    f"argument {index} of @forward has a dynamic dimension {dim} that is "
                    "not the batch: cannot draw it",
                    loc_of(forward),
                )
            shape[dim] = batch
        rng = _rng(seed, f"input {index}")
        if type_.element_type == i64:
            inputs.append(rng.integers(0, _class_count(forward, index), shape, dtype=np.int64))
        else:
            inputs.append(rng.standard_normal(shape).astype(np.float32))
    return inputs


def draw(
    module: Operation, seed: int = DEFAULT_SEED, batch: int = DYNAMIC_BATCH
) -> tuple[dict[str, Array], list[Array]]:
    """The weights (state-dict name -> array) and inputs (in argument order) the
    checker runs ``module``'s ``@forward`` on: the same for the same seed.
    Raises `DiagnosticError` when there is no ``@forward`` or an argument cannot
    be drawn."""
    forward = forward_of(module)
    roles = _weight_roles(forward)
    weights = {
        name: _draw_weight(name, shape, roles.get(name), seed)
        for name, shape in _declared_weights(forward).items()
    }
    return weights, _draw_inputs(forward, seed, batch)


# --- what the reference can run ------------------------------------------------------------


def uninterpretable(module: Operation) -> tuple[Operation, str] | None:
    """The first op of ``@forward`` the reference interpreter has no semantics
    for, and why (None when it can run every op, or there is no ``@forward``:
    `teeny_ir.reference.run` reports that)."""
    from dialects.graph.param import ParamOp
    from teeny_ir.core.facets import OptOut
    from teeny_ir.reference import SEMANTICS
    from teeny_ir.reference.semantics import missing

    try:
        forward = forward_of(module)
    except DiagnosticError:
        return None
    for op in forward.body.block.ops if forward.body.blocks else ():
        if isinstance(op, ParamOp | ReturnOp):
            continue  # `reference.run` binds and returns these itself
        semantics = SEMANTICS.lookup(type(op))
        if semantics is None:
            return op, missing(op.name)
        if isinstance(semantics, OptOut):
            return op, semantics.reason
    return None


# --- the instrumentation -------------------------------------------------------------------


@dataclass
class _State:
    """The checker's view of one pipeline run on one root op."""

    root: Operation
    weights: dict[str, Array]
    inputs: list[Array]
    baseline: list[Array]
    """The outputs the comparisons go back to: the input's (or a rebaselining pass's)."""
    outputs: list[Array]
    """The outputs of the IR before the running pass."""
    module: Operation
    """A copy of the IR those outputs are of (traced when a pass moves them)."""
    digest: str
    cache: dict[str, list[Array]] = field(default_factory=dict[str, list[Array]])
    stopped: bool = False
    snapshots: list[dict[int, _OpState]] = field(default_factory=list[dict[int, _OpState]])


class NumericsChecker(PassInstrumentation):
    """Runs the module in the reference interpreter before the pipeline and after
    every pass that changed it; the first pass whose outputs leave the tolerance
    is a located `DiagnosticError` (see the module docstring).

    ``seed`` draws the inputs and weights (`draw`), ``tol`` is the tolerance
    rule's (1e-4), ``batch`` the size of a dynamic batch (2). ``timing``, when
    given, gets a ``(numerics check)`` row. After a run, ``interpretations``
    counts the reference runs, ``compared`` names the passes whose outputs were
    compared, ``unchanged`` the passes skipped because they changed nothing and
    ``stopped_after`` the pass after which the reference could not run the IR
    (or None)."""

    def __init__(
        self,
        seed: int = DEFAULT_SEED,
        tol: float = DEFAULT_TOL,
        *,
        batch: int = DYNAMIC_BATCH,
        timing: Timing | None = None,
        rebaseline: Mapping[str, str] = REBASELINE,
    ) -> None:
        if seed < 0:
            raise ValueError(f"the seed must be >= 0, got {seed}")
        if not (math.isfinite(tol) and tol > 0):
            raise ValueError(f"the tolerance must be a positive number, got {tol}")
        if batch < 1:
            raise ValueError(f"the batch must be >= 1, got {batch}")
        self.seed = seed
        self.tol = tol
        self.batch = batch
        self.timing = timing
        self.rebaseline = rebaseline
        self.interpretations = 0
        self.compared: list[str] = []
        self.unchanged: list[str] = []
        self.stopped_after: str | None = None
        self._state: _State | None = None

    # hooks

    def run_before_pipeline(self, run: PipelineRun) -> None:
        if not run.path:  # a new run of the whole pipeline (a new module)
            self._state = None

    def run_before_pass(self, run: PassRun) -> None:
        state = self._state
        if state is None or state.root is not run.root:
            state = self._state = self._timed(run, lambda: self._start(run))
        if not state.stopped:
            state.snapshots.append({id(op): _op_state(op) for op in run.op.walk()})

    def run_after_pass(self, run: PassRun) -> None:
        state = self._state
        if state is None or state.stopped or not state.snapshots:
            return
        snapshot = state.snapshots.pop()
        self._timed(run, lambda: self._check(run, state, snapshot))

    def run_after_pass_failed(
        self, run: PassRun, error: DiagnosticError | PassInternalError
    ) -> None:
        if self._state is not None and self._state.snapshots:
            self._state.snapshots.pop()

    # the checks

    def _timed(self, run: PassRun, work: Callable[[], _T]) -> _T:
        start = time.perf_counter()
        try:
            return work()
        finally:
            if self.timing is not None:
                self.timing.add((*run.path[:-1], "(numerics check)"), time.perf_counter() - start)

    def _start(self, run: PassRun) -> _State:
        """Draw the inputs and weights and run the input once (the baseline)."""
        from teeny_ir.ir.parsing import print_module

        root = run.root
        problem = uninterpretable(root)
        if problem is not None:
            op, reason = problem
            raise DiagnosticError.single(
                f"cannot check numerics of the input: {reason}", loc_of(op)
            )
        try:
            weights, inputs = draw(root, self.seed, self.batch)
            outputs = self._interpret(root, weights, inputs)
        except DiagnosticError as err:
            first = err.diagnostics[0]
            raise DiagnosticError.single(
                f"cannot check numerics of the input: {first.message}", first.location
            ) from None
        except Exception as err:  # noqa: BLE001 - an interpreter bug: one line, not a traceback
            raise DiagnosticError.single(
                "cannot check numerics of the input: the reference interpreter failed: "
                f"{type(err).__name__}: {err}",
                loc_of(root),
            ) from None
        for index, output in enumerate(outputs):
            if output.dtype.kind == "f" and not np.isfinite(output).all():
                bad = int(np.count_nonzero(~np.isfinite(output)))
                raise DiagnosticError.single(
                    f"cannot check numerics of the input: its output {index} is not finite "
                    f"({bad} of {output.size} elements) on the inputs and weights of seed "
                    f"{self.seed}",
                    loc_of(forward_of(root)),
                )
        digest = _digest(print_module(root))
        return _State(
            root, weights, inputs, outputs, outputs, root.clone(), digest, {digest: outputs}
        )

    def _interpret(
        self, module: Operation, weights: Mapping[str, Array], inputs: Sequence[Array]
    ) -> list[Array]:
        from teeny_ir import reference

        assert isinstance(module, ModuleOp)
        self.interpretations += 1
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)  # non-finite values are compared
            return reference.run(module, weights, inputs)

    def _check(self, run: PassRun, state: _State, snapshot: dict[int, _OpState]) -> None:
        from teeny_ir.driver.pass_manager import PassInternalError
        from teeny_ir.ir.parsing import print_module

        digest = _digest(print_module(run.root))
        if digest == state.digest:
            self.unchanged.append(run.name)
            return
        problem = uninterpretable(run.root)
        if problem is not None:
            op, reason = problem
            state.stopped = True
            self.stopped_after = run.name
            engine_of(run.ctx).remark(
                f"numerics not checked after pass '{run.name}' and the passes after it: {reason}",
                op,
            )
            return
        outputs = state.cache.get(digest)
        if outputs is None:
            try:
                outputs = self._interpret(run.root, state.weights, state.inputs)
            except DiagnosticError as err:
                first = err.diagnostics[0]
                raise DiagnosticError(
                    [
                        Diagnostic(
                            Severity.ERROR,
                            f"pass '{run.name}' left IR the reference interpreter rejects: "
                            f"{first.message}",
                            first.location,
                            list(first.notes),
                        ),
                        *err.diagnostics[1:],
                    ]
                ) from None
            except Exception as err:  # the pass left IR that crashes the interpreter
                raise PassInternalError(
                    run.name,
                    f"the reference interpreter crashed on its output: {type(err).__name__}: {err}",
                ) from err
            state.cache[digest] = outputs
        if run.name in self.rebaseline:
            engine_of(run.ctx).remark(
                f"numerics not compared across pass '{run.name}': "
                f"{self.rebaseline[run.name]}; later passes are compared with its outputs",
                forward_of(run.root),
            )
            state.baseline = outputs
        else:
            self.compared.append(run.name)
            self._compare(run, state, snapshot, outputs, state.outputs, "the IR before it")
            if state.baseline is not state.outputs:
                self._compare(run, state, snapshot, outputs, state.baseline, "the pipeline's input")
        state.outputs, state.digest = outputs, digest
        state.module = run.root.clone()

    def _compare(
        self,
        run: PassRun,
        state: _State,
        snapshot: dict[int, _OpState],
        got: list[Array],
        want: list[Array],
        against: str,
    ) -> None:
        """Raise the located error if ``got`` leaves the tolerance around ``want``."""
        if len(got) < len(want):
            raise self._failure(
                run,
                state,
                snapshot,
                f"numerics changed by pass '{run.name}': it left {len(got)} outputs, "
                f"{against} has {len(want)}",
                against,
            )
        common = len(want)
        result = compare(got[:common], want[:common], self.tol)
        if result.ok:
            return
        index, worst = next((i, c) for i, c in enumerate(result.outputs) if not c.ok)
        raise self._failure(
            run,
            state,
            snapshot,
            f"numerics changed by pass '{run.name}': {_difference(worst, self.tol)} at output "
            f"{index}",
            against,
        )

    def _failure(
        self,
        run: PassRun,
        state: _State,
        snapshot: dict[int, _OpState],
        message: str,
        against: str,
    ) -> DiagnosticError:
        """The error naming the pass, located at the first op whose results moved
        (or the first op the pass changed), with notes on the ops it changed."""
        changes = _changes(snapshot, run.op)
        moved = self._first_moved(state, run.root) if against == "the IR before it" else None
        changed_ops = [op for _, op in changes]
        where: Operation | None = None
        if moved is not None and moved[0] in changed_ops:
            where = moved[0]
        elif changes:
            where = changes[0][1]
        function = loc_of(forward_of(run.root))
        error = Diagnostic(Severity.ERROR, message, loc_of(where) or function)
        first = ""
        if moved is not None:
            op, result, comparison = moved
            first = (
                f"its result {result} is the first value to move, "
                f"{_difference(comparison, self.tol)}"
            )
            if op is not where:
                error.attach_note(f"'{op.name}': {first}", loc_of(op))
        ordered = sorted(changes, key=lambda change: change[1] is not where)
        for verb, op in ordered[:MAX_CHANGED_NOTES]:
            moved_here = f": {first}" if first and op is where else ""
            error.attach_note(f"the pass {verb} '{op.name}'{_sources(op)}{moved_here}", loc_of(op))
        if len(changes) > MAX_CHANGED_NOTES:
            error.attach_note(
                f"... and {len(changes) - MAX_CHANGED_NOTES} more ops it changed", function
            )
        error.attach_note(
            f"compared with {against}, on inputs and weights drawn from seed {self.seed}"
            f" (a dynamic batch is {self.batch}; tolerance {self.tol:g} * max(1, max|ref|))",
            function,
        )
        return DiagnosticError([error])

    def _first_moved(
        self, state: _State, after: Operation
    ) -> tuple[Operation, int, Comparison] | None:
        """Trace the IR before the pass and after it: the first op (in order) of the
        new IR whose results leave the tolerance around those of the op of the old
        IR it stands for (the same last source location), if any."""
        from teeny_ir import reference

        before_values: dict[str, list[Array]] = {}

        def keep(op: Operation, values: list[Array]) -> None:
            key = _value_key(op)
            if key is not None:
                before_values[key] = values  # the last op of a key gives its value

        final: dict[str, Operation] = {}
        for op in forward_of(after).body.block.ops:
            if (key := _value_key(op)) is not None:
                final[key] = op
        found: list[tuple[Operation, int, Comparison]] = []

        def check(op: Operation, values: list[Array]) -> None:
            key = _value_key(op)
            if key is None or final.get(key) is not op or key not in before_values:
                return
            old = before_values[key]
            if len(old) != len(values):
                return
            for index, (got, want) in enumerate(zip(values, old, strict=True)):
                if got.shape != want.shape:
                    return
                comparison = compare(got, want, self.tol)
                if not comparison.ok:
                    found.append((op, index, comparison))
                    raise _Moved

        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            try:
                self.interpretations += 2
                assert isinstance(state.module, ModuleOp) and isinstance(after, ModuleOp)
                reference.run(state.module, state.weights, state.inputs, trace=keep)
                reference.run(after, state.weights, state.inputs, trace=check)
            except _Moved:
                return found[0]
            except Exception:  # noqa: BLE001 - the outputs already ran: a trace is a bonus
                return None
        return None


# --- helpers -------------------------------------------------------------------------------


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _difference(comparison: Comparison, tol: float) -> str:
    """``max |diff| 0.31 > 0.0001 * 2.1`` (or why the values cannot be compared)."""
    error, bound = comparison.max_error, comparison.bound
    if not (math.isfinite(error) and math.isfinite(bound) and error > bound):
        return comparison.reason or "within the tolerance"  # shapes, NaN or inf
    return f"max |diff| {comparison.max_error:.3g} > {tol:g} * {comparison.bound / tol:.3g}"


def _value_key(op: Operation) -> str | None:
    """Where the value an op computes comes from: the location of the last op its
    location records (a fused op's results are its last source's), or None."""
    return provenance(op, op.name)[-1][1] or None


def _sources(op: Operation) -> str:
    """`` (from graph.conv2d, graph.batch_norm, graph.silu)`` for a fused op."""
    names = [name for name, _ in provenance(op, op.name)]
    return f" (from {', '.join(names)})" if len(names) > 1 else ""


def _changes(before: dict[int, _OpState], op: Operation) -> list[tuple[str, Operation]]:
    """What a pass did to ``op`` (from a snapshot of it before the pass): the ops
    it created or modified, in order, then those it erased."""
    changes: list[tuple[str, Operation]] = []
    kept: set[int] = set()
    for current in op.walk():
        old = before.get(id(current))
        if old is None or old[0] is not current:
            changes.append(("created", current))
            continue
        kept.add(id(current))
        if _modified(old, _op_state(current)):
            changes.append(("modified", current))
    changes += [("erased", old[0]) for key, old in before.items() if key not in kept]
    return changes
