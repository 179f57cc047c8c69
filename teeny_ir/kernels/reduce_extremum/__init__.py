"""The ``reduce_extremum`` kernel family: ``graph.reduce_max`` and
``graph.reduce_min`` over one contiguous run of axes of any extent, NaN
propagating (``contract``, ``kernel``, ``lowering``)."""
