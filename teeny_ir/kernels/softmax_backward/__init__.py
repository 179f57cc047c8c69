"""The ``softmax_backward`` kernel family: ``graph.softmax_backward`` and
``graph.log_softmax_backward`` along any axis and any row length, as a blocked
sum pass and a write pass over each row of the softmax family's row view
(``contract``, ``kernel``, ``lowering``)."""
