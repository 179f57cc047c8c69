"""Triton source of the ``channel_affine`` family:
``y[n, c, ...] = act(x[n, c, ...] * scale[c] + shift[c])``.

``x`` and ``y`` are ``B`` images of ``C`` channels of ``INNER`` elements, image
``n`` of ``x`` at ``n * x_batch_stride`` and of ``y`` at ``n * y_batch_stride``;
each image is contiguous. A 1-D grid of programs of ``BLOCK`` elements, one
per lane: the flat index (64-bit, so the tail mask stays right near 2**31)
splits into the image (one 64-bit division) and the index within it (32-bit,
the contract keeps an image below 2**31 elements), whose channel is
``within // INNER``. Every load and the store are masked on the tail; masked-off
lanes read 0 and are never stored. ``ACTIVATION`` names an epilogue entry of the
pointwise table (or ``none``), whose expression rendering puts into the
``activation`` slot.
"""

import triton
import triton.language as tl


@triton.jit
def activation(x):
    """Slot: rendering replaces it with the pointwise table's expression for ACTIVATION."""
    tl.static_assert(False, "render this kernel: its activation slot is empty")
    return x


@triton.jit
def channel_affine(
    x,
    scale,
    shift,
    y,
    B,
    C,
    INNER,
    x_batch_stride,
    y_batch_stride,
    ACTIVATION: tl.constexpr,
    BLOCK: tl.constexpr,
):
    flat = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    image_size = C * INNER
    mask = flat < B.to(tl.int64) * image_size
    index = tl.where(mask, flat, 0)
    image = index // image_size
    within = (index - image * image_size).to(tl.int32)
    channel = within // INNER
    value = tl.load(x + image * x_batch_stride + within, mask=mask, other=0.0)
    channel_scale = tl.load(scale + channel, mask=mask, other=0.0)
    channel_shift = tl.load(shift + channel, mask=mask, other=0.0)
    result = activation(value * channel_scale + channel_shift)
    tl.store(y + image * y_batch_stride + within, result, mask=mask)
