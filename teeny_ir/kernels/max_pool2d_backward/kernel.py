"""Triton source of the ``max_pool2d_backward`` family: the input gradient of a
max pool, gathered (deterministic, no atomics), in O(KH * KW) per element.

``x`` and ``dx`` are ``N`` contiguous images of ``C`` planes of ``H x W``, ``dy``
``N`` contiguous images of ``C`` planes of ``OH x OW``. A 1-D grid of programs
of ``BLOCK`` dx elements, one per lane: the flat index (64-bit, so the tail mask
stays right near 2**31) splits into the image (one 64-bit division) and the
index within it (32-bit), which splits into channel, row ``h`` and column ``w``.

Whether this element ``e`` (value ``v``) is the argmax of a window that reads
it depends on its neighbours only. PyTorch's CPU kernel (and the reference)
scans a window's taps inside the input (never the padding) in row-major order,
takes the first, then any tap that is greater, or NaN: the argmax is the
window's last NaN if it has one, else its first maximum. So ``e`` is the argmax
iff no tap of the window inside the input *beats* it: a tap before ``e`` in
row-major order beats it unless smaller (``!(n < v)``: greater, equal or NaN),
a tap after it when greater or NaN; when ``v`` is NaN, only a NaN after it
does. Before and after depend only on the tap's offset ``(dr, dc)`` from ``e``
(``dr < 0``, or ``dr = 0`` and ``dc < 0``), the same in every window. So each
of the ``(2 KH - 1) x (2 KW - 1)`` neighbours at ``(h + dr * DH, w + dc * DW)``
is loaded and compared once, and one that beats ``e`` marks every window
holding it in a word of bits, bit ``p * KW + q`` for the window ``(p, q)`` that
reads ``e`` at tap ``(p, q)``; that window holds the offsets
``-p <= dr < KH - p``, ``-q <= dc < KW - q``, so a neighbour row ORs its
beaten window columns (`column_bits`, constant per column) and then sets them
in each window row holding the row (`band_rows`, shifted). ``e`` is the argmax
of window ``(p, q)`` iff its bit is clear. That is O(KH * KW) loads and
operations per element; recomputing the argmax of every window that reads the
element, as this kernel did before, is O((KH * KW)**2): 625 taps per element
for SPPF's 5 x 5 against 81 neighbours. The word is int32 (31 bits) when the
KH * KW windows fit, else int64, whose 63 bits take the window rows in bands
of ``63 // KW`` rows, one word each (each band loads the neighbour rows its
windows reach; the lowering refuses ``KW > 63``).

Which windows exist: the window starting (padded) at
``(h + PT - p * DH, w + PL - q * DW)`` reads the element at tap ``(p, q)`` when
that start is a multiple of the stride and the window an output ``(oh, ow)``
inside ``OH x OW``. Per axis (rows shown), with ``t = h + PT``,
``G = gcd(DH, SH)`` and ``R = SH / G``: a tap ``p`` qualifies only if ``G``
divides ``t`` and ``p = p0 (mod R)``, ``p0 = (t / G) * I mod R`` where ``I`` is
the inverse of ``DH / G`` modulo ``R``; the lowering passes ``R, G, I`` per
axis as the constexprs ``RH, GH, IH`` and ``RW, GW, IW``. So the gather runs
over ``p = p0 + j * RH`` for ``j < cdiv(KH, RH)``, whose window is output row
``oh0 - j * (DH / G)`` (the start moves ``R * DH = SH * DH / G`` rows a step),
and the same for the columns; distinct taps give distinct windows, so each
window counts once. A window whose bit is clear adds its ``dy[oh, ow]``, in
row-major window order: a fixed order, so results are deterministic, and the
same order (and bits) as the kernel that recomputed each argmax.

The neighbour rows and the gather's window rows loop at run time, the columns
unroll: Triton's coalescing pass walks the whole program slice of every load,
so a fully unrolled nest takes it time quadratic in the window's loads (minutes
for 9 x 9). Every load is masked to its plane (a neighbour outside it, in the
padding or past the bottom/right edge in ceil mode, is never loaded and beats
nothing), so wrong ``R, G, I`` would give wrong gradients, never an access out
of bounds. Lanes past the end read element 0's neighbourhood (in bounds) and
store nothing. Image offsets are 64-bit; offsets inside an image are 32-bit,
which the contract's `implied` guarantees fit.
"""

import triton
import triton.language as tl


@triton.constexpr_function
def word_type(kh, kw):
    """The window bits' word: int32 (31 bits) where all windows fit, else int64
    (63 bits; a wider window takes several bands)."""
    return tl.int32 if kh * kw <= 31 else tl.int64


@triton.constexpr_function
def band_last(band, rows, kh):
    """The last window row of band ``band`` (``rows`` rows each; its first is
    ``band * rows``)."""
    return min(kh - 1, (band + 1) * rows - 1)


@triton.constexpr_function
def band_rows(band, rows, kh, kw):
    """Bit 0 of each of the band's window rows: ``sum(1 << (p * kw))`` over its
    rows ``p`` counted from the band's first. Shifted, it selects some of them;
    times `column_bits`, it places a column pattern in each."""
    return sum(1 << (p * kw) for p in range(band_last(band, rows, kh) - band * rows + 1))


@triton.constexpr_function
def column_bits(dc, kw):
    """The window columns ``q`` (bits ``q``) that hold the neighbour column at
    offset ``dc``: ``-q <= dc < kw - q``."""
    return sum(1 << q for q in range(max(0, -dc), min(kw - 1, kw - 1 - dc) + 1))


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
    centre = x_plane + h * W + w
    v = tl.load(centre, mask=mask, other=0.0)
    # A tap before this element beats it unless smaller: none does when v is
    # NaN, so those taps load only where v is a number.
    number = v == v
    # A tap after it beats it when greater or NaN: !(n <= bound), with a NaN v
    # compared as +inf, which only a NaN beats.
    bound = tl.where(number, v, float("inf"))
    below = H - h  # rows h .. H - 1 of the plane
    right = W - w
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    # The taps p with p * DH = h + PT (mod SH): p = p0 + j * RH (see the module doc).
    t_h = h + PT
    t_w = w + PL
    p0 = ((t_h // GH) * IH) % RH
    q0 = ((t_w // GW) * IW) % RW
    g_ok = mask & (t_h % GH == 0) & (t_w % GW == 0) & (q0 < KW)
    # Window (j, k), the one reading this element at tap (p0 + j * RH, q0 + k * RW),
    # is output (oh0 - j * (DH // GH), ow0 - k * (DW // GW)): its start moves by
    # RH * DH = SH * (DH // GH) rows per step (exact where g_ok holds).
    oh0 = (t_h - p0 * DH) // SH
    ow0 = (t_w - q0 * DW) // SW
    first_bit = p0 * KW + q0  # window (p0, q0)'s bit in band 0
    # Bit k * RW: window column k exists (the rows are checked per row).
    open_columns = tl.zeros((BLOCK,), dtype=word_type(KH, KW))
    for k in tl.static_range((KW + RW - 1) // RW):
        ow = ow0 - k * (DW // GW)
        column_ok = (q0 < KW - k * RW) & (ow >= 0) & (ow < OW)
        open_columns |= tl.where(column_ok, 1 << (k * RW), 0)
    BAND: tl.constexpr = (31 if KH * KW <= 31 else 63) // KW  # window rows per word
    for band in tl.static_range((KH + BAND - 1) // BAND):
        # (Band-local values are spelled out: an assigned constexpr would become a tensor.)
        beaten = tl.zeros((BLOCK,), dtype=word_type(KH, KW))  # bit (p - band * BAND) * KW + q
        # Rows above h (dr = -a): before this element; the band's windows p >= a
        # hold them. The rows loop at run time: unrolled, every load would share
        # one straight-line program with all the others, and Triton's coalescing
        # pass, which walks each load's whole slice of the program, takes time
        # quadratic in it (minutes for a 9 x 9 window); the columns unroll.
        for a in range(1, band_last(band, BAND, KH) + 1):
            row_in = number & (h >= a * DH)
            row = centre + (-a * DH) * W
            skipped = (tl.maximum(a - band * BAND, 0) * KW).to(word_type(KH, KW))
            rows = (band_rows(band, BAND, KH, KW) >> skipped) << skipped
            columns = tl.zeros((BLOCK,), dtype=word_type(KH, KW))  # window columns beaten
            for c in tl.static_range(-(KW - 1), KW):
                if c < 0:
                    inside = row_in & (w >= -c * DW)
                elif c > 0:
                    inside = row_in & (c * DW < right)
                else:
                    inside = row_in
                # Masked taps read +inf, never smaller, so beats = inside and not smaller.
                n = tl.load(row + c * DW, mask=inside, other=float("inf"))
                columns |= tl.where(inside != (n < v), column_bits(c, KW), 0)
            beaten |= columns * rows  # those columns of each window row holding the row
        # The element's own row: the taps left of it come before it, those right after.
        columns = tl.zeros((BLOCK,), dtype=word_type(KH, KW))
        for c in tl.static_range(1, KW):
            inside = number & (w >= c * DW)
            n = tl.load(centre + -c * DW, mask=inside, other=float("inf"))
            columns |= tl.where(inside != (n < v), column_bits(-c, KW), 0)
            n = tl.load(centre + c * DW, mask=c * DW < right, other=float("-inf"))
            columns |= tl.where(n <= bound, 0, column_bits(c, KW))
        beaten |= columns * band_rows(band, BAND, KH, KW)
        # Rows below h (dr = a): after this element; the band's windows p < KH - a
        # hold them (masked taps read -inf, never greater).
        for a in range(1, KH - band * BAND):
            row_in = a * DH < below
            row = centre + (a * DH) * W
            dropped = tl.maximum(band_last(band, BAND, KH) + a - (KH - 1), 0) * KW
            dropped = dropped.to(word_type(KH, KW))
            rows = band_rows(band, BAND, KH, KW) >> dropped
            columns = tl.zeros((BLOCK,), dtype=word_type(KH, KW))
            for c in tl.static_range(-(KW - 1), KW):
                if c < 0:
                    inside = row_in & (w >= -c * DW)
                elif c > 0:
                    inside = row_in & (c * DW < right)
                else:
                    inside = row_in
                n = tl.load(row + c * DW, mask=inside, other=float("-inf"))
                columns |= tl.where(n <= bound, 0, column_bits(c, KW))
            beaten |= columns * rows
        # Gather dy from the band's windows that exist and that nothing beats:
        # bit k * RW of `free` is window (j, k), read in row-major order.
        for j in range((KH + RH - 1) // RH):  # at run time, as the rows above
            oh = oh0 - j * (DH // GH)
            row_ok = g_ok & (p0 < KH - j * RH) & (oh >= 0) & (oh < OH)
            if KH > BAND:  # several bands: this one's window rows only
                row_ok &= (p0 + j * RH >= band * BAND) & (p0 + j * RH <= band_last(band, BAND, KH))
            shift = tl.where(row_ok, first_bit + (j * RH - band * BAND) * KW, 0)
            free = tl.where(row_ok, open_columns & ~(beaten >> shift), 0)
            dy_row = dy_plane + oh * OW + ow0
            for k in tl.static_range((KW + RW - 1) // RW):
                mine = (free & (1 << (k * RW))) != 0
                acc += tl.load(dy_row + -k * (DW // GW), mask=mine, other=0.0)
    tl.store(dx + image * elements + within, acc, mask=mask)
