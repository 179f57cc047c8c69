"""The ``transpose`` kernel family: ``graph.transpose`` (a permutation of up to
six dimensions) as one copying launch over the destination (``contract``,
``kernel``, ``lowering``). A permutation that leaves the row-major order of
each image unchanged is a ``kernel.reshape`` view instead, with no launch."""
