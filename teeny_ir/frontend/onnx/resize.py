"""Resize in its nearest, integer-scale forms: `graph.upsample_nearest2d`."""

from __future__ import annotations

from teeny_ir.frontend.onnx.context import Node, Value, dims, onnx_op

_EXACT = {
    # y[i] = x[i // s] for an integer scale s: asymmetric coordinates rounded down,
    # and half-pixel ones rounded to nearest (their offset never reaches a tie).
    ("asymmetric", "floor"),
    ("half_pixel", "round_prefer_floor"),
    ("half_pixel", "round_prefer_ceil"),
    ("pytorch_half_pixel", "round_prefer_floor"),
    ("pytorch_half_pixel", "round_prefer_ceil"),
}


@onnx_op("Resize", since=11)
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
    if attrs["mode"] != "nearest":
        raise node.refuse(f"unsupported attribute mode={attrs['mode']}")
    pair = (attrs["coordinate_transformation_mode"], attrs["nearest_mode"])
    if pair not in _EXACT:
        raise node.refuse(
            f"unsupported attribute coordinate_transformation_mode={pair[0]} with "
            f"nearest_mode={pair[1]}"
        )
    for name in ("exclude_outside", "antialias"):
        if attrs[name]:
            raise node.refuse(f"unsupported attribute {name}={attrs[name]}")
    if attrs["axes"] is not None or attrs["keep_aspect_ratio_policy"] != "stretch":
        raise node.refuse("unsupported attribute axes or keep_aspect_ratio_policy")
    x = node.tensor(0)
    shape = dims(x)
    if len(shape) != 4:
        raise node.refuse(f"only (N, C, H, W) inputs are supported (rank {len(shape)})")
    scales: list[float]
    if node.has_input(2) and node.const(2, "scales").size:
        scales = [float(s) for s in node.const(2, "scales").reshape(-1)]
    elif node.has_input(3):
        sizes = node.const(3, "sizes").reshape(-1).tolist()
        if len(sizes) != 4:
            raise node.refuse("expected 4 sizes")
        scales = [1.0, 1.0, sizes[2] / shape[2], sizes[3] / shape[3]]
        if sizes[1] != shape[1] or (shape[0] > 0 and sizes[0] != shape[0]):
            raise node.refuse(f"sizes {sizes} resize the batch or channel dimensions")
    else:
        raise node.refuse("neither scales nor sizes is given")
    if len(scales) != 4 or scales[:2] != [1.0, 1.0]:
        raise node.refuse(f"scales {scales}: only H and W may be scaled")
    if any(s != int(s) or s < 1 for s in scales[2:]):
        raise node.refuse(f"scales {scales[2:]} are not integers >= 1")
    return [node.b.upsample_nearest2d(x, [int(scales[2]), int(scales[3])])]
