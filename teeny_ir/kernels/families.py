"""The kernel family registry: one table that the kernel dialect's verifier,
the Triton emitter, the AOT compiler and the runtime all read.

`FAMILY_PACKAGES` lists the family subpackages once; each one's ``contract``
module defines its `KernelFamily` as ``FAMILY`` (standard library only, so
loading the registry imports neither triton nor any dialect). A family's
lowering rules live beside it (``lowering.py``, `teeny_ir.kernels.lowering`).
"""

from __future__ import annotations

import importlib

from teeny_ir.kernels.contract import KernelFamily

FAMILY_PACKAGES = (
    "elementwise",
    "fused_elementwise",
    "fused_reduce",
    "conv1x1_gemm",
    "implicit_gemm_conv",
    "depthwise_conv",
    "pool2d",
    "upsample_nearest2d",
    "concat",
    "split",
    "channel_affine",
    "transpose",
    "linear",
    "matmul",
    "softmax",
    "reduce",
    "reduce_extremum",
    "cross_entropy",
    "max_pool2d_backward",
    "avg_pool2d_backward",
    "sgd_update",
    "adamw_update",
    "depthwise_conv_backward_data",
    "depthwise_conv_backward_weight",
    "conv2d_backward_data",
    "conv2d_backward_weight",
    "activation_grad",
    "softmax_backward",
    "cross_entropy_backward",
    "broadcast",
    "batch_norm_train",
    "batch_norm_backward",
    "slice",
    "pad",
    "reshape_copy",
    "attention",
    "attention_backward",
)
"""Every kernel family, by subpackage name (= family name)."""


def _load() -> dict[str, KernelFamily]:
    families: dict[str, KernelFamily] = {}
    for package in FAMILY_PACKAGES:
        family: KernelFamily = importlib.import_module(
            f"teeny_ir.kernels.{package}.contract"
        ).FAMILY
        if family.name != package:
            raise RuntimeError(f"family package '{package}' defines family '{family.name}'")
        families[family.name] = family
    return families


FAMILIES: dict[str, KernelFamily] = _load()


def lookup(name: str) -> KernelFamily | None:
    return FAMILIES.get(name)
