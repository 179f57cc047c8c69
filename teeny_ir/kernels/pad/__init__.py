"""The ``pad`` kernel family: ``graph.pad`` (constant, reflect or edge borders,
crops, and interior padding, up to six dimensions) as one launch over the
destination, each element computing its source index (``contract``,
``kernel``, ``lowering``). A pad of nothing is a ``kernel.reshape`` view."""
