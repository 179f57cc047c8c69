"""Turn an inference graph into a training graph: a loss as @forward's first result.

``insert-backward`` differentiates @forward's first result, a scalar
``tensor<f32>`` loss. These functions add one to a model that returns its
predictions, in place, keeping the predictions as the following results:

- `add_cross_entropy_loss`: a ``targets`` argument (i64 ``[N]``) and
  ``graph.cross_entropy(logits, targets)`` of the first result (``[N, C]``);
- `add_weighted_sum_loss`: one argument ``r_i`` per result, of its type, and
  ``sum_i reduce_sum(result_i * r_i)`` (a loss whose gradient at ``result_i``
  is ``r_i``: every output's backward is exercised with random directions).
"""

from __future__ import annotations

from xdsl.dialects.builtin import DYNAMIC_INDEX, FunctionType, ModuleOp, TensorType, i64
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue

from dialects.graph.elementwise import AddOp, MulOp
from dialects.graph.reduce import CrossEntropyOp, ReduceSumOp


def _forward(module: ModuleOp) -> tuple[FuncOp, ReturnOp]:
    for op in module.ops:
        if isinstance(op, FuncOp) and op.sym_name.data == "forward":
            ret = op.body.block.last_op
            assert isinstance(ret, ReturnOp)
            return op, ret
    raise ValueError("the module has no function @forward")


def _set_results(function: FuncOp, ret: ReturnOp, ops: list[Operation], loss: SSAValue) -> None:
    block = function.body.block
    for op in ops:
        op.location = ret.location
        block.insert_op_before(op, ret)
    values = [loss, *ret.arguments]
    new_ret = ReturnOp(*values)
    new_ret.location = ret.location
    block.insert_op_before(new_ret, ret)
    block.erase_op(ret)
    inputs = [arg.type for arg in block.args]
    function.function_type = FunctionType.from_lists(inputs, [v.type for v in values])
    function.res_attrs = None
    function.arg_attrs = None


def add_cross_entropy_loss(module: ModuleOp) -> None:
    """Append an i64 ``targets`` argument and make ``cross_entropy(first result,
    targets)`` the first result (raises ValueError if that result is not [N, C])."""
    function, ret = _forward(module)
    logits = ret.arguments[0]
    type_ = logits.type
    if not isinstance(type_, TensorType) or len(type_.get_shape()) != 2:
        raise ValueError(f"the first result must be logits [N, C], got {type_}")
    batch = type_.get_shape()[0]
    targets = function.body.block.insert_arg(
        TensorType(i64, [batch if batch != DYNAMIC_INDEX else DYNAMIC_INDEX]),
        len(function.body.block.args),
    )
    targets.name_hint = "targets"
    loss = CrossEntropyOp(logits, targets)
    _set_results(function, ret, [loss], loss.result)


def add_weighted_sum_loss(module: ModuleOp) -> None:
    """Append one argument ``r_i`` per result (of its type) and make
    ``sum_i reduce_sum(result_i * r_i)`` the first result."""
    function, ret = _forward(module)
    block = function.body.block
    ops: list[Operation] = []
    total: SSAValue | None = None
    for index, value in enumerate(ret.arguments):
        assert isinstance(value.type, TensorType)
        weight = block.insert_arg(value.type, len(block.args))
        weight.name_hint = f"r{index}"
        product = MulOp(value, weight)
        summed = ReduceSumOp(product.result, list(range(len(value.type.get_shape()))))
        ops += [product, summed]
        if total is None:
            total = summed.result
        else:
            add = AddOp(total, summed.result)
            ops.append(add)
            total = add.result
    assert total is not None, "@forward returns nothing"
    _set_results(function, ret, ops, total)
