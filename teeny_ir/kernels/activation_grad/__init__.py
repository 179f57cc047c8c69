"""The ``activation_grad`` kernel family: ``graph.activation_grad``, the gradient
``dx = activation'(x) * dy`` of any unary entry of the pointwise table, its
derivative rendered from the table's ``derivative_triton`` (``contract``,
``kernel``, ``lowering``)."""
