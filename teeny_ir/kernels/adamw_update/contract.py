"""The ``adamw_update`` family's contract: one step of ``torch.optim.AdamW`` (no
amsgrad, no maximize) over a parameter's ``N`` elements, flat::

    step'  = step + 1
    p      = param * (1 - lr * weight_decay)
    m'     = beta1 * m + (1 - beta1) * grad
    v'     = beta2 * v + (1 - beta2) * grad * grad
    param' = p - lr / (1 - beta1**step') * m' / (sqrt(v') / sqrt(1 - beta2**step') + eps)

``p``, ``g``, ``m``, ``v``, ``p_out``, ``m_out`` and ``v_out`` are contiguous
f32 tensors of ``N`` elements (parameters have no batch dim); ``step`` and
``step_out`` are 0-d f32 tensors (the count of steps taken; ``step_out`` is
written once, by lane 0 of program 0). ``hyper`` is a [9] f32 parameter slot,
``HYPER``: the hyperparameters and the constants derived from them in float64
(``1 - lr * weight_decay``, ``1 - beta1``, ``1 - beta2``, ``ln(beta1)``,
``ln(beta2)``; ``-inf`` for a beta of 0), each rounded once to f32. The bias
corrections ``1 - beta**step'`` are computed in the kernel from the loaded step
as ``-expm1(step' * ln(beta))``, loop-free and without the cancellation of
``1 - exp(...)`` near 0 (a series where ``|step' * ln(beta)| < 0.5``).

IN PLACE: every output may be the very buffer of its input (``p_out`` = ``p``,
``m_out`` = ``m``, ``v_out`` = ``v``, ``step_out`` = ``step``), as the compiled
trainer binds them. That is why the family runs ONE program, which reads the
step before it writes the step, and walks the flat parameter in ``BLOCK``
chunks, loading every input of an element before storing any output of it: a
grid of several programs would race, on a GPU, between program 0's store of
``step'`` and another program's load of ``step``. Programs beyond the first
(more than the tile model needs) touch nothing."""

from __future__ import annotations

from collections.abc import Mapping
from math import prod
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily

MAX_I32 = 2**31 - 1
HYPER = (
    "lr",
    "beta1",
    "beta2",
    "eps",
    "decay",
    "one_minus_beta1",
    "one_minus_beta2",
    "ln_beta1",
    "ln_beta2",
)
"""The elements of the ``hyper`` slot, in order (``decay`` = ``1 - lr * weight_decay``)."""
ELEMENTS = ("p", "g", "m", "v", "p_out", "m_out", "v_out")
"""The pointers of ``N`` elements each."""


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """Every element pointer's tensor has the parameter's shape (``N`` elements),
    ``step`` and ``step_out`` are 0-d, ``hyper`` is [9]."""
    shape = shapes["p"]
    if (
        any(shapes[name] != shape for name in ELEMENTS)
        or shapes["step"] != ()
        or shapes["step_out"] != ()
        or shapes["hyper"] != (len(HYPER),)
    ):
        return []
    numel = prod(shape)
    if numel > MAX_I32:
        return []
    return [{"N": numel}]


FAMILY = KernelFamily(
    name="adamw_update",
    summary=(
        "one torch.optim.AdamW step of a parameter's N elements, flat, in one program "
        "walking BLOCK chunks: decoupled weight decay, moments m' and v', bias corrections "
        "1 - beta**(step + 1) from the loaded 0-d step (step_out = step + 1); hyperparameters "
        "and derived constants from a [9] slot; safe in place (every output on its input)"
    ),
    args=(
        KernelArg("p", "input", "*fp32"),
        KernelArg("g", "input", "*fp32"),
        KernelArg("m", "input", "*fp32"),
        KernelArg("v", "input", "*fp32"),
        KernelArg("step", "input", "*fp32"),
        KernelArg("hyper", "param", "*fp32"),
        KernelArg("p_out", "output", "*fp32"),
        KernelArg("m_out", "output", "*fp32"),
        KernelArg("v_out", "output", "*fp32"),
        KernelArg("step_out", "output", "*fp32"),
        KernelArg("N", "dim", "i32"),
    ),
    constexprs=(Constexpr("BLOCK", "int", power_of_two=True, minimum=16),),
    grid=(GridAxis(()),),
    package=Path(__file__).parent,
    kernel_function="adamw_update",
    footprints={
        "p": "N",
        "g": "N",
        "m": "N",
        "v": "N",
        "step": "1",
        "hyper": str(len(HYPER)),
        "p_out": "N",
        "m_out": "N",
        "v_out": "N",
        "step_out": "1",
    },
    implied=implied,
    blocks=(("BLOCK",),),
)
