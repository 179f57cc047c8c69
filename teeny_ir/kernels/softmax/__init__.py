"""The ``softmax`` kernel family: ``graph.softmax`` and ``graph.log_softmax`` along
any axis and any row length, as a blocked online max/sum pass and a write pass
over each row (``contract``, ``kernel``, ``lowering``, ``tiles``)."""
