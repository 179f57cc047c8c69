"""VJPs of softmax, log-softmax, cross-entropy, the reductions and the structure
ops, and their backward ops (`graph.softmax_backward`,
`graph.log_softmax_backward`, `graph.cross_entropy_backward`, `graph.broadcast`).

Three layers, each against ``torch.autograd.grad`` in float64 at batch 1 and 3
on odd shapes: the backward ops' reference semantics; each VJP rule called
directly on a one-op function (the seed an extra argument); and whole
functions through ``insert-backward``. Programs are evaluated in float64 with
the reference semantics (`run64`, no per-op float32 rounding), so the tolerance
is 1e-8 relative; `teeny_ir.reference.run` (float32 per op) is checked too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
import torch
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    FunctionType,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

import teeny_ir
from dialects.graph.param import ParamOp
from dialects.graph.reduce import (
    CrossEntropyBackwardOp,
    CrossEntropyOp,
    LogSoftmaxBackwardOp,
    LogSoftmaxOp,
    ReduceMaxOp,
    ReduceMeanOp,
    ReduceMinOp,
    ReduceSumOp,
    SoftmaxBackwardOp,
    SoftmaxOp,
    infer_reduce_shape,
)
from dialects.graph.structure import (
    BroadcastOp,
    ConcatOp,
    FlattenOp,
    ReshapeOp,
    SplitOp,
    TransposeOp,
)
from teeny_ir import reference
from teeny_ir.autodiff.context import VjpContext
from teeny_ir.autodiff.registry import VJPS
from teeny_ir.core.diagnostics import DiagnosticError
from teeny_ir.core.facets import OptOut
from teeny_ir.ir.parsing import parse_module, print_module
from teeny_ir.reference import SEMANTICS
from teeny_ir.testing import REDUCTION_TOL, assert_close, assert_round_trips

BATCHES = (1, 3)
RTOL = 1e-8


# --------------------------------------------------------------------- helpers


def run64(
    module: ModuleOp, inputs: Sequence[np.ndarray], weights: dict[str, np.ndarray] | None = None
) -> list[np.ndarray]:
    """@forward evaluated with the reference semantics in float64 throughout."""
    weights = weights or {}
    forward = next(op for op in module.ops if isinstance(op, FuncOp))
    block = forward.body.block
    env: dict[SSAValue, Any] = dict(zip(block.args, inputs, strict=True))
    for op in block.ops:
        if isinstance(op, ReturnOp):
            return [np.asarray(env[v]) for v in op.arguments]
        if isinstance(op, ParamOp):
            env[op.result] = np.asarray(weights[op.param_name.data], np.float64)
            continue
        rule = SEMANTICS.lookup(type(op))
        assert callable(rule), rule
        results = rule(op, [env[v] for v in op.operands], weights)
        for result, value in zip(op.results, results, strict=True):
            env[result] = value
    raise AssertionError("no return")


def close(got: np.ndarray, want: torch.Tensor | np.ndarray, rtol: float = RTOL) -> None:
    """``max|got - want| <= rtol * max(1, max|want|)``, shapes equal."""
    want = want.detach().numpy() if isinstance(want, torch.Tensor) else np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    bound = rtol * max(1.0, float(np.abs(want).max(initial=0.0)))
    error = float(np.abs(got - want).max(initial=0.0))
    assert error <= bound, f"max error {error:g} > {bound:g}"


def rand(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape)


def t(array: np.ndarray, grad: bool = False) -> torch.Tensor:
    return torch.tensor(array, dtype=torch.float64, requires_grad=grad)


def vjp_module(text: str) -> tuple[ModuleOp, list[SSAValue | None], Operation]:
    """Parse a one-op @forward, add a seed argument per result of its op, apply
    the op's VJP rule and return the operand gradients instead. Returns the
    module, the rule's gradients (None entries kept) and the op."""
    module = parse_module(text)
    function = next(op for op in module.ops if isinstance(op, FuncOp))
    block = function.body.block
    op = block.first_op
    assert op is not None
    ret = block.last_op
    assert isinstance(ret, ReturnOp)
    seeds = [block.insert_arg(result.type, len(block.args)) for result in op.results]
    ctx = VjpContext(block, ret)
    ctx.location = op.location
    rule = VJPS.lookup(type(op))
    assert callable(rule), rule
    grads = rule(ctx, op, seeds)
    assert len(grads) == len(op.operands)
    for operand, grad in zip(op.operands, grads, strict=True):
        assert grad is None or grad.type == operand.type
    new_ret = ReturnOp(*[g for g in grads if g is not None])
    block.insert_op_before(new_ret, ret)
    block.erase_op(ret)
    function.function_type = FunctionType.from_lists(
        [arg.type for arg in block.args], [v.type for v in new_ret.arguments]
    )
    module.verify()
    return module, grads, op


def one_op(signature: str, body: str) -> str:
    """``@forward(signature)`` running ``body`` (one op defining ``%y``), returning ``%y``."""
    result = body.rsplit("-> ", 1)[1]
    return (
        f"func.func @forward({signature}) -> {result} {{\n  {body}\n  func.return %y : {result}\n}}"
    )


def check_all_backends(
    module: ModuleOp, inputs: Sequence[np.ndarray], wants: Sequence[Any]
) -> None:
    """float64 `run64` within 1e-8, and the float32 reference interpreter within
    its reduction tolerance."""
    got = run64(module, inputs)
    assert len(got) == len(wants)
    for value, want in zip(got, wants, strict=True):
        close(value, want)
    f32_inputs = [x.astype(np.float32) if x.dtype == np.float64 else x for x in inputs]
    for value, want in zip(reference.run(module, {}, f32_inputs), wants, strict=True):
        want = want.detach().numpy() if isinstance(want, torch.Tensor) else want
        assert_close(value, want.astype(np.float32), 10 * REDUCTION_TOL)


# ------------------------------------------------- backward ops: reference semantics


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize(("log", "axis"), [(False, 1), (False, 0), (True, 2), (True, 1)])
def test_softmax_backward_semantics(batch: int, log: bool, axis: int) -> None:
    rng = np.random.default_rng(batch * 10 + axis)
    x, dy = rand(rng, batch, 5, 3), rand(rng, batch, 5, 3)
    xt = t(x, grad=True)
    yt = (torch.log_softmax if log else torch.softmax)(xt, dim=axis)
    (want,) = torch.autograd.grad(yt, xt, t(dy))
    name = "log_softmax_backward" if log else "softmax_backward"
    ty = "tensor<?x5x3xf32>"
    module = parse_module(
        one_op(
            f"%a: {ty}, %b: {ty}", f"%y = graph.{name} %a, %b axis {axis} : ({ty}, {ty}) -> {ty}"
        )
    )
    check_all_backends(module, [yt.detach().numpy(), dy], [want])


@pytest.mark.parametrize("batch", BATCHES)
def test_cross_entropy_backward_semantics(batch: int) -> None:
    rng = np.random.default_rng(batch)
    logits = rand(rng, batch, 7)
    targets = rng.integers(0, 7, batch).astype(np.int64)
    g = np.asarray(rng.standard_normal())
    lt = t(logits, grad=True)
    loss = torch.nn.functional.cross_entropy(lt, torch.tensor(targets))
    (want,) = torch.autograd.grad(loss, lt, t(g))
    module = parse_module(
        one_op(
            "%l: tensor<?x7xf32>, %t: tensor<?xi64>, %g: tensor<f32>",
            "%y = graph.cross_entropy_backward %l, %t, %g"
            " : (tensor<?x7xf32>, tensor<?xi64>, tensor<f32>) -> tensor<?x7xf32>",
        )
    )
    check_all_backends(module, [logits, targets, g], [want])


def test_cross_entropy_backward_rejects_out_of_range_target() -> None:
    module = parse_module(
        one_op(
            "%l: tensor<?x4xf32>, %t: tensor<?xi64>, %g: tensor<f32>",
            "%y = graph.cross_entropy_backward %l, %t, %g"
            " : (tensor<?x4xf32>, tensor<?xi64>, tensor<f32>) -> tensor<?x4xf32>",
        )
    )
    inputs = [np.zeros((3, 4), np.float32), np.array([0, 4, -1]), np.array(1.0, np.float32)]
    with pytest.raises(
        DiagnosticError,
        match=r"cross_entropy_backward target 4 at index 1 "
        r"is out of range \[0, 4\) \(2 out of range in all\)",
    ):
        reference.run(module, {}, inputs)


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize(
    ("src", "dst", "source"),
    [
        ("?x3x1", "?x3x5", None),
        ("3x1", "?x3x5", "?x2"),
        ("", "?x3", "?x7"),
        ("1x5", "?x5", "?x5"),
        ("5", "2x3x5", None),
    ],
)
def test_broadcast_semantics(batch: int, src: str, dst: str, source: str | None) -> None:
    rng = np.random.default_rng(batch)

    def shape(text: str) -> tuple[int, ...]:
        return tuple(batch if d == "?" else int(d) for d in text.split("x") if d)

    def ty(text: str) -> str:
        return f"tensor<{text}xf32>" if text else "tensor<f32>"

    x = rand(rng, *shape(src))
    args, operands, types, inputs = f"%x: {ty(src)}", "%x", ty(src), [x]
    if source is not None:
        args += f", %s: {ty(source)}"
        operands += ", %s"
        types += f", {ty(source)}"
        inputs.append(rand(rng, *shape(source)))
    module = parse_module(one_op(args, f"%y = graph.broadcast {operands} : ({types}) -> {ty(dst)}"))
    check_all_backends(module, inputs, [torch.broadcast_to(t(x), shape(dst))])


# ------------------------------------------------------------- syntax and verifiers


BACKWARD_TEXT = """
func.func @forward(%y: tensor<?x10xf32>, %dy: tensor<?x10xf32>, %t: tensor<?xi64>,
                   %g: tensor<f32>, %v: tensor<16xf32>) -> tensor<?x10xf32> {
  %a = graph.softmax_backward %y, %dy axis 1 : (tensor<?x10xf32>, tensor<?x10xf32>) -> tensor<?x10xf32>
  %b = graph.log_softmax_backward %y, %dy axis 0 {k = 1} : (tensor<?x10xf32>, tensor<?x10xf32>) -> tensor<?x10xf32>
  %c = graph.cross_entropy_backward %y, %t, %g : (tensor<?x10xf32>, tensor<?xi64>, tensor<f32>) -> tensor<?x10xf32>
  %d = graph.broadcast %g, %y : (tensor<f32>, tensor<?x10xf32>) -> tensor<?x16xf32>
  %e = graph.broadcast %v : (tensor<16xf32>) -> tensor<3x16xf32>
  func.return %a : tensor<?x10xf32>
}
"""


def test_backward_ops_round_trip() -> None:
    module = parse_module(BACKWARD_TEXT)
    assert_round_trips(module)
    assert "graph.broadcast %g, %y : (tensor<f32>, tensor<?x10xf32>)" in print_module(module)


def test_backward_op_builders_infer_types() -> None:
    module = parse_module(BACKWARD_TEXT)
    y, dy, targets, g, _ = next(iter(module.ops)).body.block.args
    op = SoftmaxBackwardOp(y, dy, -1)
    assert op.axis == 1 and op.result.type == y.type
    assert LogSoftmaxBackwardOp(y, dy, 0).result.type == y.type
    assert CrossEntropyBackwardOp(y, targets, g).result.type == y.type
    op.verify()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "graph.softmax_backward %y, %z axis 1 : (tensor<?x10xf32>, tensor<?x9xf32>) -> tensor<?x10xf32>",
            "expected dy to have the type of y, tensor<?x10xf32>, got tensor<?x9xf32>",
        ),
        (
            "graph.log_softmax_backward %y, %y axis 2 : (tensor<?x10xf32>, tensor<?x10xf32>) -> tensor<?x10xf32>",
            "expected axis in [0, 2) for input of rank 2, got 2",
        ),
        (
            "graph.cross_entropy_backward %y, %t, %z : (tensor<?x10xf32>, tensor<?xi64>, tensor<?x9xf32>) -> tensor<?x10xf32>",
            "expected g to be a scalar tensor<f32>, got shape [?, 9]",
        ),
        (
            "graph.broadcast %z : (tensor<?x9xf32>) -> tensor<?x10xf32>",
            "cannot broadcast shapes [?, 9] and [?, 10]",
        ),
        (
            "graph.broadcast %y : (tensor<?x10xf32>) -> tensor<1x10xf32>",
            "cannot broadcast [?, 10] to [1, 10]: broadcasting them gives [?, 10]",
        ),
        (
            "graph.broadcast %g : (tensor<f32>) -> tensor<?x10xf32>",
            "needs a batch source operand",
        ),
        (
            "graph.broadcast %y, %y : (tensor<?x10xf32>, tensor<?x10xf32>) -> tensor<?x10xf32>",
            "unexpected batch source",
        ),
        (
            "graph.broadcast %g, %v : (tensor<f32>, tensor<16xf32>) -> tensor<?x10xf32>",
            "expected the batch source to have a dynamic batch dimension 0, got shape [16]",
        ),
    ],
)
def test_verifier_messages(body: str, message: str) -> None:
    text = (
        "func.func @f(%y: tensor<?x10xf32>, %z: tensor<?x9xf32>, %t: tensor<?xi64>, "
        f"%g: tensor<f32>, %v: tensor<16xf32>) {{\n  %r = {body}\n  func.return\n}}"
    )
    with pytest.raises(DiagnosticError, match=re.escape(message)):
        parse_module(text)


def test_broadcast_builder_rejects_bad_shape() -> None:
    module = parse_module(BACKWARD_TEXT)
    y = next(iter(module.ops)).body.block.args[0]
    op = BroadcastOp(y, TensorType(f32, [2, 10]))
    with pytest.raises(VerifyException, match="cannot broadcast"):
        op.verify()


# ----------------------------------------------------------- VJP rules, directly


def _grads_by_torch(
    fn: Any, inputs: Sequence[np.ndarray], seeds: Sequence[np.ndarray]
) -> list[torch.Tensor]:
    leaves = [t(x, grad=True) for x in inputs]
    outputs = fn(*leaves)
    outputs = outputs if isinstance(outputs, tuple | list) else (outputs,)
    return list(torch.autograd.grad(outputs, leaves, [t(s) for s in seeds]))


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize(("op", "axis"), [("softmax", 1), ("softmax", 0), ("log_softmax", 2)])
def test_softmax_family_rules(batch: int, op: str, axis: int) -> None:
    ty = "tensor<?x5x3xf32>"
    module, grads, forward = vjp_module(
        one_op(f"%x: {ty}", f"%y = graph.{op} %x axis {axis} : ({ty}) -> {ty}")
    )
    backward = SoftmaxBackwardOp if op == "softmax" else LogSoftmaxBackwardOp
    assert isinstance(grads[0].owner, backward)  # type: ignore[union-attr]
    assert grads[0].owner.output is forward.results[0]  # type: ignore[union-attr]
    rng = np.random.default_rng(batch)
    x, seed = rand(rng, batch, 5, 3), rand(rng, batch, 5, 3)
    want = _grads_by_torch(lambda a: getattr(torch, op)(a, dim=axis), [x], [seed])
    check_all_backends(module, [x, seed], want)


@pytest.mark.parametrize("batch", BATCHES)
def test_cross_entropy_rule(batch: int) -> None:
    module, grads, _ = vjp_module(
        one_op(
            "%l: tensor<?x6xf32>, %t: tensor<?xi64>",
            "%y = graph.cross_entropy %l, %t : (tensor<?x6xf32>, tensor<?xi64>) -> tensor<f32>",
        )
    )
    assert grads[1] is None and isinstance(grads[0].owner, CrossEntropyBackwardOp)  # type: ignore[union-attr]
    rng = np.random.default_rng(batch)
    logits, targets, seed = rand(rng, batch, 6), rng.integers(0, 6, batch), np.asarray(-1.7)
    lt = t(logits, grad=True)
    loss = torch.nn.functional.cross_entropy(lt, torch.tensor(targets))
    (want,) = torch.autograd.grad(loss, lt, t(seed))
    check_all_backends(module, [logits, targets, seed], [want])


REDUCTIONS = [
    # (input shape, axes, keepdims)
    ("?x5x3", [1], False),
    ("?x5x3", [2, 1], True),
    ("?x5x3", [0], False),  # the dynamic batch, counted at run time for the mean
    ("?x5x3", [0, 2], True),
    ("?x5x3", [0, 1, 2], False),  # a scalar
    ("?x5x1", [2], False),  # a size-1 axis: no broadcast needed
    ("3x5", [0], False),  # static
]


_REDUCTION_OPS = {
    "sum": (ReduceSumOp, torch.sum),
    "mean": (ReduceMeanOp, torch.mean),
    "max": (ReduceMaxOp, torch.amax),
    "min": (ReduceMinOp, torch.amin),
}


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("kind", list(_REDUCTION_OPS))
@pytest.mark.parametrize(("shape", "axes", "keepdims"), REDUCTIONS)
@pytest.mark.parametrize("ties", [False, True])
def test_reduction_rules(
    batch: int, kind: str, shape: str, axes: list[int], keepdims: bool, ties: bool
) -> None:
    # With ties (values rounded to a few levels) a maximum's gradient is shared
    # evenly among the elements equal to it, as torch.amax's.
    if ties and kind in ("sum", "mean"):
        pytest.skip("ties matter to the extrema only")
    op_class, reduce = _REDUCTION_OPS[kind]
    sizes = [batch if d == "?" else int(d) for d in shape.split("x")]
    if shape[0] != "?" and batch != sizes[0]:
        pytest.skip("static shape: one batch")
    in_type = TensorType(f32, [DYNAMIC_INDEX if d == "?" else int(d) for d in shape.split("x")])
    out_type = TensorType(f32, infer_reduce_shape(in_type.get_shape(), axes, keepdims))
    keep = " keepdims" if keepdims else ""
    module, _, _ = vjp_module(
        one_op(
            f"%x: {in_type}",
            f"%y = {op_class.name} %x axes {axes}{keep} : ({in_type}) -> {out_type}",
        )
    )
    rng = np.random.default_rng(batch + len(axes))
    x = rand(rng, *sizes)
    if ties:
        x = np.round(x)
    out_shape = tuple(reduce(t(x), dim=axes, keepdim=keepdims).shape)
    seed = rand(rng, *out_shape)
    want = _grads_by_torch(lambda a: reduce(a, dim=axes, keepdim=keepdims), [x], [seed])
    check_all_backends(module, [x, seed], want)


STRUCTURE = [
    # (op text with %x the input, input shapes, torch function)
    (
        "%y = graph.reshape %x shape [0, -1] : (tensor<?x3x5xf32>) -> tensor<?x15xf32>",
        ["?x3x5"],
        lambda a: a.reshape(a.shape[0], -1),
    ),
    (
        "%y = graph.flatten %x start_dim 1 end_dim 2 : (tensor<?x3x5x2xf32>) -> tensor<?x15x2xf32>",
        ["?x3x5x2"],
        lambda a: torch.flatten(a, 1, 2),
    ),
    (
        "%y = graph.transpose %x perm [0, 2, 3, 1] : (tensor<?x3x5x2xf32>) -> tensor<?x5x2x3xf32>",
        ["?x3x5x2"],
        lambda a: a.permute(0, 2, 3, 1),
    ),
    (
        "%y = graph.transpose %x perm [2, 0, 1] : (tensor<3x5x7xf32>) -> tensor<7x3x5xf32>",
        ["3x5x7"],
        lambda a: a.permute(2, 0, 1),
    ),
]


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize(("body", "shapes", "fn"), STRUCTURE)
def test_view_rules(batch: int, body: str, shapes: list[str], fn: Any) -> None:
    sizes = [batch if d == "?" else int(d) for d in shapes[0].split("x")]
    in_type = body.split(" : (")[1].split(")")[0]
    module, _, _ = vjp_module(one_op(f"%x: {in_type}", body))
    rng = np.random.default_rng(batch)
    x = rand(rng, *sizes)
    seed = rand(rng, *fn(t(x)).shape)
    check_all_backends(module, [x, seed], _grads_by_torch(fn, [x], [seed]))


@pytest.mark.parametrize("batch", BATCHES)
def test_concat_rule_is_a_split(batch: int) -> None:
    module, grads, _ = vjp_module(
        one_op(
            "%a: tensor<?x2x3xf32>, %b: tensor<?x5x3xf32>, %c: tensor<?x1x3xf32>",
            "%y = graph.concat %a, %b, %c axis 1 : (tensor<?x2x3xf32>, tensor<?x5x3xf32>, "
            "tensor<?x1x3xf32>) -> tensor<?x8x3xf32>",
        )
    )
    assert all(isinstance(g.owner, SplitOp) for g in grads)  # type: ignore[union-attr]
    rng = np.random.default_rng(batch)
    inputs = [rand(rng, batch, n, 3) for n in (2, 5, 1)]
    seed = rand(rng, batch, 8, 3)
    want = _grads_by_torch(lambda *xs: torch.cat(xs, 1), inputs, [seed])
    check_all_backends(module, [*inputs, seed], want)


@pytest.mark.parametrize("batch", BATCHES)
def test_split_rule_is_a_concat(batch: int) -> None:
    module, grads, _ = vjp_module(
        "func.func @forward(%x: tensor<?x7x2xf32>) {\n"
        "  %y, %z = graph.split %x axis 1 sizes [3, 4] : (tensor<?x7x2xf32>) "
        "-> (tensor<?x3x2xf32>, tensor<?x4x2xf32>)\n  func.return\n}"
    )
    assert isinstance(grads[0].owner, ConcatOp)  # type: ignore[union-attr]
    rng = np.random.default_rng(batch)
    x, s1, s2 = rand(rng, batch, 7, 2), rand(rng, batch, 3, 2), rand(rng, batch, 4, 2)
    want = _grads_by_torch(lambda a: torch.split(a, [3, 4], 1), [x], [s1, s2])
    check_all_backends(module, [x, s1, s2], want)


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("dynamic", [True, False])
def test_split_rule_zeros_for_an_unused_part(batch: int, dynamic: bool) -> None:
    """A part the loss does not reach gets zeros: a broadcast scalar zero over a
    dynamic batch (constants are static), a constant when static."""
    if not dynamic and batch != 3:
        pytest.skip("static shape: one batch")
    n = "?" if dynamic else "3"
    text = (
        f"func.func @forward(%x: tensor<{n}x7xf32>) {{\n"
        f"  %a, %b, %c = graph.split %x axis 1 sizes [2, 4, 1] : (tensor<{n}x7xf32>) -> "
        f"(tensor<{n}x2xf32>, tensor<{n}x4xf32>, tensor<{n}x1xf32>)\n  func.return\n}}"
    )
    module = parse_module(text)
    function = next(iter(module.ops))
    block = function.body.block
    op = block.first_op
    seed = block.insert_arg(op.results[1].type, 1)
    ctx = VjpContext(block, block.last_op)
    rule = VJPS.lookup(SplitOp)
    assert callable(rule)
    (grad,) = rule(ctx, op, [None, seed, None])
    assert grad is not None
    ret = ReturnOp(grad)
    block.insert_op_before(ret, block.last_op)
    block.erase_op(block.last_op)
    function.function_type = FunctionType.from_lists([a.type for a in block.args], [grad.type])
    module.verify()
    zeros = [u for u in block.ops if isinstance(u, BroadcastOp)]
    assert len(zeros) == (2 if dynamic else 0)
    rng = np.random.default_rng(batch)
    x, s = rand(rng, batch, 7), rand(rng, batch, 4)
    want = _grads_by_torch(lambda a: torch.split(a, [2, 4, 1], 1)[1], [x], [s])
    check_all_backends(module, [x, s], want)


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize(
    ("src", "dst", "source"),
    [("?x3x1", "?x3x5", None), ("3x1", "?x3x5", "?x2"), ("", "?x3", "?x3"), ("5", "2x3x5", None)],
)
def test_broadcast_rule_sums_back(batch: int, src: str, dst: str, source: str | None) -> None:
    def ty(text: str) -> str:
        return f"tensor<{text}xf32>" if text else "tensor<f32>"

    def shape(text: str) -> tuple[int, ...]:
        return tuple(batch if d == "?" else int(d) for d in text.split("x") if d)

    args, operands, types = f"%x: {ty(src)}", "%x", ty(src)
    if source is not None:
        args, operands, types = (
            args + f", %s: {ty(source)}",
            operands + ", %s",
            types + f", {ty(source)}",
        )
    module, grads, _ = vjp_module(
        one_op(args, f"%y = graph.broadcast {operands} : ({types}) -> {ty(dst)}")
    )
    assert len(grads) == (1 if source is None else 2) and (source is None or grads[1] is None)
    rng = np.random.default_rng(batch)
    x, seed = rand(rng, *shape(src)), rand(rng, *shape(dst))
    inputs = [x] if source is None else [x, rand(rng, *shape(source))]
    want = _grads_by_torch(lambda a: torch.broadcast_to(a, shape(dst)), [x], [seed])
    check_all_backends(module, [*inputs, seed], want)


def test_backward_ops_are_not_differentiable() -> None:
    for backward in (SoftmaxBackwardOp, LogSoftmaxBackwardOp, CrossEntropyBackwardOp):
        assert isinstance(VJPS.lookup(backward), OptOut)
    for op in (
        SoftmaxOp,
        LogSoftmaxOp,
        CrossEntropyOp,
        ReduceSumOp,
        ReduceMeanOp,
        ReshapeOp,
        FlattenOp,
        TransposeOp,
        ConcatOp,
        SplitOp,
        BroadcastOp,
    ):
        assert callable(VJPS.lookup(op)), op


# ------------------------------------------------------- through insert-backward


def _grad_results(module: ModuleOp) -> dict[str, int]:
    function = next(op for op in module.ops if isinstance(op, FuncOp))
    assert function.res_attrs is not None
    found: dict[str, int] = {}
    for index, attrs in enumerate(function.res_attrs.data):
        name = attrs.data.get("teeny.grad")
        if isinstance(name, StringAttr):
            found[name.data] = index
    return found


PROGRAMS = [
    # (body after %h = x + p, with %h: tensor<?x5x3xf32>; loss from %y: type; torch fn of h)
    (
        "%y = graph.softmax %h axis 1 : (tensor<?x5x3xf32>) -> tensor<?x5x3xf32>",
        "?x5x3",
        lambda h: torch.softmax(h, 1),
    ),
    (
        "%f = graph.flatten %h : (tensor<?x5x3xf32>) -> tensor<?x15xf32>\n"
        "  %y = graph.log_softmax %f axis 1 : (tensor<?x15xf32>) -> tensor<?x15xf32>",
        "?x15",
        lambda h: torch.log_softmax(h.flatten(1), 1),
    ),
    (
        "%m = graph.reduce_mean %h axes [0, 2] : (tensor<?x5x3xf32>) -> tensor<5xf32>\n"
        "  %y = graph.reshape %m shape [1, 5] : (tensor<5xf32>) -> tensor<1x5xf32>",
        "1x5",
        lambda h: h.mean((0, 2)).reshape(1, 5),
    ),
    (
        "%a, %b = graph.split %h axis 1 sizes [2, 3] : (tensor<?x5x3xf32>) -> "
        "(tensor<?x2x3xf32>, tensor<?x3x3xf32>)\n"
        "  %c = graph.transpose %b perm [0, 2, 1] : (tensor<?x3x3xf32>) -> tensor<?x3x3xf32>\n"
        "  %y = graph.concat %c, %h axis 1 : (tensor<?x3x3xf32>, tensor<?x5x3xf32>) -> tensor<?x8x3xf32>",
        "?x8x3",
        lambda h: torch.cat([torch.split(h, [2, 3], 1)[1].permute(0, 2, 1), h], 1),
    ),
    (
        "%s = graph.reduce_sum %h axes [2] keepdims : (tensor<?x5x3xf32>) -> tensor<?x5x1xf32>\n"
        "  %y = graph.mul %s, %h : (tensor<?x5x1xf32>, tensor<?x5x3xf32>) -> tensor<?x5x3xf32>",
        "?x5x3",
        lambda h: h.sum(2, keepdim=True) * h,
    ),
]


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize(("body", "out", "fn"), PROGRAMS)
def test_through_insert_backward(batch: int, body: str, out: str, fn: Any) -> None:
    """loss = sum(y * r) over all axes; d loss / d p against torch."""
    out_type = f"tensor<{out}xf32>"
    rank = out.count("x") + 1
    text = f"""
func.func @forward(%x: tensor<?x5x3xf32>, %r: {out_type}) -> tensor<f32> {{
  %p = graph.param "p" : tensor<5x3xf32>
  %h = graph.add %x, %p : (tensor<?x5x3xf32>, tensor<5x3xf32>) -> tensor<?x5x3xf32>
  {body}
  %yr = graph.mul %y, %r : ({out_type}, {out_type}) -> {out_type}
  %loss = graph.reduce_sum %yr axes {list(range(rank))} : ({out_type}) -> tensor<f32>
  func.return %loss : tensor<f32>
}}
"""
    module = parse_module(text)
    teeny_ir.PassManager.parse("insert-backward").run(module)
    index = _grad_results(module)["p"]
    rng = np.random.default_rng(batch)
    x, p = rand(rng, batch, 5, 3), rand(rng, 5, 3)
    r_shape = tuple(batch if d == "?" else int(d) for d in out.split("x"))
    r = rand(rng, *r_shape)
    pt = t(p, grad=True)
    loss = (fn(t(x) + pt) * t(r)).sum()
    (want,) = torch.autograd.grad(loss, pt)
    got = run64(module, [x, r], {"p": p})
    close(got[index], want)
    close(got[0], loss)
    f32 = reference.run(
        module, {"p": p.astype(np.float32)}, [x.astype(np.float32), r.astype(np.float32)]
    )
    assert_close(f32[index], want.numpy().astype(np.float32), 10 * REDUCTION_TOL)


@pytest.mark.parametrize("batch", BATCHES)
def test_cross_entropy_through_insert_backward(batch: int) -> None:
    text = """
func.func @forward(%x: tensor<?x6xf32>, %t: tensor<?xi64>) -> tensor<f32> {
  %p = graph.param "p" : tensor<6xf32>
  %h = graph.mul %x, %p : (tensor<?x6xf32>, tensor<6xf32>) -> tensor<?x6xf32>
  %loss = graph.cross_entropy %h, %t : (tensor<?x6xf32>, tensor<?xi64>) -> tensor<f32>
  func.return %loss : tensor<f32>
}
"""
    module = parse_module(text)
    teeny_ir.PassManager.parse("insert-backward").run(module)
    assert any(isinstance(op, CrossEntropyBackwardOp) for op in module.walk())
    index = _grad_results(module)["p"]
    rng = np.random.default_rng(batch)
    x, p, targets = rand(rng, batch, 6), rand(rng, 6), rng.integers(0, 6, batch)
    pt = t(p, grad=True)
    loss = torch.nn.functional.cross_entropy(t(x) * pt, torch.tensor(targets))
    (want,) = torch.autograd.grad(loss, pt)
    close(run64(module, [x, targets], {"p": p})[index], want)


def test_finite_differences_of_reduce_mean_over_batch() -> None:
    """The run-time batch count of a mean over ``?``: central differences
    (eps 1e-3) through the float64 reference agree with the gradient."""
    text = """
func.func @forward(%x: tensor<?x4xf32>) -> tensor<f32> {
  %p = graph.param "p" : tensor<4xf32>
  %h = graph.mul %x, %p : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %s = graph.softmax %h axis 1 : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %m = graph.reduce_mean %s axes [0] : (tensor<?x4xf32>) -> tensor<4xf32>
  %q = graph.mul %m, %m : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %loss = graph.reduce_sum %q axes [0] : (tensor<4xf32>) -> tensor<f32>
  func.return %loss : tensor<f32>
}
"""
    forward = parse_module(text)
    module = parse_module(text)
    teeny_ir.PassManager.parse("insert-backward").run(module)
    rng = np.random.default_rng(5)
    x, p = rand(rng, 3, 4), rand(rng, 4)
    grad = run64(module, [x], {"p": p})[_grad_results(module)["p"]]
    eps = 1e-3
    for i in range(4):
        up, down = p.copy(), p.copy()
        up[i] += eps
        down[i] -= eps
        numeric = (run64(forward, [x], {"p": up})[0] - run64(forward, [x], {"p": down})[0]) / (
            2 * eps
        )
        assert abs(numeric - grad[i]) <= 1e-6 * max(1.0, abs(grad[i]))
