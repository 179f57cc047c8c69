"""Triton source of the ``fused_elementwise`` family (see ``contract``).

The output is viewed as rank 6; its flat index is split into six coordinates
with ``size1..size5``. Each of the first ``INPUTS`` inputs is loaded at its
logical offset mapped through its images (`_at`); rendering replaces the
``program`` slot with the pointwise program (one helper per step). Masked-off
lanes read 1.0, so that a division stays finite there (they are never stored).
The flat index is 64-bit for the tail mask, the coordinates 32-bit (exact:
every in-range index is below ``numel``, an i32).
"""

import triton
import triton.language as tl


@triton.jit
def program(x0, x1, x2, x3, x4, x5):
    """Slot: rendering replaces it with the pointwise program PROGRAM."""
    tl.static_assert(False, "render this kernel: its program slot is empty")
    return x0


@triton.jit
def _at(i0, i1, i2, i3, i4, i5, s0, s1, s2, s3, s4, s5, image, batch_stride):
    """The memory offset of the logical offset ``sum i_d * s_d`` of a tensor whose
    images of ``image`` elements lie ``batch_stride`` apart."""
    logical = i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3 + i4 * s4 + i5 * s5
    return (logical // image) * batch_stride + logical % image


@triton.jit
def fused_elementwise(
    in0,
    in1,
    in2,
    in3,
    in4,
    in5,
    out,
    numel,
    size1,
    size2,
    size3,
    size4,
    size5,
    in0_stride0,
    in0_stride1,
    in0_stride2,
    in0_stride3,
    in0_stride4,
    in0_stride5,
    in0_image,
    in0_batch_stride,
    in1_stride0,
    in1_stride1,
    in1_stride2,
    in1_stride3,
    in1_stride4,
    in1_stride5,
    in1_image,
    in1_batch_stride,
    in2_stride0,
    in2_stride1,
    in2_stride2,
    in2_stride3,
    in2_stride4,
    in2_stride5,
    in2_image,
    in2_batch_stride,
    in3_stride0,
    in3_stride1,
    in3_stride2,
    in3_stride3,
    in3_stride4,
    in3_stride5,
    in3_image,
    in3_batch_stride,
    in4_stride0,
    in4_stride1,
    in4_stride2,
    in4_stride3,
    in4_stride4,
    in4_stride5,
    in4_image,
    in4_batch_stride,
    in5_stride0,
    in5_stride1,
    in5_stride2,
    in5_stride3,
    in5_stride4,
    in5_stride5,
    in5_image,
    in5_batch_stride,
    out_image,
    out_batch_stride,
    PROGRAM: tl.constexpr,
    INPUTS: tl.constexpr,
    BLOCK: tl.constexpr,
):
    flat = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = flat < numel
    index = tl.where(mask, flat, 0).to(tl.int32)
    i5 = index % size5
    rest = index // size5
    i4 = rest % size4
    rest = rest // size4
    i3 = rest % size3
    rest = rest // size3
    i2 = rest % size2
    rest = rest // size2
    i1 = rest % size1
    i0 = rest // size1
    offset0 = _at(
        i0,
        i1,
        i2,
        i3,
        i4,
        i5,
        in0_stride0,
        in0_stride1,
        in0_stride2,
        in0_stride3,
        in0_stride4,
        in0_stride5,
        in0_image,
        in0_batch_stride,
    )
    a0 = tl.load(in0 + offset0, mask=mask, other=1.0)
    a1 = a0
    if INPUTS > 1:
        offset1 = _at(
            i0,
            i1,
            i2,
            i3,
            i4,
            i5,
            in1_stride0,
            in1_stride1,
            in1_stride2,
            in1_stride3,
            in1_stride4,
            in1_stride5,
            in1_image,
            in1_batch_stride,
        )
        a1 = tl.load(in1 + offset1, mask=mask, other=1.0)
    a2 = a0
    if INPUTS > 2:
        offset2 = _at(
            i0,
            i1,
            i2,
            i3,
            i4,
            i5,
            in2_stride0,
            in2_stride1,
            in2_stride2,
            in2_stride3,
            in2_stride4,
            in2_stride5,
            in2_image,
            in2_batch_stride,
        )
        a2 = tl.load(in2 + offset2, mask=mask, other=1.0)
    a3 = a0
    if INPUTS > 3:
        offset3 = _at(
            i0,
            i1,
            i2,
            i3,
            i4,
            i5,
            in3_stride0,
            in3_stride1,
            in3_stride2,
            in3_stride3,
            in3_stride4,
            in3_stride5,
            in3_image,
            in3_batch_stride,
        )
        a3 = tl.load(in3 + offset3, mask=mask, other=1.0)
    a4 = a0
    if INPUTS > 4:
        offset4 = _at(
            i0,
            i1,
            i2,
            i3,
            i4,
            i5,
            in4_stride0,
            in4_stride1,
            in4_stride2,
            in4_stride3,
            in4_stride4,
            in4_stride5,
            in4_image,
            in4_batch_stride,
        )
        a4 = tl.load(in4 + offset4, mask=mask, other=1.0)
    a5 = a0
    if INPUTS > 5:
        offset5 = _at(
            i0,
            i1,
            i2,
            i3,
            i4,
            i5,
            in5_stride0,
            in5_stride1,
            in5_stride2,
            in5_stride3,
            in5_stride4,
            in5_stride5,
            in5_image,
            in5_batch_stride,
        )
        a5 = tl.load(in5 + offset5, mask=mask, other=1.0)
    value = program(a0, a1, a2, a3, a4, a5)
    tl.store(out + (index // out_image) * out_batch_stride + index % out_image, value, mask=mask)
