"""The ``reduce`` kernel family: ``graph.reduce_sum`` and ``graph.reduce_mean``
over one contiguous run of axes of any extent, accumulated in fp32
(``contract``, ``kernel``, ``lowering``)."""
