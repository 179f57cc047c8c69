"""The ``batch_norm_train`` family's contract: a training-form batch norm over
dimension 1 of ``x`` [B, C, ...]::

    mean[c] = sum(x[:, c]) / n            var[c] = sum((x[:, c] - mean[c])^2) / n
    y[b, c, ...] = (x[b, c, ...] - mean[c]) * rstd[c] * gamma[c] + beta[c]
    mean_out[c] = (1 - momentum) * running_mean[c] + momentum * mean[c]
    var_out[c]  = (1 - momentum) * running_var[c] + momentum * var[c] * n / (n - 1)

with ``rstd = 1 / sqrt(var + eps)`` and ``n = B * HW`` values per channel (``HW``
the product of the dimensions from 2 on, 1 for a rank-2 [N, C] tensor).

``x`` and ``y`` are ``B`` images of ``C`` channels of ``HW`` values, each image
contiguous, image ``b`` at ``b * x_batch_stride`` (``b * y_batch_stride``): either
may be a batch-strided view. ``gamma``, ``beta``, ``running_mean``,
``running_var``, ``mean_out`` and ``var_out`` are contiguous [C] tensors (in a
training plan the weights and statistics are buffers, bound as operands);
``hyper`` is a [3] f32 parameter slot, `HYPER`: ``eps``, ``momentum`` and
``1 - momentum`` (from float64, rounded once). Each program owns ``BLOCK_C``
channels and reads their running statistics before it writes them, so
``mean_out`` and ``var_out`` may be the very buffers of ``running_mean`` and
``running_var``.

With ``n == 1`` (possible only at run time, a dynamic batch of 1 over a plane
of 1; the lowering refuses a static one) the kernel writes ``y = beta``, the
running mean updated with ``mean = x`` and ``var_out = NaN`` (the unbiased
variance 0/0), without an invalid operation; the reference raises there, as
PyTorch does."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily

MAX_I32 = 2**31 - 1
HYPER = ("eps", "momentum", "one_minus_momentum")
"""The elements of the ``hyper`` slot, in order."""
CHANNEL_VECTORS = ("gamma", "beta", "running_mean", "running_var", "mean_out", "var_out")


def channel_dims(
    shapes: Mapping[str, tuple[int, ...]],
    images: tuple[str, ...],
    vectors: tuple[str, ...],
    hyper: int,
) -> list[dict[str, int | None]]:
    """The dims both batch norm families imply: from the ``images`` [B, C, ...]
    (``x`` first; all the same shape, rank >= 2), every channel vector of
    ``vectors`` [C] and ``hyper`` [``hyper``]: ``B``, ``C`` and ``HW``; an image
    must hold at most 2**31 - 1 elements. The batch strides are the validator's."""
    x = shapes[images[0]]
    if len(x) < 2 or any(shapes[name] != x for name in images[1:]):
        return []
    if shapes.get("hyper", (hyper,)) != (hyper,):
        return []
    channels = x[1]
    if any(shapes.get(name, (channels,)) != (channels,) for name in vectors):
        return []
    plane = math.prod(x[2:])
    if channels * plane > MAX_I32:
        return []
    return [{"B": x[0], "C": channels, "HW": plane}]


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """`channel_dims` of ``x`` and ``y``, the channel vectors and ``hyper`` [3]."""
    return channel_dims(shapes, ("x", "y"), CHANNEL_VECTORS, len(HYPER))


_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="batch_norm_train",
    summary=(
        "a training-form batch norm of x [B, C, HW]: per channel the batch mean and biased "
        "variance over B x HW (two passes, fp32, fixed order), y = (x - mean) * rstd * gamma "
        "+ beta and the running statistics updated with the unbiased variance; one program "
        "per BLOCK_C channels looping over B * HW in BLOCK_R chunks; images of x and y at "
        "their batch strides"
    ),
    args=(
        KernelArg("x", "input", _PTR),
        KernelArg("gamma", "input", _PTR),
        KernelArg("beta", "input", _PTR),
        KernelArg("running_mean", "input", _PTR),
        KernelArg("running_var", "input", _PTR),
        KernelArg("hyper", "param", _PTR),
        KernelArg("y", "output", _PTR),
        KernelArg("mean_out", "output", _PTR),
        KernelArg("var_out", "output", _PTR),
        KernelArg("B", "dim", _I32),
        KernelArg("C", "dim", _I32),
        KernelArg("HW", "dim", _I32),
        KernelArg("x_batch_stride", "dim", _I32),
        KernelArg("y_batch_stride", "dim", _I32),
    ),
    constexprs=(
        Constexpr("BLOCK_C", "int", power_of_two=True, minimum=1),
        Constexpr("BLOCK_R", "int", power_of_two=True, minimum=1),
    ),
    grid=(GridAxis((("C", "BLOCK_C"),)),),
    package=Path(__file__).parent,
    kernel_function="batch_norm_train",
    footprints={
        "x": "(B - 1) * x_batch_stride + C * HW",
        "y": "(B - 1) * y_batch_stride + C * HW",
        "hyper": str(len(HYPER)),
        **{name: "C" for name in CHANNEL_VECTORS},
    },
    implied=implied,
    blocks=(("BLOCK_C", "BLOCK_R"),),
    batch_strides={"x": "x_batch_stride", "y": "y_batch_stride"},
)
