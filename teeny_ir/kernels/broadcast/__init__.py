"""The ``broadcast`` kernel family: ``graph.broadcast``, a copy of its input
stretched to the result by numpy broadcasting, over a rank-6 view with the
input's strides 0 on broadcast dims (``contract``, ``kernel``, ``lowering``)."""
