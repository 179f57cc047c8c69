"""The ``max_pool2d_backward`` kernel family: ``graph.max_pool2d_backward`` over
NCHW as a deterministic gather (each program owns a block of dx elements and
recomputes the argmax of every window that contains one; no atomics)
(``contract``, ``kernel``, ``lowering``, ``tiles``)."""
