"""The reference interpreter: executable numpy semantics for every graph op.

`run` executes ``func.func @forward`` op by op and is the oracle of every
numerics test. Each op computes in float64 and rounds its results to float32
once, so the reference is exact to float32 rounding per op. Values whose
declared element type is i64 (`graph.cross_entropy`'s targets) are int64
arrays instead, inputs included. Fused ops evaluate their recorded derivations
with `teeny_ir.derivations.evaluate`, the single implementation of the BN fold.

Bad input raises `teeny_ir.DiagnosticError`: a module without ``@forward``,
inputs of the wrong count, shape, batch or dtype, weights that are missing or
mis-shaped (all of them listed in one error), and ops the interpreter has no
semantics for (named, with their location). Extra weights are ignored.

Semantics of op groups live in ``ops_<group>.py`` modules of this package, each
exporting ``SEMANTICS: dict[op class, (op, args, weights) -> results]``; they
are found automatically (`semantics_table`).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, TensorType, i64
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Operation, SSAValue

from dialects.graph import (
    AddOp,
    BatchNormOp,
    BiasAddOp,
    Conv2dOp,
    FusedConv2dOp,
    MulOp,
    ParamOp,
    ReluOp,
    SigmoidOp,
    SiluOp,
)
from teeny_ir.derivations import Derivation, evaluate
from teeny_ir.diagnostics import Diagnostic, DiagnosticError, Severity, loc_of

Array = np.ndarray[Any, np.dtype[Any]]
Weights = Mapping[str, Any]


def run(module: ModuleOp, weights: Weights, inputs: Sequence[Array]) -> list[Array]:
    """Run ``@forward`` on ``inputs`` (in argument order: float32 arrays, int64
    for i64 arguments) with ``weights`` (state-dict name -> array); return its
    results in return order, as float32 arrays (int64 for i64 results)."""
    from teeny_ir.verifier import verify_ops

    errors = verify_ops(module)
    if errors:
        raise DiagnosticError(errors)
    forward = _find_forward(module)
    block = forward.body.block
    env: dict[SSAValue, Array] = dict(zip(block.args, _check_inputs(forward, inputs), strict=True))
    params = _check_weights(forward, weights)
    for op in block.ops:
        if isinstance(op, ReturnOp):
            return [
                np.array(env[value], dtype=_dtype(value.type), order="C") for value in op.arguments
            ]
        if isinstance(op, ParamOp):
            env[op.result] = params[op.param_name.data]
            continue
        semantics = semantics_table().get(type(op))
        if semantics is None:
            raise _error(f"the reference interpreter has no semantics for '{op.name}'", op)
        results = semantics(op, [env[value] for value in op.operands], weights)
        for result, value in zip(op.results, results, strict=True):
            # asarray, not ascontiguousarray, which makes rank-0 results rank 1
            env[result] = np.asarray(value, dtype=_dtype(result.type), order="C")
    raise _error("@forward has no func.return", forward)


def _error(message: str, where: Operation | None = None) -> DiagnosticError:
    return DiagnosticError.single(message, loc_of(where))


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


def _check_weights(forward: FuncOp, weights: Weights) -> dict[str, Array]:
    """The float32 array of each `graph.param`; every missing or mis-shaped weight
    (of a param or a derivation source) is listed in one error."""
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
        for message in derivation.check_sources(shapes):
            problem(message, op)
    if problems:
        raise DiagnosticError(problems.values())
    return params


# Op semantics: (op, operand arrays, weights) -> result arrays, computed in float64.

Semantics = Callable[[Any, list[Array], Weights], list[Array]]


def _channel(vector: Array, rank: int) -> Array:
    """A per-channel vector [C] shaped to broadcast along dimension 1 of a rank-``rank`` tensor."""
    return np.asarray(vector, dtype=np.float64).reshape((-1,) + (1,) * (rank - 2))


def _conv2d(
    x: Array,
    w: Array,
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> Array:
    """Grouped, strided, dilated, per-side padded cross-correlation (float64, im2col)."""
    top, left, bottom, right = padding
    x64 = np.pad(np.asarray(x, np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    w64 = np.asarray(w, np.float64)
    batch, channels, height, width = x64.shape
    out_channels, group_channels, kernel_h, kernel_w = w64.shape
    out_h = (height - dilation[0] * (kernel_h - 1) - 1) // strides[0] + 1
    out_w = (width - dilation[1] * (kernel_w - 1) - 1) // strides[1] + 1
    columns = np.empty((batch, channels, kernel_h, kernel_w, out_h, out_w))
    for p in range(kernel_h):
        for q in range(kernel_w):
            rows = slice(
                p * dilation[0], p * dilation[0] + (out_h - 1) * strides[0] + 1, strides[0]
            )
            cols = slice(
                q * dilation[1], q * dilation[1] + (out_w - 1) * strides[1] + 1, strides[1]
            )
            columns[:, :, p, q] = x64[:, :, rows, cols]
    columns = columns.reshape(batch, groups, group_channels, kernel_h, kernel_w, out_h, out_w)
    grouped_w = w64.reshape(groups, out_channels // groups, group_channels, kernel_h, kernel_w)
    y: Array = np.einsum("ngcpqhw,gocpq->ngohw", columns, grouped_w, optimize=True)
    return y.reshape(batch, out_channels, out_h, out_w)


def _sigmoid(x: Array) -> Array:
    """Logistic function without overflow: only ``exp(-|x|)`` is ever computed."""
    x = np.asarray(x, np.float64)
    small = np.exp(-np.abs(x))
    y: Array = np.where(x >= 0, 1.0 / (1.0 + small), small / (1.0 + small))
    return y


_ACTIVATIONS: dict[str, Callable[[Array], Array]] = {
    "none": lambda x: x,
    "silu": lambda x: x * _sigmoid(x),
    "relu": lambda x: np.maximum(x, 0.0),
    "sigmoid": _sigmoid,
}


def _conv2d_op(op: Conv2dOp, args: list[Array], weights: Weights) -> list[Array]:
    y = _conv2d(args[0], args[1], op.strides, op.padding, op.dilation, op.groups)
    if len(args) == 3:
        y = y + _channel(args[2], 4)
    return [y]


def _fused_conv2d_op(op: FusedConv2dOp, args: list[Array], weights: Weights) -> list[Array]:
    y = _conv2d(args[0], args[1], op.strides, op.padding, op.dilation, op.groups)
    scale = evaluate(op.scale.data, weights)
    shift = evaluate(op.shift.data, weights)
    return [_ACTIVATIONS[op.activation](_channel(scale, 4) * y + _channel(shift, 4))]


def _batch_norm_op(op: BatchNormOp, args: list[Array], weights: Weights) -> list[Array]:
    x, gamma, beta, running_mean, running_var = (np.asarray(a, np.float64) for a in args)
    rank = x.ndim
    if not op.training:
        inv_std = 1.0 / np.sqrt(running_var + op.eps)
        return [
            (x - _channel(running_mean, rank)) * _channel(gamma * inv_std, rank)
            + _channel(beta, rank)
        ]
    axes = (0, *range(2, rank))
    count = x.size // x.shape[1]
    if count < 2:
        raise _error(
            f"batch_norm in training mode needs more than 1 value per channel, got {count}", op
        )
    mean = x.mean(axis=axes)
    var = x.var(axis=axes)  # biased: normalises the batch
    y = (x - _channel(mean, rank)) / np.sqrt(_channel(var, rank) + op.eps)
    y = y * _channel(gamma, rank) + _channel(beta, rank)
    momentum = op.momentum
    new_mean = (1 - momentum) * running_mean + momentum * mean
    new_var = (1 - momentum) * running_var + momentum * var * count / (count - 1)
    return [y, new_mean, new_var]


def _unary(function: Callable[[Array], Array]) -> Semantics:
    return lambda op, args, weights: [function(np.asarray(args[0], np.float64))]


def _binary(function: Callable[[Array, Array], Array]) -> Semantics:
    return lambda op, args, weights: [
        function(np.asarray(args[0], np.float64), np.asarray(args[1], np.float64))
    ]


def _bias_add_op(op: BiasAddOp, args: list[Array], weights: Weights) -> list[Array]:
    x, bias = args
    return [np.asarray(x, np.float64) + _channel(bias, x.ndim)]


_SEMANTICS: dict[type[Operation], Semantics] = {
    Conv2dOp: _conv2d_op,
    FusedConv2dOp: _fused_conv2d_op,
    BatchNormOp: _batch_norm_op,
    SiluOp: _unary(_ACTIVATIONS["silu"]),
    ReluOp: _unary(_ACTIVATIONS["relu"]),
    SigmoidOp: _unary(_sigmoid),
    AddOp: _binary(np.add),
    MulOp: _binary(np.multiply),
    BiasAddOp: _bias_add_op,
}
"""Op class -> its semantics; `ParamOp` and `func.return` are handled by `run`."""


@functools.cache
def semantics_table() -> dict[type[Operation], Semantics]:
    """`_SEMANTICS` plus the ``SEMANTICS`` table of every ``ops_*`` module of this
    package (one module per op group; each op has exactly one definition)."""
    table = dict(_SEMANTICS)
    package = Path(__file__).parent
    for info in sorted(pkgutil.iter_modules([str(package)]), key=lambda m: m.name):
        if not info.name.startswith("ops_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        group: dict[type[Operation], Semantics] = module.SEMANTICS
        for op_type, semantics in group.items():
            if op_type in table:
                raise RuntimeError(f"two reference semantics for '{op_type.name}'")
            table[op_type] = semantics
    return table
