"""The ``fused_elementwise`` kernel family: a pointwise program (a fused chain of
pointwise-table ops) over up to six broadcast, batch-strided inputs, as one
launch (``contract``, ``kernel``, ``lowering``)."""
