"""`GraphBuilder`: write a graph-dialect model in Python.

One method per graph op, each returning the op's result value(s) with the
result type inferred by the op's constructor; ``input`` adds an argument of
``@forward``, ``param`` a `graph.param` named by the active scopes, ``output``
sets what ``@forward`` returns, and ``build`` returns the verified module::

    b = GraphBuilder()
    x = b.input([None, 3, 64, 64])
    with b.scope("model.0"):
        w = b.param("conv.weight", [16, 3, 3, 3])  # "model.0.conv.weight"
        y = b.silu(b.conv2d(x, w, strides=[2, 2], padding=[1, 1, 1, 1]))
    b.output(y)
    module = b.build()

Operand shapes are checked as each op is added (by the constructor's type
inference, or by verifying the op where inference does not cover every operand:
batch-norm statistics, biases, constants), so a shape error raises at once, as
a `DiagnosticError` naming the op and the scope, located at the calling line.
`build` verifies every op again (`teeny_ir.ir.verifier.verify_ops`), which also
catches what is not a shape error, such as an i64 tensor fed to an activation.
Options equal to their default are left unset (absent in the IR), so built
modules round-trip through text exactly. The builder is the op vocabulary
only: composite blocks (Conv+BN+SiLU, C2f, ...) belong to the model scripts.

Building is linear in the number of ops: no per-op walk of the function, no
printing, and tensor types of inputs and parameters are created once per shape.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from types import FrameType
from typing import Any, Literal, ParamSpec, TypeVar, overload

from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, TensorType, f32, i64
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from dialects.graph.attention import AttentionOp
from dialects.graph.collective import AllReduceOp
from dialects.graph.constant import ConstantOp
from dialects.graph.conv import Conv2dOp
from dialects.graph.elementwise import (
    DEFAULT_ALPHA,
    AbsOp,
    AddOp,
    BiasAddOp,
    CeluOp,
    CosOp,
    DivOp,
    EluOp,
    ErfOp,
    ExpOp,
    GeluOp,
    HardswishOp,
    HardtanhOp,
    LeakyReluOp,
    LogOp,
    MaximumOp,
    MinimumOp,
    MulOp,
    NegOp,
    PowOp,
    ReciprocalOp,
    ReluOp,
    SigmoidOp,
    SiluOp,
    SinOp,
    SoftplusOp,
    SoftsignOp,
    SqrtOp,
    SubOp,
    TanhOp,
)
from dialects.graph.fused_pointwise import FusedPointwiseOp, Reduction
from dialects.graph.linear import LinearOp, MatmulOp
from dialects.graph.norm import BatchNormOp
from dialects.graph.param import ParamOp
from dialects.graph.pool import AvgPool2dOp, GlobalAvgPool2dOp, MaxPool2dOp, UpsampleNearest2dOp
from dialects.graph.reduce import (
    CrossEntropyOp,
    LogSoftmaxOp,
    ReduceMaxOp,
    ReduceMeanOp,
    ReduceMinOp,
    ReduceSumOp,
    SoftmaxOp,
)
from dialects.graph.shapes import (
    DEFAULT_DILATION,
    DEFAULT_EPS,
    DEFAULT_GROUPS,
    DEFAULT_MOMENTUM,
    DEFAULT_PADDING,
    DEFAULT_STRIDES,
    check_shape,
    format_shape,
)
from dialects.graph.structure import (
    BroadcastOp,
    ConcatOp,
    FlattenOp,
    PadOp,
    ReshapeOp,
    SliceOp,
    SplitOp,
    TransposeOp,
)
from teeny_ir.core.diagnostics import DiagnosticError, SourceLoc
from teeny_ir.ir.verifier import verify_ops

Value = SSAValue
"""A tensor value of the graph being built."""

_P = ParamSpec("_P")
_OpT = TypeVar("_OpT", bound=Operation)

_DTYPES = {"f32": f32, "i64": i64}
"""Element types an input may have: i64 is for integer targets (cross_entropy)."""


def _unless_default(values: Sequence[int] | None, default: Sequence[int]) -> list[int] | None:
    """``values`` as a list, or None (the property stays absent) when default."""
    if values is None or tuple(values) == tuple(default):
        return None
    return list(values)


def _unless_equal(value: float | None, default: float) -> float | None:
    return None if value == default else value


def _is_value_name(name: str) -> bool:
    """Whether ``name`` prints as itself as an SSA name (``%model.0.conv.weight``):
    xDSL drops a ``_N`` suffix from name hints, and some names are not valid."""
    return bool(SSAValue.is_valid_name(name)) and SSAValue.extract_valid_name(name) == name


def _caller_location() -> SourceLoc | None:
    """Where the model script called the builder: the first frame outside this module."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    if frame is None:
        return None
    line, col = frame.f_lineno, 1
    positions = list(frame.f_code.co_positions())
    if frame.f_lasti // 2 < len(positions):  # the column of the call, when Python knows it
        start_line, _, start_col, _ = positions[frame.f_lasti // 2]
        if start_line is not None and start_col is not None:
            line, col = start_line, start_col + 1
    return SourceLoc(frame.f_code.co_filename, line, col)


class GraphBuilder:
    """Builds ``func.func @forward`` in a module, op by op (see the module docstring).

    A builder makes one module: after `build` it refuses further changes.
    """

    def __init__(self) -> None:
        self._block = Block()
        self._scopes: list[str] = []
        self._prefix = ""
        self._params: dict[str, ParamOp] = {}
        self._types: dict[tuple[str, tuple[int, ...]], TensorType] = {}
        self._outputs: tuple[Value, ...] | None = None
        self._built = False

    # Structure: scopes, inputs, parameters, outputs, build.

    def scope(self, name: str) -> AbstractContextManager[None]:
        """Prefix the names of the parameters declared inside with ``name.``;
        scopes nest (``model.2`` then ``m.0`` gives ``model.2.m.0.``)."""
        self._check_open()
        if not name or name.startswith(".") or name.endswith("."):
            raise self._error(f"invalid scope name '{name}': expected a non-empty dotted name")
        return self._scoped(name)

    @contextmanager
    def _scoped(self, name: str) -> Iterator[None]:
        self._scopes.append(name)
        self._prefix = ".".join(self._scopes) + "."
        try:
            yield
        finally:
            self._scopes.pop()
            self._prefix = ".".join(self._scopes) + "." if self._scopes else ""

    def input(
        self, shape: Sequence[int | None], dtype: str = "f32", *, name: str | None = None
    ) -> Value:
        """Add an argument of ``@forward`` (in call order). ``None`` or -1 as
        dimension 0 is the dynamic batch; ``dtype`` is "f32" or "i64" (integer
        targets). ``name`` is an optional SSA name hint (``%x``)."""
        self._check_open()
        if dtype not in _DTYPES:
            raise self._error(f"unsupported dtype '{dtype}' for an input: expected f32 or i64")
        dims = tuple(DYNAMIC_INDEX if d is None or d == -1 else d for d in shape)
        what = f"input {len(self._block.args)}"
        try:
            check_shape(dims, what, dynamic_batch=True)
        except VerifyException as err:
            raise self._error(str(err)) from None
        if name is not None and not SSAValue.is_valid_name(name):
            raise self._error(f"invalid input name '{name}': expected [A-Za-z_$.-][A-Za-z0-9_$.-]*")
        argument = self._block.insert_arg(self._tensor_type(dims, dtype), len(self._block.args))
        argument.name_hint = name
        return argument

    def param(self, name: str, shape: Sequence[int]) -> Value:
        """A `graph.param` named ``<scopes>.name`` of static ``shape``; declaring
        the same name again returns the same value (the shapes must agree)."""
        self._check_open()
        if not name:
            raise self._error("expected a non-empty parameter name")
        full_name = self._prefix + name
        dims = tuple(shape)
        existing = self._params.get(full_name)
        if existing is not None:
            declared = existing.result.type
            assert isinstance(declared, TensorType)
            if declared.get_shape() != dims:
                raise self._error(
                    f"parameter '{full_name}' is already declared with shape "
                    f"{format_shape(declared.get_shape())}, not {format_shape(dims)}"
                )
            return existing.result
        try:
            check_shape(dims, f"parameter '{full_name}'", dynamic_batch=False)
        except VerifyException as err:
            raise self._error(str(err)) from None
        op = ParamOp(full_name, self._tensor_type(dims, "f32"))
        self._block.add_op(op)
        if _is_value_name(full_name):
            op.result.name_hint = full_name  # the IR reads %model.0.conv.weight
        self._params[full_name] = op
        return op.result

    def output(self, *values: Value) -> None:
        """Set the results of ``@forward``, in order (once)."""
        self._check_open()
        if self._outputs is not None:
            raise self._error("the outputs are already set")
        if not values:
            raise self._error("expected at least one output value")
        self._outputs = values

    def build(self) -> ModuleOp:
        """The module holding ``func.func @forward``, verified op by op
        (`teeny_ir.ir.verifier.verify_ops`); every problem is listed in one
        `DiagnosticError`."""
        self._check_open()
        if self._outputs is None:
            raise self._error("no outputs: call output(...) before build()")
        self._built = True
        self._block.add_op(ReturnOp(*self._outputs))
        signature = (
            [arg.type for arg in self._block.args],
            [value.type for value in self._outputs],
        )
        module = ModuleOp([FuncOp("forward", signature, Region(self._block))])
        errors = verify_ops(module)
        if errors:
            raise DiagnosticError(errors)
        return module

    # Ops, in the order of the dialect's modules.

    def conv2d(
        self,
        input: Value,
        weight: Value,
        bias: Value | None = None,
        *,
        strides: Sequence[int] | None = None,
        padding: Sequence[int] | None = None,
        dilation: Sequence[int] | None = None,
        groups: int | None = None,
    ) -> Value:
        """`graph.conv2d`; ``padding`` is [top, left, bottom, right]."""
        add = self._add if bias is None else self._add_verified  # inference skips the bias
        return add(
            Conv2dOp,
            input,
            weight,
            bias,
            strides=_unless_default(strides, DEFAULT_STRIDES),
            padding=_unless_default(padding, DEFAULT_PADDING),
            dilation=_unless_default(dilation, DEFAULT_DILATION),
            groups=None if groups == DEFAULT_GROUPS else groups,
        ).result

    @overload
    def batch_norm(
        self,
        input: Value,
        gamma: Value,
        beta: Value,
        running_mean: Value,
        running_var: Value,
        *,
        eps: float | None = None,
        momentum: float | None = None,
        training: Literal[False] = False,
    ) -> Value: ...

    @overload
    def batch_norm(
        self,
        input: Value,
        gamma: Value,
        beta: Value,
        running_mean: Value,
        running_var: Value,
        *,
        eps: float | None = None,
        momentum: float | None = None,
        training: Literal[True],
    ) -> tuple[Value, Value, Value]: ...

    def batch_norm(
        self,
        input: Value,
        gamma: Value,
        beta: Value,
        running_mean: Value,
        running_var: Value,
        *,
        eps: float | None = None,
        momentum: float | None = None,
        training: bool = False,
    ) -> Value | tuple[Value, Value, Value]:
        """`graph.batch_norm`: the normalised value; in training mode also the
        updated running mean and running var."""
        op = self._add_verified(
            BatchNormOp,
            input,
            gamma,
            beta,
            running_mean,
            running_var,
            eps=_unless_equal(eps, DEFAULT_EPS),
            momentum=_unless_equal(momentum, DEFAULT_MOMENTUM),
            training=training,
        )
        if training:
            mean, var = op.updated_running_stats
            return op.result, mean, var
        return op.result

    def silu(self, input: Value) -> Value:
        """`graph.silu`."""
        return self._add(SiluOp, input).result

    def relu(self, input: Value) -> Value:
        """`graph.relu`."""
        return self._add(ReluOp, input).result

    def sigmoid(self, input: Value) -> Value:
        """`graph.sigmoid`."""
        return self._add(SigmoidOp, input).result

    def tanh(self, input: Value) -> Value:
        """`graph.tanh`."""
        return self._add(TanhOp, input).result

    def gelu(self, input: Value, approximate: str = "none") -> Value:
        """`graph.gelu`; ``approximate`` is "none" (exact, erf) or "tanh"."""
        return self._add(GeluOp, input, approximate).result

    def hardswish(self, input: Value) -> Value:
        """`graph.hardswish`."""
        return self._add(HardswishOp, input).result

    def hardtanh(
        self, input: Value, min_val: float | None = None, max_val: float | None = None
    ) -> Value:
        """`graph.hardtanh` (bounds default -1.0 and 1.0; ReLU6 is 0.0 and 6.0)."""
        return self._add(HardtanhOp, input, min_val, max_val).result

    def leaky_relu(self, input: Value, negative_slope: float | None = None) -> Value:
        """`graph.leaky_relu` (``negative_slope`` default 0.01)."""
        return self._add(LeakyReluOp, input, negative_slope).result

    def abs(self, input: Value) -> Value:
        """`graph.abs`."""
        return self._add(AbsOp, input).result

    def neg(self, input: Value) -> Value:
        """`graph.neg`."""
        return self._add(NegOp, input).result

    def exp(self, input: Value) -> Value:
        """`graph.exp`."""
        return self._add(ExpOp, input).result

    def log(self, input: Value) -> Value:
        """`graph.log`."""
        return self._add(LogOp, input).result

    def sqrt(self, input: Value) -> Value:
        """`graph.sqrt`."""
        return self._add(SqrtOp, input).result

    def reciprocal(self, input: Value) -> Value:
        """`graph.reciprocal`."""
        return self._add(ReciprocalOp, input).result

    def erf(self, input: Value) -> Value:
        """`graph.erf`."""
        return self._add(ErfOp, input).result

    def softplus(self, input: Value) -> Value:
        """`graph.softplus` (ONNX's ``log(1 + exp(x))``)."""
        return self._add(SoftplusOp, input).result

    def elu(self, input: Value, alpha: float | None = None) -> Value:
        """`graph.elu` (``alpha`` default 1.0)."""
        return self._add(EluOp, input, _unless_equal(alpha, DEFAULT_ALPHA)).result

    def celu(self, input: Value, alpha: float | None = None) -> Value:
        """`graph.celu` (``alpha`` positive, default 1.0)."""
        return self._add(CeluOp, input, _unless_equal(alpha, DEFAULT_ALPHA)).result

    def softsign(self, input: Value) -> Value:
        """`graph.softsign`."""
        return self._add(SoftsignOp, input).result

    def sin(self, input: Value) -> Value:
        """`graph.sin`."""
        return self._add(SinOp, input).result

    def cos(self, input: Value) -> Value:
        """`graph.cos`."""
        return self._add(CosOp, input).result

    def maximum(self, lhs: Value, rhs: Value) -> Value:
        """`graph.maximum` (broadcasting; NaN propagates)."""
        return self._add(MaximumOp, lhs, rhs).result

    def minimum(self, lhs: Value, rhs: Value) -> Value:
        """`graph.minimum` (broadcasting; NaN propagates)."""
        return self._add(MinimumOp, lhs, rhs).result

    def pow(self, lhs: Value, rhs: Value) -> Value:
        """`graph.pow`: ``lhs ** rhs`` (broadcasting)."""
        return self._add(PowOp, lhs, rhs).result

    def add(self, lhs: Value, rhs: Value) -> Value:
        """`graph.add` (numpy broadcasting)."""
        return self._add(AddOp, lhs, rhs).result

    def sub(self, lhs: Value, rhs: Value) -> Value:
        """`graph.sub` (numpy broadcasting)."""
        return self._add(SubOp, lhs, rhs).result

    def mul(self, lhs: Value, rhs: Value) -> Value:
        """`graph.mul` (numpy broadcasting)."""
        return self._add(MulOp, lhs, rhs).result

    def div(self, lhs: Value, rhs: Value) -> Value:
        """`graph.div` (numpy broadcasting)."""
        return self._add(DivOp, lhs, rhs).result

    def bias_add(self, input: Value, bias: Value) -> Value:
        """`graph.bias_add`: ``bias`` [C] along dimension 1."""
        return self._add_verified(BiasAddOp, input, bias).result

    def linear(self, input: Value, weight: Value, bias: Value | None = None) -> Value:
        """`graph.linear`: ``input @ weight^T + bias``."""
        add = self._add if bias is None else self._add_verified  # inference skips the bias
        return add(LinearOp, input, weight, bias).result

    def matmul(self, lhs: Value, rhs: Value) -> Value:
        """`graph.matmul` (batched, broadcasting batch dimensions)."""
        return self._add(MatmulOp, lhs, rhs).result

    def attention(
        self,
        q: Value,
        k: Value,
        v: Value,
        scale: float,
        transposed: Sequence[int] = (0, 0, 0, 0),
    ) -> tuple[Value, Value]:
        """`graph.attention`: ``softmax(scale * q k^T) v`` and the row log-sum-exp
        (``transposed``: which of q, k, v, o are stored features-first)."""
        op = self._add_verified(AttentionOp, q, k, v, scale, transposed)
        return op.output, op.lse

    def fused_pointwise(
        self,
        inputs: Sequence[Value],
        program: str,
        reduce: str | None = None,
        axes: Sequence[int] = (),
        keepdims: bool = False,
    ) -> Value:
        """`graph.fused_pointwise`: the pointwise ``program`` (its text, as
        `teeny_ir.core.pointwise_program.parse` reads it) over ``inputs``; with
        ``reduce`` (``"sum"`` or ``"mean"``) its value reduced over ``axes``."""
        reduction = None if reduce is None else Reduction(reduce, tuple(axes), keepdims)
        return self._add_verified(
            FusedPointwiseOp.from_text, list(inputs), program, reduction
        ).result

    def all_reduce(self, input: Value, reduction: str, world: int) -> Value:
        """`graph.all_reduce` of a static ``input`` over ``world`` ranks
        (``reduction`` "mean" or "sum")."""
        return self._add_verified(AllReduceOp, input, reduction, world).result

    def constant(self, values: Sequence[float], shape: Sequence[int] | None = None) -> Value:
        """`graph.constant` of ``shape`` (default ``[len(values)]``), row-major;
        a single value fills the shape."""
        return self._add_verified(ConstantOp.from_values, values, shape).result

    def max_pool2d(
        self,
        input: Value,
        kernel: Sequence[int],
        *,
        strides: Sequence[int] | None = None,
        padding: Sequence[int] | None = None,
        dilation: Sequence[int] | None = None,
        ceil_mode: bool = False,
    ) -> Value:
        """`graph.max_pool2d`; ``strides`` default to the kernel, ``padding`` is
        [top, left, bottom, right]."""
        return self._add(
            MaxPool2dOp,
            input,
            kernel=kernel,
            strides=_unless_default(strides, kernel),
            padding=_unless_default(padding, DEFAULT_PADDING),
            dilation=_unless_default(dilation, DEFAULT_DILATION),
            ceil_mode=ceil_mode,
        ).result

    def avg_pool2d(
        self,
        input: Value,
        kernel: Sequence[int],
        *,
        strides: Sequence[int] | None = None,
        padding: Sequence[int] | None = None,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ) -> Value:
        """`graph.avg_pool2d`; ``strides`` default to the kernel, ``padding`` is
        [top, left, bottom, right]."""
        return self._add(
            AvgPool2dOp,
            input,
            kernel=kernel,
            strides=_unless_default(strides, kernel),
            padding=_unless_default(padding, DEFAULT_PADDING),
            ceil_mode=ceil_mode,
            count_include_pad=count_include_pad,
        ).result

    def global_avg_pool2d(self, input: Value) -> Value:
        """`graph.global_avg_pool2d`: [N, C, H, W] -> [N, C, 1, 1]."""
        return self._add(GlobalAvgPool2dOp, input).result

    def upsample_nearest2d(self, input: Value, scales: Sequence[int]) -> Value:
        """`graph.upsample_nearest2d` by integer ``scales`` [sh, sw]."""
        return self._add(UpsampleNearest2dOp, input, scales=scales).result

    def concat(self, inputs: Sequence[Value], axis: int) -> Value:
        """`graph.concat` of ``inputs`` along ``axis`` (negative counts from the end)."""
        return self._add(ConcatOp, inputs, axis).result

    def split(self, input: Value, sizes: Sequence[int], axis: int) -> list[Value]:
        """`graph.split` into pieces of ``sizes`` along ``axis``; one value per piece."""
        return list(self._add(SplitOp, input, sizes, axis).results)

    def reshape(self, input: Value, shape: Sequence[int]) -> Value:
        """`graph.reshape`: ``0`` copies the input's size, one ``-1`` is inferred."""
        return self._add(ReshapeOp, input, shape).result

    def flatten(self, input: Value, start_dim: int = 1, end_dim: int = -1) -> Value:
        """`graph.flatten`, as ``torch.flatten``."""
        return self._add(FlattenOp, input, start_dim, end_dim).result

    def transpose(self, input: Value, perm: Sequence[int]) -> Value:
        """`graph.transpose`: ``result.shape[i] = input.shape[perm[i]]``."""
        return self._add(TransposeOp, input, perm).result

    def slice(
        self,
        input: Value,
        starts: Sequence[int],
        ends: Sequence[int],
        axes: Sequence[int] | None = None,
        steps: Sequence[int] | None = None,
    ) -> Value:
        """`graph.slice` of ``starts[i]:ends[i]:steps[i]`` on each axis ``axes[i]``
        (default the first ``len(starts)``), clamped as numpy and ONNX do
        (`SliceOp.from_bounds`); an empty slice is an error."""
        return self._add_verified(SliceOp.from_bounds, input, starts, ends, axes, steps).result

    def pad(
        self, input: Value, pads: Sequence[int], mode: str = "constant", value: float = 0.0
    ) -> Value:
        """`graph.pad` (ONNX Pad): ``pads`` is ``[begin_0, ..., end_0, ...]`` over
        every dimension (negative crops); ``mode`` constant (with ``value``),
        reflect or edge."""
        return self._add_verified(PadOp, input, pads, mode, value).result

    def softmax(self, input: Value, axis: int) -> Value:
        """`graph.softmax` along ``axis``."""
        return self._add(SoftmaxOp, input, axis).result

    def log_softmax(self, input: Value, axis: int) -> Value:
        """`graph.log_softmax` along ``axis``."""
        return self._add(LogSoftmaxOp, input, axis).result

    def cross_entropy(self, logits: Value, targets: Value) -> Value:
        """`graph.cross_entropy`: mean loss of f32 ``logits`` [N, C] and i64 ``targets`` [N]."""
        return self._add(CrossEntropyOp, logits, targets).result

    def reduce_sum(self, input: Value, axes: Sequence[int], *, keepdims: bool = False) -> Value:
        """`graph.reduce_sum` over ``axes``."""
        return self._add(ReduceSumOp, input, axes, keepdims=keepdims).result

    def reduce_mean(self, input: Value, axes: Sequence[int], *, keepdims: bool = False) -> Value:
        """`graph.reduce_mean` over ``axes``."""
        return self._add(ReduceMeanOp, input, axes, keepdims=keepdims).result

    def reduce_max(self, input: Value, axes: Sequence[int], *, keepdims: bool = False) -> Value:
        """`graph.reduce_max` over ``axes``."""
        return self._add(ReduceMaxOp, input, axes, keepdims=keepdims).result

    def reduce_min(self, input: Value, axes: Sequence[int], *, keepdims: bool = False) -> Value:
        """`graph.reduce_min` over ``axes``."""
        return self._add(ReduceMinOp, input, axes, keepdims=keepdims).result

    def broadcast(self, input: Value, shape: Sequence[int]) -> Value:
        """`graph.broadcast` of ``input`` to ``shape`` (static, or the input's
        dynamic batch at dimension 0 kept: -1 there)."""
        dims = [DYNAMIC_INDEX if d < 0 else d for d in shape]
        return self._add_verified(BroadcastOp, input, TensorType(f32, dims)).result

    # Helpers.

    def op(self, op_class: type[Operation], *operands: Value, **options: object) -> Value:
        """Any graph op whose constructor takes its operands (and options) and
        infers its one result, e.g. an elementwise op without a named method:
        ``b.op(TanhOp, x)``. The op is verified when appended."""
        return self._add_verified(op_class, *operands, **options).results[0]

    def _add(self, make: Callable[_P, _OpT], *args: _P.args, **kwargs: _P.kwargs) -> _OpT:
        """Append an op whose constructor checks what can go wrong with its
        operands' shapes (by inferring the result type, or because the result type
        is an operand's); `build` verifies it fully."""
        return self._insert(make, args, kwargs, verify=False)

    def _add_verified(self, make: Callable[_P, _OpT], *args: _P.args, **kwargs: _P.kwargs) -> _OpT:
        """Append an op whose constructor leaves operand shapes unchecked (batch
        norm statistics, a bias, a constant's size): verify it now."""
        return self._insert(make, args, kwargs, verify=True)

    def _insert(
        self,
        make: Callable[..., _OpT],
        args: tuple[object, ...],
        kwargs: dict[str, object],
        verify: bool,
    ) -> _OpT:
        self._check_open()
        try:
            op = make(*args, **kwargs)
            if verify:
                op.verify_()
        except (VerifyException, ValueError) as err:
            # ``make`` is an op class or a classmethod of one (ConstantOp.from_values).
            op_class: Any = getattr(make, "__self__", make)
            raise self._error(f"'{op_class.name}' op {err}") from None
        self._block.add_op(op)
        return op

    def _tensor_type(self, shape: tuple[int, ...], dtype: str) -> TensorType:
        key = (dtype, shape)
        found = self._types.get(key)
        if found is None:
            found = self._types[key] = TensorType(_DTYPES[dtype], shape)
        return found

    def _check_open(self) -> None:
        if self._built:
            raise self._error("this GraphBuilder has already built its module")

    def _error(self, message: str) -> DiagnosticError:
        where = f"in scope '{'.'.join(self._scopes)}'" if self._scopes else "at the top level"
        return DiagnosticError.single(f"{message} ({where})", _caller_location())
