"""Triton source of the ``fused_reduce`` family (see ``contract``).

The ``reduce`` family's loop, with the load of ``x`` replaced by the loads of
the first ``INPUTS`` inputs, each at its image and in-image offset times its
flags, and the pointwise program (rendered into the ``program`` slot) applied
to them: the program's value is reduced where it is computed. Masked-off lanes
read 1.0 (so that a division stays finite there) and their value is dropped
before it is accumulated. Offsets are 64-bit.
"""

import triton
import triton.language as tl


@triton.jit
def program(x0, x1, x2, x3, x4, x5):
    """Slot: rendering replaces it with the pointwise program PROGRAM."""
    tl.static_assert(False, "render this kernel: its program slot is empty")
    return x0


@triton.jit
def fused_reduce(
    in0,
    in1,
    in2,
    in3,
    in4,
    in5,
    y,
    N,
    RB,
    OUTER,
    R,
    INNER,
    Y_IMAGE,
    y_batch_stride,
    in0_batch_stride,
    in0_per_image,
    in0_per_element,
    in1_batch_stride,
    in1_per_image,
    in1_per_element,
    in2_batch_stride,
    in2_per_image,
    in2_per_element,
    in3_batch_stride,
    in3_per_image,
    in3_per_element,
    in4_batch_stride,
    in4_per_image,
    in4_per_element,
    in5_batch_stride,
    in5_per_image,
    in5_per_element,
    PROGRAM: tl.constexpr,
    INPUTS: tl.constexpr,
    MEAN: tl.constexpr,
    BLOCK_ROWS: tl.constexpr,
    BLOCK_R: tl.constexpr,
):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    row_mask = rows < N.to(tl.int64) * OUTER * INNER
    row = tl.where(row_mask, rows, 0)
    inner = row % INNER
    rest = row // INNER
    outer = rest % OUTER
    image = rest // OUTER
    row_offset = outer * R * INNER + inner
    acc = tl.zeros((BLOCK_ROWS, BLOCK_R), dtype=tl.float32)
    nan = tl.zeros((BLOCK_ROWS, BLOCK_R), dtype=tl.int32)
    pos = tl.zeros((BLOCK_ROWS, BLOCK_R), dtype=tl.int32)
    neg = tl.zeros((BLOCK_ROWS, BLOCK_R), dtype=tl.int32)
    count = RB.to(tl.int64) * R
    for start in range(0, count, BLOCK_R):
        f = start + tl.arange(0, BLOCK_R)
        rb = f // R
        mask = row_mask[:, None] & (f < count)[None, :]
        images = image[:, None] + rb[None, :]
        offsets = row_offset[:, None] + ((f - rb * R) * INNER)[None, :]
        a0 = tl.load(
            in0 + images * (in0_batch_stride * in0_per_image) + offsets * in0_per_element,
            mask=mask,
            other=1.0,
        )
        a1 = a0
        if INPUTS > 1:
            a1 = tl.load(
                in1 + images * (in1_batch_stride * in1_per_image) + offsets * in1_per_element,
                mask=mask,
                other=1.0,
            )
        a2 = a0
        if INPUTS > 2:
            a2 = tl.load(
                in2 + images * (in2_batch_stride * in2_per_image) + offsets * in2_per_element,
                mask=mask,
                other=1.0,
            )
        a3 = a0
        if INPUTS > 3:
            a3 = tl.load(
                in3 + images * (in3_batch_stride * in3_per_image) + offsets * in3_per_element,
                mask=mask,
                other=1.0,
            )
        a4 = a0
        if INPUTS > 4:
            a4 = tl.load(
                in4 + images * (in4_batch_stride * in4_per_image) + offsets * in4_per_element,
                mask=mask,
                other=1.0,
            )
        a5 = a0
        if INPUTS > 5:
            a5 = tl.load(
                in5 + images * (in5_batch_stride * in5_per_image) + offsets * in5_per_element,
                mask=mask,
                other=1.0,
            )
        v = tl.where(mask, program(a0, a1, a2, a3, a4, a5), 0.0)
        acc, nan, pos, neg = finite_sum_add(acc, nan, pos, neg, v)  # noqa: F821 - a shared helper
    total = finite_sum_total(acc, nan, pos, neg)  # noqa: F821 - pasted in by rendering
    if MEAN:  # the infinities and NaN stay what they are
        total = total / (RB.to(tl.float32) * R.to(tl.float32))
    y_image = row // Y_IMAGE
    tl.store(y + y_image * y_batch_stride + (row - y_image * Y_IMAGE), total, mask=row_mask)
