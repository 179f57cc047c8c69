"""Lowering rule of the ``concat`` family: ``graph.concat`` of 1 to 4 inputs as one
launch that copies every input into its columns of the destination."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from dialects.graph.structure import ConcatOp
from dialects.kernel import LaunchOp
from teeny_ir.kernels.concat.contract import STRIDES
from teeny_ir.kernels.concat.rows import MAX_PARTS, PARTS
from teeny_ir.kernels.lowering import (
    LoweringContext,
    Unlowerable,
    batch_stride_expr,
    count_expr,
    lowers,
    tensor_type,
)

BLOCK = 1024
NUM_WARPS, NUM_STAGES = 4, 1
"""A copy has no loop to pipeline."""


def row_dims(whole: SSAValue, parts: Sequence[SSAValue], axis: int) -> list[tuple[str, str]]:
    """``numel`` of ``whole`` and the INNER (product of the sizes from ``axis`` on)
    of ``whole`` and of each part, ``"0"`` for the unused part slots; the whole's
    INNER comes back under the name ``"inner"``."""
    shape = tensor_type(whole).get_shape()
    inners = [count_expr(tensor_type(p).get_shape()[axis:]) for p in parts]
    inners += ["0"] * (MAX_PARTS - len(parts))
    return [
        ("numel", count_expr(shape)),
        ("inner", count_expr(shape[axis:])),
        *((f"INNER{k}", inners[k]) for k in PARTS),
    ]


def slot(parts: Sequence[SSAValue], k: int) -> int:
    """The part bound to part pointer ``k``: the first one for the unused slots."""
    return k if k < len(parts) else 0


def image_dims(whole: SSAValue, parts: Sequence[SSAValue]) -> list[tuple[str, str]]:
    """The IMAGE (elements of one image) of ``whole``, under the name ``"image"``,
    then ``IMAGE0..3`` of the parts bound to the part pointers."""
    images = [count_expr(tensor_type(v).get_shape()[1:]) for v in (whole, *parts)]
    return [("image", images[0]), *((f"IMAGE{k}", images[1 + slot(parts, k)]) for k in PARTS)]


def check_parts(count: int, what: str, family: str) -> None:
    if count > MAX_PARTS:
        raise Unlowerable(f"{count} {what} exceed the {family} family's {MAX_PARTS}")


@lowers(ConcatOp)
def lower_concat(ctx: LoweringContext, op: ConcatOp) -> LaunchOp:
    """One launch over the destination; inputs past the op's are bound to ``in0``."""
    inputs = list(op.inputs)
    check_parts(len(inputs), "inputs", "concat")
    (numel, (_, inner), *inners) = row_dims(op.result, inputs, op.axis)
    ((_, image), *images) = image_dims(op.result, inputs)
    pointers = [(f"x{k}", f"in{slot(inputs, k)}") for k in PARTS]
    strides = [(STRIDES[f"x{k}"], batch_stride_expr(inputs[slot(inputs, k)])) for k in PARTS]
    strides.append((STRIDES["out"], batch_stride_expr(op.result)))
    return LaunchOp(
        "concat",
        inputs,
        [tensor_type(op.result)],
        {"N_INPUTS": len(inputs), "BLOCK": BLOCK},
        [],
        [
            *pointers,
            ("out", "out0"),
            numel,
            ("INNER_OUT", inner),
            *inners,
            ("IMAGE_OUT", image),
            *images,
            *strides,
        ],
        [f"cdiv({numel[1]}, {BLOCK})", "1", "1"],
        NUM_WARPS,
        NUM_STAGES,
    )
