"""The ``fused_reduce`` family's contract: ``y = reduce(program(in0, ..., in5))``,
a `graph.fused_pointwise` with a trailing ``reduce sum`` or ``reduce mean``.

The program's value (the *operand*, never in memory) is seen in the row view of
`teeny_ir.kernels.softmax.rows` (``[N, RB, OUTER, R, INNER]``), as the
``reduce`` family sees its input, and row ``q`` goes to ``y``'s logical element
``q`` (image ``q // Y_IMAGE`` at ``y_batch_stride``). Element ``(rb, r)`` of row
``(n, o, inner)`` is image ``n + rb``, offset ``(o * R + r) * INNER + inner``
within it; input ``k`` is read there at::

    (n + rb) * in<k>_per_image * in<k>_batch_stride + offset * in<k>_per_element

so an input is the operand's shape (both flags 1), its shape without a batch of
its own (``[1, ...]`` against ``[B, ...]``: ``per_image`` 0), one value per
image (``[B, 1, ..., 1]``: ``per_element`` 0) or a scalar (both 0), any of them
batch-strided. Broadcasting inside an image (``[C, 1, 1]`` against ``[B, C, H,
W]``) is not this family's: fuse-pointwise leaves such a reduction unfused,
saying why (`unfusable`).

``INPUTS`` inputs are read (1..6); the lowering binds every unused pointer to
``in0`` with ``in0``'s dims, as the ``fused_elementwise`` family does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from teeny_ir.core.pointwise_program import MAX_INPUTS
from teeny_ir.kernels.contract import Constexpr, KernelArg, KernelFamily
from teeny_ir.kernels.reduce import contract as reduce_contract

INPUTS = tuple(f"in{k}" for k in range(MAX_INPUTS))
"""The input pointers, in ABI order."""


def padded(shape: Sequence[int], rank: int) -> tuple[int, ...]:
    """``shape`` left-padded with 1s to ``rank`` (numpy's broadcasting)."""
    return (1,) * (rank - len(shape)) + tuple(shape)


def flags(shape: Sequence[int], operand: Sequence[int]) -> tuple[int, int] | None:
    """``(per_image, per_element)`` of an input of ``shape`` read against the
    program's ``operand`` shape, or None where this family cannot read it (a
    broadcast inside an image). Sizes compare as given: a dynamic size (any
    marker other than 1) matches only the same marker."""
    rank = len(operand)
    if len(shape) > rank:
        return None
    full = padded(shape, rank)
    if not operand:
        return 0, 0
    image, operand_image = full[1:], tuple(operand[1:])
    if image == operand_image:
        per_element = 1
    elif all(d == 1 for d in image):
        per_element = 0
    else:
        return None
    if full[0] == operand[0]:
        per_image = 1
    elif full[0] == 1:
        per_image = 0
    else:
        return None
    return per_image, per_element


def operand_shape(shapes: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """The program's value shape from its inputs' (static) shapes: their
    broadcast (every size 1 or the largest)."""
    rank = max((len(s) for s in shapes), default=0)
    full = [padded(s, rank) for s in shapes]
    return tuple(max((s[k] for s in full), default=1) for k in range(rank))


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """From the inputs and ``y``: the operand's shape (their broadcast), its row
    view (the ``reduce`` family's alternatives for that shape and ``y``), and each
    input's flags (None where the operand's batch, or its image, is 1: the flag
    then never matters). Inputs this family cannot read imply nothing."""
    inputs = [shapes[name] for name in INPUTS]
    operand = operand_shape(inputs)
    dims: dict[str, int | None] = {}
    for name, shape in zip(INPUTS, inputs, strict=True):
        found = flags(shape, operand)
        if found is None:
            return []
        per_image, per_element = found
        single_image = not operand or operand[0] == 1
        dims[f"{name}_per_image"] = None if single_image else per_image
        dims[f"{name}_per_element"] = None if math.prod(operand[1:]) == 1 else per_element
    if not operand:
        return []
    return [view | dims for view in reduce_contract.implied({"x": operand, "y": shapes["y"]})]


def _reach(name: str) -> str:
    """Elements input ``name`` may be touched at, from its base: the last
    image's offset times its flag, plus the last offset within an image times
    its flag, plus one."""
    return (
        f"(N - 1 + RB - 1) * {name}_per_image * {name}_batch_stride"
        f" + {name}_per_element * (OUTER * R * INNER - 1) + 1"
    )


_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="fused_reduce",
    summary=(
        f"y = sum or (MEAN) mean over the rows of program(in0, ..., in{MAX_INPUTS - 1}), "
        "the program's value seen as [N, RB, OUTER, R, INNER] as the reduce family sees x "
        "and never stored; each input the operand's shape, without its batch, one value "
        "per image or a scalar; fp32 accumulation, NaN/inf as numpy; every pointer may be "
        "a batch-strided view"
    ),
    args=(
        *(KernelArg(name, "input", _PTR) for name in INPUTS),
        KernelArg("y", "output", _PTR),
        *(a for a in reduce_contract.ARGS if a.kind == "dim" and a.name != "x_batch_stride"),
        *(
            arg
            for name in INPUTS
            for arg in (
                KernelArg(f"{name}_batch_stride", "dim", _I32),
                KernelArg(f"{name}_per_image", "dim", _I32),
                KernelArg(f"{name}_per_element", "dim", _I32),
            )
        ),
    ),
    constexprs=(
        Constexpr("PROGRAM", "program", slot="program"),
        Constexpr("INPUTS", "int", choices=tuple(range(1, MAX_INPUTS + 1))),
        Constexpr("MEAN", "bool"),
        Constexpr("BLOCK_ROWS", "int", power_of_two=True, minimum=1),
        Constexpr("BLOCK_R", "int", power_of_two=True, minimum=1),
    ),
    grid=reduce_contract.GRID,
    package=Path(__file__).parent,
    kernel_function="fused_reduce",
    footprints={
        **{name: _reach(name) for name in INPUTS},
        "y": reduce_contract.FOOTPRINTS["y"],
    },
    implied=implied,
    blocks=(("BLOCK_ROWS", "BLOCK_R"),),
    batch_strides={
        **{name: f"{name}_batch_stride" for name in INPUTS},
        "y": "y_batch_stride",
    },
)
