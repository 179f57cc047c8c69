"""insert-gradient-allreduce: average the gradients over a data-parallel group.

Data-parallel training runs the training graph on ``world`` ranks, each on
its shard of the batch, and steps every replica with the same gradient: the
mean of the ranks' gradients (PyTorch DDP's), which for shards of equal size
is the gradient of the whole batch's mean loss. This pass puts that mean into
the graph: each result of @forward marked ``{teeny.grad = "<param>"}``
(insert-backward's gradients) is returned through one
``graph.all_reduce ... reduction mean world N`` instead, so apply-optimizer,
which reads the gradients by that attribute, steps with the mean. The result
keeps its position and its attributes; the all-reduce is located at the
parameter's ``graph.param`` (as apply-optimizer's update is) and marked
``teeny.backward`` (the plan's backward phase).

With ``world=1`` nothing is inserted (the mean over one rank is the value).
The pass is refused, not repeated: a gradient already returned through a
``graph.all_reduce`` is an error (so a second run cannot average twice, or
over another group size), and so is a @forward that apply-optimizer has
already stepped (its updates read the gradients before the average).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr, UnitAttr
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.passes import ModulePass

from dialects.graph.collective import AllReduceOp
from dialects.graph.param import ParamOp
from passes.apply_optimizer import UPDATED_ATTR
from passes.insert_backward import GRAD_ATTR, forward_function
from teeny_ir.autodiff.context import BACKWARD_ATTR
from teeny_ir.core.diagnostics import Diagnostic, DiagnosticError, Severity, loc_of


def gradient_results(forward: FuncOp) -> list[tuple[int, str]]:
    """``(result index, parameter name)`` of every ``teeny.grad`` result of ``forward``."""
    if forward.res_attrs is None:
        return []
    found: list[tuple[int, str]] = []
    for index, attrs in enumerate(forward.res_attrs.data):
        name = attrs.data.get(GRAD_ATTR)
        if isinstance(name, StringAttr):
            found.append((index, name.data))
    return found


@dataclass(frozen=True)
class InsertGradientAllreducePass(ModulePass):
    """Average every gradient of @forward over world ranks (a graph.all_reduce mean each).

    Expects the module after insert-backward and before apply-optimizer:
    @forward's gradient results carry ``{teeny.grad = "<param>"}``. Each is
    returned through one ``graph.all_reduce`` (``reduction mean``, ``world``
    the option) in its place, its result attributes kept; the all-reduce is
    located at the parameter and marked ``teeny.backward``. ``world=1``
    inserts nothing. Option: ``world`` (the number of ranks, >= 1; default 1).
    Refuses, with errors located at @forward (at the module when there is
    none): ``world`` < 1, a @forward without ``teeny.grad`` results (run
    insert-backward first), gradients already all-reduced (the pass has run:
    it is refused rather than repeated), and a @forward that apply-optimizer
    has stepped (``teeny.updated`` results: run this pass before it).
    """

    name = "insert-gradient-allreduce"
    anchors: ClassVar[tuple[str, ...]] = ("builtin.module",)

    world: int = 1
    """The number of ranks of the data-parallel group, >= 1."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        forward = forward_function(op, self.name)
        block = forward.body.block
        ret = block.last_op
        if len(forward.body.blocks) != 1 or not isinstance(ret, ReturnOp):
            raise DiagnosticError.single(
                f"{self.name} expects @forward to be one block ending in func.return",
                loc_of(forward),
            )
        gradients = gradient_results(forward)
        self._check(forward, ret, gradients)
        inserted = 0
        if self.world > 1:
            params = {p.param_name.data: p for p in block.ops if isinstance(p, ParamOp)}
            for index, name in gradients:
                reduce = AllReduceOp(ret.operands[index], "mean", self.world)
                param = params.get(name)
                reduce.location = (param or ret).location
                reduce.attributes[BACKWARD_ATTR] = UnitAttr()
                block.insert_op_before(reduce, ret)
                ret.operands[index] = reduce.result
                inserted += 1
        sink = getattr(ctx, "_teeny_pass_statistics", None)
        if sink is not None:
            sink.add("all-reduces", inserted, "Number of gradients averaged over the ranks")

    def _check(self, forward: FuncOp, ret: ReturnOp, gradients: list[tuple[int, str]]) -> None:
        """Every reason to refuse, in one error located at @forward."""
        problems: list[str] = []
        if self.world < 1:
            problems.append(f"expected world (the number of ranks) >= 1, got {self.world}")
        if not gradients:
            problems.append(
                f"found no gradient: no result of @forward carries a '{GRAD_ATTR}' attribute "
                "(run insert-backward first)"
            )
        reduced = [
            (index, name, owner)
            for index, name in gradients
            if isinstance(owner := ret.operands[index].owner, AllReduceOp)
        ]
        if reduced:
            index, name, owner = reduced[0]
            problems.append(
                f"{len(reduced)} of {len(gradients)} gradients are already all-reduced (result "
                f"#{index}, the gradient of '{name}', over {owner.world} ranks): the pass has "
                "run on @forward, and is not repeated"
            )
        attrs = forward.res_attrs.data if forward.res_attrs is not None else ()
        stepped = [index for index, a in enumerate(attrs) if UPDATED_ATTR in a.data]
        if stepped:
            problems.append(
                f"apply-optimizer has already run on @forward (result #{stepped[0]} carries "
                f"'{UPDATED_ATTR}'): average the gradients before the optimizer step"
            )
        if problems:
            raise DiagnosticError(
                Diagnostic(Severity.ERROR, f"{self.name}: {p}", loc_of(forward)) for p in problems
            )
