"""Data-parallel training at the graph level (issue 28, part 1), in the reference interpreter.

`graph.all_reduce` (dialect, builder, semantics, VJP), insert-gradient-allreduce
and sync-batch-norm, and teeny-training's ``world`` and ``sync-bn`` options.
The ranks are threads of this interpreter on a barrier-based process group
(`teeny_ir.reference.collective.ThreadGroup`): no torch.distributed.

The bars: (a) LeNet on 2 ranks x half a batch of 8, five SGD steps with
momentum, ends with the parameters and momentum buffers of 1 process on the
whole batch (1e-5), the same bits on both ranks; (b) conv + BN + SiLU with
sync-bn, 2 ranks x batch 3 = 1 process x batch 6 in outputs, gradients and
running statistics (1e-5), and both equal torch's BatchNorm2d in training
mode on the concatenated batch (what SyncBatchNorm computes), while local BN
(sync-bn=false) differs; and YOLOv8n's 57 batch norms synchronised over 2
ranks give one process's outputs, running statistics and gradients on the
whole batch (1e-4, the whole-model tolerance). The tolerance rule is the
repo's: ``max|got - ref| <= tol * max(1, max|ref|)``.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file
from torch import nn
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.utils.exceptions import VerifyException

import teeny_ir
from dialects.graph.collective import AllReduceOp
from dialects.graph.norm import BatchNormOp
from dialects.graph.param import ParamOp
from teeny_ir import reference
from teeny_ir.autodiff.context import BACKWARD_ATTR, VjpContext
from teeny_ir.autodiff.registry import VJPS
from teeny_ir.core.diagnostics import DiagnosticError, loc_of
from teeny_ir.driver import opt
from teeny_ir.driver.pipeline_syntax import format_pipeline
from teeny_ir.driver.pipelines import PIPELINES
from teeny_ir.frontend.graph_builder import GraphBuilder
from teeny_ir.frontend.losses import add_cross_entropy_loss, add_weighted_sum_loss
from teeny_ir.reference.collective import (
    CollectiveMismatch,
    ThreadGroup,
    process_group,
    run_ranks,
)
from teeny_ir.testing import ELEMENTWISE_TOL, assert_close, assert_round_trips

ROOT = Path(__file__).resolve().parents[1]
LENET = ROOT / "examples" / "lenet" / "lenet.mlir"
TOL = 1e-5
WORLD = 2


# --------------------------------------------------------------------- helpers


def forward_of(module: ModuleOp) -> FuncOp:
    return next(op for op in module.ops if isinstance(op, FuncOp))


def by_attr(module: ModuleOp, outputs: Sequence[np.ndarray], key: str) -> dict[str, np.ndarray]:
    """@forward's results carrying the result attribute ``key``, by its value."""
    function = forward_of(module)
    attrs = function.res_attrs.data if function.res_attrs is not None else []
    return {a.data[key].data: v for v, a in zip(outputs, attrs, strict=True) if key in a.data}


def compiled(text: str, passes: str) -> ModuleOp:
    module = teeny_ir.parse_module(text)
    teeny_ir.PassManager.parse(passes).run(module)
    return module


def on_ranks(
    module: ModuleOp,
    weights: dict[str, np.ndarray] | Sequence[dict[str, np.ndarray]],
    shards: Sequence[Sequence[np.ndarray]],
) -> list[list[np.ndarray]]:
    """``module`` run on one thread per shard (its inputs), a process group of
    them; ``weights`` are every rank's, or one dict per rank (its state)."""
    state = [weights] * len(shards) if isinstance(weights, dict) else list(weights)
    return run_ranks(
        len(shards),
        lambda rank, collective: reference.run(
            module, state[rank], list(shards[rank]), collective=collective
        ),
    )


def close(got: np.ndarray, want: Any, what: str, tol: float = TOL) -> None:
    try:
        assert_close(got, np.asarray(want, np.float64), tol)
    except AssertionError as err:
        raise AssertionError(f"{what}: {err}") from None


def max_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(np.asarray(got, np.float64) - want).max())


# ------------------------------------------------- graph.all_reduce: op and builder


ALL_REDUCE = """
func.func @forward(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.all_reduce %x reduction REDUCTION world WORLD : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
"""


def all_reduce_module(reduction: str, world: int) -> ModuleOp:
    text = ALL_REDUCE.replace("REDUCTION", reduction).replace("WORLD", str(world))
    return teeny_ir.parse_module(text)


def test_the_builder_makes_an_all_reduce_that_round_trips() -> None:
    b = GraphBuilder()
    g = b.input([4, 3])
    b.output(b.all_reduce(b.all_reduce(g, "mean", 2), "sum", 8))
    module = b.build()
    ops = [op for op in forward_of(module).body.block.ops if isinstance(op, AllReduceOp)]
    assert [(op.reduction, op.world) for op in ops] == [("mean", 2), ("sum", 8)]
    assert "graph.all_reduce %1 reduction sum world 8 : (tensor<4x3xf32>)" in (
        teeny_ir.print_module(module)
    )
    assert_round_trips(module)


@pytest.mark.parametrize(
    ("shape", "reduction", "world", "message"),
    [
        ([4], "max", 2, "expected reduction to be one of mean, sum, got 'max'"),
        ([4], "mean", 0, "expected world (the number of ranks) >= 1, got 0"),
        ([None, 4], "sum", 2, "expected a fully static input, got shape [?, 4]"),
    ],
)
def test_the_builder_refuses_a_bad_all_reduce_at_the_call(
    shape: list[int | None], reduction: str, world: int, message: str
) -> None:
    b = GraphBuilder()
    x = b.input(shape)
    with pytest.raises(DiagnosticError) as info:
        b.all_reduce(x, reduction, world)
    (diagnostic,) = info.value.diagnostics
    assert diagnostic.message.startswith(f"'graph.all_reduce' op {message}")
    assert diagnostic.location is not None and diagnostic.location.filename == __file__


def test_the_verifier_checks_the_result_type() -> None:
    module = all_reduce_module("mean", 2)
    op = next(op for op in module.walk() if isinstance(op, AllReduceOp))
    bad = AllReduceOp.create(
        operands=[op.input],
        result_types=[TensorType(f32, [3, 2])],
        properties=dict(op.properties),
    )
    with pytest.raises(VerifyException, match="expected result type tensor<2x3xf32>"):
        bad.verify_()


# ------------------------------------------------------ reference semantics


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_the_reference_all_reduces_over_a_thread_group(reduction: str) -> None:
    module = all_reduce_module(reduction, 3)
    rng = np.random.default_rng(1)
    shards = [[rng.standard_normal((2, 3)).astype(np.float32)] for _ in range(3)]
    results = on_ranks(module, {}, shards)
    total = sum(s[0].astype(np.float64) for s in shards)
    want = total / 3 if reduction == "mean" else total
    for (got,) in results:
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, results[0][0])  # the same bits on every rank
        close(got, want, reduction, ELEMENTWISE_TOL)


def test_one_rank_needs_no_process_group_and_more_do() -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (got,) = reference.run(all_reduce_module("mean", 1), {}, [x])
    np.testing.assert_array_equal(got, x)
    with pytest.raises(DiagnosticError) as info:
        reference.run(all_reduce_module("sum", 2), {}, [x])
    (diagnostic,) = info.value.diagnostics
    assert diagnostic.message.startswith("graph.all_reduce over 2 ranks needs a process group")
    assert diagnostic.location is not None and diagnostic.location.line == 3


def test_a_group_of_another_size_is_a_located_error() -> None:
    module = all_reduce_module("mean", 2)
    x = np.ones((2, 3), np.float32)
    with pytest.raises(DiagnosticError, match="built for 2 ranks, but the process group has 3"):
        on_ranks(module, {}, [[x], [x], [x]])


def test_ranks_that_call_different_all_reduces_all_fail_and_none_hangs() -> None:
    group = ThreadGroup(2, timeout=10)
    failures: list[BaseException] = []

    def rank(index: int, reduction: str) -> None:
        try:
            group.member(index)(reduction, np.ones(3))
        except CollectiveMismatch as err:
            failures.append(err)

    threads = [
        threading.Thread(target=rank, args=(0, "sum")),
        threading.Thread(target=rank, args=(1, "mean")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    assert len(failures) == 2
    assert "rank 0: sum of [3], rank 1: mean of [3]" in str(failures[0])


def test_a_failing_rank_releases_the_others() -> None:
    """Rank 1 fails before its all-reduce: rank 0 stops waiting, and run_ranks
    raises rank 1's error, not rank 0's broken barrier."""

    def job(rank: int, collective: Any) -> np.ndarray:
        if rank == 1:
            raise ValueError("rank 1 fails")
        return np.asarray(collective("sum", np.ones(2)))

    with pytest.raises(ValueError, match="rank 1 fails"):
        run_ranks(2, job, timeout=30)


# ------------------------------------------------------------------------- VJP


def test_the_vjp_is_the_same_all_reduce() -> None:
    module = all_reduce_module("mean", 4)
    block = forward_of(module).body.block
    op = block.first_op
    assert isinstance(op, AllReduceOp)
    ret = block.last_op
    assert isinstance(ret, ReturnOp)
    seed = block.insert_arg(op.result.type, len(block.args))
    ctx = VjpContext(block, ret)
    ctx.location = op.location
    rule = VJPS.lookup(AllReduceOp)
    assert callable(rule)
    (grad,) = rule(ctx, op, [seed])
    assert grad is not None
    backward = grad.owner
    assert isinstance(backward, AllReduceOp)
    assert (backward.reduction, backward.world, backward.input) == ("mean", 4, seed)
    assert BACKWARD_ATTR in backward.attributes and backward.location == op.location
    assert rule(ctx, op, [None]) == [None]


ADJOINT = """
func.func @forward(%x: tensor<3x2xf32>, %r: tensor<3x2xf32>) -> tensor<f32> {
  %p = graph.param "p" : tensor<3x2xf32>
  %h = graph.mul %x, %p : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %y = graph.all_reduce %h reduction REDUCTION world 2 : (tensor<3x2xf32>) -> tensor<3x2xf32>
  %yr = graph.mul %y, %r : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %loss = graph.reduce_sum %yr axes [0, 1] : (tensor<3x2xf32>) -> tensor<f32>
  func.return %loss : tensor<f32>
}
"""


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_insert_backward_through_an_all_reduce_matches_autograd(reduction: str) -> None:
    """Rank r's gradient of its copy of p, for the loss summed over the ranks:
    torch differentiates the two ranks' programs as one (two copies of p)."""
    module = compiled(ADJOINT.replace("REDUCTION", reduction), "insert-backward")
    backward = [op for op in module.walk() if isinstance(op, AllReduceOp)]
    assert [(op.reduction, BACKWARD_ATTR in op.attributes) for op in backward] == [
        (reduction, False),
        (reduction, True),
    ]
    rng = np.random.default_rng(7)
    p = rng.standard_normal((3, 2)).astype(np.float32)
    xs = [rng.standard_normal((3, 2)).astype(np.float32) for _ in range(2)]
    rs = [rng.standard_normal((3, 2)).astype(np.float32) for _ in range(2)]
    results = on_ranks(module, {"p": p}, [[xs[r], rs[r]] for r in range(2)])
    copies = [torch.tensor(p, dtype=torch.float64, requires_grad=True) for _ in range(2)]
    h = [torch.tensor(xs[r], dtype=torch.float64) * copies[r] for r in range(2)]
    y = h[0] + h[1] if reduction == "sum" else (h[0] + h[1]) / 2
    losses = [(y * torch.tensor(rs[r], dtype=torch.float64)).sum() for r in range(2)]
    sum(losses).backward()
    for rank, outputs in enumerate(results):
        close(outputs[0], losses[rank].detach().numpy(), f"loss of rank {rank}")
        got = by_attr(module, outputs, "teeny.grad")["p"]
        close(got, copies[rank].grad.numpy(), f"gradient of rank {rank}")


# --------------------------------------------------- (a) LeNet, data parallel


SGD = "apply-optimizer{kind=sgd lr=0.05 momentum=0.9 weight-decay=5e-4}"
GRAPH_PASSES = "train-mode,split-bias,fuse-epilogues{mode=training},insert-backward"


def lenet(world: int) -> ModuleOp:
    module = teeny_ir.parse_module(LENET.read_text(), filename="lenet.mlir")
    add_cross_entropy_loss(module)
    allreduce = f",insert-gradient-allreduce{{world={world}}}" if world > 1 else ""
    teeny_ir.PassManager.parse(GRAPH_PASSES + allreduce + "," + SGD).run(module)
    return module


def test_lenet_on_two_ranks_steps_as_one_process_on_the_whole_batch() -> None:
    """Five SGD steps (momentum, weight decay) on batches of 8: rank r runs
    samples 4r..4r+3. Every parameter and momentum buffer ends as the one
    process's (1e-5), with the same bits on both ranks; each step's mean rank
    loss is the whole batch's."""
    single, parallel = lenet(1), lenet(WORLD)
    reduces = [op for op in parallel.walk() if isinstance(op, AllReduceOp)]
    assert len(reduces) == 10 and {(op.reduction, op.world) for op in reduces} == {("mean", 2)}
    rng = np.random.default_rng(28)
    weights = dict(load_file(ROOT / "examples" / "lenet" / "lenet.safetensors"))
    one: dict[str, np.ndarray] = dict(weights)
    ranks: list[dict[str, np.ndarray]] = [dict(weights) for _ in range(WORLD)]
    for step in range(5):
        x = rng.standard_normal((8, 1, 28, 28)).astype(np.float32)
        targets = rng.integers(0, 10, 8).astype(np.int64)
        whole = reference.run(single, one, [x, targets])
        one |= by_attr(single, whole, "teeny.updated")
        shards = [[x[4 * r : 4 * r + 4], targets[4 * r : 4 * r + 4]] for r in range(WORLD)]
        results = on_ranks(parallel, ranks, shards)
        for rank, outputs in enumerate(results):
            ranks[rank] |= by_attr(parallel, outputs, "teeny.updated")
        mean_loss = np.mean([float(outputs[0]) for outputs in results])
        close(np.asarray(mean_loss), whole[0], f"loss of step {step}")
    updated = by_attr(single, whole, "teeny.updated")
    assert len(updated) == 20  # ten parameters and their momentum buffers
    for name in updated:
        np.testing.assert_array_equal(ranks[0][name], ranks[1][name], err_msg=name)
        close(ranks[0][name], one[name], name)
    assert any(max_error(one[n], weights[n]) > 1e-3 for n in weights)  # it moved


# ------------------------------------------------------------ (b) sync-BN


CONV_BN = """
func.func @forward(%x: tensor<BATCHx3x5x4xf32>, %r: tensor<BATCHx4x5x4xf32>) -> (tensor<f32>, tensor<BATCHx4x5x4xf32>) {
  %w = graph.param "conv.weight" : tensor<4x3x3x3xf32>
  %cb = graph.param "conv.bias" : tensor<4xf32>
  %g = graph.param "bn.weight" : tensor<4xf32>
  %b = graph.param "bn.bias" : tensor<4xf32>
  %m = graph.param "bn.running_mean" : tensor<4xf32>
  %v = graph.param "bn.running_var" : tensor<4xf32>
  %c = graph.conv2d %x, %w, %cb padding [1, 1, 1, 1] : (tensor<BATCHx3x5x4xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<BATCHx4x5x4xf32>
  %n = graph.batch_norm %c, %g, %b, %m, %v eps 1.000000e-03 momentum 3.000000e-02 : (tensor<BATCHx4x5x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<BATCHx4x5x4xf32>
  %s = graph.silu %n : tensor<BATCHx4x5x4xf32>
  %sr = graph.mul %s, %r : (tensor<BATCHx4x5x4xf32>, tensor<BATCHx4x5x4xf32>) -> tensor<BATCHx4x5x4xf32>
  %loss = graph.reduce_mean %sr axes [0, 1, 2, 3] : (tensor<BATCHx4x5x4xf32>) -> tensor<f32>
  func.return %loss, %s : tensor<f32>, tensor<BATCHx4x5x4xf32>
}
"""
"""Conv (with a bias, split by split-bias), training BN and SiLU; the loss is
the mean of ``s * r`` (a mean, as DDP's ranks' losses average to the batch's)."""


def conv_bn(*, sync: bool, world: int = WORLD, batch: str = "?") -> ModuleOp:
    passes = ["train-mode"]
    if sync:
        passes.append(f"sync-batch-norm{{world={world}}}")
    passes += ["split-bias", "fuse-epilogues{mode=training}", "insert-backward"]
    if world > 1:
        passes.append(f"insert-gradient-allreduce{{world={world}}}")
    return compiled(CONV_BN.replace("BATCH", batch), ",".join(passes))


def bn_weights(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "conv.weight": (rng.standard_normal((4, 3, 3, 3)) * 0.5).astype(np.float32),
        "conv.bias": rng.standard_normal(4).astype(np.float32),
        "bn.weight": rng.uniform(0.5, 1.5, 4).astype(np.float32),
        "bn.bias": rng.standard_normal(4).astype(np.float32),
        "bn.running_mean": rng.standard_normal(4).astype(np.float32),
        "bn.running_var": rng.uniform(0.5, 2, 4).astype(np.float32),
    }


def torch_conv_bn(
    weights: dict[str, np.ndarray], x: np.ndarray, r: np.ndarray
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """torch in float64, BatchNorm2d in training mode on the whole batch: the
    loss, the output, the gradients and the updated running statistics."""
    conv = nn.Conv2d(3, 4, 3, padding=1).double()
    bn = nn.BatchNorm2d(4, eps=1e-3, momentum=0.03).double().train()
    for module, prefix in ((conv, "conv"), (bn, "bn")):
        for name, tensor in module.state_dict().items():
            if f"{prefix}.{name}" in weights:
                tensor.copy_(torch.tensor(weights[f"{prefix}.{name}"], dtype=torch.float64))
    s = nn.functional.silu(bn(conv(torch.tensor(x, dtype=torch.float64))))
    loss = (s * torch.tensor(r, dtype=torch.float64)).mean()
    loss.backward()
    grads = {
        f"{prefix}.{name}": p.grad.numpy()
        for module, prefix in ((conv, "conv"), (bn, "bn"))
        for name, p in module.named_parameters()
    }
    values = {
        "loss": loss.detach().numpy(),
        "s": s.detach().numpy(),
        "bn.running_mean": bn.running_mean.numpy(),
        "bn.running_var": bn.running_var.numpy(),
    }
    return values, grads


def _bn_data(seed: int, batch: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((batch, 3, 5, 4)) * 2 + 0.5).astype(np.float32)
    return x, rng.standard_normal((batch, 4, 5, 4)).astype(np.float32)


def test_sync_bn_on_two_ranks_is_one_process_and_torch_on_the_whole_batch() -> None:
    weights = bn_weights(3)
    x, r = _bn_data(4, 6)
    single = conv_bn(sync=False, world=1)
    whole = reference.run(single, weights, [x, r])
    want, want_grads = torch_conv_bn(weights, x, r)
    close(whole[0], want["loss"], "loss, one process")
    close(whole[1], want["s"], "output, one process")
    for name, grad in by_attr(single, whole, "teeny.grad").items():
        close(grad, want_grads[name], f"gradient of {name}, one process")

    synced = conv_bn(sync=True)
    assert not any(isinstance(op, BatchNormOp) for op in synced.walk())
    shards = [[x[3 * k : 3 * k + 3], r[3 * k : 3 * k + 3]] for k in range(WORLD)]
    results = on_ranks(synced, weights, shards)
    close(np.mean([float(out[0]) for out in results]), whole[0], "mean loss of the ranks")
    grads = [by_attr(synced, out, "teeny.grad") for out in results]
    running = [by_attr(synced, out, "teeny.running") for out in results]
    assert sorted(grads[0]) == sorted(want_grads)
    assert sorted(running[0]) == ["bn.running_mean", "bn.running_var"]
    for rank, outputs in enumerate(results):
        close(outputs[1], whole[1][3 * rank : 3 * rank + 3], f"output of rank {rank}")
        close(outputs[1], want["s"][3 * rank : 3 * rank + 3], f"output of rank {rank}, torch")
        for name in want_grads:
            np.testing.assert_array_equal(grads[rank][name], grads[0][name], err_msg=name)
            close(grads[rank][name], by_attr(single, whole, "teeny.grad")[name], name)
            close(grads[rank][name], want_grads[name], f"{name}, torch")
        for name, value in running[rank].items():
            close(value, by_attr(single, whole, "teeny.running")[name], name)
            close(value, want[name], f"{name}, torch")


def test_local_bn_on_two_ranks_differs_from_the_whole_batch() -> None:
    """DDP's default (sync-bn=false): each rank normalises with its own
    statistics, so outputs, gradients and running statistics all differ."""
    weights = bn_weights(5)
    x, r = _bn_data(6, 6)
    single = conv_bn(sync=False, world=1)
    whole = reference.run(single, weights, [x, r])
    local = conv_bn(sync=False)
    assert sum(isinstance(op, BatchNormOp) for op in local.walk()) == 1
    shards = [[x[3 * k : 3 * k + 3], r[3 * k : 3 * k + 3]] for k in range(WORLD)]
    results = on_ranks(local, weights, shards)
    assert max_error(results[0][1], whole[1][:3]) > 1e-2
    want_grads = by_attr(single, whole, "teeny.grad")
    got_grads = by_attr(local, results[0], "teeny.grad")
    assert max(max_error(got_grads[n], want_grads[n]) for n in want_grads) > 1e-3
    want_mean = by_attr(single, whole, "teeny.running")["bn.running_mean"]
    assert (
        max_error(by_attr(local, results[0], "teeny.running")["bn.running_mean"], want_mean) > 1e-4
    )


@pytest.mark.parametrize(("sizes", "batch"), [((2, 4), "?"), ((1, 5), "?"), ((3, 3), "3")])
def test_the_global_count_is_the_sum_of_the_ranks_batches(
    sizes: tuple[int, int], batch: str
) -> None:
    """Uneven shards of a dynamic batch (the count is each rank's run-time
    batch, all-reduced), and a static batch (a constant count): the outputs
    and running statistics of one process on the whole batch."""
    weights = bn_weights(8)
    x, r = _bn_data(9, sum(sizes))
    single = compiled(CONV_BN.replace("BATCH", "?"), "train-mode")
    whole = reference.run(single, weights, [x, r])
    synced = compiled(
        CONV_BN.replace("BATCH", batch), f"train-mode,sync-batch-norm{{world={WORLD}}}"
    )
    reduces = sum(isinstance(op, AllReduceOp) for op in synced.walk())
    assert reduces == (3 if batch == "?" else 2)  # a static count is a constant
    starts = [0, sizes[0]]
    shards = [[x[s : s + n], r[s : s + n]] for s, n in zip(starts, sizes, strict=True)]
    results = on_ranks(synced, weights, shards)
    for rank, (start, size) in enumerate(zip(starts, sizes, strict=True)):
        close(results[rank][1], whole[1][start : start + size], f"output of rank {rank}")
        for name, value in by_attr(synced, results[rank], "teeny.running").items():
            close(value, by_attr(single, whole, "teeny.running")[name], name)


def test_sync_bn_keeps_the_roles_and_locations_and_freezes_the_statistics() -> None:
    text = CONV_BN.replace("BATCH", "?")
    module = teeny_ir.parse_module(text, filename="conv_bn.mlir")
    teeny_ir.PassManager.parse("train-mode").run(module)
    before = set(forward_of(module).body.block.ops)
    teeny_ir.PassManager.parse(f"sync-batch-norm{{world={WORLD}}}").run(module)
    forward = forward_of(module)
    assert forward.res_attrs is not None
    roles = [a.data.get("teeny.running") for a in forward.res_attrs.data]
    assert [None if r is None else r.data for r in roles] == [
        None,
        None,
        "bn.running_mean",
        "bn.running_var",
    ]
    params = {op.param_name.data: op for op in forward.walk() if isinstance(op, ParamOp)}
    assert params["bn.running_mean"].frozen and params["bn.running_var"].frozen
    assert not params["bn.weight"].frozen
    made = [op for op in forward.body.block.ops if op not in before]
    assert sum(isinstance(op, AllReduceOp) for op in made) == 3
    bn_line = 1 + next(i for i, line in enumerate(text.splitlines()) if "graph.batch_norm" in line)
    locations = {loc_of(op) for op in made}
    assert {(where.filename, where.line) for where in locations if where} == {
        ("conv_bn.mlir", bn_line)
    }
    assert None not in locations
    # insert-backward gives the frozen statistics no gradient.
    teeny_ir.PassManager.parse("insert-backward").run(module)
    res_attrs = forward_of(module).res_attrs
    assert res_attrs is not None
    grads = sorted(a.data["teeny.grad"].data for a in res_attrs.data if "teeny.grad" in a.data)
    assert grads == ["bn.bias", "bn.weight", "conv.bias", "conv.weight"]


YOLOV8N = ROOT / "examples" / "yolov8n"


def test_yolov8n_with_sync_bn_on_two_ranks_is_one_process_on_the_whole_batch() -> None:
    """The 57 batch norms of YOLOv8n (64x64) synchronised over 2 ranks x 2
    images: the three heads' outputs, every running statistic and every
    gradient of one process on the 4 images. The loss is a sum (the weighted
    sum of the outputs), so the ranks' averaged gradient is half the whole
    batch's. Whole-model tolerance: 1e-4 of max(max|ref|, 1e-3 of the largest
    gradient) for the gradients, the repo's rule for the rest."""

    def build(passes: str) -> ModuleOp:
        module = teeny_ir.parse_module((YOLOV8N / "yolov8n.mlir").read_text(), filename="y.mlir")
        add_weighted_sum_loss(module)
        teeny_ir.PassManager.parse(passes).run(module)
        return module

    graph = "split-bias,fuse-epilogues{mode=training},insert-backward"
    single = build(f"train-mode,{graph}")
    synced = build(
        f"train-mode,sync-batch-norm{{world={WORLD}}},{graph},"
        f"insert-gradient-allreduce{{world={WORLD}}}"
    )
    assert not any(isinstance(op, BatchNormOp) for op in synced.walk())
    weights = dict(load_file(YOLOV8N / "yolov8n.safetensors"))
    rng = np.random.default_rng(57)
    x = rng.standard_normal((4, 3, 64, 64)).astype(np.float32)
    directions = [rng.standard_normal((4, 144, s, s)).astype(np.float32) for s in (8, 4, 2)]
    whole = reference.run(single, weights, [x, *directions])
    shards = [[a[2 * k : 2 * k + 2] for a in (x, *directions)] for k in range(WORLD)]
    results = on_ranks(synced, weights, shards)
    want_grads = {k: v / WORLD for k, v in by_attr(single, whole, "teeny.grad").items()}
    scale = max(float(np.abs(v).max()) for v in want_grads.values())
    for rank, outputs in enumerate(results):
        for head in (1, 2, 3):
            close(outputs[head], whole[head][2 * rank : 2 * rank + 2], f"head {head}", 1e-4)
        running = by_attr(synced, outputs, "teeny.running")
        assert len(running) == 2 * 57
        for name, value in by_attr(single, whole, "teeny.running").items():
            close(running[name], value, name, 1e-4)
        grads = by_attr(synced, outputs, "teeny.grad")
        assert sorted(grads) == sorted(want_grads)
        for name, want in want_grads.items():
            bound = 1e-4 * max(float(np.abs(want).max()), 1e-3 * scale)
            assert max_error(grads[name], want) <= bound, name


# ------------------------------------------------ pipeline options and errors


def test_teeny_training_runs_the_data_parallel_passes_only_when_asked() -> None:
    pipeline = PIPELINES["teeny-training"]
    default = format_pipeline(pipeline.expand())
    assert "all_reduce" not in default and "sync-batch-norm" not in default
    assert format_pipeline(pipeline.expand([("world", ("1",)), ("sync-bn", ("true",))])) == default
    two = format_pipeline(pipeline.expand([("world", ("2",))]))
    assert "insert-backward,insert-gradient-allreduce{world=2},apply-optimizer" in two
    assert "sync-batch-norm" not in two
    synced = format_pipeline(pipeline.expand([("world", ("4",)), ("sync-bn", ("true",))]))
    assert synced.startswith("builtin.module(train-mode,sync-batch-norm{world=4},split-bias,")
    assert "insert-backward,insert-gradient-allreduce{world=4},apply-optimizer" in synced


def teeny_opt(args: list[str], text: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = opt.run(args, io.BytesIO(text.encode()), stdout, stderr)
    return code, stdout.getvalue(), stderr.getvalue()


def test_list_passes_shows_both_passes() -> None:
    code, out, _ = teeny_opt(["--list-passes"], "")
    assert code == 0
    lines = [line.split() for line in out.splitlines()]
    for name, summary in (
        ("insert-gradient-allreduce", "Average every gradient of @forward over world ranks"),
        ("sync-batch-norm", "Synchronise every training batch norm of @forward over world ranks"),
    ):
        assert [name, *summary.split()] in [words[: len(summary.split()) + 1] for words in lines]


def lenet_with_loss() -> str:
    module = teeny_ir.parse_module(LENET.read_text(), filename="lenet.mlir")
    add_cross_entropy_loss(module)
    return teeny_ir.print_module(module)


def test_a_world_below_one_is_refused_by_the_pass_through_the_pipeline() -> None:
    code, _, err = teeny_opt(
        ["-", "-p", "teeny-training{world=0}", "-o", "/dev/null"], lenet_with_loss()
    )
    assert code != 0
    assert (
        "error: insert-gradient-allreduce: expected world (the number of ranks) >= 1, got 0" in err
    )
    assert "Traceback" not in err


def test_semantics_without_run_take_the_group_from_process_group() -> None:
    """A caller of the semantics functions (the float64 runners of the VJP
    tests) enters `process_group` itself."""
    from teeny_ir.reference import SEMANTICS

    module = all_reduce_module("sum", 1)
    op = forward_of(module).body.block.first_op
    semantics = SEMANTICS.lookup(AllReduceOp)
    assert callable(semantics)
    x = np.ones((2, 3))

    def doubled(reduction: str, array: np.ndarray) -> np.ndarray:
        assert reduction == "sum"
        return 2 * array

    with process_group(doubled):
        (got,) = semantics(op, [x], {})
    np.testing.assert_array_equal(got, 2 * x)
    (got,) = semantics(op, [x], {})  # world 1, outside: the identity
    np.testing.assert_array_equal(got, x)
