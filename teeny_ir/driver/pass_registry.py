"""The pass registry: pass name -> entry with a lazy loader.

Loading a pass class imports its module, so nothing here imports a pass until
a pipeline names it (or `--list-passes` asks for every summary). Each pass
declares the ops it may be anchored on with a class attribute ``anchors``;
foreign passes (xDSL's) get theirs from their entry.

A renamed pass keeps its old name as an alias (`ALIASES`): `lookup` resolves
it, so pipelines, lit tests and ``--mlir-print-ir-*`` flags written with the
old name still run the pass, which prints, dumps and reports statistics under
its own name. `names` lists passes only; ``--list-passes`` (and ``--help``)
show each alias next to the pass it names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xdsl.passes import ModulePass

MODULE_AND_FUNCTION = ("builtin.module", "func.func")
"""Anchors of passes that only touch the body of the op they run on."""


@dataclass(frozen=True)
class PassEntry:
    """One registered pass: how to load it and where it may run."""

    name: str
    load: Callable[[], type[ModulePass]]
    foreign_anchors: tuple[str, ...] | None = None
    """Anchors for passes that cannot declare their own (xDSL's upstream passes)."""
    foreign_summary: str = ""
    """One-line summary for passes without a usable docstring."""

    def anchors(self) -> tuple[str, ...]:
        """The op names this pass may be anchored on."""
        if self.foreign_anchors is not None:
            return self.foreign_anchors
        return tuple(getattr(self.load(), "anchors", ("builtin.module",)))

    def summary(self) -> str:
        """The first line of the pass's docstring (or the registered summary)."""
        if self.foreign_summary:
            return self.foreign_summary
        doc = (self.load().__doc__ or "").strip()
        return doc.splitlines()[0] if doc else ""


def _cse() -> type[ModulePass]:
    from xdsl.transforms.common_subexpression_elimination import (
        CommonSubexpressionElimination,
    )

    return CommonSubexpressionElimination


def _canonicalize() -> type[ModulePass]:
    from xdsl.transforms.canonicalize import CanonicalizePass

    return CanonicalizePass


def _dce() -> type[ModulePass]:
    from xdsl.transforms.dead_code_elimination import DeadCodeElimination

    return DeadCodeElimination


def _teeny(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    """Loader of a teeny pass: ``passes.<module>.<cls>``, imported on first use."""

    def load() -> type[ModulePass]:
        import importlib

        loaded: type[ModulePass] = getattr(importlib.import_module(f"passes.{module}"), cls)
        return loaded

    return load


_PASSES: dict[str, PassEntry] = {
    entry.name: entry
    for entry in (
        PassEntry(
            "canonicalize",
            _canonicalize,
            MODULE_AND_FUNCTION,
            "apply every canonicalization pattern and fold constants (xDSL)",
        ),
        PassEntry(
            "cse",
            _cse,
            MODULE_AND_FUNCTION,
            "eliminate common subexpressions among side-effect-free ops (xDSL)",
        ),
        PassEntry("dce", _dce, MODULE_AND_FUNCTION, "remove dead side-effect-free ops (xDSL)"),
        PassEntry("split-bias", _teeny("split_bias", "SplitBiasPass")),
        PassEntry("fuse-epilogues", _teeny("fuse_epilogues", "FuseEpiloguesPass")),
        PassEntry("fuse-attention", _teeny("fuse_attention", "FuseAttentionPass")),
        PassEntry("fuse-pointwise", _teeny("fuse_pointwise", "FusePointwisePass")),
        PassEntry(
            "select-conv-algorithm", _teeny("select_conv_algorithm", "SelectConvAlgorithmPass")
        ),
        PassEntry(
            "lower-graph-to-kernel", _teeny("lower_graph_to_kernel", "LowerGraphToKernelPass")
        ),
        PassEntry("emit-triton", _teeny("emit_triton", "EmitTritonPass")),
        PassEntry("plan-memory", _teeny("plan_memory", "PlanMemoryPass")),
        PassEntry("apply-optimizer", _teeny("apply_optimizer", "ApplyOptimizerPass")),
        PassEntry("insert-backward", _teeny("insert_backward", "InsertBackwardPass")),
        PassEntry(
            "insert-gradient-allreduce",
            _teeny("insert_gradient_allreduce", "InsertGradientAllreducePass"),
        ),
        PassEntry("sync-batch-norm", _teeny("sync_batch_norm", "SyncBatchNormPass")),
        PassEntry("train-mode", _teeny("train_mode", "TrainModePass")),
        PassEntry("view-op-graph", _teeny("view_op_graph", "ViewOpGraphPass")),
    )
}


ALIASES: dict[str, str] = {
    "fuse-conv-bn-act": "fuse-epilogues",  # renamed: it fuses linear, matmul and norm chains too
}
"""Old pass name -> the registered pass it names now. An alias is never a pass
name of its own; tests/test_conventions.py checks that each names a registered
pass and has a lit test running it (``lit_tests/passes/<alias>.mlir``)."""


def canonical_name(name: str) -> str:
    """The registered pass name ``name`` stands for: itself, or what its alias names."""
    return ALIASES.get(name, name)


def lookup(name: str) -> PassEntry | None:
    """The entry of a pass, by its name or an alias of it (None if neither)."""
    return _PASSES.get(canonical_name(name))


def names() -> list[str]:
    """Every registered pass name, sorted (aliases are not pass names: `ALIASES`)."""
    return sorted(_PASSES)


def aliases_of(name: str) -> list[str]:
    """The aliases of the pass ``name``, sorted."""
    return sorted(alias for alias, target in ALIASES.items() if target == name)


def register(entry: PassEntry) -> None:
    """Add a pass (used by tests for passes that must never be listed)."""
    if entry.name in ALIASES:
        raise ValueError(f"'{entry.name}' is an alias of pass '{ALIASES[entry.name]}'")
    if entry.name in _PASSES:
        raise ValueError(f"pass '{entry.name}' is already registered")
    _PASSES[entry.name] = entry


def unregister(name: str) -> None:
    del _PASSES[name]
