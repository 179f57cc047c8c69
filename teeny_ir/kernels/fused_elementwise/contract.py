"""The ``fused_elementwise`` family's contract: ``out = program(in0, ..., in5)``.

The output is viewed as rank `RANK` (left-padded with 1s, as the
``elementwise`` family views it); a 1-D grid of ``BLOCK`` programs walks its
flat index. Input ``k`` is read at the *logical* offset ``sum_d i_d *
in<k>_stride<d>`` (its contiguous row-major strides, 0 on broadcast dims) mapped
to memory as ``(f // in<k>_image) * in<k>_batch_stride + f % in<k>_image``:
each input and the output may be batch-strided (a split's part read in place, a
concat's operand written in place), as in `teeny_ir.kernels.transpose.contract`.
``in<k>_image`` is ``prod(shape[1:])`` of the input, ``out_image`` the output's.

``INPUTS`` inputs are read (1..6); the lowering binds every unused pointer to
``in0`` with ``in0``'s dims, so each binding is a real, checked one, and the
kernel loads only the first ``INPUTS``. ``PROGRAM`` is rendered into the
``program`` slot (`teeny_ir.core.pointwise_program`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from teeny_ir.core.pointwise_program import MAX_INPUTS
from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily
from teeny_ir.kernels.elementwise.contract import RANK, padded

INPUTS = tuple(f"in{k}" for k in range(MAX_INPUTS))
"""The input pointers, in ABI order."""


def broadcast_strides(operand: Sequence[int], output: Sequence[int]) -> list[int]:
    """The strides (image-relative: the operand's dimension 0 counts as 1, so a
    dynamic batch never enters them) that read a contiguous ``operand``
    broadcast to ``output``, both left-padded to rank 6: 0 where the operand's
    size is 1 and the output's is not (a dynamic output batch against a static 1
    included). The lowering binds them; `implied` holds a launch to them."""
    shape, image = padded(operand), padded([1, *operand[1:]] if operand else [])
    out = padded(output)
    strides = [math.prod(image[k + 1 :]) for k in range(RANK)]
    return [0 if shape[k] == 1 and out[k] != 1 else strides[k] for k in range(RANK)]


def _image(shape: Sequence[int]) -> int:
    return math.prod(shape[1:])


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """``numel``, ``size1..5`` and ``out_image`` from the output; each input's
    broadcasting strides (None on an output axis of extent 1, whose index is
    always 0) and its image. Shapes that do not broadcast to the output, or of a
    rank above `RANK`, imply nothing (the validator then refuses the launch).
    The batch strides are the validator's."""
    out = shapes["out"]
    if any(len(shape) > RANK for shape in shapes.values()):
        return []
    sizes = padded(out)
    dims: dict[str, int | None] = {"numel": math.prod(out), "out_image": _image(out)}
    dims |= {f"size{k}": sizes[k] for k in range(1, RANK)}
    for name in INPUTS:
        operand = padded(shapes[name])
        if any(o not in (1, n) for o, n in zip(operand, sizes, strict=True)):
            return []
        strides = broadcast_strides(shapes[name], out)
        dims |= {f"{name}_stride{k}": None if sizes[k] == 1 else strides[k] for k in range(RANK)}
        dims[f"{name}_image"] = _image(shapes[name])
    return [dims]


def _reach(name: str) -> str:
    """Elements input ``name`` may be touched at, from its base: the largest
    logical offset ``L`` its strides reach over the rank-6 index space (as the
    ``elementwise`` family's footprints), mapped through its images."""
    inner = " * ".join(f"size{k}" for k in range(1, RANK))
    terms = [f"floordiv(numel - 1, {inner}) * {name}_stride0"]
    terms += [f"(size{k} - 1) * {name}_stride{k}" for k in range(1, RANK)]
    last = " + ".join(terms)
    return f"floordiv({last}, {name}_image) * {name}_batch_stride + {name}_image"


_I32 = "i32"
_PTR = "*fp32"

BATCH_STRIDES = {**{name: f"{name}_batch_stride" for name in INPUTS}, "out": "out_batch_stride"}
"""Every pointer takes a batch-strided view."""

FAMILY = KernelFamily(
    name="fused_elementwise",
    summary=(
        f"out = program(in0, ..., in{MAX_INPUTS - 1}): a fused chain of pointwise-table ops "
        f"over a rank-{RANK} (left-padded) output, each input broadcast through its strides; "
        "every pointer may be a batch-strided view"
    ),
    args=(
        *(KernelArg(name, "input", _PTR) for name in INPUTS),
        KernelArg("out", "output", _PTR),
        KernelArg("numel", "dim", _I32),
        *(KernelArg(f"size{k}", "dim", _I32) for k in range(1, RANK)),
        *(
            arg
            for name in INPUTS
            for arg in (
                *(KernelArg(f"{name}_stride{k}", "dim", _I32) for k in range(RANK)),
                KernelArg(f"{name}_image", "dim", _I32),
                KernelArg(f"{name}_batch_stride", "dim", _I32),
            )
        ),
        KernelArg("out_image", "dim", _I32),
        KernelArg("out_batch_stride", "dim", _I32),
    ),
    constexprs=(
        Constexpr("PROGRAM", "program", slot="program"),
        Constexpr("INPUTS", "int", choices=tuple(range(1, MAX_INPUTS + 1))),
        Constexpr("BLOCK", "int", power_of_two=True, minimum=1),
    ),
    grid=(GridAxis((("numel", "BLOCK"),)),),
    package=Path(__file__).parent,
    kernel_function="fused_elementwise",
    footprints={
        **{name: _reach(name) for name in INPUTS},
        "out": "floordiv(numel - 1, out_image) * out_batch_stride + out_image",
    },
    implied=implied,
    blocks=(("BLOCK",),),
    batch_strides=BATCH_STRIDES,
)
