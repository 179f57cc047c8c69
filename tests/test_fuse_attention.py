"""fuse-attention and `graph.attention` at the graph level: every spelling of
``softmax(scale * q k^T) v`` that PyTorch programs write (and ``torch.export``
records) becomes one `graph.attention` with the right scale and layout flags,
whose reference equals PyTorch's; imported ``scaled_dot_product_attention``
maps to the op directly and takes in its transposes; a candidate that cannot
fuse stays, with one located remark that says why; the op's VJP matches
autograd; and the op's text round-trips and its verifier names bad operands.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from torch.nn import functional as F
from xdsl.ir import Operation
from xdsl.utils.exceptions import VerifyException

import teeny_ir
from dialects.graph.attention import AttentionBackwardOp, AttentionOp
from dialects.graph.linear import MatmulOp
from dialects.graph.reduce import SoftmaxOp
from teeny_ir import reference
from teeny_ir.core.diagnostics import Severity, engine_of
from teeny_ir.frontend.losses import add_weighted_sum_loss
from teeny_ir.frontend.torch import import_module
from teeny_ir.ir.context import make_context
from teeny_ir.testing import assert_round_trips


def _ops(module: Operation, kind: type[Operation]) -> list[Any]:
    return [op for op in module.walk() if isinstance(op, kind)]


class Attend(torch.nn.Module):
    def __init__(self, fn: Callable[..., torch.Tensor]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return self.fn(q, k, v)


def _sdpa_math(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.softmax(q @ k.transpose(-2, -1) * (q.shape[-1] ** -0.5), -1) @ v


def _sdpa_div(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(dim=-1) @ v


def _split_scale(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    # PyTorch's math decomposition: sqrt(scale) on q and on k^T.
    s = math.sqrt(0.3)
    return torch.softmax((q * s) @ (k.transpose(-2, -1) * s), -1) @ v


def _c2psa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    # ultralytics' Attention: q, k, v features-first [B, heads, D, N].
    attn = ((q * 0.125).transpose(-2, -1) @ k).softmax(dim=-1)
    return v @ attn.transpose(-2, -1)


def _sdpa_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    x = F.scaled_dot_product_attention(
        q.transpose(-2, -1), k.transpose(-2, -1), v.transpose(-2, -1)
    )
    return x.transpose(-2, -1)


def _sdpa_scaled(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, scale=0.7)


# (function, q, k, v shapes, expected scale, expected flags)
CASES = {
    "sdpa-math": (_sdpa_math, [(2, 3, 7, 12), (2, 3, 9, 12), (2, 3, 9, 5)], 12**-0.5, [0, 0, 0, 0]),
    "div": (_sdpa_div, [(2, 7, 12), (2, 9, 12), (2, 9, 20)], 12**-0.5, [0, 0, 0, 0]),
    "split-scale": (_split_scale, [(1, 2, 6, 8), (1, 2, 5, 8), (1, 2, 5, 3)], 0.3, [0, 0, 0, 0]),
    "c2psa": (_c2psa, [(2, 2, 16, 4), (2, 2, 16, 4), (2, 2, 32, 4)], 0.125, [1, 1, 1, 1]),
    "sdpa-op": (_sdpa_op, [(2, 2, 16, 5), (2, 2, 16, 7), (2, 2, 24, 7)], 0.25, [1, 1, 1, 1]),
    "sdpa-op-scale": (_sdpa_scaled, [(2, 4, 6, 8), (2, 4, 3, 8), (2, 4, 3, 8)], 0.7, [0, 0, 0, 0]),
}


def _fuse(module: Any) -> list[tuple[str, int]]:
    ctx = make_context()
    teeny_ir.PassManager.parse("fuse-attention").run(module, ctx)
    remarks = []
    for diagnostic in engine_of(ctx).diagnostics:
        assert diagnostic.severity is Severity.REMARK
        remarks.append((diagnostic.message, diagnostic.location))
    return remarks


def _inputs(shapes: list[tuple[int, ...]], seed: int = 0) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=generator) for shape in shapes]


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_spelling_fuses_into_one_attention(name: str) -> None:
    fn, shapes, scale, flags = CASES[name]
    inputs = _inputs(shapes)
    module = import_module(Attend(fn), tuple(inputs)).module
    assert _fuse(module) == []
    (op,) = _ops(module, AttentionOp)
    assert not _ops(module, SoftmaxOp) and not _ops(module, MatmulOp)
    assert list(op.transposed) == flags
    assert op.scale == pytest.approx(scale, rel=1e-6)
    module.verify()
    (got,) = reference.run(module, {}, [x.numpy() for x in inputs])
    want = fn(*(x.double() for x in inputs)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _first_line(module: Any) -> str:
    return next(iter(teeny_ir.print_module(module).splitlines()))


BLOCKED = {
    "probabilities used twice": (
        lambda q, k, v: (lambda p: p @ v + p.sum())(torch.softmax(q @ k.transpose(-2, -1), -1)),
        "attention not fused: the probabilities have 2 uses",
    ),
    "softmax over the queries": (
        lambda q, k, v: torch.softmax(q @ k.transpose(-2, -1), -2) @ v,
        "attention not fused: the softmax is not along the last axis (the keys)",
    ),
    "probabilities scaled before the product": (
        lambda q, k, v: (torch.softmax(q @ k.transpose(-2, -1), -1) * 2.0) @ v,
        "attention not fused: the probabilities feed graph.mul, not a product with v",
    ),
}


@pytest.mark.parametrize("name", sorted(BLOCKED))
def test_a_blocked_candidate_stays_with_one_remark_at_its_softmax(name: str) -> None:
    fn, message = BLOCKED[name]
    inputs = _inputs([(2, 5, 8), (2, 6, 8), (2, 6, 4)])
    module = import_module(Attend(fn), tuple(inputs)).module
    before = teeny_ir.print_module(module)
    remarks = _fuse(module)
    assert [m for m, _ in remarks] == [message]
    assert len(_ops(module, SoftmaxOp)) == 1
    assert not _ops(module, AttentionOp)
    assert teeny_ir.print_module(module) == before


def test_broadcast_batch_is_not_fused_and_says_why() -> None:
    text = """
func.func @forward(%q: tensor<2x5x8xf32>, %k: tensor<1x6x8xf32>, %v: tensor<2x6x4xf32>) -> tensor<2x5x4xf32> {
  %kt = graph.transpose %k perm [0, 2, 1] : (tensor<1x6x8xf32>) -> tensor<1x8x6xf32>
  %s = graph.matmul %q, %kt : (tensor<2x5x8xf32>, tensor<1x8x6xf32>) -> tensor<2x5x6xf32>
  %p = graph.softmax %s axis 2 : (tensor<2x5x6xf32>) -> tensor<2x5x6xf32>
  %o = graph.matmul %p, %v : (tensor<2x5x6xf32>, tensor<2x6x4xf32>) -> tensor<2x5x4xf32>
  func.return %o : tensor<2x5x4xf32>
}
"""
    module = teeny_ir.parse_module(text, "m.mlir")
    (remark,) = _fuse(module)
    assert remark[0] == (
        "attention not fused: expected q, k and v to share their batch dimensions, got "
        "[2], [1] and [2]"
    )
    assert remark[1].line == 5  # the softmax


def test_the_op_round_trips_and_verifies() -> None:
    text = """
func.func @forward(%q: tensor<?x2x32x5xf32>, %k: tensor<?x2x32x7xf32>, %v: tensor<?x2x48x7xf32>) -> tensor<?x2x48x5xf32> {
  %o, %lse = graph.attention %q, %k, %v scale 1.250000e-01 transposed [1, 1, 1, 1] : (tensor<?x2x32x5xf32>, tensor<?x2x32x7xf32>, tensor<?x2x48x7xf32>) -> (tensor<?x2x48x5xf32>, tensor<?x2x5xf32>)
  func.return %o : tensor<?x2x48x5xf32>
}
"""
    module = teeny_ir.parse_module(text)
    assert_round_trips(module)
    (op,) = _ops(module, AttentionOp)
    assert op.scale == 0.125 and op.transposed == (1, 1, 1, 1)


@pytest.mark.parametrize(
    "shapes,flags,message",
    [
        ([(2, 5, 8), (2, 6, 9), (2, 6, 4)], [0, 0, 0, 0], "key dimension of q (8) and k (9)"),
        ([(2, 5, 8), (2, 6, 8), (2, 7, 4)], [0, 0, 0, 0], "key count of k (6) and v (7)"),
        ([(2, 5, 8), (2, 6, 8), (2, 6, 4)], [0, 0, 2, 0], "four flags of 0 or 1"),
        ([(5, 8), (6, 8, 1), (6, 4)], [0, 0, 0, 0], "of one rank"),
    ],
)
def test_the_verifier_names_what_does_not_fit(
    shapes: list[tuple[int, ...]], flags: list[int], message: str
) -> None:
    b = teeny_ir.GraphBuilder()
    values = [b.input(list(shape), name=name) for shape, name in zip(shapes, "qkv", strict=True)]
    with pytest.raises(
        (VerifyException, Exception), match=message.replace("(", r"\(").replace(")", r"\)")
    ):
        b.attention(*values, 0.5, flags)


class Parametrised(torch.nn.Module):
    """C2PSA's attention of parameters ``q``, ``k``, ``v`` scaled by the input."""

    def __init__(self, shapes: list[tuple[int, ...]]) -> None:
        super().__init__()
        q, k, v = _inputs(shapes, seed=3)
        self.q, self.k, self.v = (torch.nn.Parameter(t) for t in (q, k, v))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _c2psa(self.q * x, self.k, self.v)


def test_the_vjp_matches_autograd() -> None:
    """insert-backward through one graph.attention (C2PSA's layout): the one
    graph.attention_backward it emits gives torch's gradients of q, k and v."""
    shapes = CASES["c2psa"][1]
    model = Parametrised(shapes).double()
    x = torch.rand(shapes[0], dtype=torch.float64) + 0.5
    imported = import_module(model.float(), (x.float(),), dynamic_batch=False)
    module = imported.module
    _fuse(module)
    assert len(_ops(module, AttentionOp)) == 1
    add_weighted_sum_loss(module)
    teeny_ir.PassManager.parse("insert-backward").run(module)
    (backward,) = _ops(module, AttentionBackwardOp)
    assert backward.transposed == (1, 1, 1, 1)
    model = model.double()
    y = model(x)
    r = torch.randn(y.shape, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    (y * r).sum().backward()
    weights = {n: p.detach().float().numpy() for n, p in model.named_parameters()}
    outputs = reference.run(module, weights, [x.float().numpy(), r.float().numpy()])
    function = next(op for op in module.ops if getattr(op, "sym_name", None) is not None)
    attrs = function.res_attrs.data if function.res_attrs is not None else []
    grads = {
        attr.data["teeny.grad"].data: value
        for value, attr in zip(outputs, attrs, strict=False)
        if "teeny.grad" in attr.data
    }
    assert sorted(grads) == ["k", "q", "v"]
    for name, param in model.named_parameters():
        assert param.grad is not None
        np.testing.assert_allclose(grads[name], param.grad.numpy(), rtol=1e-4, atol=1e-6)
