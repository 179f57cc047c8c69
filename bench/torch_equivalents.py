"""PyTorch equivalents of the kernel families YOLOv8n's inference plan launches,
for `bench/gpu_check.py`'s per-family timing (cuDNN convolutions, torch pools
and upsampling on the same shapes) and for checking, on the CPU, that each
equivalent computes what its kernel does (``gpu_check.py DIR --check-equivalents``
runs every launch of the plan on the interpreting fake driver and compares).

`shapes` gives each tensor argument of a launch its logical shape (from the
launch's ABI dims) and the ABI dim that is its batch stride, if any; `equivalent`
returns a function computing the launch's output ``y`` from its inputs in torch:

- ``implicit_gemm_conv`` and ``conv1x1_gemm``: ``act(conv2d(x, w) * scale +
  shift) (+ r)``. For timing, as PyTorch's inference would run a
  Conv+BatchNorm+SiLU block after fusing it (ultralytics' ``fuse()``), the scale
  is folded into the weight and the shift is the bias: one cuDNN convolution
  with bias, then the activation (and the residual add);
- ``pool2d``: ``max_pool2d`` / ``avg_pool2d`` (``count_include_pad``) / the
  plane mean;
- ``upsample_nearest2d``: ``interpolate(mode="nearest")``.

A family not listed, or an activation the table here does not know, has no
equivalent (`equivalent` returns None and the timing table says so).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Shape = tuple[list[int], str | None]
"""A tensor argument's logical shape and the ABI dim holding its batch stride."""

def _activation(name: str) -> Callable[[Any], Any] | None:
    import torch
    from torch.nn import functional

    table: dict[str, Callable[[Any], Any]] = {
        "none": lambda t: t,
        "relu": functional.relu,
        "silu": functional.silu,
        "sigmoid": torch.sigmoid,
        "tanh": torch.tanh,
    }
    return table.get(name)


def shapes(family: str, dims: Mapping[str, int], constexprs: Mapping[str, Any]) -> dict[str, Shape]:
    """Tensor argument -> (shape, batch-stride dim) for a launch of ``family``
    (only the arguments the launch reads or writes: no ``r`` where the dim
    ``HAS_RESIDUAL`` is 0; the constexprs name no tensor of these families)."""
    d = dims
    if family == "implicit_gemm_conv":
        b, ci, co, oh, ow = d["B"], d["C_IN"], d["C_OUT"], d["OH"], d["OW"]
        found = {
            "x": ([b, ci, d["H"], d["W"]], "x_batch_stride"),
            "w": ([co, ci // d["GROUPS"], d["KH"], d["KW"]], None),
            "scale": ([co], None),
            "shift": ([co], None),
            "y": ([b, co, oh, ow], "y_batch_stride"),
        }
        if d.get("HAS_RESIDUAL"):
            found["r"] = ([b, co, oh, ow], "r_batch_stride")
        return found
    if family == "conv1x1_gemm":
        b, ci, co, m = d["B"], d["C_IN"], d["C_OUT"], d["M"]
        found = {
            "x": ([b, ci, m], "x_batch_stride"),
            "w": ([co, ci], None),
            "scale": ([co], None),
            "shift": ([co], None),
            "y": ([b, co, m], "y_batch_stride"),
        }
        if d.get("HAS_RESIDUAL"):
            found["r"] = ([b, co, m], "r_batch_stride")
        return found
    if family in ("pool2d", "upsample_nearest2d"):
        n, c = d["N"], d["C"]
        return {
            "x": ([n, c, d["H"], d["W"]], "x_batch_stride"),
            "y": ([n, c, d["OH"], d["OW"]], "y_batch_stride"),
        }
    return {}


def equivalent(
    family: str,
    constexprs: Mapping[str, Any],
    dims: Mapping[str, int],
    tensors: Mapping[str, Any],
    *,
    fold: bool = False,
) -> Callable[[], Any] | None:
    """A function computing ``y`` of the launch from ``tensors`` (shaped as
    `shapes` says) with torch ops, or None. With ``fold`` the convolution's
    scale is folded into the weight once, here (the timing form)."""
    from torch.nn import functional

    t = tensors
    if family in ("implicit_gemm_conv", "conv1x1_gemm"):
        act = _activation(str(constexprs.get("ACTIVATION", "none")))
        if act is None:
            return None
        x, w, scale, shift = t["x"], t["w"], t["scale"], t["shift"]
        residual = t.get("r") if dims.get("HAS_RESIDUAL") else None
        if family == "conv1x1_gemm":
            b, ci, m = x.shape
            x = x.reshape(b, ci, m, 1)
            w = w.reshape(w.shape[0], w.shape[1], 1, 1)
            groups, stride, dilation, pad = 1, (1, 1), (1, 1), (0, 0, 0, 0)
            out_hw = (m, 1)
        else:
            d = dims
            groups, stride = d["GROUPS"], (d["STRIDE_H"], d["STRIDE_W"])
            dilation = (d["DIL_H"], d["DIL_W"])
            out_hw = (d["OH"], d["OW"])
            # Bottom and right padding: what it takes to reach OH x OW.
            pad_b = (
                (out_hw[0] - 1) * stride[0] + dilation[0] * (d["KH"] - 1) + 1 - d["H"] - d["PAD_T"]
            )
            pad_r = (
                (out_hw[1] - 1) * stride[1] + dilation[1] * (d["KW"] - 1) + 1 - d["W"] - d["PAD_L"]
            )
            pad = (d["PAD_L"], max(pad_r, 0), d["PAD_T"], max(pad_b, 0))
        symmetric = pad[0] == pad[1] and pad[2] == pad[3]
        shape_y = t["y"].shape

        def conv(image: Any, weight: Any, bias: Any) -> Any:
            if symmetric:
                out = functional.conv2d(
                    image, weight, bias, stride, (pad[2], pad[0]), dilation, groups
                )
            else:
                image = functional.pad(image, pad)
                out = functional.conv2d(image, weight, bias, stride, 0, dilation, groups)
            return out[:, :, : out_hw[0], : out_hw[1]]

        if fold:
            folded = w * scale.reshape(-1, 1, 1, 1)

            def run() -> Any:
                out = act(conv(x, folded, shift))
                if residual is not None:
                    out = out + residual.reshape(out.shape)
                return out.reshape(shape_y)

            return run

        def run_exact() -> Any:
            out = conv(x, w, None) * scale.reshape(1, -1, 1, 1) + shift.reshape(1, -1, 1, 1)
            out = act(out)
            if residual is not None:
                out = out + residual.reshape(out.shape)
            return out.reshape(shape_y)

        return run_exact
    if family == "pool2d":
        c = constexprs
        x = t["x"]
        oh, ow = dims["OH"], dims["OW"]
        if c.get("GLOBAL"):
            return lambda: x.mean(dim=(2, 3), keepdim=True).expand(-1, -1, oh, ow)
        kernel, stride = (c["KH"], c["KW"]), (c["SH"], c["SW"])
        dilation = (c.get("DH", 1), c.get("DW", 1))
        symmetric = c["PT"] == c["PB"] and c["PL"] == c["PR"]
        if not symmetric:
            return None
        padding = (c["PT"], c["PL"])
        if c.get("IS_MAX"):
            return lambda: functional.max_pool2d(x, kernel, stride, padding, dilation)[
                :, :, :oh, :ow
            ]
        if dilation != (1, 1):
            return None
        include = bool(c.get("COUNT_PAD", 1))
        return lambda: functional.avg_pool2d(
            x, kernel, stride, padding, ceil_mode=False, count_include_pad=include
        )[:, :, :oh, :ow]
    if family == "upsample_nearest2d":
        x = t["x"]
        size = (dims["OH"], dims["OW"])
        return lambda: functional.interpolate(x, size=size, mode="nearest")
    return None
