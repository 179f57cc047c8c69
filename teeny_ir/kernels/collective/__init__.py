"""Collectives: the graph ops that no kernel family runs, because they
communicate with the other ranks of a process group instead of computing.

Not a kernel family (no contract, no Triton source): its `lowering` module
lowers ``graph.all_reduce`` to ``kernel.all_reduce``
(`dialects.kernel.collective`), which emit-triton records as a collective of
the launch plan (docs/plan.md, "Collectives") and the runtime runs through
torch.distributed (docs/distributed.md).
"""
