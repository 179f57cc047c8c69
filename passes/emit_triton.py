"""emit-triton: kernel ops -> Triton kernel files and the launch plan.

The pass checks its options and ``@forward``'s shape and calls the backend:
`teeny_ir.backend.collect` reads the kernel IR into the plan's pieces and
checks the draft plan against the plan schema, located at the ops (before any
file is written), and `teeny_ir.backend.emit` writes ``DIR/kernels/*.py``,
with ``archs`` the AOT cubins, and ``DIR/plan.json``, replacing a previous
emission atomically. The IR is not changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass

from teeny_ir.backend.collect import check_schema, collect, error_at
from teeny_ir.backend.emit import emit
from teeny_ir.kernels.render import PRECISIONS

MEMORY_OPTIONS = {"planned": "best", "naive": "naive"}
"""emit-triton's ``memory`` option -> the strategy of `teeny_ir.backend.memory`."""


@dataclass(frozen=True)
class EmitTritonPass(ModulePass):
    """Write Triton kernels and the launch plan (DIR/plan.json) for @forward's kernel ops.

    Options: ``out-dir`` (required) is the directory to write; ``archs`` (e.g.
    ``80,90``) also compiles every kernel variant ahead of time for those
    ``sm_XX`` targets (no GPU needed); ``memory`` is ``planned`` (default) or
    ``naive`` (see the field); ``precision`` is ``tf32`` (default) or ``ieee``,
    ``tl.dot``'s fp32 input precision in the GEMM kernels. Expects ``@forward`` in
    kernel IR (``kernel.weight``, ``kernel.param``, ``kernel.launch``, the views
    and ``func.return``, as lower-graph-to-kernel leaves it); the IR is left unchanged.
    """

    name = "emit-triton"

    out_dir: str = ""
    archs: tuple[int, ...] = ()
    jobs: int = 0
    cache: Literal["on", "off"] = "on"
    memory: str = "planned"
    """``planned``: buffers share one arena by liveness (`teeny_ir.backend.memory`,
    the best greedy placement); ``naive``: one after another, no reuse."""
    precision: str = "tf32"
    """``tl.dot``'s input precision for fp32 operands in the GEMM kernels: ``tf32``
    (Triton's default: tensor cores) or ``ieee`` (exact fp32); recorded per
    kernel in the plan and in the compile-cache key."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.out_dir:
            raise error_at("emit-triton needs out-dir=DIR (the directory to write)", op)
        forward = next(
            (f for f in op.ops if isinstance(f, FuncOp) and f.sym_name.data == "forward"), None
        )
        if forward is None:
            where = next(iter(op.ops), op)
            raise error_at("emit-triton expects a function @forward in the module", where)
        if not forward.body.blocks:
            raise error_at("emit-triton expects @forward to have a body", forward)
        if len(forward.body.blocks) > 1:
            raise error_at(
                f"emit-triton expects @forward to have a single block, found "
                f"{len(forward.body.blocks)} (a launch plan is one straight-line sequence)",
                forward,
            )
        for arch in self.archs:
            from teeny_ir.backend.aot import SHARED_MEMORY_LIMITS

            if arch not in SHARED_MEMORY_LIMITS:
                known = ", ".join(str(a) for a in sorted(SHARED_MEMORY_LIMITS))
                raise error_at(f"emit-triton: unknown arch {arch} (known: {known})", forward)
        if self.memory not in MEMORY_OPTIONS:
            raise error_at(
                f"emit-triton: unknown memory={self.memory} (known: {', '.join(MEMORY_OPTIONS)})",
                forward,
            )
        if self.precision not in PRECISIONS:
            raise error_at(
                f"emit-triton: unknown precision={self.precision} (known: {', '.join(PRECISIONS)})",
                forward,
            )
        collected = collect(forward)
        collected.memory = MEMORY_OPTIONS[self.memory]
        collected.precision = self.precision
        draft = check_schema(forward, collected)
        if "\0" in self.out_dir:
            raise error_at("emit-triton: out-dir must not contain a NUL character", forward)
        if self.jobs < 0:
            raise error_at(
                f"emit-triton: jobs must be 0 (one per CPU) or more, got {self.jobs}", op
            )
        emit(
            self.out_dir,
            forward,
            collected,
            self.archs,
            jobs=self.jobs,
            cache=self.cache == "on",
            draft=draft,
        )
