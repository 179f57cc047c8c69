"""Named pipelines: a pipeline name usable wherever a pass name is, at top level.

Each entry expands, in place, into the pipeline text it stands for, so
``teeny-opt -p cleanup`` and ``--pass-pipeline='builtin.module(cleanup)'``
run the same passes, and ``--dump-pass-pipeline`` shows the expansion.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NamedPipeline:
    """A named, documented pipeline."""

    name: str
    summary: str
    text: str


PIPELINES: dict[str, NamedPipeline] = {
    p.name: p
    for p in (
        NamedPipeline(
            "teeny-inference",
            "inference lowering: split biases, fold Conv+BN+activation, pick conv "
            "algorithms, lower to kernel ops (emission stays explicit)",
            "builtin.module(split-bias,fuse-conv-bn-act{mode=inference},"
            "select-conv-algorithm,lower-graph-to-kernel)",
        ),
        NamedPipeline(
            "cleanup",
            "canonicalize and CSE every function, then drop dead code",
            "builtin.module(func.func(canonicalize,cse),dce)",
        ),
    )
}
