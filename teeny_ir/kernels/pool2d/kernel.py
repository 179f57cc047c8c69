"""Triton source of the ``pool2d`` family: max, average and global average pools.

``x`` is ``N`` images of ``C`` contiguous planes of ``H x W``, image ``n`` at
``n * x_batch_stride``; ``y`` is ``N`` images of ``C`` planes of ``OH x OW``,
image ``n`` at ``n * y_batch_stride`` (a stride larger than the image is a
batch-strided view, a channel slice of a larger buffer). A windowed pool
(``GLOBAL = 0``) runs a 1-D grid of programs of ``BLOCK`` outputs, one per lane:
the flat output index (64-bit, so the tail mask stays right near 2**31) splits
into the image (one 64-bit division) and the index within it (32-bit), which
splits into channel, row and column; the window of ``KH x KW`` taps, dilated by
``DH, DW`` and starting at ``(oh * SH - PT, ow * SW - PL)``, is unrolled over the
constexpr sizes. Each tap is loaded under a mask that keeps it inside its
plane; a tap in the padding (or past the bottom/right edge in ceil mode) is
-inf for a max and 0 for an average. The max propagates NaN as torch does (a
NaN tap wins). The average divides by PyTorch's divisor: the window clipped to
the padded input (``COUNT_PAD``) or to the input alone.

A global average pool (``GLOBAL = 1``) gives each program ``BLOCK`` planes and
sums each plane in blocks of ``BLOCK_HW`` elements, a loop over any ``H * W``,
then divides by ``H * W``; the window constexprs are unused there.

Image offsets (``n * batch_stride``) are 64-bit; offsets inside an image are
32-bit, which the contract's `implied` guarantees fit (an image holds fewer
than 2**31 elements).
"""

import triton
import triton.language as tl


@triton.jit
def pool2d(
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
    GLOBAL: tl.constexpr,
    IS_MAX: tl.constexpr,
    COUNT_PAD: tl.constexpr,
    KH: tl.constexpr,
    KW: tl.constexpr,
    SH: tl.constexpr,
    SW: tl.constexpr,
    DH: tl.constexpr,
    DW: tl.constexpr,
    PT: tl.constexpr,
    PL: tl.constexpr,
    PB: tl.constexpr,
    PR: tl.constexpr,
    BLOCK: tl.constexpr,
    BLOCK_HW: tl.constexpr,
):
    if GLOBAL:
        planes = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        plane_mask = planes < N.to(tl.int64) * C
        plane = tl.where(plane_mask, planes, 0)
        image = plane // C
        channel = (plane - image * C).to(tl.int32)
        spatial = H.to(tl.int64) * W
        bases = image * x_batch_stride + channel * spatial
        acc = tl.zeros((BLOCK, BLOCK_HW), dtype=tl.float32)
        for start in range(0, spatial, BLOCK_HW):
            offsets = start + tl.arange(0, BLOCK_HW)
            mask = plane_mask[:, None] & (offsets < spatial)[None, :]
            acc += tl.load(x + bases[:, None] + offsets[None, :], mask=mask, other=0.0)
        mean = tl.sum(acc, axis=1) / spatial.to(tl.float32)
        tl.store(y + image * y_batch_stride + channel * (OH * OW), mean, mask=plane_mask)
    else:
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
        base = x + image * x_batch_stride + channel * H * W
        h0 = oh * SH - PT
        w0 = ow * SW - PL
        if IS_MAX:
            acc = tl.full((BLOCK,), float("-inf"), tl.float32)
        else:
            acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for p in tl.static_range(KH):
            ih = h0 + p * DH
            row_ok = mask & (ih >= 0) & (ih < H)
            for q in tl.static_range(KW):
                iw = w0 + q * DW
                ok = row_ok & (iw >= 0) & (iw < W)
                if IS_MAX:
                    tap = tl.load(base + ih * W + iw, mask=ok, other=float("-inf"))
                    # A NaN tap wins, and stays: NaN > acc and acc > NaN are both false.
                    acc = tl.where((tap > acc) | (tap != tap), tap, acc)
                else:
                    acc += tl.load(base + ih * W + iw, mask=ok, other=0.0)
        if IS_MAX:
            result = acc
        else:
            # Masked-off lanes have index 0: a real window, so the divisor is >= 1.
            if COUNT_PAD:
                rows = tl.minimum(h0 + KH, H + PB) - h0
                cols = tl.minimum(w0 + KW, W + PR) - w0
            else:
                rows = tl.minimum(h0 + KH, H) - tl.maximum(h0, 0)
                cols = tl.minimum(w0 + KW, W) - tl.maximum(w0, 0)
            result = acc / (rows * cols).to(tl.float32)
        tl.store(y + image * y_batch_stride + within, result, mask=mask)
