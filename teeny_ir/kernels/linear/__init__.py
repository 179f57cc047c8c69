"""The ``linear`` kernel family: a fully connected layer (``graph.linear``) as one
GEMM over every row of the input, with the per-column scale/shift/activation
epilogue (``contract``, ``kernel``, ``lowering``, ``tiles``)."""
