"""The ``avg_pool2d_backward`` kernel family: ``graph.avg_pool2d_backward`` over
NCHW as a deterministic gather (each program owns a block of dx elements and
sums ``dy / divisor`` over the windows that contain one; no atomics)
(``contract``, ``kernel``, ``lowering``, ``tiles``)."""
