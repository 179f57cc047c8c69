"""Triton source of the ``pad`` family: ``y = pad(x)`` in ``MODE`` (0 constant,
1 reflect, 2 edge).

A 1-D grid of ``BLOCK`` programs walks the contiguous output's flat index. Each
index is split into the output's indices (rank 6, trailing dimensions of size 1
where the tensor has fewer; dimension 0 takes what is left); each dimension
maps its index to a source index of the input (`_source`), row-major over
``n0 .. n5``. In constant mode an element with no source on some dimension
takes ``value[0]``; its lanes load nothing.

Indices are 32-bit: the lowering keeps every ``size + crop`` below 2**31 so the
raw source index cannot overflow; the flat index (for the tail mask) and the
image offset are 64-bit.
"""

import triton
import triton.language as tl


@triton.jit
def _source(o, n, before, crop, step, MODE: tl.constexpr):
    """(source index in ``[0, n)``, whether there is one) of output index ``o``."""
    raw = o + crop - before
    if MODE == 1:  # reflect: a triangle wave of period 2 * (n - 1)
        period = tl.maximum(2 * (n - 1), 1)
        folded = tl.abs(raw) % period
        return tl.minimum(folded, period - folded), raw == raw  # always inside
    if MODE == 2:  # edge
        return tl.minimum(tl.maximum(raw, 0), n - 1), raw == raw
    inside = raw >= 0
    raw = tl.where(inside, raw, 0)
    inside = inside & (raw % step == 0) & (raw // step < n)
    return tl.where(inside, raw // step, 0), inside


@triton.jit
def pad(
    x,
    value,
    y,
    numel,
    IMAGE_IN,
    size1,
    size2,
    size3,
    size4,
    size5,
    n0,
    n1,
    n2,
    n3,
    n4,
    n5,
    before0,
    before1,
    before2,
    before3,
    before4,
    before5,
    crop0,
    crop1,
    crop2,
    crop3,
    crop4,
    crop5,
    step0,
    step1,
    step2,
    step3,
    step4,
    step5,
    x_batch_stride,
    MODE: tl.constexpr,
    BLOCK: tl.constexpr,
):
    flat = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = flat < numel
    rest = tl.where(mask, flat, 0).to(tl.int32)
    s5, ok = _source(rest % size5, n5, before5, crop5, step5, MODE)
    rest = rest // size5
    s4, ok4 = _source(rest % size4, n4, before4, crop4, step4, MODE)
    rest = rest // size4
    s3, ok3 = _source(rest % size3, n3, before3, crop3, step3, MODE)
    rest = rest // size3
    s2, ok2 = _source(rest % size2, n2, before2, crop2, step2, MODE)
    rest = rest // size2
    s1, ok1 = _source(rest % size1, n1, before1, crop1, step1, MODE)
    s0, ok0 = _source(rest // size1, n0, before0, crop0, step0, MODE)
    inner = ((((s1 * n2 + s2) * n3 + s3) * n4 + s4) * n5 + s5).to(tl.int64)
    inside = ok & ok4 & ok3 & ok2 & ok1 & ok0
    offset = s0.to(tl.int64) * x_batch_stride + inner
    fill = tl.load(value)
    got = tl.load(x + offset, mask=mask & inside, other=0.0)
    tl.store(y + flat, tl.where(inside, got, fill), mask=mask)
