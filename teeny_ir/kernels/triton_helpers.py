"""Shared ``@triton.jit`` helpers, concatenated into every rendered kernel.

This file is Triton source that teeny_ir never imports: `teeny_ir.kernels.render`
reads it as text and pastes its functions into each emitted kernel file, so an
emitted file is self-contained and its hash covers everything that runs.
Kernel templates and the pointwise table's Triton expressions call these by
name. Core ``tl`` only (no libdevice: the interpreter cannot run it).
"""

import triton
import triton.language as tl


@triton.jit
def logistic(x):
    """1 / (1 + exp(-x)) computing only exp(-|x|), so it never overflows."""
    z = tl.exp(-tl.abs(x))
    r = 1.0 / (1.0 + z)
    return tl.where(x >= 0, r, z * r)


@triton.jit
def tanh_stable(x):
    """tanh(x) = 2 * logistic(2x) - 1 (libdevice's tanh fails in the interpreter)."""
    return 2.0 * logistic(2.0 * x) - 1.0
