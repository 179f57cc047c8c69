"""The ``batch_norm_backward`` family's contract: the gradients of a
training-form batch norm over dimension 1 of ``x`` [B, C, ...], its statistics
recomputed from ``x`` (``n = B * HW`` values per channel, the biased variance)::

    mean[c] = sum(x[:, c]) / n      var[c] = sum((x[:, c] - mean[c])^2) / n
    rstd = 1 / sqrt(var + eps)      xhat = (x - mean) * rstd
    dbeta[c] = sum(dy[:, c])        dgamma[c] = sum(dy[:, c] * xhat[:, c])
    dx = gamma * rstd / n * (n * dy - dbeta - xhat * dgamma)

``x``, ``dy`` and ``dx`` are ``B`` images of ``C`` channels of ``HW`` values, each
image contiguous, at its own batch stride (any may be a batch-strided view);
``gamma``, ``dgamma`` and ``dbeta`` are contiguous [C] tensors; ``hyper`` is a
[1] f32 parameter slot holding ``eps``. With ``n == 1`` (a dynamic batch of 1
over a plane of 1 only; the lowering refuses a static one) ``xhat`` is 0:
``dbeta = dy``, ``dgamma = 0`` and ``dx = 0``; the reference raises there."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from teeny_ir.kernels.batch_norm_train.contract import channel_dims
from teeny_ir.kernels.contract import Constexpr, GridAxis, KernelArg, KernelFamily

HYPER = ("eps",)
"""The elements of the ``hyper`` slot."""
CHANNEL_VECTORS = ("gamma", "dgamma", "dbeta")


def implied(shapes: Mapping[str, tuple[int, ...]]) -> list[dict[str, int | None]]:
    """`channel_dims` (batch_norm_train's) of ``x``, ``dy`` and ``dx``, the channel
    vectors and ``hyper`` [1]."""
    return channel_dims(shapes, ("x", "dy", "dx"), CHANNEL_VECTORS, len(HYPER))


_I32 = "i32"
_PTR = "*fp32"

FAMILY = KernelFamily(
    name="batch_norm_backward",
    summary=(
        "the backward of a training-form batch norm of x [B, C, HW]: per channel the "
        "statistics recomputed from x (two passes, fp32, fixed order), dbeta = sum(dy), "
        "dgamma = sum(dy * xhat), dx = gamma * rstd / n * (n * dy - dbeta - xhat * dgamma); "
        "one program per BLOCK_C channels looping over B * HW in BLOCK_R chunks; images of "
        "x, dy and dx at their batch strides"
    ),
    args=(
        KernelArg("x", "input", _PTR),
        KernelArg("gamma", "input", _PTR),
        KernelArg("dy", "input", _PTR),
        KernelArg("hyper", "param", _PTR),
        KernelArg("dx", "output", _PTR),
        KernelArg("dgamma", "output", _PTR),
        KernelArg("dbeta", "output", _PTR),
        KernelArg("B", "dim", _I32),
        KernelArg("C", "dim", _I32),
        KernelArg("HW", "dim", _I32),
        KernelArg("x_batch_stride", "dim", _I32),
        KernelArg("dy_batch_stride", "dim", _I32),
        KernelArg("dx_batch_stride", "dim", _I32),
    ),
    constexprs=(
        Constexpr("BLOCK_C", "int", power_of_two=True, minimum=1),
        Constexpr("BLOCK_R", "int", power_of_two=True, minimum=1),
    ),
    grid=(GridAxis((("C", "BLOCK_C"),)),),
    package=Path(__file__).parent,
    kernel_function="batch_norm_backward",
    footprints={
        "x": "(B - 1) * x_batch_stride + C * HW",
        "dy": "(B - 1) * dy_batch_stride + C * HW",
        "dx": "(B - 1) * dx_batch_stride + C * HW",
        "hyper": str(len(HYPER)),
        **{name: "C" for name in CHANNEL_VECTORS},
    },
    implied=implied,
    blocks=(("BLOCK_C", "BLOCK_R"),),
    batch_strides={"x": "x_batch_stride", "dy": "dy_batch_stride", "dx": "dx_batch_stride"},
)
