"""The ``max_pool2d_backward`` kernel family: ``graph.max_pool2d_backward`` over
NCHW as a deterministic gather (each program owns a block of dx elements; each
element compares its window neighbourhood once and takes dy from the windows
whose argmax it is, O(KH * KW) per element; no atomics)
(``contract``, ``kernel``, ``lowering``, ``tiles``)."""
