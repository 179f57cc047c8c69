"""plan-memory: the memory plan of @forward's kernel IR, written into the IR.

Runs the one planner (`teeny_ir.backend.memory`, as ``emit-triton`` does) on the
plan that ``emit-triton`` would write (`teeny_ir.backend.collect`), and records
it as discardable attributes so a lit test can check it: each ``kernel.launch``
gets ``teeny.offsets``, per result the byte offset in the arena where it lives
(a view's is its base's plus its offset), each collective (``kernel.all_reduce``)
its result's (its input's own when it reduces in place), and ``@forward`` gets ``teeny.arena``
(the arena's bytes) and ``teeny.memory`` (the strategy that placed the
buffers). Offsets and the arena are expressions of ``B``. Nothing else changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass

from dialects.kernel import AllReduceOp, LaunchOp
from teeny_ir.backend import memory
from teeny_ir.backend.collect import collect, draft_plan, error_at
from teeny_ir.backend.plan import CollectiveSpec, LaunchSpec
from teeny_ir.kernels.families import FAMILIES

OFFSETS_ATTR = "teeny.offsets"
ARENA_ATTR = "teeny.arena"
MEMORY_ATTR = "teeny.memory"


@dataclass(frozen=True)
class PlanMemoryPass(ModulePass):
    """Place @forward's buffers in one arena by liveness and record the offsets.

    Option ``strategy``: ``best`` (default: the smallest arena of the next
    three), ``size`` (greedy, largest first), ``size-lifetime`` (greedy,
    largest size x lifetime first), ``search`` (a seeded local search over the
    better greedy order) or ``naive`` (one after another, no reuse).
    """

    name = "plan-memory"
    anchors: ClassVar[tuple[str, ...]] = ("builtin.module",)

    strategy: str = "best"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        forward = next(
            (f for f in op.ops if isinstance(f, FuncOp) and f.sym_name.data == "forward"), None
        )
        if forward is None:
            raise error_at(
                "plan-memory expects a function @forward in the module", next(iter(op.ops), op)
            )
        if self.strategy not in memory.CHOICES:
            raise error_at(
                f"plan-memory: unknown strategy={self.strategy} "
                f"(known: {', '.join(memory.CHOICES)})",
                forward,
            )
        if len(forward.body.blocks) != 1:
            raise error_at("plan-memory expects @forward to have a single block", forward)
        collected = collect(forward)
        collected.memory = self.strategy
        plan = draft_plan(forward, collected)
        where: dict[str, memory.Affine] = {b.name: memory.affine(b.offset) for b in plan.buffers}
        for view in plan.views:
            if view.base in where:
                where[view.name] = where[view.base] + memory.Affine(
                    0, view.offset * memory.BYTES["f32"]
                )
        entries = [o for o in forward.body.block.ops if isinstance(o, LaunchOp | AllReduceOp)]
        for entry, spec in zip(entries, plan.launches, strict=True):
            if isinstance(entry, AllReduceOp):  # a collective: its one result
                assert isinstance(spec, CollectiveSpec)
                offset = where[spec.output].text() if spec.output in where else ""
                entry.attributes[OFFSETS_ATTR] = ArrayAttr([StringAttr(offset)])
                continue
            launch_op = entry
            assert isinstance(spec, LaunchSpec)
            family = FAMILIES[launch_op.family]
            bound = {
                binding: arg.tensor
                for abi, (_, binding), arg in zip(
                    family.args, launch_op.arg_bindings, spec.args, strict=True
                )
                if abi.kind == "output" and arg.tensor is not None
            }
            offsets = [
                where[name].text() if (name := bound.get(f"out{i}")) in where else ""
                for i in range(len(launch_op.results))
            ]
            launch_op.attributes[OFFSETS_ATTR] = ArrayAttr([StringAttr(t) for t in offsets])
        forward.attributes[ARENA_ATTR] = StringAttr(plan.arena)
        forward.attributes[MEMORY_ATTR] = StringAttr(plan.memory)
