"""Triton source of the ``activation_grad`` family: ``dx = activation'(x) * dy``.

A 1-D grid of ``BLOCK``-element programs over the flat index (64-bit, so the
tail mask stays right when ``numel`` is within ``BLOCK`` of 2**31); every load
and store is masked. ``ACTIVATION`` names a unary entry of the pointwise table;
rendering replaces the ``derivative`` slot with the entry's derivative.
"""

import triton
import triton.language as tl


@triton.jit
def derivative(x):
    """Slot: rendering replaces it with the table's derivative for ACTIVATION."""
    tl.static_assert(False, "render this kernel: its derivative slot is empty")
    return x


@triton.jit
def activation_grad(
    x,
    dy,
    dx,
    numel,
    ACTIVATION: tl.constexpr,
    BLOCK: tl.constexpr,
):
    flat = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = flat < numel
    v = tl.load(x + flat, mask=mask, other=0.0)
    g = tl.load(dy + flat, mask=mask, other=0.0)
    tl.store(dx + flat, derivative(v) * g, mask=mask)
