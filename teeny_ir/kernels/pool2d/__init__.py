"""The ``pool2d`` kernel family: ``graph.max_pool2d``, ``graph.avg_pool2d`` (a
window unrolled over constexpr geometry) and ``graph.global_avg_pool2d`` (a
blocked reduction over the whole plane) over NCHW (``contract``, ``kernel``,
``lowering``, ``tiles``)."""
