"""Pools and nearest upsampling: ``max_pool2d``, ``avg_pool2d``,
``adaptive_avg_pool2d`` (1x1 is `graph.global_avg_pool2d`; sizes that divide the
input evenly are an `graph.avg_pool2d`), ``upsample_nearest2d`` by integer scales."""

from __future__ import annotations

from teeny_ir.frontend.torch.context import Call, Value, aten_op, dims


def _window(call: Call) -> tuple[list[int], list[int], list[int]]:
    """kernel, strides (the kernel when empty) and [top, left, bottom, right]."""
    kernel = call.ints("kernel_size", 2)
    strides = call.ints("stride", 2) or kernel
    pad = call.ints("padding", 2)
    if len(kernel) != 2 or len(strides) != 2 or len(pad) != 2:
        raise call.refuse("only 2-D pools are supported")
    return kernel, strides, [pad[0], pad[1], pad[0], pad[1]]


def _input(call: Call) -> Value:
    x = call.tensor("input" if call.name.endswith(".vec") else "self")
    if len(dims(x)) != 4:
        raise call.refuse(f"only 4-D inputs (N, C, H, W) are supported (rank {len(dims(x))})")
    return x


@aten_op("aten.max_pool2d", "aten.max_pool2d_with_indices")
def _max_pool(call: Call) -> Value:
    x = _input(call)
    kernel, strides, padding = _window(call)
    y = call.b.max_pool2d(
        x,
        kernel,
        strides=strides,
        padding=padding,
        dilation=call.ints("dilation", 2),
        ceil_mode=bool(call.arg("ceil_mode")),
    )
    # The indices of the with_indices form are refused if anything reads them.
    return [y, None] if call.name.startswith("aten.max_pool2d_with_indices") else y


@aten_op("aten.avg_pool2d")
def _avg_pool(call: Call) -> Value:
    x = _input(call)
    if call.has("divisor_override"):
        raise call.refuse("divisor_override is not supported")
    kernel, strides, padding = _window(call)
    return call.b.avg_pool2d(
        x,
        kernel,
        strides=strides,
        padding=padding,
        ceil_mode=bool(call.arg("ceil_mode")),
        count_include_pad=bool(call.arg("count_include_pad")),
    )


@aten_op("aten.adaptive_avg_pool2d", "aten._adaptive_avg_pool2d")
def _adaptive_avg_pool(call: Call) -> Value:
    x = _input(call)
    size = call.ints("output_size", 2)
    height, width = dims(x)[2:]
    if size == [1, 1]:
        return call.b.global_avg_pool2d(x)
    if len(size) != 2 or height % size[0] or width % size[1]:
        raise call.refuse(f"output size {size} does not divide the input's {height}x{width} evenly")
    kernel = [height // size[0], width // size[1]]
    return call.b.avg_pool2d(x, kernel, strides=kernel)


@aten_op("aten.upsample_nearest2d")
def _upsample_nearest(call: Call) -> Value:
    x = _input(call)
    in_shape, out_shape = dims(x), call.out_shape()
    scales = []
    for axis in (2, 3):
        if out_shape[axis] % in_shape[axis]:
            raise call.refuse(
                f"output size {out_shape[2:]} is not an integer multiple of {list(in_shape[2:])}"
            )
        scales.append(out_shape[axis] // in_shape[axis])
    if call.overload == "vec":
        given = call.arg("scale_factors")
    else:
        given = [call.arg("scales_h"), call.arg("scales_w")]
        given = None if None in given else given
    if given is not None and any(float(s) != k for s, k in zip(given, scales, strict=True)):
        # torch maps pixels by the given factor, not the size ratio, when they differ.
        raise call.refuse(f"scale factors {list(given)} are not integers")
    return call.b.upsample_nearest2d(x, scales)
