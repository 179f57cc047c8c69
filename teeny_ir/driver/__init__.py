"""Driving passes: the pass registry, named pipelines, MLIR's pipeline
grammar, pass options, the pass manager, ``--verify-diagnostics`` and the
command-line tools (``teeny-opt``, ``teeny-run``)."""
