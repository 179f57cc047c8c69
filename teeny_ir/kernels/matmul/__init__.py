"""The ``matmul`` kernel family: a batched, broadcasting matrix product of two
activations (``graph.matmul``) with tl.dot and the per-column epilogue
(``contract``, ``kernel``, ``lowering``; its tiles are the ``linear`` family's)."""
