"""Triton source of the ``upsample_nearest2d`` family.

``x`` is ``N`` images of ``C`` planes of ``H x W``, image ``n`` at
``n * x_batch_stride``; ``y`` is ``N`` images of ``C`` planes of ``OH x OW``,
image ``n`` at ``n * y_batch_stride``; each image is contiguous. A 1-D grid of
programs of ``BLOCK`` outputs, one per lane: the flat output index (64-bit, so
the tail mask stays right near 2**31) splits into the image (one 64-bit
division) and the index within it (32-bit: channel, row ``oh``, column
``ow``); the lane copies ``x[n, c, oh // SH, ow // SW]``, PyTorch's nearest
rule for integer scale factors. The load is masked to the input plane as well
as to the output's tail. Image offsets are 64-bit, offsets inside an image
32-bit (the contract keeps an image below 2**31 elements).
"""

import triton
import triton.language as tl


@triton.jit
def upsample_nearest2d(
    x,
    y,
    N,
    C,
    H,
    W,
    OH,
    OW,
    x_batch_stride,
    y_batch_stride,
    SH: tl.constexpr,
    SW: tl.constexpr,
    BLOCK: tl.constexpr,
):
    flat = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    outputs = C * OH * OW
    mask = flat < N.to(tl.int64) * outputs
    index = tl.where(mask, flat, 0)
    image = index // outputs
    within = (index - image * outputs).to(tl.int32)
    ow = within % OW
    rest = within // OW
    oh = rest % OH
    channel = rest // OH
    ih = oh // SH
    iw = ow // SW
    ok = mask & (ih < H) & (iw < W)
    source = image * x_batch_stride + (channel * H + ih) * W + iw
    value = tl.load(x + source, mask=ok, other=0.0)
    tl.store(y + image * y_batch_stride + within, value, mask=mask)
