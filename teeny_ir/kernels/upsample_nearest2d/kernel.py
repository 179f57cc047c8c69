"""Triton source of the ``upsample_nearest2d`` family.

A 1-D grid of programs of ``BLOCK`` outputs, one per lane: the flat output index
(64-bit, so the tail mask stays right near 2**31) splits into plane, row ``oh``
and column ``ow``; the lane copies ``x[plane, oh // SH, ow // SW]``, PyTorch's
nearest rule for integer scale factors. The load is masked to the input plane
as well as to the output's tail.
"""

import triton
import triton.language as tl


@triton.jit
def upsample_nearest2d(
    x,
    y,
    N_C,
    H,
    W,
    OH,
    OW,
    SH: tl.constexpr,
    SW: tl.constexpr,
    BLOCK: tl.constexpr,
):
    flat = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = flat < N_C.to(tl.int64) * OH * OW
    index = tl.where(mask, flat, 0)
    ow = (index % OW).to(tl.int32)
    rest = index // OW
    oh = (rest % OH).to(tl.int32)
    plane = rest // OH
    ih = oh // SH
    iw = ow // SW
    ok = mask & (ih < H) & (iw < W)
    value = tl.load(x + plane * H * W + ih * W + iw, mask=ok, other=0.0)
    tl.store(y + flat, value, mask=mask)
