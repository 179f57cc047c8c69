"""Triton source of the ``avg_pool2d_backward`` family: the input gradient of an
average pool, gathered (deterministic, no atomics).

``dy`` is ``N`` contiguous images of ``C`` planes of ``OH x OW``, ``dx`` ``N``
contiguous images of ``C`` planes of ``H x W``. A 1-D grid of programs of
``BLOCK`` dx elements, one per lane: the flat index (64-bit) splits into the
image (one 64-bit division) and the index within it (32-bit), which splits into
channel, row ``h`` and column ``w``.

The window starting (padded) at ``(h + PT - p, w + PL - q)`` reads the
element at tap ``(p, q)`` when that start is a multiple of the stride and the
window an output ``(oh, ow)`` inside ``OH x OW``: per axis, the taps
``p = (h + PT) % SH + j * SH < KH``, so the loops run over ``cdiv(KH, SH) x
cdiv(KW, SW)`` windows, bounded by constexprs. Distinct taps give distinct
windows. Each adds ``dy[oh, ow] / divisor``, PyTorch's divisor: the window
clipped to the padded input (``COUNT_PAD``: ``min(h0 + KH, H + PB) - h0``, so a
ceil-mode window's part past the end padding does not count) or to the input
alone (``min(h0 + KH, H) - max(h0, 0)``), times the same for the columns. Every
window of a valid pool holds an input element (each pad is at most half the
kernel), so the divisor of a window that is added is at least 1. The sum runs
in tap order, so results are deterministic.
"""

import triton
import triton.language as tl


@triton.jit
def avg_pool2d_backward(
    dy,
    dx,
    N,
    C,
    H,
    W,
    OH,
    OW,
    COUNT_PAD: tl.constexpr,
    KH: tl.constexpr,
    KW: tl.constexpr,
    SH: tl.constexpr,
    SW: tl.constexpr,
    PT: tl.constexpr,
    PL: tl.constexpr,
    PB: tl.constexpr,
    PR: tl.constexpr,
    BLOCK: tl.constexpr,
):
    flat = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    elements = C * H * W
    mask = flat < N.to(tl.int64) * elements
    index = tl.where(mask, flat, 0)
    image = index // elements
    within = (index - image * elements).to(tl.int32)
    w = within % W
    rest = within // W
    h = rest % H
    channel = rest // H
    dy_plane = dy + image * (C * OH * OW) + channel * (OH * OW)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    # The taps p with p = h + PT (mod SH): p = (h + PT) % SH + j * SH.
    t_h = h + PT
    t_w = w + PL
    for j in tl.static_range((KH + SH - 1) // SH):
        p = t_h % SH + j * SH
        top = t_h - p  # the start row (padded) of the window reading h at tap p
        oh = tl.maximum(top, 0) // SH
        row_ok = mask & (p < KH) & (top >= 0) & (oh < OH)
        h0 = oh * SH - PT
        if COUNT_PAD:
            rows = tl.minimum(h0 + KH, H + PB) - h0
        else:
            rows = tl.minimum(h0 + KH, H) - tl.maximum(h0, 0)
        for k in tl.static_range((KW + SW - 1) // SW):
            q = t_w % SW + k * SW
            left = t_w - q
            ow = tl.maximum(left, 0) // SW
            ok = row_ok & (q < KW) & (left >= 0) & (ow < OW)
            w0 = ow * SW - PL
            if COUNT_PAD:
                cols = tl.minimum(w0 + KW, W + PR) - w0
            else:
                cols = tl.minimum(w0 + KW, W) - tl.maximum(w0, 0)
            divisor = tl.where(ok, rows * cols, 1).to(tl.float32)
            grad = tl.load(dy_plane + oh * OW + ow, mask=ok, other=0.0)
            acc += tl.where(ok, grad / divisor, 0.0)
    tl.store(dx + image * elements + within, acc, mask=mask)
