"""The row view that the ``concat`` and ``split`` families share (standard library only).

A tensor cut along ``axis`` is a matrix [OUTER, INNER]: OUTER is the product of
the dimensions before ``axis``, INNER the product from ``axis`` on. The
concatenation ("whole") of parts along ``axis`` has the parts' OUTER and an INNER
that is the sum of theirs, and part ``k`` fills the columns
``[offset_k, offset_k + INNER_k)`` of every row, ``offset_k = INNER_0 + ... + INNER_{k-1}``.
Both kernels compute the offsets from the ``INNER_k`` (prefix sums), so no offset is
ever an argument that could disagree with the shapes.

Every tensor may be batch-strided: its images (``shape[1:]``, ``IMAGE`` elements,
each contiguous) lie ``batch_stride`` elements apart. The row view gives each
element its *logical* index ``f`` (its index if the tensor were contiguous); its
address is ``(f // IMAGE) * batch_stride + f % IMAGE``. That holds whatever the
axis: along an axis >= 1 a row never leaves its image and ``f // IMAGE`` is the
row's batch index; along axis 0 (the batch itself) images are column ranges of
the one row. A contiguous tensor has ``batch_stride == IMAGE`` and the address is
``f``.

A launch has `MAX_PARTS` part pointers; one with fewer parts binds the unused ones
to its first part (with that part's ``IMAGE`` and batch stride) and passes
``INNER_k = 0`` for them, so they are never touched (their footprint is at most
0 elements).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

MAX_PARTS = 4
"""Part pointers in the ABI: YOLOv8n concatenates 2 to 4 tensors and splits in 2."""

PARTS = tuple(range(MAX_PARTS))


def inner(shape: Sequence[int], axis: int) -> int:
    """INNER of ``shape`` cut at ``axis``: the product of its sizes from ``axis`` on."""
    return math.prod(shape[axis:])


def image(shape: Sequence[int]) -> int:
    """The elements of one image of ``shape``: the product of its sizes after the first."""
    return math.prod(shape[1:])


def _fits(whole: Sequence[int], parts: Sequence[Sequence[int]], axis: int) -> bool:
    """``whole`` is the concatenation of ``parts`` along ``axis``."""
    if any(len(p) != len(whole) for p in parts):
        return False
    others = [k for k in range(len(whole)) if k != axis]
    if any(p[k] != whole[k] for p in parts for k in others):
        return False
    return sum(p[axis] for p in parts) == whole[axis]


def implied(
    shapes: Mapping[str, tuple[int, ...]],
    whole: str,
    part: str,
    inner_whole: str,
    image_whole: str,
) -> list[dict[str, int | None]]:
    """The dims a launch over tensors of ``shapes`` must take: ``numel`` (of the
    whole), ``inner_whole``, ``INNER0..3``, ``image_whole`` and ``IMAGE0..3``, one
    alternative per way of reading ``whole`` as the concatenation of the first
    n parts (n = 1..4) along an axis. Parts past the n-th take ``INNER_k = 0``;
    every ``IMAGE_k`` is the image of the tensor bound to part ``k`` (the kernel
    divides by it). Shapes that are no concatenation imply nothing (the
    validator then refuses the launch). The batch strides are the validator's."""
    whole_shape = shapes[whole]
    parts = [shapes[f"{part}{k}"] for k in PARTS]
    images: dict[str, int | None] = {image_whole: image(whole_shape)}
    images |= {f"IMAGE{k}": image(parts[k]) for k in PARTS}
    alternatives: list[dict[str, int | None]] = []
    for count in range(1, MAX_PARTS + 1):
        for axis in range(len(whole_shape)):
            if not _fits(whole_shape, parts[:count], axis):
                continue
            dims: dict[str, int | None] = {
                "numel": math.prod(whole_shape),
                inner_whole: inner(whole_shape, axis),
            }
            dims |= {f"INNER{k}": inner(parts[k], axis) if k < count else 0 for k in PARTS}
            dims |= images
            if dims not in alternatives:
                alternatives.append(dims)
    return alternatives


def whole_reach(image_whole: str, stride: str) -> str:
    """Elements the whole may be touched at: logical indices below ``numel``."""
    return f"floordiv(numel - 1, {image_whole}) * {stride} + {image_whole}"


def part_reach(inner_whole: str, k: int, stride: str) -> str:
    """Elements part ``k`` may be touched at: every row of the whole (rows are
    ``numel / inner_whole``) reaches its INNER_k columns, so its logical indices
    stay below ``rows * INNER_k``; an index ``f`` lies at most ``IMAGE_k - 1``
    past its image's start ``(f // IMAGE_k) * stride``. At most 0 when
    ``INNER_k = 0``."""
    last = f"floordiv(numel - 1, {inner_whole}) * INNER{k} + INNER{k} - 1"
    return f"floordiv({last}, IMAGE{k}) * {stride} + IMAGE{k}"
