"""Resize (and Upsample): every mode, coordinate transformation and rounding, as
graph ops.

Resize is separable and linear along each axis: along an axis of size ``n``
resized to ``m``, ``y = x @ W`` for an ``[n, m]`` matrix of interpolation
weights (one-hot for nearest; two taps for linear, four for cubic; wider for
antialiased downsampling), plus a constant where ``tf_crop_and_resize``
extrapolates. So each resized axis imports as a `graph.matmul` with a constant
weight matrix (between transposes that make the axis the last one), and the
whole resize differentiates and lowers like any matmul.

The weights are ONNX's own: onnx's reference implementation
(``onnx.reference.ops.op_resize``, of the pinned onnx) interpolates the identity
matrix along the axis, so every mode means exactly what the reference computes,
including its rounding and edge rules. The one case with a dedicated graph op
stays one: a nearest resize of an (N, C, H, W) tensor by integer factors whose
coordinates round exactly is `graph.upsample_nearest2d`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from onnx.reference.ops import op_resize
from xdsl.dialects.builtin import DYNAMIC_INDEX
from xdsl.ir import SSAValue

from teeny_ir.frontend.onnx.context import BATCH, Node, Value, dims, onnx_op

_EXACT = {
    # y[i] = x[i // s] for an integer scale s: asymmetric coordinates rounded down,
    # and half-pixel ones rounded to nearest (their offset never reaches a tie).
    ("asymmetric", "floor"),
    ("half_pixel", "round_prefer_floor"),
    ("half_pixel", "round_prefer_ceil"),
    ("pytorch_half_pixel", "round_prefer_floor"),
    ("pytorch_half_pixel", "round_prefer_ceil"),
}
_MODES = ("nearest", "linear", "cubic")
_COORDINATES = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_crop_and_resize",
)
_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
_POLICIES = ("stretch", "not_larger", "not_smaller")


@onnx_op("Resize", since=11)
@onnx_op("Resize", since=13)  # roi and scales optional
@onnx_op("Resize", since=18)  # antialias, axes, keep_aspect_ratio_policy
def _resize(node: Node) -> list[Value]:
    attrs = node.attrs(
        mode="nearest",
        coordinate_transformation_mode="half_pixel",
        nearest_mode="round_prefer_floor",
        cubic_coeff_a=-0.75,
        exclude_outside=0,
        extrapolation_value=0.0,
        antialias=0,
        axes=None,
        keep_aspect_ratio_policy="stretch",
    )
    for name, allowed in (
        ("mode", _MODES),
        ("coordinate_transformation_mode", _COORDINATES),
        ("nearest_mode", _NEAREST),
        ("keep_aspect_ratio_policy", _POLICIES),
    ):
        if attrs[name] not in allowed:
            raise node.refuse(f"unsupported attribute {name}={attrs[name]}")
    if attrs["antialias"] and attrs["mode"] == "nearest":
        raise node.refuse("unsupported attribute antialias=1 with mode=nearest")
    x = node.tensor(0)
    shape = dims(x)
    rank = len(shape)
    axes = _axes(node, attrs["axes"], rank)
    roi = _roi(node, axes, rank)
    scales, sizes = _targets(node, attrs["keep_aspect_ratio_policy"], shape, axes)
    if _is_upsample(attrs, shape, scales, sizes, roi):
        return [node.b.upsample_nearest2d(x, [int(scales[2]), int(scales[3])])]
    coeffs = _coefficients(attrs)
    for axis in axes:
        if sizes[axis] == shape[axis] and np.isclose(scales[axis], 1.0) and _plain(roi, axis, rank):
            continue  # the identity along this axis, as the reference skips it
        if shape[axis] == DYNAMIC_INDEX:
            raise node.refuse("resizing the dynamic batch dimension")
        if sizes[axis] < 1:
            raise node.refuse(f"the output size along axis {axis} is {sizes[axis]}")
        x = _along(node, x, axis, scales[axis], sizes[axis], coeffs, attrs, roi)
    return [x]


@onnx_op("Upsample", since=9)
def _upsample(node: Node) -> list[Value]:
    # Upsample 9: Resize 10's form (scales an input), modes nearest and linear,
    # with asymmetric coordinates and nearest rounded down.
    attrs = node.attrs(mode="nearest")
    if attrs["mode"] not in ("nearest", "linear"):
        raise node.refuse(f"unsupported attribute mode={attrs['mode']}")
    x = node.tensor(0)
    shape = dims(x)
    scales = [float(s) for s in node.const(1, "scales").reshape(-1)]
    if len(scales) != len(shape):
        raise node.refuse(f"{len(scales)} scales for a rank-{len(shape)} input")
    resize_attrs = {
        "mode": attrs["mode"],
        "coordinate_transformation_mode": "asymmetric",
        "nearest_mode": "floor",
        "cubic_coeff_a": -0.75,
        "exclude_outside": 0,
        "extrapolation_value": 0.0,
        "antialias": 0,
    }
    sizes = [int(np.floor(d * s)) if d > 0 else d for d, s in zip(shape, scales, strict=True)]
    coeffs = _coefficients(resize_attrs)
    for axis in range(len(shape)):
        if scales[axis] == 1.0:
            continue
        if shape[axis] == DYNAMIC_INDEX:
            raise node.refuse("resizing the dynamic batch dimension")
        x = _along(node, x, axis, scales[axis], sizes[axis], coeffs, resize_attrs, None)
    return [x]


def _axes(node: Node, axes: list[int] | None, rank: int) -> list[int]:
    if axes is None:
        return list(range(rank))
    if any(not -rank <= a < rank for a in axes) or len({a % rank for a in axes}) != len(axes):
        raise node.refuse(f"unsupported attribute axes={axes} for rank {rank}")
    return [a % rank for a in axes]


def _roi(node: Node, axes: list[int], rank: int) -> np.ndarray | None:
    """The region of interest, [starts..., ends...] over every axis, if given, in
    its own element type (the reference computes coordinates in it, and a
    coordinate a rounding below 0 is extrapolated)."""
    if not node.has_input(1):
        return None
    given = node.const(1, "roi").reshape(-1)
    if not given.size:
        return None
    if given.dtype.kind != "f":
        raise node.refuse(f"roi of type {given.dtype}")
    if given.size != 2 * len(axes):
        raise node.refuse(f"roi has {given.size} values for {len(axes)} axes")
    roi = np.concatenate([np.zeros(rank), np.ones(rank)]).astype(given.dtype)
    for i, axis in enumerate(axes):
        roi[axis], roi[rank + axis] = given[i], given[len(axes) + i]
    return roi


def _plain(roi: np.ndarray | None, axis: int, rank: int) -> bool:
    return roi is None or bool(np.isclose(roi[axis], 0.0) and np.isclose(roi[axis + rank], 1.0))


def _targets(
    node: Node, policy: str, shape: tuple[int, ...], axes: list[int]
) -> tuple[list[float], list[int]]:
    """Every axis's scale and output size, as the reference derives them from
    ``scales`` or ``sizes`` (and ``keep_aspect_ratio_policy``)."""
    rank = len(shape)
    scales_given = node.has_input(2) and node.const(2, "scales").size
    if scales_given:
        given = [float(s) for s in node.const(2, "scales").reshape(-1)]
        if len(given) != len(axes):
            raise node.refuse(f"{len(given)} scales for {len(axes)} axes")
        scales = [1.0] * rank
        for axis, scale in zip(axes, given, strict=True):
            scales[axis] = scale
        if any(s <= 0 for s in scales):
            raise node.refuse(f"scales {given} are not all positive")
        sizes = [int(s * d) if d > 0 else d for s, d in zip(scales, shape, strict=True)]
        return scales, sizes
    if not node.has_input(3):
        raise node.refuse("neither scales nor sizes is given")
    # A dynamic batch's size is `BATCH` (a Shape of the input, as exporters write it).
    given_sizes = [v for v in node.const(3, "sizes").reshape(-1)]
    if len(given_sizes) != len(axes):
        raise node.refuse(f"{len(given_sizes)} sizes for {len(axes)} axes")
    sizes = list(shape)
    for axis, size in zip(axes, given_sizes, strict=True):
        if shape[axis] == DYNAMIC_INDEX:
            if size is not BATCH:
                raise node.refuse("resizing the dynamic batch dimension")
            continue
        if size is BATCH:
            raise node.refuse(f"the size of axis {axis} is the dynamic batch")
        sizes[axis] = int(size)
    scales = [s / d if d > 0 else 1.0 for s, d in zip(sizes, shape, strict=True)]
    if policy != "stretch":
        chosen = [scales[a] for a in axes]
        scale = min(chosen) if policy == "not_larger" else max(chosen)
        scales = [scale if i in axes else 1.0 for i in range(rank)]
        sizes = [int(scale * d + 0.5) if i in axes else d for i, d in enumerate(shape)]
    return scales, sizes


def _is_upsample(
    attrs: dict[str, Any],
    shape: tuple[int, ...],
    scales: list[float],
    sizes: list[int],
    roi: np.ndarray | None,
) -> bool:
    """Whether the resize is `graph.upsample_nearest2d`'s: nearest, rounding
    exactly, of (N, C, H, W) by integer factors of H and W only."""
    pair = (attrs["coordinate_transformation_mode"], attrs["nearest_mode"])
    if attrs["mode"] != "nearest" or pair not in _EXACT or len(shape) != 4 or roi is not None:
        return False
    if scales[:2] != [1.0, 1.0] or sizes[:2] != list(shape[:2]):
        return False
    return all(
        s == int(s) and s >= 1 and sizes[k] == int(s) * shape[k]
        for k, s in ((2, scales[2]), (3, scales[3]))
    )


def _coefficients(attrs: dict[str, Any]) -> Callable[[float, float], np.ndarray]:
    """The reference's tap weights for the mode (as its ``Resize._run`` picks them)."""
    mode, a = attrs["mode"], float(attrs["cubic_coeff_a"])
    if mode == "nearest":
        nearest = attrs["nearest_mode"]
        return lambda ratio, scale: op_resize._nearest_coeffs(ratio, mode=nearest)
    if mode == "cubic":
        cubic = op_resize._cubic_coeffs_antialias if attrs["antialias"] else op_resize._cubic_coeffs
        return lambda ratio, scale: cubic(ratio, scale, A=a)
    linear: Callable[[float, float], np.ndarray] = (
        op_resize._linear_coeffs_antialias if attrs["antialias"] else op_resize._linear_coeffs
    )
    return linear


def _along(
    node: Node,
    x: SSAValue,
    axis: int,
    scale: float,
    size: int,
    coeffs: Callable[[float, float], np.ndarray],
    attrs: dict[str, Any],
    roi: np.ndarray | None,
) -> SSAValue:
    """``x`` resized along ``axis`` to ``size``: ``x @ W`` with the axis last."""
    shape = dims(x)
    rank = len(shape)
    n = shape[axis]

    def interpolate(data: np.ndarray, extrapolation: float) -> np.ndarray:
        result: np.ndarray = op_resize._interpolate_1d_along_axis(
            data,
            1,
            scale,
            size,
            coeffs,
            roi=None if roi is None else [roi[axis], roi[axis + rank]],
            extrapolation_value=extrapolation,
            coordinate_transformation_mode=attrs["coordinate_transformation_mode"],
            exclude_outside=bool(attrs["exclude_outside"]),
        )
        return result

    weights = interpolate(np.eye(n), 0.0).astype(np.float32)  # [n, size]: row j is e_j resized
    shift = interpolate(np.zeros((1, n)), float(attrs["extrapolation_value"]))
    b = node.b
    perm = list(range(rank))
    if axis != rank - 1:
        perm[axis], perm[-1] = perm[-1], perm[axis]
        x = b.transpose(x, perm)
    if rank == 1:
        x = b.reshape(x, [1, n])
    y = b.matmul(x, node.materialise(weights, f"{node.proto.output[0]}.resize_weights{axis}"))
    if np.any(shift):
        y = b.add(y, node.materialise(shift.reshape(-1).astype(np.float32), "extrapolation"))
    if rank == 1:
        y = b.reshape(y, [size])
    if axis != rank - 1:
        y = b.transpose(y, perm)
    return y
