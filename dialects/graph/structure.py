"""Data movement: `graph.concat`, `graph.split`, `graph.reshape`, `graph.flatten`,
`graph.transpose`, `graph.broadcast`, `graph.slice` and `graph.pad`.

One batch rule for the first five: a dynamic batch (``?`` at dimension 0) stays at
dimension 0, unchanged. Concatenating or splitting along it, reshaping or
flattening it into another dimension, and permuting it elsewhere are verifier
errors (folding the batch into another dimension is not supported); a static dimension 0 is an
ordinary dimension. Axes are stored non-negative; the Python builders accept
negative axes, as PyTorch does, and normalise them. `graph.slice` and `graph.pad`
keep a dynamic batch too: they neither slice nor pad it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    I64,
    DenseArrayBase,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    f32,
    f64,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import HasCanonicalizationPatternsTrait, Pure
from xdsl.utils.exceptions import VerifyException

from dialects.graph.shapes import (
    Shape,
    broadcast_shapes,
    check_count,
    check_result,
    check_tensor,
    format_shape,
    infer_concat_shape,
    infer_flatten_shape,
    infer_reshape_shape,
    infer_split_shapes,
    infer_transpose_shape,
)
from teeny_ir.ir.format import (
    OptionParser,
    OptionsFormatOp,
    f64_option,
    keyword_option,
    parse_i64,
    value_type,
)

if TYPE_CHECKING:
    from xdsl.parser import Parser
    from xdsl.pattern_rewriter import RewritePattern


def _normalized(dim: int, rank: int) -> int:
    """A PyTorch-style dimension (negative counts from the end) made non-negative;
    out-of-range values are left for the shape rule to report."""
    return dim + rank if -rank <= dim < 0 else dim


def _rank(value: SSAValue | Operation) -> int:
    type_ = value_type(value)
    return len(type_.get_shape()) if isinstance(type_, TensorType) else 0


def _int_list_option(parser: Parser) -> Attribute:
    """``[a, b, ...]``: any number of i64 values."""
    values = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: parse_i64(parser))
    return DenseArrayBase.from_list(i64, values)


def _int_option(parser: Parser) -> Attribute:
    return IntegerAttr(parse_i64(parser), i64)


class StructureCanonicalization(HasCanonicalizationPatternsTrait):
    """The op's patterns for ``canonicalize``, from `dialects.graph.canonicalize`
    (imported on first use)."""

    def get_patterns(self, op: type[Operation]) -> tuple[RewritePattern, ...]:
        from dialects.graph.canonicalize import patterns_for

        return patterns_for(op)

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return ()  # per op class: `get_patterns`


class StructureOp(OptionsFormatOp):
    """The shared base of the structural ops (pure data movement)."""

    traits = traits_def(Pure(), StructureCanonicalization())


@irdl_op_definition
class ConcatOp(StructureOp):
    """Concatenation of N >= 1 tensors along ``axis``, as ``torch.cat``.

    Every input has the same rank and the same sizes on every dimension but
    ``axis`` (a ``?`` batch agrees only with ``?``); the result's ``axis`` size
    is the sum of the inputs' (`infer_concat_shape`)::

        y[..., offset_k + i, ...] = inputs[k][..., i, ...]
        offset_k = sum(inputs[j].shape[axis] for j < k)

        %y = graph.concat %a, %b, %c axis 1 : (tensor<?x16x8x8xf32>,
            tensor<?x16x8x8xf32>, tensor<?x32x8x8xf32>) -> tensor<?x64x8x8xf32>
    """

    name = "graph.concat"

    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    axis_attr = prop_def(IntegerAttr[I64], prop_name="axis")

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {"axis": _int_option}
    REQUIRED: ClassVar[tuple[str, ...]] = ("axis",)

    def __init__(
        self,
        inputs: Sequence[SSAValue | Operation],
        axis: int,
        result_type: TensorType | None = None,
    ):
        """Concatenate ``inputs`` along ``axis`` (negative counts from the end);
        without ``result_type`` it is inferred."""
        axis = _normalized(axis, _rank(inputs[0]) if inputs else 0)
        if result_type is None:
            shapes = [check_tensor(value_type(v), f"input {i}") for i, v in enumerate(inputs)]
            result_type = TensorType(f32, infer_concat_shape(shapes, axis))
        super().__init__(
            operands=[inputs],
            result_types=[result_type],
            properties={"axis": IntegerAttr(axis, i64)},
        )

    @property
    def axis(self) -> int:
        """The concatenation dimension, non-negative."""
        return self.axis_attr.value.data

    def verify_(self) -> None:
        shapes = [check_tensor(v.type, f"input {i}") for i, v in enumerate(self.inputs)]
        check_result(self.result, TensorType(f32, infer_concat_shape(shapes, self.axis)))


@irdl_op_definition
class SplitOp(StructureOp):
    """Split of ``input`` along ``axis`` into pieces of ``sizes``, as
    ``torch.split(x, sizes, axis)``; YOLO's ``chunk(2, 1)`` is ``sizes [c/2, c/2]``.

    Result ``k`` is ``input[..., offset_k : offset_k + sizes[k], ...]`` on
    ``axis``, with ``offset_k = sum(sizes[:k])``; the sizes are >= 1 and sum to
    the input's ``axis`` size (`infer_split_shapes`).

        %a, %b = graph.split %x axis 1 sizes [16, 16]
            : (tensor<?x32x8x8xf32>) -> (tensor<?x16x8x8xf32>, tensor<?x16x8x8xf32>)
    """

    name = "graph.split"

    input = operand_def(TensorType)
    outputs = var_result_def(TensorType)
    axis_attr = prop_def(IntegerAttr[I64], prop_name="axis")
    sizes_attr = prop_def(DenseArrayBase[I64], prop_name="sizes")

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        "axis": _int_option,
        "sizes": _int_list_option,
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("axis", "sizes")

    def __init__(
        self,
        input: SSAValue | Operation,
        sizes: Sequence[int],
        axis: int,
        result_types: Sequence[TensorType] | None = None,
    ):
        """Split ``input`` into ``sizes`` along ``axis`` (negative counts from the
        end); without ``result_types`` they are inferred."""
        axis = _normalized(axis, _rank(input))
        if result_types is None:
            shape = check_tensor(value_type(input), "input")
            result_types = [TensorType(f32, s) for s in infer_split_shapes(shape, axis, sizes)]
        super().__init__(
            operands=[input],
            result_types=[result_types],
            properties={
                "axis": IntegerAttr(axis, i64),
                "sizes": DenseArrayBase.from_list(i64, sizes),
            },
        )

    @property
    def axis(self) -> int:
        """The split dimension, non-negative."""
        return self.axis_attr.value.data

    @property
    def sizes(self) -> Shape:
        """The size of each piece along ``axis``, in result order."""
        return self.sizes_attr.get_values()

    def verify_(self) -> None:
        shapes = infer_split_shapes(check_tensor(self.input.type, "input"), self.axis, self.sizes)
        if len(self.outputs) != len(shapes):
            raise VerifyException(
                f"expected {len(shapes)} results (one per size), got {len(self.outputs)}"
            )
        for output, shape in zip(self.outputs, shapes, strict=True):
            check_result(output, TensorType(f32, shape))


@irdl_op_definition
class ReshapeOp(StructureOp):
    """The elements of ``input`` in row-major order, viewed with a new shape, as
    ``torch.reshape``.

    ``shape`` follows ONNX Reshape: ``0`` copies the input's size at the same
    index, ``-1`` (at most one) is inferred, any other entry is a size >= 1; the
    result type is the resolved shape (`infer_reshape_shape`). A dynamic batch
    stays dimension 0 and must be written ``0``; the element counts then agree
    per sample. ``torch.reshape(x, (x.shape[0], -1))`` is ``shape [0, -1]``.

        %y = graph.reshape %x shape [0, -1] : (tensor<?x16x5x5xf32>) -> tensor<?x400xf32>
    """

    name = "graph.reshape"

    input = operand_def(TensorType)
    result = result_def(TensorType)
    shape_attr = prop_def(DenseArrayBase[I64], prop_name="shape")

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {"shape": _int_list_option}
    REQUIRED: ClassVar[tuple[str, ...]] = ("shape",)

    def __init__(
        self,
        input: SSAValue | Operation,
        shape: Sequence[int],
        result_type: TensorType | None = None,
    ):
        """Reshape ``input`` to ``shape`` (kept as written); without
        ``result_type`` the resolved shape is inferred."""
        if result_type is None:
            resolved = infer_reshape_shape(check_tensor(value_type(input), "input"), shape)
            result_type = TensorType(f32, resolved)
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"shape": DenseArrayBase.from_list(i64, shape)},
        )

    @property
    def shape(self) -> Shape:
        """The target shape as written (``0``: copy, ``-1``: inferred)."""
        return self.shape_attr.get_values()

    def verify_(self) -> None:
        resolved = infer_reshape_shape(check_tensor(self.input.type, "input"), self.shape)
        check_result(self.result, TensorType(f32, resolved))


@irdl_op_definition
class FlattenOp(StructureOp):
    """``torch.flatten(x, start_dim, end_dim)``: dimensions ``start_dim`` to
    ``end_dim`` (inclusive) merged into one of their product size
    (`infer_flatten_shape`); the data is unchanged (row-major).

    Optional properties: ``start_dim`` (default 1) and ``end_dim`` (absent: the
    last dimension), both non-negative. A dynamic batch cannot be flattened.

        %y = graph.flatten %x : (tensor<?x16x5x5xf32>) -> tensor<?x400xf32>
        %z = graph.flatten %x start_dim 2 end_dim 3 : (tensor<?x16x5x5xf32>)
            -> tensor<?x16x25xf32>
    """

    name = "graph.flatten"

    input = operand_def(TensorType)
    result = result_def(TensorType)
    start_dim_attr = opt_prop_def(IntegerAttr[I64], IntegerAttr(1, i64), prop_name="start_dim")
    end_dim_attr = opt_prop_def(IntegerAttr[I64], prop_name="end_dim")

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        "start_dim": _int_option,
        "end_dim": _int_option,
    }

    def __init__(
        self,
        input: SSAValue | Operation,
        start_dim: int = 1,
        end_dim: int = -1,
        result_type: TensorType | None = None,
    ):
        """Flatten ``input`` like ``torch.flatten`` (negative dims count from the
        end); defaults are left absent, and without ``result_type`` it is inferred."""
        rank = _rank(input)
        start_dim, end_dim = _normalized(start_dim, rank), _normalized(end_dim, rank)
        if result_type is None:
            shape = check_tensor(value_type(input), "input")
            result_type = TensorType(f32, infer_flatten_shape(shape, start_dim, end_dim))
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={
                "start_dim": None if start_dim == 1 else IntegerAttr(start_dim, i64),
                "end_dim": None if end_dim == rank - 1 else IntegerAttr(end_dim, i64),
            },
        )

    @property
    def start_dim(self) -> int:
        """First flattened dimension, non-negative."""
        return self.start_dim_attr.value.data

    @property
    def end_dim(self) -> int:
        """Last flattened dimension (inclusive), non-negative."""
        if self.end_dim_attr is not None:
            return self.end_dim_attr.value.data
        return _rank(self.input) - 1

    def verify_(self) -> None:
        shape = check_tensor(self.input.type, "input")
        result = infer_flatten_shape(shape, self.start_dim, self.end_dim)
        check_result(self.result, TensorType(f32, result))


@irdl_op_definition
class TransposeOp(StructureOp):
    """A permutation of the dimensions, as ``torch.permute(x, perm)``: result
    dimension ``k`` is input dimension ``perm[k]``, so ``y.shape[k] =
    x.shape[perm[k]]`` (`infer_transpose_shape`) and ``y[i_0, ..., i_{r-1}] =
    x[j]`` with ``j[perm[k]] = i_k``. A dynamic batch stays in place
    (``perm[0] = 0``); a static dimension 0 may move.

        %y = graph.transpose %x perm [0, 2, 3, 1] : (tensor<?x16x8x4xf32>)
            -> tensor<?x8x4x16xf32>
    """

    name = "graph.transpose"

    input = operand_def(TensorType)
    result = result_def(TensorType)
    perm_attr = prop_def(DenseArrayBase[I64], prop_name="perm")

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {"perm": _int_list_option}
    REQUIRED: ClassVar[tuple[str, ...]] = ("perm",)

    def __init__(
        self,
        input: SSAValue | Operation,
        perm: Sequence[int],
        result_type: TensorType | None = None,
    ):
        """Permute ``input``'s dimensions (negative entries count from the end);
        without ``result_type`` it is inferred."""
        rank = _rank(input)
        perm = [_normalized(dim, rank) for dim in perm]
        if result_type is None:
            shape = check_tensor(value_type(input), "input")
            result_type = TensorType(f32, infer_transpose_shape(shape, perm))
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"perm": DenseArrayBase.from_list(i64, perm)},
        )

    @property
    def perm(self) -> Shape:
        """Result dimension ``k`` is input dimension ``perm[k]``."""
        return self.perm_attr.get_values()

    def verify_(self) -> None:
        shape = check_tensor(self.input.type, "input")
        check_result(self.result, TensorType(f32, infer_transpose_shape(shape, self.perm)))


def needs_batch_source(shape: Sequence[int], result: Sequence[int]) -> bool:
    """Whether a result's dynamic batch cannot come from the input: the input
    does not carry a ``?`` at the result's dimension 0."""
    if not result or result[0] != DYNAMIC_INDEX:
        return False
    return len(shape) != len(result) or shape[0] != DYNAMIC_INDEX


def check_broadcast(
    shape: Sequence[int], result: Sequence[int], batch_source: Sequence[int] | None
) -> None:
    """The shape rule of `graph.broadcast`: ``shape`` stretches to ``result`` by
    numpy broadcasting (`broadcast_shapes` of the two is ``result``), and a
    ``batch_source`` shape (dimension 0 dynamic) is given exactly when the
    result's dynamic batch does not come from the input."""
    stretched = broadcast_shapes(shape, result)
    if stretched != tuple(result):
        raise VerifyException(
            f"cannot broadcast {format_shape(shape)} to {format_shape(result)}: "
            f"broadcasting them gives {format_shape(stretched)}"
        )
    needed = needs_batch_source(shape, result)
    if batch_source is None and needed:
        raise VerifyException(
            f"broadcasting {format_shape(shape)} to the dynamic batch of "
            f"{format_shape(result)} needs a batch source operand (a tensor whose "
            "dimension 0 is the batch)"
        )
    if batch_source is not None:
        if not needed:
            raise VerifyException(
                "unexpected batch source: the result has no dynamic batch, or the input carries it"
            )
        if not batch_source or batch_source[0] != DYNAMIC_INDEX:
            raise VerifyException(
                "expected the batch source to have a dynamic batch dimension 0, "
                f"got shape {format_shape(batch_source)}"
            )


@irdl_op_definition
class BroadcastOp(OptionsFormatOp):
    """``input`` stretched to the result type by numpy broadcasting, as
    ``torch.broadcast_to(x, shape)``: shapes align on their trailing dimensions
    and a size 1 (or a missing leading dimension) repeats the data::

        y[i_0, ..., i_{r-1}] = x[j]   with   j_k = 0 where x.shape[k] = 1, else i_{k + r - rank(x)}

    The result shape must be what `broadcast_shapes` gives for the two shapes
    (the backward of a reduction stretches a gradient back over the reduced
    axes). A result with a dynamic batch (``?`` at dimension 0) takes it from
    the input when the input has ``?`` there; otherwise the optional second
    operand, the batch source, is required: a tensor whose dimension 0 is the
    batch (only its size is read, never its values).

        %y = graph.broadcast %g : (tensor<?x16x1x1xf32>) -> tensor<?x16x8x8xf32>
        %z = graph.broadcast %zero, %x : (tensor<f32>, tensor<?x32xf32>)
            -> tensor<?x16xf32>
    """

    name = "graph.broadcast"

    input = operand_def(TensorType)
    batch_source = opt_operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(
        self,
        input: SSAValue | Operation,
        result_type: TensorType,
        batch_source: SSAValue | Operation | None = None,
    ):
        """Broadcast ``input`` to ``result_type``; ``batch_source`` supplies a
        dynamic batch the input does not carry."""
        super().__init__(
            operands=[input, [] if batch_source is None else [batch_source]],
            result_types=[result_type],
        )

    def verify_(self) -> None:
        shape = check_tensor(self.input.type, "input")
        result = check_tensor(self.result.type, "result")
        source = None
        if self.batch_source is not None:
            source = check_tensor(self.batch_source.type, "batch source")
        check_broadcast(shape, result, source)


# --- graph.slice and graph.pad ------------------------------------------------------------------

PAD_MODES = ("constant", "reflect", "edge")
"""The border modes of `graph.pad`, as ONNX Pad names them."""
WHOLE_BATCH_END = 2**31 - 1
"""The least slice end that keeps a dynamic batch whole (ONNX writes INT_MAX or
INT64_MAX for "to the end")."""


def slice_bounds(size: int, start: int, end: int, step: int) -> tuple[int, int]:
    """``(first, count)`` of the numpy/ONNX slice ``start:end:step`` of a
    dimension of ``size`` elements: negative bounds count from the end, then
    both are clamped (to ``[0, size]``, or ``[-1, size - 1]`` for a negative
    step), exactly as Python's ``slice.indices``; ``count`` may be 0."""
    if step == 0:
        raise ValueError("a slice step of 0")
    indices = range(*slice(start, end, step).indices(size))
    return indices.start, len(indices)


def check_slice(
    shape: Sequence[int], starts: Sequence[int], steps: Sequence[int], result: Sequence[int]
) -> None:
    """The shape rule of `graph.slice`: one normalised ``start`` and ``step`` per
    dimension, and the result's size ``m`` on each: the indices ``start + i *
    step`` for ``i < m`` all lie in ``[0, size)``. A dynamic batch is not sliced
    (start 0, step 1, ``?`` in the result)."""
    rank = len(shape)
    if rank == 0:
        raise VerifyException("expected an input of rank >= 1: a scalar cannot be sliced")
    for name, values in (("starts", starts), ("steps", steps)):
        if len(values) != rank:
            raise VerifyException(
                f"expected {rank} {name} (one per input dimension), got {len(values)}"
            )
    if len(result) != rank:
        raise VerifyException(f"expected a result of rank {rank}, got {format_shape(result)}")
    for dim, (size, start, step, count) in enumerate(
        zip(shape, starts, steps, result, strict=True)
    ):
        if step == 0:
            raise VerifyException(f"step 0 at dimension {dim}")
        if size == DYNAMIC_INDEX or count == DYNAMIC_INDEX:
            if (size, start, step, count) != (DYNAMIC_INDEX, 0, 1, DYNAMIC_INDEX):
                raise VerifyException(
                    f"the dynamic batch (dimension {dim}) cannot be sliced: expected start 0, "
                    f"step 1 and size ? for it, got start {start}, step {step} and size "
                    f"{'?' if count == DYNAMIC_INDEX else count} (input {format_shape(shape)})"
                )
            continue
        if not 0 <= start < size:
            raise VerifyException(
                f"start {start} at dimension {dim} is outside [0, {size}) (starts are "
                "normalised: the importer clamps them)"
            )
        last = start + (count - 1) * step
        if not 0 <= last < size:
            raise VerifyException(
                f"dimension {dim}: {count} elements from {start} in steps of {step} reach "
                f"index {last}, outside [0, {size})"
            )


@irdl_op_definition
class SliceOp(StructureOp):
    """A strided slice: on every dimension ``k``, the result type's number of
    elements from ``starts[k]`` in steps of ``steps[k]``, as numpy's
    ``x[starts[k]::steps[k]]`` cut short::

        y[i_0, ..., i_{r-1}] = x[starts[0] + i_0 * steps[0], ..., starts[r-1] + i_{r-1} * steps[r-1]]

    ``starts`` are normalised, in ``[0, size)``; ``steps`` (default all 1) are
    nonzero and may be negative (a reversal); the result type gives each
    dimension's element count, and every index it reaches lies in the input
    (`check_slice`). Clamping numpy or ONNX bounds is the importer's
    (`slice_bounds`). A dynamic batch is not sliced: start 0, step 1, ``?``.

        %y = graph.slice %x starts [0, 1, 7] steps [1, 2, -3] : (tensor<?x6x8xf32>)
            -> tensor<?x3x3xf32>
    """

    name = "graph.slice"

    input = operand_def(TensorType)
    result = result_def(TensorType)
    starts_attr = prop_def(DenseArrayBase[I64], prop_name="starts")
    steps_attr = opt_prop_def(DenseArrayBase[I64], prop_name="steps")

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        "starts": _int_list_option,
        "steps": _int_list_option,
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("starts",)

    def __init__(
        self,
        input: SSAValue | Operation,
        starts: Sequence[int],
        sizes: Sequence[int],
        steps: Sequence[int] | None = None,
    ):
        """Slice ``sizes[k]`` elements from ``starts[k]`` in steps of ``steps[k]``
        (all 1 when None; left absent when all 1) on every dimension; a dynamic
        dimension's size is ``DYNAMIC_INDEX``."""
        if steps is not None and all(step == 1 for step in steps):
            steps = None
        super().__init__(
            operands=[input],
            result_types=[TensorType(f32, sizes)],
            properties={
                "starts": DenseArrayBase.from_list(i64, starts),
                "steps": None if steps is None else DenseArrayBase.from_list(i64, steps),
            },
        )

    @classmethod
    def from_bounds(
        cls,
        input: SSAValue | Operation,
        starts: Sequence[int],
        ends: Sequence[int],
        axes: Sequence[int] | None = None,
        steps: Sequence[int] | None = None,
    ) -> SliceOp:
        """The slice ``starts[i]:ends[i]:steps[i]`` of each axis ``axes[i]``
        (default: the first ``len(starts)``; steps default 1), with numpy/ONNX
        bounds: negative values count from the end, then are clamped
        (`slice_bounds`); unlisted axes are kept whole. A dynamic batch may only
        be listed whole (start 0, step 1, an end of at least `WHOLE_BATCH_END`).
        Raises `ValueError` for a bad axis, a zero step or an empty slice (every
        size is at least 1)."""
        shape = check_tensor(value_type(input), "input")
        rank = len(shape)
        axes = list(range(len(starts))) if axes is None else list(axes)
        steps = [1] * len(starts) if steps is None else list(steps)
        if not len(starts) == len(ends) == len(axes) == len(steps):
            raise ValueError(
                f"starts, ends, axes and steps differ in length ({len(starts)}, {len(ends)}, "
                f"{len(axes)} and {len(steps)})"
            )
        first, counts, strides = [0] * rank, list(shape), [1] * rank
        seen: set[int] = set()
        for start, end, axis, step in zip(starts, ends, axes, steps, strict=True):
            if not -rank <= axis < rank:
                raise ValueError(f"axis {axis} is out of range for rank {rank}")
            axis %= rank
            if axis in seen:
                raise ValueError(f"axis {axis} is listed twice")
            seen.add(axis)
            if step == 0:
                raise ValueError(f"step 0 on axis {axis}")
            size = shape[axis]
            if size == DYNAMIC_INDEX:
                if (start, step) == (0, 1) and end >= WHOLE_BATCH_END:
                    continue
                raise ValueError(
                    f"the dynamic batch (axis {axis}) cannot be sliced (got {start}:{end}:{step})"
                )
            first[axis], counts[axis] = slice_bounds(size, start, end, step)
            if counts[axis] == 0:
                raise ValueError(
                    f"the slice {start}:{end}:{step} of axis {axis} (size {size}) is empty"
                )
            strides[axis] = step if counts[axis] > 1 else 1
        return cls(input, first, counts, strides)

    @property
    def starts(self) -> Shape:
        """The first index read on each dimension, in ``[0, size)``."""
        return self.starts_attr.get_values()

    @property
    def steps(self) -> Shape:
        """The step on each dimension (nonzero; all 1 when absent)."""
        if self.steps_attr is None:
            return (1,) * len(self.starts)
        return self.steps_attr.get_values()

    def verify_(self) -> None:
        shape = check_tensor(self.input.type, "input")
        check_slice(shape, self.starts, self.steps, check_tensor(self.result.type, "result"))


def infer_pad_shape(
    shape: Sequence[int], pads: Sequence[int], mode: str, interior: Sequence[int]
) -> Shape:
    """The shape rule of `graph.pad`: ``pads`` is ONNX's ``[begin_0, ...,
    begin_{r-1}, end_0, ..., end_{r-1}]`` (negative crops), ``interior`` the
    zeros between neighbours (constant mode only); dimension ``k`` becomes
    ``begin_k + size_k + (size_k - 1) * interior_k + end_k``, at least 1. A
    dynamic batch is not padded."""
    rank = len(shape)
    if rank == 0:
        raise VerifyException("expected an input of rank >= 1: a scalar cannot be padded")
    if mode not in PAD_MODES:
        raise VerifyException(f"expected mode to be one of {', '.join(PAD_MODES)}, got '{mode}'")
    check_count("pads", pads, 2 * rank, " [begin_0, ..., begin_{r-1}, end_0, ..., end_{r-1}]")
    check_count("interior", interior, rank)
    result: list[int] = []
    for dim, size in enumerate(shape):
        begin, end, inner = pads[dim], pads[rank + dim], interior[dim]
        if inner < 0:
            raise VerifyException(f"interior {inner} at dimension {dim} is negative")
        if inner and mode != "constant":
            raise VerifyException(f"interior padding needs constant mode, not {mode}")
        if size == DYNAMIC_INDEX:
            if begin or end or inner:
                raise VerifyException(
                    f"the dynamic batch (dimension {dim}) cannot be padded: got begin {begin}, "
                    f"end {end} and interior {inner} for it"
                )
            result.append(size)
            continue
        padded = begin + size + (size - 1) * inner + end
        if padded < 1:
            raise VerifyException(
                f"dimension {dim} of {format_shape(shape)}: pads {begin} and {end} leave "
                f"{padded} elements (at least 1 is needed)"
            )
        result.append(padded)
    return tuple(result)


@irdl_op_definition
class PadOp(StructureOp):
    """ONNX Pad: ``input`` in a border of ``pads`` elements per dimension
    (negative pads crop), filled by ``mode``: constant, reflect or edge.

    ``pads`` is ``[begin_0, ..., begin_{r-1}, end_0, ..., end_{r-1}]``; ``constant``
    (default) fills ``value`` (f64, default 0), ``reflect`` mirrors about the edge
    element (not repeating it), ``edge`` repeats it. Each output element reads its source index ``o - begin`` on
    every dimension, mapped into ``[0, size)`` by the mode (reflect: as often as
    needed, numpy's ``reflect``), so a crop applies after the padding
    (onnxruntime crops first: the same wherever it accepts the pads, reflect
    pads below the cropped size). The optional ``interior`` (constant mode only,
    default all 0) puts that many ``value`` elements between neighbours, as
    XLA's pad does: a strided slice's gradient. Result sizes:
    `infer_pad_shape`. A dynamic batch is not padded.

        %y = graph.pad %x pads [0, 0, 1, 2, 0, 0, 1, -1] value 1.500000e+00
            : (tensor<?x3x4x5xf32>) -> tensor<?x3x6x6xf32>
        %z = graph.pad %x pads [0, 0, 2, 2, 0, 0, 2, 2] mode reflect : (tensor<?x3x4x5xf32>)
            -> tensor<?x3x8x9xf32>
    """

    name = "graph.pad"

    input = operand_def(TensorType)
    result = result_def(TensorType)
    pads_attr = prop_def(DenseArrayBase[I64], prop_name="pads")
    mode_attr = opt_prop_def(StringAttr, prop_name="mode")
    value_attr = opt_prop_def(FloatAttr[Float64Type], prop_name="value")
    interior_attr = opt_prop_def(DenseArrayBase[I64], prop_name="interior")

    OPTIONS: ClassVar[Mapping[str, OptionParser]] = {
        "pads": _int_list_option,
        "mode": keyword_option("mode", PAD_MODES),
        "value": f64_option,
        "interior": _int_list_option,
    }
    REQUIRED: ClassVar[tuple[str, ...]] = ("pads",)

    def __init__(
        self,
        input: SSAValue | Operation,
        pads: Sequence[int],
        mode: str = "constant",
        value: float = 0.0,
        interior: Sequence[int] | None = None,
    ):
        """Pad ``input``; defaults (constant mode, value 0.0 with its sign, no
        interior) are left absent, and the result type is inferred."""
        rank = _rank(input)
        if interior is not None and not any(interior):
            interior = None
        shape = check_tensor(value_type(input), "input")
        inner = (0,) * rank if interior is None else interior
        result_type = TensorType(f32, infer_pad_shape(shape, pads, mode, inner))
        default_value = value == 0.0 and math.copysign(1.0, value) > 0
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={
                "pads": DenseArrayBase.from_list(i64, pads),
                "mode": None if mode == "constant" else StringAttr(mode),
                "value": None if default_value else FloatAttr(value, f64),
                "interior": None if interior is None else DenseArrayBase.from_list(i64, interior),
            },
        )

    @property
    def pads(self) -> Shape:
        """``[begin_0, ..., begin_{r-1}, end_0, ..., end_{r-1}]`` (negative: crop)."""
        return self.pads_attr.get_values()

    @property
    def begins(self) -> Shape:
        """The pad before each dimension's first element."""
        return self.pads[: len(self.pads) // 2]

    @property
    def ends(self) -> Shape:
        """The pad after each dimension's last element."""
        return self.pads[len(self.pads) // 2 :]

    @property
    def mode(self) -> str:
        """``constant``, ``reflect`` or ``edge`` (`PAD_MODES`)."""
        return "constant" if self.mode_attr is None else self.mode_attr.data

    @property
    def value(self) -> float:
        """The constant mode's fill value."""
        return 0.0 if self.value_attr is None else self.value_attr.value.data

    @property
    def interior(self) -> Shape:
        """The fill elements between neighbours on each dimension (all 0 when absent)."""
        if self.interior_attr is None:
            return (0,) * _rank(self.input)
        return self.interior_attr.get_values()

    def verify_(self) -> None:
        shape = check_tensor(self.input.type, "input")
        if self.value_attr is not None and self.mode != "constant":
            raise VerifyException(f"a pad value is only used in constant mode, not {self.mode}")
        result = infer_pad_shape(shape, self.pads, self.mode, self.interior)
        check_result(self.result, TensorType(f32, result))
