"""Triton source of the ``max_pool2d_backward`` family: the input gradient of a
max pool, gathered (deterministic, no atomics).

``x`` and ``dx`` are ``N`` contiguous images of ``C`` planes of ``H x W``, ``dy``
``N`` contiguous images of ``C`` planes of ``OH x OW``. A 1-D grid of programs
of ``BLOCK`` dx elements, one per lane: the flat index (64-bit, so the tail mask
stays right near 2**31) splits into the image (one 64-bit division) and the
index within it (32-bit), which splits into channel, row ``h`` and column ``w``.

Which windows read the element: the window starting (padded) at
``(h + PT - p * DH, w + PL - q * DW)`` reads it at tap ``(p, q)`` when that start
is a multiple of the stride and the window an output ``(oh, ow)`` inside
``OH x OW``. Per axis (rows shown), with ``t = h + PT``, ``G = gcd(DH, SH)`` and
``R = SH / G``: a tap ``p`` qualifies only if ``G`` divides ``t`` and
``p = p0 (mod R)``, ``p0 = (t / G) * I mod R`` where ``I`` is the inverse of
``DH / G`` modulo ``R``; the lowering passes ``R, G, I`` per axis as the
constexprs ``RH, GH, IH`` and ``RW, GW, IW``. So the loops run over
``p = p0 + j * RH`` for ``j < cdiv(KH, RH)`` (``cdiv(KH, SH)`` windows without
dilation) and the same for the columns, each bounded by constexprs. Distinct
taps give distinct windows, so each window counts once. (Wrong ``R, G, I``
would give wrong gradients, never an access out of bounds: every load is
masked to its plane.)

For each such window the kernel recomputes the forward's argmax as PyTorch's
CPU kernel picks it (and as the reference does): the window's taps inside the
input (never the padding) in row-major order, the first one taken, then a tap
that is greater, or NaN (so the last NaN wins), taking over. If the argmax is
tap ``(p, q)`` (this element), ``dy[oh, ow]`` is added. The sum runs in a fixed
order (the taps', row-major), so results are deterministic; a window that
covers only padding has no argmax and passes nothing.

Image offsets are 64-bit; offsets inside an image are 32-bit, which the
contract's `implied` guarantees fit.
"""

import triton
import triton.language as tl


@triton.jit
def max_pool2d_backward(
    x,
    dy,
    dx,
    N,
    C,
    H,
    W,
    OH,
    OW,
    KH: tl.constexpr,
    KW: tl.constexpr,
    SH: tl.constexpr,
    SW: tl.constexpr,
    DH: tl.constexpr,
    DW: tl.constexpr,
    PT: tl.constexpr,
    PL: tl.constexpr,
    RH: tl.constexpr,
    GH: tl.constexpr,
    IH: tl.constexpr,
    RW: tl.constexpr,
    GW: tl.constexpr,
    IW: tl.constexpr,
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
    x_plane = x + image * elements + channel * (H * W)
    dy_plane = dy + image * (C * OH * OW) + channel * (OH * OW)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    # The taps p with p * DH = h + PT (mod SH): p = p0 + j * RH (see the module doc).
    t_h = h + PT
    t_w = w + PL
    p0 = ((t_h // GH) * IH) % RH
    q0 = ((t_w // GW) * IW) % RW
    g_ok = mask & (t_h % GH == 0) & (t_w % GW == 0)
    # The windows loop at run time (an unrolled 5x5 stride-1 window nest is 625
    # inlined taps, which ptxas takes minutes over); the taps inside unroll.
    for j in range((KH + RH - 1) // RH):
        p = p0 + j * RH
        top = t_h - p * DH  # the start row (padded) of the window reading h at tap p
        oh = tl.maximum(top, 0) // SH
        row_ok = g_ok & (p < KH) & (top >= 0) & (oh < OH)
        for k in range((KW + RW - 1) // RW):
            q = q0 + k * RW
            left = t_w - q * DW
            ow = tl.maximum(left, 0) // SW
            ok = row_ok & (q < KW) & (left >= 0) & (ow < OW)
            # The window (oh, ow): its argmax over the taps inside the input.
            h0 = oh * SH - PT
            w0 = ow * SW - PL
            best = tl.full((BLOCK,), float("-inf"), tl.float32)
            found = tl.zeros((BLOCK,), dtype=tl.int32)
            choice = tl.full((BLOCK,), -1, tl.int32)
            for p2 in tl.static_range(KH):
                ih = h0 + p2 * DH
                in_row = ok & (ih >= 0) & (ih < H)
                for q2 in tl.static_range(KW):
                    iw = w0 + q2 * DW
                    inside = in_row & (iw >= 0) & (iw < W)
                    value = tl.load(x_plane + ih * W + iw, mask=inside, other=float("-inf"))
                    take = inside & ((found == 0) | (value > best) | (value != value))
                    best = tl.where(take, value, best)
                    choice = tl.where(take, p2 * KW + q2, choice)
                    found = tl.where(inside, 1, found)
            mine = ok & (choice == p * KW + q)
            grad = tl.load(dy_plane + oh * OW + ow, mask=mine, other=0.0)
            acc += tl.where(mine, grad, 0.0)
    tl.store(dx + image * elements + within, acc, mask=mask)
