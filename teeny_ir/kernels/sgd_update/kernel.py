"""Triton source of the ``sgd_update`` family: one ``torch.optim.SGD`` step of a
flat parameter.

Program ``pid`` updates the masked block ``[pid * BLOCK, (pid + 1) * BLOCK)``
of the ``N`` elements (64-bit offsets). ``hyper`` = ``(lr, momentum,
weight_decay)`` is loaded once per program (one masked block, each value picked
out). Every input of an element is loaded before any output of it is stored,
so ``p_out`` may be ``p`` and ``buf_out`` may be ``buf`` (in place). The
weight decay term is 0 (not ``0 * param``) where it is 0, as in the reference
(so an infinite parameter stays infinite under ``weight_decay = 0``).
"""

import triton
import triton.language as tl


@triton.jit
def _pick(values, index, k):
    """Element ``k`` of the block ``values`` (``index`` its lanes)."""
    return tl.sum(tl.where(index == k, values, 0.0), axis=0)


@triton.jit
def sgd_update(
    p,
    g,
    buf,
    hyper,
    p_out,
    buf_out,
    N,
    HAS_MOMENTUM: tl.constexpr,
    BLOCK: tl.constexpr,
):
    lane = tl.arange(0, 4)
    h = tl.load(hyper + lane, mask=lane < 3, other=0.0)
    lr = _pick(h, lane, 0)
    momentum = _pick(h, lane, 1)
    weight_decay = _pick(h, lane, 2)
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    param = tl.load(p + offs, mask=mask, other=0.0)
    grad = tl.load(g + offs, mask=mask, other=0.0)
    grad = grad + weight_decay * tl.where(weight_decay != 0.0, param, 0.0)
    if HAS_MOMENTUM:
        old = tl.load(buf + offs, mask=mask, other=0.0)
        grad = momentum * old + grad
        tl.store(buf_out + offs, grad, mask=mask)
    tl.store(p_out + offs, param - lr * grad, mask=mask)
